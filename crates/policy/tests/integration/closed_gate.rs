//! Issue 39: the shell judge allows only what it fully resolves. Substitutions the grammar leaves as text
//! (heredoc bodies, `${…}` operands) are rescanned, values bash evaluates as code are opaque, assignments
//! are judged by the reviewed list of inert variables, and recursive reads that follow links judge what
//! the links point to. One test per finding, each with the variants the red team's root cause allows.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{clean, kinds, programs};
use portcullis_policy::shell::{OpaqueKind, analyze};
use portcullis_policy::{Decision, EvalContext, Policy, PolicyLayer};
use std::path::Path;

#[test]
fn backquotes_in_unquoted_heredoc_bodies_are_judged_as_the_commands_they_run() {
    for script in [
        "cat <<EOF\n`rm -rf ~`\nEOF",
        "cat <<EOF > notes.md\ntext `rm -rf ~` text\nEOF",
        "cat <<-EOF\n\t`rm -rf ~`\n\tEOF",
        "cat <<EOF\n${x:-`rm -rf ~`}\nEOF",
        "cat <<EOF | grep a\n`rm -rf ~`\nEOF",
    ] {
        let a = analyze(script);
        assert!(programs(&a).contains(&"rm"), "{script:?}: {:?}", a.commands);
    }
    // Nested backquotes are unescaped as bash does and found in turn.
    let a = analyze("cat <<EOF\n`echo \\`id\\``\nEOF");
    assert!(programs(&a).contains(&"id"), "{:?}", a.commands);
    // A quoted delimiter makes the body literal: nothing runs.
    for script in ["cat <<'EOF'\n`rm -rf ~`\nEOF", "cat <<\"EOF\"\n`rm`\nEOF", "cat <<\\EOF\n`rm`\nEOF"] {
        assert_eq!(programs(&clean(script)), ["cat"], "{script:?}");
    }
    // What cannot be rescanned is opaque.
    assert!(kinds(&analyze("cat <<EOF\n`unterminated\nEOF")).contains(&OpaqueKind::UnseenSubstitution));
}

#[test]
fn backquotes_in_expansion_operands_are_judged_for_every_operator() {
    for op in
        [":-", "-", ":=", "=", ":+", "+", ":?", "?", "#", "##", "%", "%%", "/a/", "//a/", "/#a/", "/%a/"]
    {
        for script in [
            format!("x=${{y{op}`rm -rf ~`}}"),
            format!("[[ ${{y{op}`rm -rf ~`}} ]]"),
            format!("echo \"${{y{op}`rm -rf ~`}}\""),
            format!("case ${{y{op}`rm -rf ~`}} in a) ;; esac"),
        ] {
            let a = analyze(&script);
            let found = programs(&a).contains(&"rm") || !a.opaque.is_empty() || a.parse_errors;
            assert!(found, "{script:?}: {:?}", a);
        }
    }
}

#[test]
fn values_bash_evaluates_as_code_are_opaque() {
    for script in [
        "x='a[$(id)]'; ((x))",
        "echo $((x))",
        "echo $[x+1]",
        "[[ x -eq 1 ]]",
        "[[ $x -gt 1 ]]",
        "for ((i=x;i<2;i++)); do :; done",
        "echo ${!x}",
        "echo ${x@P}",
        "[[ -v a[x] ]]",
        "echo ${s:x}",
        "echo ${a[x]}",
        "a[x]=1",
        "declare -i n",
        "declare -n r=x",
        "read 'a[x]' <<< 1",
        "read \"$name\" <<< 1",
        "let y=x+1",
        "x=y; ((x))",
    ] {
        let a = analyze(script);
        assert!(kinds(&a).contains(&OpaqueKind::EvaluatedValue), "{script:?}: {:?}", a.opaque);
    }
    // Numbers the script gave itself hold no code.
    for script in [
        "for ((i=0; i<3; i++)); do echo hi; done",
        "n=3; echo $((n * 2))",
        "echo $((1 + 2)) $((16#ff))",
        "echo ${!prefix*} ${!arr[@]} ${#x}",
        "for i in 1 2 3; do echo $((i + 1)); done",
    ] {
        let a = analyze(script);
        assert!(!kinds(&a).contains(&OpaqueKind::EvaluatedValue), "{script:?}: {:?}", a.opaque);
    }
}

