//! Knowledge of particular programs: wrappers that run another command (sudo, env, xargs, find -exec,
//! bash -c...), interpreters given inline code, and programs whose arguments write files or run code.

use super::sed::{self, SedVerdict};
use super::words::Word;
use super::wrappers;
use super::{Analyzer, Context, MAX_SHELL_DEPTH, OpaqueKind, basename};

/// Shells whose `-c` string is bash-compatible enough to be parsed with the bash grammar.
pub(super) const POSIX_SHELLS: &[&str] =
    &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "hush", "yash", "posh", "rbash"];

pub(crate) use super::variables::injects_code;

/// Looks at one command's program and arguments and reports what it runs or hides.
pub(crate) fn inspect(
    analyzer: &mut Analyzer,
    program: &str,
    argv: &[Word],
    env: &[(String, String)],
    ctx: &Context,
    text: &str,
) {
    let args = argv.get(1..).unwrap_or(&[]);
    super::options::inspect(analyzer, program, args, text);
    match program {
        "eval" => analyzer.opaque(OpaqueKind::Eval, text),
        "source" | "." => analyzer.opaque(OpaqueKind::Source, text),
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
        "awk" | "gawk" | "mawk" | "nawk" => awk(analyzer, args, text),
        "sed" | "gsed" => sed_command(analyzer, args, text),
        "git" => git(analyzer, args, text),
        "tee" => tee(analyzer, args, text),
        "find" => find(analyzer, args, env, ctx, text),
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
                for (name, _) in &inner.env {
                    if injects_code(name) && !env.iter().any(|(n, _)| n == name) {
                        analyzer.opaque(OpaqueKind::CodeInjectingVariable, text);
                    }
                }
                let inner_ctx = ctx.inside(program);
                analyzer.emit(inner.argv, inner.env, inner.appends_arguments, &inner_ctx, text);
            }
        }
    }
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
        "env" => o(
            "i0v",
            "uCS",
            &[
                "ignore-environment",
                "null",
                "list-signal-handling",
                "debug",
                "help",
                "version",
                "block-signal",
                "default-signal",
                "ignore-signal",
            ],
            &["unset", "chdir", "split-string"],
        ),
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
            let name = long.split('=').next().unwrap_or_default();
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
}

/// Splits `-abc` option clusters and skips option arguments: `with_arg` letters take the rest of the
/// cluster or the next word; `long_with_arg` long options take the next word unless written `--x=v`.
/// Returns the index of the first operand.
fn skip_options(args: &[Word], with_arg: &str, long_with_arg: &[&str]) -> usize {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if a == "--" {
            return i + 1;
        }
        if a == "-" || !a.starts_with('-') {
            return i;
        }
        i += 1;
        if let Some(long) = a.strip_prefix("--") {
            if !long.contains('=') && long_with_arg.contains(&long) {
                i += 1;
            }
            continue;
        }
        let cluster: Vec<char> = a.chars().skip(1).collect();
        for (pos, c) in cluster.iter().enumerate() {
            if with_arg.contains(*c) {
                if pos + 1 == cluster.len() {
                    i += 1;
                }
                break;
            }
        }
    }
    i
}

