//! Wrappers that set the folder their command runs in (`env -C DIR`, `sudo -D DIR`, `nsenter --wd`,
//! `unshare --wd`, `systemd-run --working-directory`, `parallel --wd`): the command's relative operands
//! are judged from that folder, as `cd DIR && cmd` would be. Knowledge as data: a row per wrapper.

use super::getopt::whole_long;
use super::words::Word;
use super::{Analyzer, Context, OpaqueKind};

/// Each wrapper's options that set the folder (short letters and long names, as the wrappers' parsers
/// name them).
pub(super) const FOLDER_OPTIONS: &[(&str, &[&str])] = &[
    ("env", &["C", "chdir"]),
    ("sudo", &["D", "chdir"]),
    ("nsenter", &["w", "wd"]),
    ("unshare", &["w", "wd"]),
    ("systemd-run", &["working-directory"]),
    ("parallel", &["wd"]),
];

/// The options of `program` that set its command's folder; empty for other programs.
pub(super) fn folder_options(program: &str) -> &'static [&'static str] {
    FOLDER_OPTIONS.iter().find(|(p, _)| *p == program).map_or(&[], |(_, names)| names)
}

/// env's long options (GNU coreutils 9), for reading abbreviations (`env --ch=DIR` is `--chdir`).
const ENV_LONG: &[&str] = &[
    "ignore-environment",
    "null",
    "unset",
    "chdir",
    "split-string",
    "block-signal",
    "default-signal",
    "ignore-signal",
    "list-signal-handling",
    "debug",
    "help",
    "version",
];

/// What env's options before its command say.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct EnvOptions {
    /// The index of the first word after the options (an assignment or the command).
    pub(super) next: usize,
    /// `-i`, `-`: the command starts with an empty environment.
    pub(super) clears: bool,
    /// `-S STRING`: the command line is split from a string at run time.
    pub(super) split_string: bool,
    /// `-C DIR`: the folder the command runs in.
    pub(super) folder: Option<Word>,
    /// An option env does not have: where its command starts is a guess.
    pub(super) unknown: bool,
}

/// Reads env's options as getopt does (`+i0u:vC:S:` and the long ones, clustered and abbreviated).
pub(super) fn env_options(args: &[Word]) -> EnvOptions {
    let mut out = EnvOptions::default();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        let whole = whole_long(ENV_LONG.iter().copied(), &arg.text);
        let a = whole.as_str();
        if a == "-" {
            out.clears = true;
            continue;
        }
        if a == "--" {
            break;
        }
        if !a.starts_with('-') {
            i -= 1;
            break;
        }
        let take = |i: &mut usize, attached: &str| -> Option<Word> {
            if attached.is_empty() {
                *i += 1;
                args.get(*i - 1).cloned()
            } else {
                Some(Word { text: attached.to_owned(), dynamic: arg.dynamic })
            }
        };
        if let Some(long) = a.strip_prefix("--") {
            let (name, attached) = long.split_once('=').unwrap_or((long, ""));
            match name {
                "ignore-environment" => out.clears = true,
                "chdir" => out.folder = take(&mut i, attached),
                "unset" => {
                    take(&mut i, attached);
                }
                "split-string" => {
                    out.split_string = true;
                    take(&mut i, attached);
                }
                n if ENV_LONG.contains(&n) => {}
                _ => out.unknown = true,
            }
            continue;
        }
        let cluster = &a[1..];
        for (at, c) in cluster.char_indices() {
            let rest = &cluster[at + c.len_utf8()..];
            match c {
                'i' => out.clears = true,
                '0' | 'v' => {}
                'C' => {
                    out.folder = take(&mut i, rest);
                    break;
                }
                'u' | 'P' => {
                    take(&mut i, rest);
                    break;
                }
                'S' => {
                    out.split_string = true;
                    take(&mut i, rest);
                    break;
                }
                _ => out.unknown = true,
            }
        }
    }
    out.next = i.min(args.len());
    out
}