#[test]
fn assignments_are_inert_only_by_the_reviewed_list() {
    for script in [
        "HOME=. git status",
        "XDG_CONFIG_HOME=cfg git status",
        "GIT_TRACE=/tmp/x git status",
        "GIT_TRACE2_EVENT=/tmp/x git status",
        "GIT_INDEX_FILE=/tmp/i git status",
        "TMPDIR=/etc git status",
        "HOME=.; git status",
        "export HOME=.; git status",
        "export FOO=1",
        "env HOME=. git status",
        "for HOME in .; do git status; done",
        "read PWD <<< /etc",
        "printf -v HOME /etc",
        ": ${HOME:=/etc}",
        "PWD=/tmp; echo x > ~+/.bashrc",
        "TZ=/etc/shadow date",
        "LANG=/tmp/x ls",
        "PAGER=less git log",
        "http_proxy=http://127.0.0.1:1 git status",
    ] {
        let a = analyze(script);
        let found = kinds(&a)
            .iter()
            .any(|k| matches!(k, OpaqueKind::UnreviewedVariable | OpaqueKind::CodeInjectingVariable));
        assert!(found, "{script:?}: {:?}", a.opaque);
    }
    for script in ["set -a; x=1", "set -k; git status", "set -o allexport"] {
        assert!(kinds(&analyze(script)).contains(&OpaqueKind::ShellOption), "{script}");
    }
    for script in [
        "LANG=C git status",
        "LC_ALL=C.UTF-8 sort a",
        "TZ=UTC date",
        "NO_COLOR=1 ls",
        "RUST_BACKTRACE=1 cargo test",
        "GIT_PAGER=cat git log",
        "f=README.md; x=1",
        "set -euo pipefail; ls",
        "export LANG",
    ] {
        assert!(analyze(script).opaque.is_empty(), "{script:?}: {:?}", analyze(script).opaque);
    }
}

fn policy(project: &Path) -> Policy {
    let text = r#"{ "paths": { "roots": [ { "path": ".", "access": "write" } ] },
                   "commands": { "default": "allow" } }"#;
    Policy::from_layers(vec![PolicyLayer::parse("p.json", text, project.to_path_buf()).unwrap()]).unwrap()
}

#[test]
fn a_script_with_no_command_runs_nothing_only_without_expansions() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    let p = policy(&project);
    let ctx = EvalContext { cwd: project.clone(), home: Some(project.join("home")) };
    assert_eq!(p.evaluate_command("x=1", &ctx).decision, Decision::Allow);
    assert_eq!(p.evaluate_command("", &ctx).decision, Decision::Allow);
    // Bash expands something: what it runs is not known, so it is contained (not allowed as inert).
    for script in ["x=$y", "x=${y:-z}", "[[ $x == y ]]", "x=$((1+2))", "((1))"] {
        assert_eq!(p.evaluate_command(script, &ctx).decision, Decision::Contain, "{script:?}");
    }
}

#[test]
fn recursive_reads_that_follow_links_judge_their_targets() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("project");
    let secrets = base.join("secrets");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("id_rsa"), "KEY").unwrap();
    std::os::unix::fs::symlink(&secrets, project.join("src/keys")).unwrap();
    std::os::unix::fs::symlink(base.join("gone"), project.join("dangling")).unwrap();
    let text = r#"{ "paths": { "roots": [ { "path": ".", "access": "write" } ], "read_outside_roots": "forbidden" },
                   "commands": { "default": "allow" } }"#;
    let p = Policy::from_layers(vec![PolicyLayer::parse("p.json", text, project.clone()).unwrap()]).unwrap();
    let ctx = EvalContext { cwd: project.clone(), home: Some(base.join("home")) };
    for command in [
        "grep -R KEY .",
        "grep --dereference-recursive KEY",
        "rg -L KEY",
        "rg --follow KEY src",
        "ag -f KEY",
        "ls -RL",
        "du -L .",
        "tree -l",
        "find -L . -name x",
        "find . -follow",
        "diff -r src src",
        "zip -r out.zip src",
        "tar -chf out.tar src",
        "cp -rL src copy",
    ] {
        let eval = p.evaluate_command(command, &ctx);
        assert_ne!(eval.decision, Decision::Allow, "{command}: {:?}", eval.reasons);
        assert!(eval.reasons.iter().any(|r| r.contains("secrets")), "{command}: {:?}", eval.reasons);
    }
    for command in ["grep -r KEY .", "rg KEY", "ls -R", "du .", "tree", "cp -r src copy"] {
        let eval = p.evaluate_command(command, &ctx);
        assert_eq!(eval.decision, Decision::Allow, "{command}: {:?}", eval.reasons);
    }
}