fn unwrap(program: &str, args: &[Word], env: &[(String, String)]) -> Option<Inner> {
    let mut inner_env = env.to_vec();
    let mut appends_arguments = false;
    let mut split_string = false;
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
            let mut i = 0;
            while let Some(arg) = args.get(i) {
                let a = arg.text.as_str();
                match a {
                    "-i" | "-" | "--ignore-environment" => {
                        inner_env.clear();
                        i += 1;
                    }
                    "-u" | "--unset" | "-C" | "--chdir" | "-P" => i += 2,
                    "-S" | "--split-string" => {
                        split_string = true;
                        i += 2;
                    }
                    "--" => {
                        i += 1;
                        break;
                    }
                    _ if a.starts_with("-S") || a.starts_with("--split-string=") => {
                        split_string = true;
                        i += 1;
                    }
                    _ if a.starts_with('-') => i += 1,
                    _ => break,
                }
            }
            i + take_assignments(args.get(i..).unwrap_or(&[]), &mut inner_env)
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
    Some(Inner { argv, env: inner_env, appends_arguments, split_string })
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

/// `bash [opts] -c 'code' [$0 args...]`: parses the code; otherwise notes a shell reading stdin.
fn shell(analyzer: &mut Analyzer, program: &str, args: &[Word], ctx: &Context, text: &str) {
    let mut i = 0;
    let mut command_mode = false;
    let mut reads_stdin = false;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            i += if matches!(long, "rcfile" | "init-file") { 2 } else { 1 };
            continue;
        }
        if !(a.starts_with('-') || a.starts_with('+')) || a.len() < 2 {
            break;
        }
        i += 1;
        let letters = a.get(1..).unwrap_or("");
        command_mode |= letters.contains('c');
        reads_stdin |= letters.contains('s');
        if letters.contains('o') || letters.contains('O') {
            i += 1;
        }
    }
    let operand = args.get(i);
    if !command_mode {
        if (operand.is_none() || reads_stdin) && ctx.stdin_redirected {
            analyzer.opaque(OpaqueKind::StdinCode, text);
        }
        return;
    }
    let Some(code) = operand else { return };
    shell_code(analyzer, program, code, ctx, text);
}

/// Parses `code` as the bash script `wrapper` runs (`bash -c`, `su -c`, `watch`, `flock -c`...).
pub(super) fn shell_code(analyzer: &mut Analyzer, wrapper: &str, code: &Word, ctx: &Context, text: &str) {
    if code.dynamic {
        analyzer.opaque(OpaqueKind::ShellCode, text);
    } else if ctx.shell_depth + 1 > MAX_SHELL_DEPTH {
        analyzer.opaque(OpaqueKind::ShellTooDeep, text);
    } else {
        let mut inner = ctx.inside(wrapper);
        inner.shell_depth += 1;
        analyzer.analyze_script(&code.text, &inner);
    }
}

/// Interpreters given code on the command line.
fn is_interpreter_with_code(program: &str, args: &[Word]) -> bool {
    let options = args.iter().map(|a| a.text.as_str()).take_while(|a| a.starts_with('-') && *a != "--");
    let any = |pred: &dyn Fn(&str) -> bool| options.clone().any(pred);
    match interpreter_family(program) {
        Some("python") => python_has_inline_code(args),
        Some("node") => {
            any(&|a| {
                matches!(a, "-e" | "--eval" | "-p" | "--print" | "-pe" | "-ep")
                    || a.starts_with("--eval=")
                    || a.starts_with("--print=")
            }) || (program == "deno" && args.first().is_some_and(|a| a.text == "eval"))
        }
        Some("perl") => {
            any(&|a| short_cluster_has(a, 'e', "IiFMmxCdD") || short_cluster_has(a, 'E', "IiFMmxCdD"))
        }
        Some("ruby") => any(&|a| short_cluster_has(a, 'e', "IirFECKTWx")),
        Some("php") => any(&|a| matches!(a, "-r" | "-R" | "-B" | "-E")),
        Some("other") => any(&|a| matches!(a, "-e" | "--eval")),
        _ => false,
    }
}

/// `python [-W arg] [-X opt] -c code`: a `c` in an option cluster before the script or `-m`.
fn python_has_inline_code(args: &[Word]) -> bool {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if a == "--" || a == "-" || !a.starts_with('-') || a == "-m" {
            return false;
        }
        i += 1;
        if a.starts_with("--") {
            continue;
        }
        for c in a.chars().skip(1) {
            match c {
                'c' => return true,
                'W' | 'X' | 'm' => {
                    i += usize::from(a.ends_with(c));
                    break;
                }
                _ => {}
            }
        }
    }
    false
}

/// True when the single-dash cluster `a` contains `letter` before any letter that takes the rest as argument.
fn short_cluster_has(a: &str, letter: char, takes_rest: &str) -> bool {
    if a.starts_with("--") {
        return false;
    }
    for c in a.chars().skip(1) {
        if c == letter {
            return true;
        }
        if takes_rest.contains(c) {
            return false;
        }
    }
    false
}