/// `sudo -D DIR` / `--chdir=DIR` before sudo's command.
pub(super) fn sudo_folder(args: &[Word]) -> Option<Word> {
    let mut i = 0;
    let mut folder = None;
    while let Some(arg) = args.get(i) {
        i += 1;
        let a = arg.text.as_str();
        if a == "--" || !a.starts_with('-') {
            break;
        }
        let part = |text: &str| Word { text: text.to_owned(), dynamic: arg.dynamic };
        if let Some(value) = a.strip_prefix("--chdir=") {
            folder = Some(part(value));
        } else if a == "--chdir" || a == "-D" {
            folder = args.get(i).cloned();
            i += 1;
        } else if let Some(value) = a.strip_prefix("-D") {
            folder = Some(part(value));
        } else if a.len() == 2 && "ugCprtUTRh".contains(&a[1..]) && !a.starts_with("--") {
            i += usize::from("ugCprtUTR".contains(&a[1..]));
        }
    }
    folder
}

impl Analyzer {
    /// The wrapper's command runs in `folder`: relative to the folder the wrapper runs in, known only at
    /// run time when the word is computed.
    pub(super) fn enter_folder(&mut self, ctx: &mut Context, folder: &Word, text: &str) {
        if folder.dynamic || folder.text.is_empty() {
            self.opaque(
                OpaqueKind::WrapperOption,
                format!("{text}: runs in a folder known only at run time"),
            );
            return;
        }
        let absolute = folder.text.starts_with('/') || folder.text.starts_with('~');
        ctx.chdir = Some(match &ctx.chdir {
            Some(outer) if !absolute => format!("{}/{}", outer.trim_end_matches('/'), folder.text),
            _ => folder.text.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<Word> {
        args.iter().map(|a| Word::literal(*a)).collect()
    }

    #[test]
    fn env_reads_folders_clusters_and_abbreviations() {
        let rows: &[(&[&str], usize, Option<&str>, bool)] = &[
            (&["-C", "/tmp", "cat", "x"], 2, Some("/tmp"), false),
            (&["-C/tmp", "cat"], 1, Some("/tmp"), false),
            (&["--chdir=/tmp", "cat"], 1, Some("/tmp"), false),
            (&["--ch=/tmp", "cat"], 1, Some("/tmp"), false),
            (&["--chdir", "/tmp", "cat"], 2, Some("/tmp"), false),
            (&["-iC", "/tmp", "cat"], 2, Some("/tmp"), false),
            (&["-iu", "cat", "rm", "x"], 2, None, false),
            (&["-u", "A", "-C", "..", "tee", "x"], 4, Some(".."), false),
            (&["A=1", "cat"], 0, None, false),
            (&["-Z", "cat"], 1, None, true),
        ];
        for (args, next, folder, unknown) in rows {
            let got = env_options(&words(args));
            assert_eq!(got.next, *next, "{args:?}");
            assert_eq!(got.folder.map(|w| w.text).as_deref(), *folder, "{args:?}");
            assert_eq!(got.unknown, *unknown, "{args:?}");
        }
    }

    #[test]
    fn every_row_moves_what_its_wrapper_runs_to_the_folder_it_names() {
        for (program, names) in FOLDER_OPTIONS {
            for name in *names {
                // Attached, the form every row's option takes (nsenter's `-w` takes its folder only so).
                let option = if name.len() == 1 { format!("-{name}sub") } else { format!("--{name}=sub") };
                let script = match *program {
                    "parallel" => format!("parallel {option} tee x ::: a"),
                    _ => format!("{program} {option} tee x"),
                };
                let analysis = crate::shell::analyze(&script);
                let tee = analysis.commands.iter().find(|c| c.program == "tee");
                assert_eq!(
                    tee.and_then(|c| c.working_folder.as_deref()),
                    Some("sub"),
                    "{script}: {:?}",
                    analysis.commands
                );
            }
        }
        assert!(folder_options("cat").is_empty());
    }
}