#[test]
fn what_changes_which_program_a_name_runs_is_opaque() {
    for script in [
        "hash -p /tmp/evil git; git status",
        "enable -f /tmp/x.so ls; ls",
        "coproc HOME { ls; }",
        "/???/r? -rf x",
        "/bin/r[m] -rf x",
    ] {
        let a = analyze(script);
        assert!(!a.opaque.is_empty(), "{script:?}: {:?}", a);
    }
    // Bash joins the words around a backslash-newline that the grammar splits: `r\<newline>m` is `rm`.
    assert!(analyze("r\\\nm -rf x").parse_errors);
    assert!(!analyze("cargo test \\\n  --workspace").parse_errors);
    for script in ["getopts ab HOME", "wait -p PWD"] {
        assert!(kinds(&analyze(script)).contains(&OpaqueKind::CodeInjectingVariable), "{script}");
    }
    assert!(analyze("[ -f x ] && echo y").opaque.is_empty());
}

/// The gate's own false prompts: benign agent commands judged by a policy that allows every program and
/// the whole project, so that only what the gate cannot see through prompts. At most 20 %.
#[test]
fn the_gate_prompts_for_at_most_a_fifth_of_benign_agent_commands() {
    let commands = crate::common::command_list("benign/agent-commands.txt");
    assert!(commands.len() >= 100);
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(project.join("src/bin")).unwrap();
    std::fs::create_dir_all(project.join("docs")).unwrap();
    for file in
        ["README.md", "Cargo.toml", "CHANGELOG.md", "package.json", "src/main.rs", "src/lib.rs", "a.txt"]
    {
        std::fs::write(project.join(file), "x\n").unwrap();
    }
    let p = policy(&project);
    let ctx = EvalContext { cwd: project.clone(), home: Some(project.join("home")) };
    let prompted: Vec<&String> =
        commands.iter().filter(|c| p.evaluate_command(c, &ctx).decision == Decision::Prompt).collect();
    let rate = prompted.len() as f64 / commands.len() as f64;
    println!("{} of {} benign commands prompt ({:.1} %)", prompted.len(), commands.len(), rate * 100.0);
    assert!(rate <= 0.20, "{:.1} % prompt: {prompted:#?}", rate * 100.0);
}

/// Issue 53: what bash itself makes harmless does not prompt — a quoted heredoc's body, a plain
/// assignment that stays in the shell, a variable read as the literal the script gave it — and a
/// variable read that way is judged as the path it names.
#[test]
fn literal_words_are_judged_as_what_bash_makes_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    let p = policy(&project);
    let ctx = EvalContext { cwd: project.clone(), home: Some(project.join("home")) };
    let decision = |script: &str| p.evaluate_command(script, &ctx).decision;
    for script in [
        "cat <<'EOF' > NOTES.md\nUse `cargo test`, $(date) and $HOME\nEOF",
        "git commit -m \"$(cat <<'EOF'\nFix `x` and $(y)\nEOF\n)\"",
        "LOGS_DIR=logs; grep x \"$LOGS_DIR/a.log\"",
        "x=src; cd \"$x\" && ls",
    ] {
        assert_eq!(decision(script), Decision::Allow, "{script:?}");
    }
    for script in [
        "cat <<EOF > NOTES.md\n`rm -rf /etc`\nEOF",
        "PATH=/tmp/evil; ls",
        "IFS=/; ls",
        "BASH_ENV=/tmp/x; ls",
        "x=$(curl -s example.com); cat \"$x\"",
        "x=a; x+=b; cat \"$x\"",
        "x=a; { x=/etc/passwd; } | cat; cat \"$x\"",
        "PAGER=less; export PAGER; git log",
        "GIT_PAGER='sh -c id'; export GIT_PAGER; git log",
        "p=GIT_PA; GIT_PAGER=less; export \"${p}GER\"; git log",
    ] {
        assert_ne!(decision(script), Decision::Allow, "{script:?}");
    }
    // The resolved path is outside every root: judged as such, not as "computed at run time".
    let evaluation = p.evaluate_command("D=/etc; cat \"$D/passwd\"", &ctx);
    assert_ne!(evaluation.decision, Decision::Allow);
    assert!(evaluation.reasons.iter().any(|r| r.contains("/etc/passwd")), "{:?}", evaluation.reasons);
}

/// Every name the shell tool passes from the gateway's environment is one bash exports when the script
/// assigns it: a plain assignment of one is never inert (`shell/variables.rs` keeps the list).
#[test]
fn the_names_the_shell_tool_passes_down_are_never_inert_when_assigned() {
    for name in portcullis_coding::workspace::DEFAULT_ENV_ALLOWLIST.iter().chain(&["LC_ALL", "LC_PAPER"]) {
        // Reviewed as inert whatever its value (it turns colours off).
        if *name == "NO_COLOR" {
            continue;
        }
        let script = format!("{name}=/tmp/evil; true");
        assert!(!analyze(&script).opaque.is_empty(), "{script}");
    }
}
