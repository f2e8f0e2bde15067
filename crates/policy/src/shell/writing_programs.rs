//! Programs whose arguments make them write files or run code: `awk` programs, `sed -i` and sed scripts
//! that write or execute, `git -c` keys that run code, `tee`, and `find -exec/-delete`.

use super::sed::{self, SedVerdict};
use super::words::Word;
use super::{Analyzer, Context, FileRole, OpaqueKind, basename};

/// `awk` programs that call `system(`, use pipes (`cmd | getline`, `print | "sh"`), write files
/// (`print > "f"`, `printf ... >> f`), load code (`@load`, `@include`), or come from a file.
pub(super) fn awk(analyzer: &mut Analyzer, index: usize, args: &[Word], text: &str) {
    let mut i = 0;
    let mut program: Option<&Word> = None;
    while let Some(arg) = args.get(i) {
        let whole = super::getopt::whole_long(GAWK_LONG.iter().copied(), &arg.text);
        let a = whole.as_str();
        i += 1;
        match a {
            "--" => break,
            // gawk's own long options it does not know: where its program is would be a guess.
            _ if a.starts_with("--") && !GAWK_LONG.contains(&a[2..].split('=').next().unwrap_or("")) => {
                analyzer.opaque(OpaqueKind::AwkCode, text);
                return;
            }
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" | "-l" | "--load" => {
                analyzer.opaque(OpaqueKind::AwkCode, text);
                return;
            }
            "-e" | "--source" => {
                program = args.get(i);
                i += 1;
            }
            "-F" | "-v" | "--field-separator" | "--assign" => i += 1,
            _ if a.starts_with("--file=") || (a.starts_with("-f") && !a.starts_with("-F")) => {
                analyzer.opaque(OpaqueKind::AwkCode, text);
                return;
            }
            _ if a.starts_with('-') && a.len() > 1 => {}
            _ => {
                i -= 1;
                break;
            }
        }
        if program.is_some() {
            break;
        }
    }
    let files_from = if program.is_some() { i } else { i + 1 };
    let Some(program) = program.or_else(|| args.get(i)) else { return };
    // After the program: input files, except `var=value` assignments.
    for file in args.get(files_from..).unwrap_or(&[]) {
        let assignment = file.text.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !assignment && file.text != "-" {
            analyzer.add_file(index, file, FileRole::Read, false, "awk operand");
        }
    }
    let code = program.text.as_str();
    let calls_system = code.match_indices("system").any(|(pos, _)| {
        code.get(pos + "system".len()..).is_some_and(|rest| rest.trim_start().starts_with('('))
    });
    let loads = code.contains("@load") || code.contains("@include");
    // `getline < FILE` reads a file the program names; gawk's `@name(...)` calls a function named at run
    // time (`system` among them).
    let reads_named = code.contains("getline") && code.contains('<');
    if program.dynamic
        || calls_system
        || code.contains('|')
        || loads
        || reads_named
        || indirect_call(code)
        || awk_prints_to_file(code)
    {
        analyzer.opaque(OpaqueKind::AwkCode, text);
    }
}

/// gawk's indirect call: `@` and a name, then `(` (`@f("id")` with `f = "system"`).
fn indirect_call(code: &str) -> bool {
    code.match_indices('@').any(|(at, _)| {
        let rest = &code[at + 1..];
        let name = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        name > 0 && rest[name..].trim_start().starts_with('(')
    })
}

