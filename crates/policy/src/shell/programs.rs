//! Knowledge of particular programs: which of them hide code (`eval`, `source`, `trap`...), and the
//! older wrappers that run another command (sudo, env, nice, xargs...), unwrapped to what they run. Each
//! program with more to know has its own module: [`super::interpreters`], [`super::writing_programs`],
//! [`super::wrappers`].

use super::getopt::skip_options;
use super::interpreters::{POSIX_SHELLS, is_interpreter_with_code, reads_code_from_stdin, shell};
use super::words::Word;
use super::wrappers;
use super::writing_programs::{awk, find, git, sed_command, tee};
use super::{Analyzer, Context, OpaqueKind};

/// Looks at one command's program and arguments and reports what it runs or hides.
pub(crate) fn inspect(
    analyzer: &mut Analyzer,
    index: usize,
    program: &str,
    argv: &[Word],
    env: &[(String, String)],
    ctx: &Context,
    text: &str,
) {
    let args = argv.get(1..).unwrap_or(&[]);
    super::options::inspect(analyzer, index, program, args, text);
    match program {
        "eval" => analyzer.opaque(OpaqueKind::Eval, text),
        "source" | "." => analyzer.opaque(OpaqueKind::Source, text),
        "hash" if args.iter().any(|a| a.dynamic || (a.text.starts_with('-') && a.text.contains('p'))) => {
            analyzer.opaque(OpaqueKind::CommandLookup, text);
        }
        "enable"
            if args.iter().any(|a| a.dynamic || (a.text.starts_with('-') && a.text.contains(['f', 'd']))) =>
        {
            analyzer.opaque(OpaqueKind::CommandLookup, text);
        }
        // `setup` too: it writes (or `--undo` removes) the agents' hook and MCP entries, the user's own
        // settings; an agent that ran it could unhook itself from Portcullis. And `undo`: putting back
        // what a commit replaced is the operator's call, not the agent's.
        "portcullis"
            if args.iter().any(|a| {
                a.dynamic || matches!(a.text.as_str(), "api" | "operator" | "setup" | "undo" | "held")
            }) =>
        {
            analyzer.opaque(OpaqueKind::OperatorCommand, text);
        }
        // The grammar does not know coprocesses: it reads `coproc NAME { cmd; }` as words.
        "coproc" => analyzer.opaque(OpaqueKind::CommandLookup, text),
        // History re-execution and the editor it starts.
        "fc" => analyzer.opaque(OpaqueKind::Eval, text),
        // Each argument of `let` is arithmetic.
        "let" => {
            for arg in args {
                if arg.dynamic {
                    analyzer
                        .opaque(OpaqueKind::EvaluatedValue, format!("{text}: arithmetic on a computed word"));
                } else {
                    analyzer.arithmetic_text(&arg.text, text);
                }
            }
        }
        "set" if sets_exporting_option(args) => analyzer.opaque(OpaqueKind::ShellOption, text),
        "alias" if args.iter().any(|a| a.text.contains('=')) => {
            analyzer.opaque(OpaqueKind::AliasDefinition, text);
        }
        "trap" if args.iter().any(|a| !matches!(a.text.as_str(), "-l" | "-p" | "--")) => {
            analyzer.opaque(OpaqueKind::Trap, text);
        }
        "fish" | "pwsh" | "powershell" | "nu" | "xonsh" | "elvish" | "tcsh" | "csh" => {
            if args.iter().any(|a| a.text.starts_with('-') && a.text.contains(['c', 'C']))
                || ctx.stdin_redirected
            {
                analyzer.opaque(OpaqueKind::ShellCode, text);
            }
        }
        p if POSIX_SHELLS.contains(&p) => shell(analyzer, program, args, ctx, text),
        p if is_interpreter_with_code(p, args) => analyzer.opaque(OpaqueKind::InterpreterCode, text),
        p if ctx.stdin_redirected && reads_code_from_stdin(p, args) => {
            analyzer.opaque(OpaqueKind::StdinCode, text);
        }
        "awk" | "gawk" | "mawk" | "nawk" => awk(analyzer, index, args, text),
        "sed" | "gsed" => sed_command(analyzer, index, args, text),
        "git" => git(analyzer, args, text),
        "tee" => tee(analyzer, args, text),
        "find" => {
            let before = analyzer.out.commands.get(index).map_or(0, |c| c.files.len());
            find(analyzer, index, args, env, ctx, text);
            // `find -L` and `-follow` walk through the links below the starts.
            if args.iter().any(|a| matches!(a.text.as_str(), "-L" | "-follow")) {
                analyzer.follow_links_of(index, before);
            }
        }
        p if wrappers::PROGRAMS.contains(&p) => wrappers::inspect(analyzer, p, args, env, ctx, text),
        _ => {
            if unknown_wrapper_option(program, args).is_some() {
                // Where the wrapped command starts is a guess past an option we do not know.
                analyzer.opaque(OpaqueKind::WrapperOption, text);
            }
            if let Some(inner) = unwrap(program, args, env) {
                if inner.split_string {
                    analyzer.opaque(OpaqueKind::EnvSplitString, text);
                }
                for (name, value) in &inner.env {
                    if !env.iter().any(|(n, _)| n == name) {
                        analyzer.check_variable(name, Some(value), super::variables::Reach::Exported, text);
                    }
                }
                if inner.unknown_option {
                    analyzer.opaque(OpaqueKind::WrapperOption, text);
                }
                let mut inner_ctx = ctx.inside(program);
                if let Some(folder) = &inner.folder {
                    analyzer.enter_folder(&mut inner_ctx, folder, text);
                }
                analyzer.emit(inner.argv, inner.env, inner.appends_arguments, &inner_ctx, text);
            }
        }
    }
}