fn interpreter_family(program: &str) -> Option<&'static str> {
    let is_versioned = |prefix: &str| {
        program.strip_prefix(prefix).is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    if is_versioned("python") || is_versioned("pypy") {
        Some("python")
    } else if matches!(program, "node" | "nodejs" | "bun" | "deno") {
        Some("node")
    } else if is_versioned("perl") {
        Some("perl")
    } else if is_versioned("ruby") {
        Some("ruby")
    } else if is_versioned("php") {
        Some("php")
    } else if matches!(program, "lua" | "luajit" | "Rscript" | "osascript" | "tclsh" | "wish")
        || is_versioned("lua")
    {
        Some("other")
    } else {
        None
    }
}

/// An interpreter with no script operand (or `-`) reads its program from stdin.
fn reads_code_from_stdin(program: &str, args: &[Word]) -> bool {
    if interpreter_family(program).is_none() {
        return false;
    }
    let i = skip_options(args, "WXm", &[]);
    args.get(i).is_none_or(|a| a.text == "-")
}

/// `awk` programs that call `system(`, use pipes (`cmd | getline`, `print | "sh"`), write files
/// (`print > "f"`, `printf ... >> f`), load code (`@load`, `@include`), or come from a file.
fn awk(analyzer: &mut Analyzer, args: &[Word], text: &str) {
    let mut i = 0;
    let mut program: Option<&Word> = None;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        i += 1;
        match a {
            "--" => break,
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
    let Some(program) = program.or_else(|| args.get(i)) else { return };
    let code = program.text.as_str();
    let calls_system = code.match_indices("system").any(|(pos, _)| {
        code.get(pos + "system".len()..).is_some_and(|rest| rest.trim_start().starts_with('('))
    });
    let loads = code.contains("@load") || code.contains("@include");
    if program.dynamic || calls_system || code.contains('|') || loads || awk_prints_to_file(code) {
        analyzer.opaque(OpaqueKind::AwkCode, text);
    }
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

/// `sed` scripts with `e`, `w`, `W`, read from a file (`-f`), or not readable; `sed -i` file operands (and
/// their backups) are write redirections (`op` is `sed -i`).
fn sed_command(analyzer: &mut Analyzer, args: &[Word], text: &str) {
    let mut scripts: Vec<&Word> = Vec::new();
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
        if a == "--" {
            options_done = true;
        } else if let Some(long) = a.strip_prefix("--") {
            if long.starts_with("expression=") {
                scripts.push(arg);
            } else if long == "expression" {
                scripts.extend(args.get(i));
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
                            scripts.extend(args.get(i));
                            i += 1;
                        } else {
                            scripts.push(arg);
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
    if let Some(suffix) = in_place {
        for file in operands.iter().skip(usize::from(script_operand)) {
            analyzer.add_redirection(None, "sed -i".to_owned(), (*file).clone(), text);
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
        scripts.extend(operands.first());
    }
    for script in scripts {
        let body = script.text.strip_prefix("--expression=").unwrap_or(&script.text);
        let body = if body.starts_with('-') && !body.starts_with("--") {
            body.split_once('e').map_or(body, |(_, rest)| rest)
        } else {
            body
        };
        if script.dynamic || sed::scan(body) != SedVerdict::StreamOnly {
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
fn git(analyzer: &mut Analyzer, args: &[Word], text: &str) {
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
fn tee(analyzer: &mut Analyzer, args: &[Word], text: &str) {
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

/// `find`: `-exec`/`-execdir`/`-ok`/`-okdir` commands are reported inside wrapper `find`; `-delete` is
/// reported as the synthetic command `find -delete START...` inside wrapper `find`; `-fprint` files are writes.
fn find(analyzer: &mut Analyzer, args: &[Word], env: &[(String, String)], ctx: &Context, text: &str) {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" | "-O" => i += 2,
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
                let inner = args.get(begin..i).unwrap_or(&[]).to_vec();
                i += 1;
                analyzer.emit(inner, env.to_vec(), false, &inner_ctx, text);
            }
            "-delete" => deletes = true,
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
        let mut argv = vec![Word::literal("find"), Word::literal("-delete")];
        argv.extend(starts);
        let dynamic = argv.iter().any(|w| w.dynamic);
        analyzer.out.commands.push(super::SimpleCommand {
            argv: argv.into_iter().map(|w| w.text).collect(),
            program: basename("find").to_owned(),
            env: env.to_vec(),
            wrappers: inner_ctx.wrappers,
            dynamic,
        });
    }
}