/// True when a `print`/`printf` statement redirects its output (`print > "f"`, `printf "%s", $1 >> f`): a
/// `>` after the keyword, outside strings and parentheses (`print (a > b)` compares), before the statement
/// ends. Regular expressions are not skipped, so a `>` inside one after `print` is taken as a redirection.
fn awk_prints_to_file(code: &str) -> bool {
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    let mut in_print = false;
    let mut depth = 0usize;
    while let Some(&c) = chars.get(i) {
        match c {
            '"' => {
                i += 1;
                while let Some(&s) = chars.get(i) {
                    i += if s == '\\' { 2 } else { 1 };
                    if s == '"' {
                        break;
                    }
                }
                continue;
            }
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ';' | '\n' | '{' | '}' => {
                in_print = false;
                depth = 0;
            }
            '>' if in_print && depth == 0 => return true,
            _ if c.is_ascii_alphabetic() || c == '_' => {
                let after_word =
                    i > 0 && chars.get(i - 1).is_some_and(|p| p.is_ascii_alphanumeric() || *p == '_');
                let start = i;
                while chars.get(i).is_some_and(|w| w.is_ascii_alphanumeric() || *w == '_') {
                    i += 1;
                }
                let word: String = chars.get(start..i).unwrap_or(&[]).iter().collect();
                if !after_word && (word == "print" || word == "printf") {
                    in_print = true;
                    depth = 0;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// gawk's long options (5.2), for reading abbreviations (`--exe` is `--exec`, `--lo` is `--load`).
const GAWK_LONG: &[&str] = &[
    "assign",
    "field-separator",
    "file",
    "exec",
    "include",
    "load",
    "source",
    "characters-as-bytes",
    "traditional",
    "copyright",
    "dump-variables",
    "debug",
    "gen-pot",
    "help",
    "lint",
    "bignum",
    "use-lc-numeric",
    "no-optimize",
    "optimize",
    "posix",
    "pretty-print",
    "profile",
    "re-interval",
    "sandbox",
    "trace",
    "version",
    "csv",
    "non-decimal-data",
    "persist",
];

/// GNU sed's long options (4.9), for reading abbreviations (`--expr=` is `--expression=`).
const SED_LONG: &[&str] = &[
    "expression",
    "file",
    "in-place",
    "line-length",
    "null-data",
    "zero-terminated",
    "quiet",
    "silent",
    "debug",
    "posix",
    "regexp-extended",
    "separate",
    "sandbox",
    "unbuffered",
    "follow-symlinks",
    "binary",
    "help",
    "version",
];

/// `sed` scripts with `e`, `w`, `W`, read from a file (`-f`), or not readable; `sed -i` file operands (and
/// their backups) are write redirections (`op` is `sed -i`).
pub(super) fn sed_command(analyzer: &mut Analyzer, index: usize, args: &[Word], text: &str) {
    let mut scripts: Vec<Word> = Vec::new();
    let mut operands: Vec<&Word> = Vec::new();
    let mut from_file = false;
    let mut in_place: Option<String> = None;
    let mut i = 0;
    let mut options_done = false;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        i += 1;
        if options_done || a == "-" || !a.starts_with('-') {
            operands.push(arg);
            continue;
        }
        let whole = super::getopt::whole_long(SED_LONG.iter().copied(), a);
        if a == "--" {
            options_done = true;
        } else if let Some(long) = whole.strip_prefix("--") {
            let known = SED_LONG.contains(&long.split('=').next().unwrap_or(""));
            if !known {
                // An option sed would refuse, or read as one the judge cannot name: not followed.
                analyzer.opaque(OpaqueKind::SedCode, text);
                return;
            }
            if let Some(body) = long.strip_prefix("expression=") {
                scripts.push(Word { text: format!("--expression={body}"), dynamic: arg.dynamic });
            } else if long == "expression" {
                scripts.extend(args.get(i).cloned());
                i += 1;
            } else if long == "file" || long.starts_with("file=") {
                from_file = true;
            } else if long == "in-place" || long.starts_with("in-place=") {
                in_place = Some(long.strip_prefix("in-place=").unwrap_or("").to_owned());
            } else if long == "line-length" {
                i += 1;
            }
        } else {
            let cluster: Vec<char> = a.chars().skip(1).collect();
            for (pos, c) in cluster.iter().enumerate() {
                let rest_empty = pos + 1 == cluster.len();
                match c {
                    'e' => {
                        if rest_empty {
                            scripts.extend(args.get(i).cloned());
                            i += 1;
                        } else {
                            scripts.push(arg.clone());
                        }
                        break;
                    }
                    'f' => {
                        from_file = true;
                        break;
                    }
                    'l' => {
                        i += usize::from(rest_empty);
                        break;
                    }
                    'i' => {
                        in_place = Some(cluster.get(pos + 1..).unwrap_or(&[]).iter().collect());
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    let script_operand = scripts.is_empty() && !from_file;
    for file in operands.iter().skip(usize::from(script_operand)).filter(|f| f.text != "-") {
        analyzer.add_file(index, file, FileRole::Read, false, "sed operand");
    }
    if let Some(suffix) = in_place {
        for file in operands.iter().skip(usize::from(script_operand)) {
            // The file is replaced, not written through: a link is replaced by a file.
            analyzer.add_file(index, file, FileRole::Write, false, "sed -i");
            if !suffix.is_empty() {
                analyzer.add_redirection(None, "sed -i".to_owned(), sed_backup(file, &suffix), text);
            }
        }
    }
    if from_file {
        analyzer.opaque(OpaqueKind::SedCode, text);
        return;
    }
    if script_operand {
        scripts.extend(operands.first().map(|w| (*w).clone()));
    }
    for script in &scripts {
        let body = script.text.strip_prefix("--expression=").unwrap_or(&script.text);
        let body = if body.starts_with('-') && !body.starts_with("--") {
            body.split_once('e').map_or(body, |(_, rest)| rest)
        } else {
            body
        };
        let mut reads = Vec::new();
        let verdict = sed::scan_reading(body, &mut reads);
        for read in reads {
            // `r FILE` / `R FILE` read a file the script names.
            analyzer.add_file(index, &Word::literal(read), FileRole::Read, false, "sed r");
        }
        if script.dynamic || verdict != SedVerdict::StreamOnly {
            analyzer.opaque(OpaqueKind::SedCode, text);
            return;
        }
    }
}

/// The backup `sed -i SUFFIX` keeps of `file`: `*` in the suffix is the file's name, otherwise the suffix is
/// appended; a name without `/` goes in the file's folder.
fn sed_backup(file: &Word, suffix: &str) -> Word {
    let (folder, name) = match file.text.rsplit_once('/') {
        Some((folder, name)) => (Some(folder), name),
        None => (None, file.text.as_str()),
    };
    let backup = if suffix.contains('*') { suffix.replace('*', name) } else { format!("{name}{suffix}") };
    let text = match folder {
        Some(folder) if !backup.contains('/') => format!("{folder}/{backup}"),
        _ => backup,
    };
    Word { text, dynamic: file.dynamic }
}

/// `git -c key=value` settings (and `--config-env`, `--exec-path`) that make git run other programs.
pub(super) fn git(analyzer: &mut Analyzer, args: &[Word], text: &str) {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if !a.starts_with('-') {
            // `git config KEY VALUE` (and `git config set`) persists a setting that runs programs.
            let rest = args.get(i + 1..).unwrap_or(&[]);
            if a == "config"
                && rest.iter().any(|w| w.dynamic || git_key_runs_code(&w.text.to_ascii_lowercase()))
            {
                analyzer.opaque(OpaqueKind::GitConfigCode, text);
            }
            return;
        }
        i += 1;
        if a.starts_with("--config-env") || a.starts_with("--exec-path=") {
            analyzer.opaque(OpaqueKind::GitConfigCode, text);
            return;
        }
        match a {
            "-c" => {
                let Some(setting) = args.get(i) else { return };
                i += 1;
                let key = setting.text.split('=').next().unwrap_or("").to_ascii_lowercase();
                if setting.dynamic || git_key_runs_code(&key) {
                    analyzer.opaque(OpaqueKind::GitConfigCode, text);
                    return;
                }
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => i += 1,
            _ => {}
        }
    }
}

fn git_key_runs_code(key: &str) -> bool {
    const KEYS: &[&str] = &[
        "core.sshcommand",
        "core.pager",
        "core.editor",
        "core.fsmonitor",
        "core.hookspath",
        "core.gitproxy",
        "core.askpass",
        "core.alternaterefscommand",
        "diff.external",
        "gpg.program",
        "sequence.editor",
        "uploadpack.packobjectshook",
        "protocol.allow",
        "include.path",
        "sendemail.smtpserver",
    ];
    const PREFIXES: &[&str] =
        &["alias.", "filter.", "credential", "pager.", "includeif.", "protocol.", "gpg.", "url.", "remote."];
    const SUFFIXES: &[&str] = &[".textconv", ".command", ".driver", ".cmd", ".tool", ".helper", ".program"];
    KEYS.contains(&key)
        || PREFIXES.iter().any(|p| key.starts_with(p))
        || SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// `tee [-a] FILE...`: each file is a write redirection (`op` is `tee` or `tee -a`).
pub(super) fn tee(analyzer: &mut Analyzer, args: &[Word], text: &str) {
    let mut append = false;
    let mut options_done = false;
    for arg in args {
        let a = arg.text.as_str();
        if !options_done && a.starts_with('-') && a.len() > 1 {
            if a == "--" {
                options_done = true;
            } else if a == "--append" || (!a.starts_with("--") && a.contains('a')) {
                append = true;
            }
            continue;
        }
        let op = if append { "tee -a" } else { "tee" };
        analyzer.add_redirection(None, op.to_owned(), arg.clone(), text);
    }
}

/// `find -files0-from FILE`: FILE is read, and the trees find walks (and acts on) are named in it,
/// known only at run time.
fn files0_from(analyzer: &mut Analyzer, index: usize, file: Option<&Word>, text: &str) {
    if let Some(file) = file.filter(|f| f.text != "-") {
        analyzer.add_file(index, file, FileRole::Read, false, "find -files0-from");
    }
    analyzer.opaque(OpaqueKind::ProgramOption, format!("{text}: the start points are read from a file"));
}

/// `find`: `-exec`/`-execdir`/`-ok`/`-okdir` commands are reported inside wrapper `find`; `-delete` is
/// reported as the synthetic command `find -delete START...` inside wrapper `find`; `-fprint` files are writes.
pub(super) fn find(
    analyzer: &mut Analyzer,
    index: usize,
    args: &[Word],
    env: &[(String, String)],
    ctx: &Context,
    text: &str,
) {
    let mut i = 0;
    let mut from_file = false;
    while let Some(arg) = args.get(i) {
        match arg.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" | "-O" => i += 2,
            "-files0-from" => {
                from_file = true;
                files0_from(analyzer, index, args.get(i + 1), text);
                i += 2;
            }
            a if a.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let starts: Vec<Word> = args
        .get(i..)
        .unwrap_or(&[])
        .iter()
        .take_while(|a| !(a.text.starts_with('-') || matches!(a.text.as_str(), "(" | ")" | "!" | ",")))
        .cloned()
        .collect();
    i += starts.len();
    for start in &starts {
        analyzer.add_file(index, start, FileRole::Read, true, "find start");
    }
    if starts.is_empty() && !from_file {
        analyzer.add_file(index, &Word::literal("."), FileRole::Read, true, "find start");
    }
    let inner_ctx = ctx.inside("find");
    let mut deletes = false;
    while let Some(arg) = args.get(i) {
        i += 1;
        match arg.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let begin = i;
                while let Some(word) = args.get(i) {
                    let after_braces = i > begin && args.get(i - 1).is_some_and(|p| p.text == "{}");
                    if word.text == ";" || (word.text == "+" && after_braces) {
                        break;
                    }
                    i += 1;
                }
                let inner = with_found_file(args.get(begin..i).unwrap_or(&[]), &starts);
                i += 1;
                analyzer.emit(inner, env.to_vec(), false, &inner_ctx, text);
            }
            "-delete" => deletes = true,
            "-files0-from" => {
                files0_from(analyzer, index, args.get(i), text);
                i += 1;
            }
            op @ ("-fprint" | "-fprint0" | "-fls" | "-fprintf") => {
                if let Some(target) = args.get(i) {
                    analyzer.add_redirection(None, format!("find {op}"), target.clone(), text);
                }
                i += if op == "-fprintf" { 2 } else { 1 };
            }
            _ => {}
        }
    }
    if deletes {
        // Everything found below each start may be removed, the start itself too.
        let found: Vec<Word> = if starts.is_empty() { vec![Word::literal(".")] } else { starts.clone() };
        for start in &found {
            analyzer.add_file(index, start, FileRole::Write, true, "find -delete");
        }
        let mut argv = vec![Word::literal("find"), Word::literal("-delete")];
        argv.extend(starts);
        let dynamic = argv.iter().any(|w| w.dynamic);
        analyzer.out.commands.push(super::SimpleCommand {
            argv: argv.into_iter().map(|w| w.text).collect(),
            program: basename("find").to_owned(),
            env: env.to_vec(),
            working_folder: inner_ctx.chdir.clone(),
            wrappers: inner_ctx.wrappers,
            dynamic,
            files: Vec::new(),
            patterns: Vec::new(),
        });
    }
}

/// The command `find -exec` runs, with `{}` standing for a file found below the start: the start itself
/// when there is one (every path below it is inside wherever it is), else a path known only at run time.
fn with_found_file(words: &[Word], starts: &[Word]) -> Vec<Word> {
    let start = match starts {
        [] => Some(Word::literal(".")),
        [one] => Some(one.clone()),
        _ => None,
    };
    words
        .iter()
        .map(|w| match (&start, w.text.contains("{}")) {
            (_, false) => w.clone(),
            (Some(start), true) => {
                Word { text: w.text.replace("{}", &start.text), dynamic: w.dynamic || start.dynamic }
            }
            (None, true) => Word { text: w.text.clone(), dynamic: true },
        })
        .collect()
}