impl Analyzer {
    /// Marks the recursive files the command at `index` named from `from` on as walks that follow links.
    pub(crate) fn follow_links_of(&mut self, index: usize, from: usize) {
        if let Some(command) = self.out.commands.get_mut(index) {
            for file in command.files.iter_mut().skip(from).filter(|f| f.recursive) {
                file.follows_links = true;
            }
        }
    }
}

/// `set -a` / `-o allexport` exports every later assignment, `set -k` / `-o keyword` takes assignments
/// anywhere among a command's words into its environment: either puts unreviewed variables in programs'
/// environments unseen. Options given by a computed word count too.
fn sets_exporting_option(args: &[Word]) -> bool {
    let mut words = args.iter().peekable();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if word.dynamic {
            return true;
        }
        if text == "-o" {
            if words.next().is_none_or(|o| o.dynamic || matches!(o.text.as_str(), "allexport" | "keyword")) {
                return true;
            }
            continue;
        }
        if text == "--" || !text.starts_with('-') {
            break;
        }
        if text.contains(['a', 'k']) {
            return true;
        }
    }
    false
}

/// The options each older wrapper accepts (their getopt tables): flags, options taking a value, and long
/// options (`=` optional) with and without a value.
struct WrapperOptions {
    flags: &'static str,
    with_value: &'static str,
    long_flags: &'static [&'static str],
    long_with_value: &'static [&'static str],
}

fn wrapper_options(program: &str) -> Option<WrapperOptions> {
    let o = |flags, with_value, long_flags, long_with_value| {
        Some(WrapperOptions { flags, with_value, long_flags, long_with_value })
    };
    match program {
        "sudo" => o(
            "AbBEeHhiKklNnPSsVv",
            "ugCDprtUTR",
            &[
                "askpass",
                "background",
                "bell",
                "preserve-env",
                "edit",
                "help",
                "set-home",
                "login",
                "remove-timestamp",
                "reset-timestamp",
                "list",
                "non-interactive",
                "preserve-groups",
                "stdin",
                "shell",
                "version",
                "validate",
            ],
            &[
                "user",
                "group",
                "close-from",
                "chdir",
                "host",
                "prompt",
                "role",
                "type",
                "other-user",
                "command-timeout",
                "chroot",
            ],
        ),
        "doas" => o("nsL", "uC", &[], &[]),
        "timeout" => o(
            "v",
            "sk",
            &["preserve-status", "foreground", "verbose", "help", "version"],
            &["signal", "kill-after"],
        ),
        "nice" => o("", "n", &["help", "version"], &["adjustment"]),
        "time" => o(
            "pvaq",
            "fo",
            &["portability", "verbose", "append", "quiet", "help", "version"],
            &["format", "output"],
        ),
        "command" => o("pvV", "", &[], &[]),
        "exec" => o("cl", "a", &[], &[]),
        "nohup" | "builtin" => o("", "", &["help", "version"], &[]),
        "xargs" => o(
            "0prtxoeil",
            "adEILnPs",
            &[
                "null",
                "interactive",
                "no-run-if-empty",
                "verbose",
                "exit",
                "show-limits",
                "open-tty",
                "help",
                "version",
            ],
            &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "eof",
                "replace",
                "max-lines",
                "process-slot-var",
            ],
        ),
        // env's options are read by its own parser (`shell/working_folders.rs::env_options`).
        _ => None,
    }
}

