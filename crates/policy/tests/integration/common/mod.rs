//! How the shell analyzer's tests read an analysis: argv lists, programs, opaque kinds, redirections, the
//! one command of a program, a script that must parse cleanly; and shell quoting for nested scripts.
// Test helpers run only inside tests; panicking on a missing command is the assertion. Each test file
// uses part of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use portcullis_policy::shell::{OpaqueKind, ShellAnalysis, SimpleCommand, analyze};

pub fn argvs(a: &ShellAnalysis) -> Vec<Vec<&str>> {
    a.commands.iter().map(|c| c.argv.iter().map(String::as_str).collect()).collect()
}

pub fn programs(a: &ShellAnalysis) -> Vec<&str> {
    a.commands.iter().map(|c| c.program.as_str()).collect()
}

pub fn kinds(a: &ShellAnalysis) -> Vec<OpaqueKind> {
    a.opaque.iter().map(|o| o.kind).collect()
}

pub fn only<'a>(a: &'a ShellAnalysis, program: &str) -> &'a SimpleCommand {
    let found: Vec<_> = a.commands.iter().filter(|c| c.program == program).collect();
    assert_eq!(found.len(), 1, "expected one `{program}` in {:?}", a.commands);
    found[0]
}

pub fn clean(script: &str) -> ShellAnalysis {
    let a = analyze(script);
    assert!(!a.parse_errors, "unexpected parse error in {script:?}");
    a
}

pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub fn redirs(a: &ShellAnalysis) -> Vec<(&str, &str, bool)> {
    a.redirections.iter().map(|r| (r.op.as_str(), r.target.as_str(), r.write)).collect()
}

/// The commands of a list in the repository's `tests/` folder: one a line, `\n` a newline, `#` lines
/// and blank ones skipped.
pub fn command_list(relative: &str) -> Vec<String> {
    let list = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests").join(relative);
    std::fs::read_to_string(list)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.replace("\\n", "\n"))
        .collect()
}
