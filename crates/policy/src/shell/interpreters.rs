//! Shells and interpreters given code to run: `bash -c` code is parsed as the script it is (to a depth
//! limit); other interpreters' inline code (`python -c`, `node -e`, `perl -e`...) and code read from
//! stdin are opaque to us.

use super::getopt::skip_options;
use super::words::Word;
use super::{Analyzer, Context, MAX_SHELL_DEPTH, OpaqueKind};

/// Shells whose `-c` string is bash-compatible enough to be parsed with the bash grammar.
pub(super) const POSIX_SHELLS: &[&str] =
    &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "hush", "yash", "posh", "rbash"];

/// `bash [opts] -c 'code' [$0 args...]`: parses the code; otherwise notes a shell reading stdin.
pub(super) fn shell(analyzer: &mut Analyzer, program: &str, args: &[Word], ctx: &Context, text: &str) {
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
pub(super) fn is_interpreter_with_code(program: &str, args: &[Word]) -> bool {
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
pub(super) fn reads_code_from_stdin(program: &str, args: &[Word]) -> bool {
    if interpreter_family(program).is_none() {
        return false;
    }
    let i = skip_options(args, "WXm", &[]);
    args.get(i).is_none_or(|a| a.text == "-")
}
