//! Behaviour of the shell analyzer on code it must not take at face value: `bash -c` (parsed, to a
//! bound), eval, source, dynamic command names, interpreters with inline code, piping into a shell.

// Test helpers run only inside tests; panicking on a missing command is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_policy::shell::{MAX_SCRIPT_BYTES, MAX_SHELL_DEPTH, OpaqueKind, analyze};

#[test]
fn bash_c_is_parsed() {
    let a = clean("bash -c 'echo ok && rm -rf /'");
    assert_eq!(
        argvs(&a),
        vec![vec!["bash", "-c", "echo ok && rm -rf /"], vec!["echo", "ok"], vec!["rm", "-rf", "/"]]
    );
    assert_eq!(only(&a, "rm").wrappers, vec!["bash"]);
    assert!(a.opaque.is_empty());
}

#[test]
fn sh_lc_and_combined_flags() {
    let a = clean("sh -lc \"rm x; ls\"");
    assert_eq!(only(&a, "rm").wrappers, vec!["sh"]);
    assert_eq!(only(&a, "ls").argv, vec!["ls"]);
    assert_eq!(only(&clean("bash -euo pipefail -c 'rm y'"), "rm").argv, vec!["rm", "y"]);
    assert_eq!(only(&clean("zsh -ec 'rm y'"), "rm").wrappers, vec!["zsh"]);
}

#[test]
fn nested_bash_c() {
    let a = clean("bash -c \"bash -c 'rm x'\"");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "x"]);
    assert_eq!(rm.wrappers, vec!["bash", "bash"]);
}

#[test]
fn bash_c_deeper_than_the_bound_is_opaque() {
    let mut script = "rm x".to_owned();
    for _ in 0..=MAX_SHELL_DEPTH {
        script = format!("bash -c {}", shell_quote(&script));
    }
    assert!(script.len() < MAX_SCRIPT_BYTES);
    let a = clean(&script);
    assert_eq!(kinds(&a), vec![OpaqueKind::ShellTooDeep]);
    assert_eq!(a.commands.len(), MAX_SHELL_DEPTH + 1);
    assert!(a.commands.iter().all(|c| c.program == "bash"));
}

#[test]
fn bash_c_with_dynamic_code_is_opaque() {
    assert_eq!(kinds(&clean("bash -c \"$CODE\"")), vec![OpaqueKind::ShellCode]);
}

#[test]
fn bash_c_parse_errors_propagate() {
    assert!(analyze("bash -c 'if then'").parse_errors);
}

#[test]
fn git_config_running_code_is_opaque() {
    let a = clean("git -c core.sshCommand=x fetch");
    assert_eq!(kinds(&a), vec![OpaqueKind::GitConfigCode]);
    assert_eq!(only(&a, "git").argv, vec!["git", "-c", "core.sshCommand=x", "fetch"]);
    assert_eq!(kinds(&clean("git -c alias.st='!rm x' st")), vec![OpaqueKind::GitConfigCode]);
    assert!(clean("git -c user.name=x -C repo commit -m hi").opaque.is_empty());
}

#[test]
fn eval_is_opaque() {
    assert_eq!(kinds(&clean("eval \"$x\"")), vec![OpaqueKind::Eval]);
}

#[test]
fn source_and_dot_are_opaque() {
    assert_eq!(kinds(&clean("source x.sh")), vec![OpaqueKind::Source]);
    assert_eq!(kinds(&clean(". x.sh")), vec![OpaqueKind::Source]);
}

#[test]
fn variable_command_name_is_opaque() {
    let a = clean("$CMD arg");
    assert_eq!(kinds(&a), vec![OpaqueKind::DynamicCommandName]);
    assert!(a.commands[0].dynamic);
}

#[test]
fn substituted_command_name_is_opaque_and_inner_seen() {
    let a = clean("$(echo rm) x");
    assert_eq!(kinds(&a), vec![OpaqueKind::DynamicCommandName]);
    assert_eq!(only(&a, "echo").argv, vec!["echo", "rm"]);
}