/// The first option (before the wrapped command) an older wrapper does not know, if any.
fn unknown_wrapper_option(program: &str, args: &[Word]) -> Option<String> {
    let table = wrapper_options(program)?;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        i += 1;
        if a == "--" || a == "-" || !a.starts_with('-') {
            return None;
        }
        if program == "nice" && a[1..].chars().all(|c| c.is_ascii_digit()) {
            continue; // `nice -10 cmd`
        }
        if let Some(long) = a.strip_prefix("--") {
            let given = long.split('=').next().unwrap_or_default();
            let every = table.long_flags.iter().chain(table.long_with_value).copied();
            let name = super::getopt::long_name(every, given).unwrap_or(given);
            if table.long_with_value.contains(&name) {
                if !long.contains('=') {
                    i += 1;
                }
            } else if !table.long_flags.contains(&name) {
                return Some(a.to_owned());
            }
            continue;
        }
        for (pos, c) in a.chars().skip(1).enumerate() {
            if table.with_value.contains(c) {
                if pos + 2 == a.chars().count() {
                    i += 1; // the value is the next word
                }
                break;
            }
            // xargs -e/-i/-l take an optional value attached to them.
            if program == "xargs" && "eil".contains(c) {
                break;
            }
            if !table.flags.contains(c) {
                return Some(a.to_owned());
            }
        }
    }
    None
}

/// The command a wrapper runs.
struct Inner {
    argv: Vec<Word>,
    env: Vec<(String, String)>,
    /// `xargs`: more arguments are appended at run time.
    appends_arguments: bool,
    /// `env -S`: the command line is split from a string at run time.
    split_string: bool,
    /// `env -C DIR`, `sudo -D DIR`: the folder the command runs in.
    folder: Option<Word>,
    /// An option the table of the wrapper does not know (where the command starts is a guess).
    unknown_option: bool,
}

fn unwrap(program: &str, args: &[Word], env: &[(String, String)]) -> Option<Inner> {
    let mut inner_env = env.to_vec();
    let mut appends_arguments = false;
    let mut split_string = false;
    let mut folder: Option<Word> = None;
    let mut unknown_option = false;
    let start = match program {
        "sudo" => {
            if args
                .iter()
                .take_while(|a| a.text.starts_with('-'))
                .any(|a| a.text == "-e" || a.text == "--edit")
            {
                return None;
            }
            let long =
                ["user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "other-user"];
            let mut i =
                skip_options(args, "ugCDprtUTR", &[&long[..], &["command-timeout", "chroot"]].concat());
            i += take_assignments(args.get(i..).unwrap_or(&[]), &mut inner_env);
            i
        }
        "doas" => skip_options(args, "uC", &[]),
        "env" => {
            let options = super::working_folders::env_options(args);
            if options.clears {
                inner_env.clear();
            }
            split_string |= options.split_string;
            folder = options.folder;
            unknown_option = options.unknown;
            options.next + take_assignments(args.get(options.next..).unwrap_or(&[]), &mut inner_env)
        }
        "timeout" => skip_options(args, "sk", &["signal", "kill-after"]) + 1,
        "nice" => {
            let mut i = 0;
            while let Some(arg) = args.get(i) {
                let a = arg.text.as_str();
                if a == "-n" || a == "--adjustment" {
                    i += 2;
                } else if a == "--" {
                    i += 1;
                    break;
                } else if a.starts_with('-') {
                    i += 1;
                } else {
                    break;
                }
            }
            i
        }
        "nohup" | "builtin" => usize::from(args.first().is_some_and(|a| a.text == "--")),
        "time" => skip_options(args, "fo", &["format", "output"]),
        "command" => {
            if args.iter().take_while(|a| a.text.starts_with('-')).any(|a| a.text.contains(['v', 'V'])) {
                return None;
            }
            skip_options(args, "", &[])
        }
        "exec" => skip_options(args, "a", &[]),
        "xargs" => {
            appends_arguments = true;
            let long = ["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "eof", "replace"];
            let i = skip_options(args, "adEILnPs", &long);
            if i >= args.len() {
                return Some(Inner {
                    argv: vec![Word::literal("echo")],
                    env: inner_env,
                    appends_arguments,
                    split_string,
                    folder: None,
                    unknown_option: false,
                });
            }
            i
        }
        _ => return None,
    };
    let argv = args.get(start..).unwrap_or(&[]).to_vec();
    if argv.is_empty() && !split_string {
        return None;
    }
    if program == "sudo" {
        folder = super::working_folders::sudo_folder(args);
    }
    Some(Inner { argv, env: inner_env, appends_arguments, split_string, folder, unknown_option })
}

/// Moves leading `NAME=value` words into `env`; returns how many were taken.
fn take_assignments(args: &[Word], env: &mut Vec<(String, String)>) -> usize {
    let mut taken = 0;
    for arg in args {
        let Some((name, value)) = arg.text.split_once('=') else { break };
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            break;
        }
        env.push((name.to_owned(), value.to_owned()));
        taken += 1;
    }
    taken
}