#[test]
fn interpreters_with_inline_code_are_opaque() {
    for script in [
        "python -c 'import os'",
        "python3 -c 'import os'",
        "python3.12 -Bc 'x'",
        "python -X dev -c 'x'",
        "node -e 'x'",
        "node --eval 'x'",
        "perl -e 'unlink'",
        "perl -lne 'print'",
        "perl -E 'say 1'",
        "ruby -e 'x'",
        "php -r 'x'",
    ] {
        assert_eq!(kinds(&clean(script)), vec![OpaqueKind::InterpreterCode], "{script}");
    }
    for script in ["python script.py", "node app.js", "perl -I/usr/share/perl5 x.pl", "python -m pytest"] {
        assert!(clean(script).opaque.is_empty(), "{script}");
    }
}

#[test]
fn awk_programs_that_run_commands_are_opaque() {
    assert_eq!(kinds(&clean("awk '{system(\"rm x\")}'")), vec![OpaqueKind::AwkCode]);
    assert_eq!(kinds(&clean("awk '{print | \"sh\"}' f")), vec![OpaqueKind::AwkCode]);
    assert_eq!(kinds(&clean("gawk -f prog.awk f")), vec![OpaqueKind::AwkCode]);
    assert!(clean("awk -F: '{print $1}' /etc/passwd").opaque.is_empty());
}

#[test]
fn sed_exec_and_write_are_opaque() {
    assert_eq!(kinds(&clean("sed -e 's/a/b/e'")), vec![OpaqueKind::SedCode]);
    assert_eq!(kinds(&clean("sed 's/a/b/w out' f")), vec![OpaqueKind::SedCode]);
    assert_eq!(kinds(&clean("sed -n '1e rm x' f")), vec![OpaqueKind::SedCode]);
    assert!(clean("sed -i -e 's/a/b/g' -e '/x/d' f").opaque.is_empty());
    assert!(clean("sed -n 's/a/b/p' f").opaque.is_empty());
}

#[test]
fn piping_into_a_shell_is_opaque() {
    let a = clean("curl x | sh");
    assert_eq!(kinds(&a), vec![OpaqueKind::StdinCode]);
    assert_eq!(programs(&a), vec!["curl", "sh"]);
    assert_eq!(kinds(&clean("curl x | sudo bash -s -- arg")), vec![OpaqueKind::StdinCode]);
    assert_eq!(kinds(&clean("curl x | python3")), vec![OpaqueKind::StdinCode]);
    assert_eq!(kinds(&clean("bash <<EOF\nrm x\nEOF")), vec![OpaqueKind::StdinCode]);
    assert_eq!(kinds(&clean("sh < script.sh")), vec![OpaqueKind::StdinCode]);
    assert!(clean("bash script.sh").opaque.is_empty());
}

#[test]
fn alias_definition_is_opaque() {
    assert_eq!(kinds(&clean("alias ls=rm")), vec![OpaqueKind::AliasDefinition]);
    assert!(clean("alias").opaque.is_empty());
}

#[test]
fn trap_is_opaque() {
    assert_eq!(kinds(&clean("trap 'rm x' EXIT")), vec![OpaqueKind::Trap]);
}

#[test]
fn code_injecting_variables_are_opaque() {
    assert_eq!(kinds(&clean("LD_PRELOAD=/tmp/x.so ls")), vec![OpaqueKind::CodeInjectingVariable]);
    assert_eq!(kinds(&clean("PATH=/tmp:$PATH; ls")), vec![OpaqueKind::CodeInjectingVariable]);
    assert_eq!(kinds(&clean("env BASH_ENV=x bash -c ls")), vec![OpaqueKind::CodeInjectingVariable]);
    assert!(clean("LANG=C ls").opaque.is_empty());
}

/// The operator's and the local user's commands of the `portcullis` binary are never judged as plain
/// programs: `api` and `operator` act with the operator's credential, `setup` writes (or `--undo`
/// removes) the agents' own hook and MCP entries, so an agent running it could unhook itself.
#[test]
fn portcullis_commands_of_the_operator_and_the_user_are_opaque() {
    for script in [
        "portcullis api approve 1",
        "portcullis operator link --name eve",
        "portcullis setup claude --undo --yes",
        "portcullis undo c7 --yes",
        "portcullis held keep c7",
        "portcullis {setup,codex,--user,--yes}",
        "portcullis $CMD claude",
    ] {
        assert!(kinds(&analyze(script)).contains(&OpaqueKind::OperatorCommand), "{script}");
    }
    for script in ["portcullis doctor", "portcullis policy check -- ls", "portcullis ledger verify"] {
        assert!(!kinds(&analyze(script)).contains(&OpaqueKind::OperatorCommand), "{script}");
    }
}
