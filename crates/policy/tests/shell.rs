//! Behaviour of the shell analyzer on the constructs a policy must see through.
// Test helpers below run only inside tests; panicking on a missing command is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_policy::shell::{
    MAX_SCRIPT_BYTES, MAX_SHELL_DEPTH, OpaqueKind, ShellAnalysis, SimpleCommand, analyze,
};

fn argvs(a: &ShellAnalysis) -> Vec<Vec<&str>> {
    a.commands.iter().map(|c| c.argv.iter().map(String::as_str).collect()).collect()
}

fn programs(a: &ShellAnalysis) -> Vec<&str> {
    a.commands.iter().map(|c| c.program.as_str()).collect()
}

fn kinds(a: &ShellAnalysis) -> Vec<OpaqueKind> {
    a.opaque.iter().map(|o| o.kind).collect()
}

fn only<'a>(a: &'a ShellAnalysis, program: &str) -> &'a SimpleCommand {
    let found: Vec<_> = a.commands.iter().filter(|c| c.program == program).collect();
    assert_eq!(found.len(), 1, "expected one `{program}` in {:?}", a.commands);
    found[0]
}

fn clean(script: &str) -> ShellAnalysis {
    let a = analyze(script);
    assert!(!a.parse_errors, "unexpected parse error in {script:?}");
    a
}

#[test]
fn and_list() {
    let a = clean("ls && rm -rf ~");
    assert_eq!(argvs(&a), vec![vec!["ls"], vec!["rm", "-rf", "~"]]);
    assert!(a.opaque.is_empty());
    assert!(a.is_fully_static());
}

#[test]
fn every_list_operator() {
    let a = clean("a; b | c || d & e");
    assert_eq!(programs(&a), vec!["a", "b", "c", "d", "e"]);
}

#[test]
fn newlines_separate_commands() {
    assert_eq!(programs(&clean("ls\nrm x\n\npwd")), vec!["ls", "rm", "pwd"]);
}

#[test]
fn subshell() {
    assert_eq!(argvs(&clean("(cd x; rm y)")), vec![vec!["cd", "x"], vec!["rm", "y"]]);
}

#[test]
fn group() {
    assert_eq!(argvs(&clean("{ rm a; }")), vec![vec!["rm", "a"]]);
}

#[test]
fn if_condition_and_branches() {
    let a = clean("if test -f x; then rm x; elif true; then rm y; else rm z; fi");
    assert_eq!(programs(&a), vec!["test", "rm", "true", "rm", "rm"]);
}

#[test]
fn for_list_and_body() {
    let a = clean("for f in $(ls); do rm \"$f\"; done");
    assert_eq!(programs(&a), vec!["ls", "rm"]);
    assert!(only(&a, "rm").dynamic);
    assert!(!only(&a, "ls").dynamic);
}

#[test]
fn while_and_until() {
    assert_eq!(programs(&clean("while read l; do rm $l; done")), vec!["read", "rm"]);
    assert_eq!(programs(&clean("until false; do rm a; done")), vec!["false", "rm"]);
}

#[test]
fn case_bodies() {
    let a = clean("case $x in a) rm a;; *) ls;; esac");
    assert_eq!(argvs(&a), vec![vec!["rm", "a"], vec!["ls"]]);
}

#[test]
fn function_definition_is_opaque_and_body_is_seen() {
    let a = clean("f() { rm a; }; f");
    assert_eq!(kinds(&a), vec![OpaqueKind::FunctionDefinition]);
    assert_eq!(programs(&a), vec!["rm", "f"]);
    let b = clean("function g { curl x; }");
    assert_eq!(kinds(&b), vec![OpaqueKind::FunctionDefinition]);
    assert_eq!(programs(&b), vec!["curl"]);
}

#[test]
fn command_substitution() {
    let a = clean("echo $(rm x)");
    assert_eq!(argvs(&a), vec![vec!["echo", "$(rm x)"], vec!["rm", "x"]]);
    assert!(a.commands[0].dynamic);
}

#[test]
fn backticks() {
    let a = clean("echo `rm x`");
    assert_eq!(only(&a, "rm").argv, vec!["rm", "x"]);
}

#[test]
fn process_substitution() {
    let a = clean("diff <(curl x) >(tee y)");
    assert_eq!(programs(&a), vec!["diff", "curl", "tee"]);
    assert_eq!(a.redirections[0].target, "y");
}

#[test]
fn substitutions_inside_double_quotes_and_assignments() {
    let a = clean("X=\"$(rm a)\" ; export Y=$(rm b); echo \"${Z:-$(rm c)}\"");
    let rms: Vec<_> = a.commands.iter().filter(|c| c.program == "rm").map(|c| c.argv[1].as_str()).collect();
    assert_eq!(rms, vec!["a", "b", "c"]);
    assert!(programs(&a).contains(&"export"));
}

#[test]
fn test_and_arithmetic_substitutions() {
    let a = clean("[[ -f $(rm y) ]]; (( x = $(rm z) ))");
    assert_eq!(argvs(&a), vec![vec!["rm", "y"], vec!["rm", "z"]]);
}

#[test]
fn every_quoting_of_rm_is_rm() {
    for script in ["\"rm\" x", "\\rm x", "r''m x", "$'rm' x", "'r'\"m\" x", "$'\\x72\\155' x", "r\\m x"] {
        let a = clean(script);
        assert_eq!(argvs(&a), vec![vec!["rm", "x"]], "{script}");
        assert!(!a.commands[0].dynamic, "{script}");
    }
}

#[test]
fn path_to_program_is_its_basename() {
    let a = clean("/bin/rm x; ./rm y");
    assert_eq!(programs(&a), vec!["rm", "rm"]);
    assert_eq!(a.commands[0].argv[0], "/bin/rm");
}

#[test]
fn escapes_inside_double_quotes() {
    let a = clean(r#"echo "a\"b\$c\\d\e" 'x\y' a\ b"#);
    assert_eq!(a.commands[0].argv, vec!["echo", r#"a"b$c\d\e"#, r"x\y", "a b"]);
    assert!(!a.commands[0].dynamic);
}

#[test]
fn prefix_assignments_are_env() {
    let a = clean("VAR=1 OTHER='two words' rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.env, vec![("VAR".into(), "1".into()), ("OTHER".into(), "two words".into())]);
    assert_eq!(rm.argv, vec!["rm", "x"]);
}

#[test]
fn env_wrapper() {
    let a = clean("env -i X=1 rm y");
    assert_eq!(programs(&a), vec!["env", "rm"]);
    let rm = &a.commands[1];
    assert_eq!(rm.argv, vec!["rm", "y"]);
    assert_eq!(rm.env, vec![("X".into(), "1".into())]);
    assert_eq!(rm.wrappers, vec!["env"]);
}

#[test]
fn env_split_string_is_opaque() {
    assert_eq!(kinds(&clean("env -S 'rm -rf /'")), vec![OpaqueKind::EnvSplitString]);
}

#[test]
fn sudo_with_options() {
    let a = clean("sudo -u root -E rm -rf /x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "/x"]);
    assert_eq!(rm.wrappers, vec!["sudo"]);
    assert_eq!(only(&a, "sudo").argv[0], "sudo");
}

#[test]
fn doas() {
    assert_eq!(only(&clean("doas -u root rm x"), "rm").wrappers, vec!["doas"]);
}

#[test]
fn timeout_duration_is_skipped() {
    let a = clean("timeout -s KILL 5 rm x");
    assert_eq!(only(&a, "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("timeout 5 rm x"), "rm").wrappers, vec!["timeout"]);
}

#[test]
fn nice_adjustment_is_skipped() {
    assert_eq!(only(&clean("nice -n 5 rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("nice -5 rm x"), "rm").argv, vec!["rm", "x"]);
}

#[test]
fn nohup_in_background() {
    let a = clean("nohup rm x &");
    assert_eq!(argvs(&a), vec![vec!["nohup", "rm", "x"], vec!["rm", "x"]]);
}

#[test]
fn time_wrapper() {
    assert_eq!(only(&clean("time rm x"), "rm").wrappers, vec!["time"]);
}

#[test]
fn command_and_builtin() {
    assert_eq!(only(&clean("command rm x"), "rm").wrappers, vec!["command"]);
    assert_eq!(only(&clean("command -p rm x"), "rm").argv, vec!["rm", "x"]);
    assert!(clean("command -v rm").commands.iter().all(|c| c.program == "command"));
    assert_eq!(only(&clean("builtin echo hi"), "echo").argv, vec!["echo", "hi"]);
}

#[test]
fn exec_wrapper() {
    assert_eq!(only(&clean("exec rm x"), "rm").wrappers, vec!["exec"]);
}

#[test]
fn nested_wrappers_are_listed_outermost_first() {
    let a = clean("sudo env X=1 timeout 5 nice rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.wrappers, vec!["sudo", "env", "timeout", "nice"]);
    assert_eq!(rm.env, vec![("X".into(), "1".into())]);
}

#[test]
fn xargs_inner_command_is_dynamic() {
    let a = clean("find . -name '*.o' | xargs -0 -n 1 rm -f");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-f"]);
    assert_eq!(rm.wrappers, vec!["xargs"]);
    assert!(rm.dynamic);
    assert_eq!(only(&clean("xargs rm"), "rm").argv, vec!["rm"]);
    assert_eq!(only(&clean("xargs -I{} cp {} /tmp"), "cp").argv, vec!["cp", "{}", "/tmp"]);
}

#[test]
fn find_exec() {
    let a = clean("find . -name x -exec rm {} \\; -execdir ls {} +");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "{}"]);
    assert_eq!(rm.wrappers, vec!["find"]);
    assert!(!rm.dynamic);
    assert_eq!(only(&a, "ls").argv, vec!["ls", "{}"]);
}

#[test]
fn find_delete_is_a_synthetic_find_delete_command() {
    let a = clean("find /tmp build -name '*.o' -delete");
    assert_eq!(
        argvs(&a),
        vec![
            vec!["find", "/tmp", "build", "-name", "*.o", "-delete"],
            vec!["find", "-delete", "/tmp", "build"]
        ]
    );
    assert_eq!(a.commands[1].wrappers, vec!["find"]);
    assert_eq!(argvs(&clean("find . -name x")), vec![vec!["find", ".", "-name", "x"]]);
}

#[test]
fn find_fprint_is_a_write() {
    let a = clean("find . -fprint out.txt");
    assert_eq!(a.redirections[0].target, "out.txt");
    assert!(a.redirections[0].write);
}

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

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
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

#[test]
fn write_redirection_to_authorized_keys() {
    let a = clean("echo key > ~/.ssh/authorized_keys");
    assert_eq!(a.redirections.len(), 1);
    let r = &a.redirections[0];
    assert_eq!(
        (r.op.as_str(), r.target.as_str(), r.write, r.dynamic),
        (">", "~/.ssh/authorized_keys", true, false)
    );
    assert_eq!(only(&a, "echo").argv, vec!["echo", "key"]);
}

#[test]
fn append_redirection() {
    let r = &clean("cat a >> b").redirections[0];
    assert_eq!((r.op.as_str(), r.target.as_str(), r.write), (">>", "b", true));
}

#[test]
fn ampersand_redirections() {
    let a = clean("cmd &> log; cmd &>> log2; cmd >| f; cmd 2>&1 >&f3");
    let ops: Vec<_> = a.redirections.iter().map(|r| (r.op.as_str(), r.target.as_str())).collect();
    assert_eq!(ops, vec![("&>", "log"), ("&>>", "log2"), (">|", "f"), (">&", "f3")]);
}

#[test]
fn input_redirection_is_a_read() {
    let r = &clean("wc -l < in.txt").redirections[0];
    assert_eq!((r.op.as_str(), r.target.as_str(), r.write), ("<", "in.txt", false));
}

#[test]
fn here_strings_and_heredocs_are_not_redirections() {
    assert!(clean("cat <<< hi").redirections.is_empty());
    assert!(clean("cat <<EOF\nx\nEOF").redirections.is_empty());
}

#[test]
fn tee_targets_are_writes() {
    let a = clean("echo x | tee -a ~/.bashrc other");
    let ts: Vec<_> = a.redirections.iter().map(|r| (r.op.as_str(), r.target.as_str(), r.write)).collect();
    assert_eq!(ts, vec![("tee -a", "~/.bashrc", true), ("tee -a", "other", true)]);
}

#[test]
fn dev_tcp_is_opaque() {
    let a = clean("exec 3<>/dev/tcp/host/80");
    assert_eq!(kinds(&a), vec![OpaqueKind::NetworkRedirection]);
    assert_eq!(a.redirections[0].op, "<>");
    assert_eq!(a.redirections[0].fd.as_deref(), Some("3"));
    assert_eq!(kinds(&clean("echo x > /dev/udp/h/53")), vec![OpaqueKind::NetworkRedirection]);
}

#[test]
fn dev_null_is_reported_like_any_file() {
    let a = clean("ls 2>/dev/null");
    assert_eq!(argvs(&a), vec![vec!["ls"]]);
    let r = &a.redirections[0];
    assert_eq!((r.fd.as_deref(), r.op.as_str(), r.target.as_str()), (Some("2"), ">", "/dev/null"));
    assert!(a.opaque.is_empty());
}

#[test]
fn dynamic_redirection_target() {
    assert!(clean("echo > \"$HOME/x\"").redirections[0].dynamic);
}

#[test]
fn quoted_separators_are_one_argument() {
    let a = clean("echo \"a; rm -rf /\"");
    assert_eq!(argvs(&a), vec![vec!["echo", "a; rm -rf /"]]);
}

#[test]
fn comments_are_ignored() {
    assert_eq!(argvs(&clean("ls # ; rm -rf /")), vec![vec!["ls"]]);
}

#[test]
fn heredoc_body_is_data() {
    assert_eq!(argvs(&clean("cat <<EOF\nrm x\nEOF")), vec![vec!["cat"]]);
    assert_eq!(argvs(&clean("cat <<'EOF'\n$(rm x)\nEOF")), vec![vec!["cat"]]);
}

#[test]
fn unquoted_heredoc_substitutions_run() {
    assert_eq!(programs(&clean("cat <<EOF\n$(rm x)\nEOF")), vec!["cat", "rm"]);
}

#[test]
fn heredoc_followed_by_pipeline() {
    assert_eq!(programs(&clean("cat <<EOF | sh\nrm x\nEOF")), vec!["cat", "sh"]);
    assert_eq!(kinds(&clean("cat <<EOF | sh\nrm x\nEOF")), vec![OpaqueKind::StdinCode]);
}

#[test]
fn syntax_error_is_flagged() {
    assert!(analyze("if then fi (").parse_errors);
    assert!(analyze("echo 'unterminated").parse_errors);
}

#[test]
fn size_bound() {
    let script = "a".repeat(MAX_SCRIPT_BYTES + 1);
    let a = analyze(&script);
    assert_eq!(kinds(&a), vec![OpaqueKind::TooLarge]);
    assert!(a.commands.is_empty());
    assert!(!a.is_fully_static());
}

#[test]
fn deep_nesting_is_bounded() {
    let script = format!("{}ls{}", "(".repeat(2000), ")".repeat(2000));
    let a = analyze(&script);
    assert!(kinds(&a).contains(&OpaqueKind::TooDeep));
}

#[test]
fn negation_and_declarations() {
    let a = clean("! rm y; local z=1; unset q");
    assert_eq!(argvs(&a), vec![vec!["rm", "y"], vec!["local", "z=1"], vec!["unset", "q"]]);
}

#[test]
fn globs_and_tilde_stay_literal() {
    let a = clean("rm -rf *.txt ~/x {a,b}");
    assert_eq!(a.commands[0].argv, vec!["rm", "-rf", "*.txt", "~/x", "{a,b}"]);
    assert!(!a.commands[0].dynamic);
}

#[test]
fn opaque_text_is_the_command_source() {
    let a = clean("curl x | sh");
    assert_eq!(a.opaque[0].text, "sh");
}

// More wrappers: each must report the command it runs, with exact option parsing; unknown options fail
// closed (`WrapperOption`), remote commands are `RemoteCommand` and never local commands.

fn redirs(a: &ShellAnalysis) -> Vec<(&str, &str, bool)> {
    a.redirections.iter().map(|r| (r.op.as_str(), r.target.as_str(), r.write)).collect()
}

#[test]
fn watch_runs_its_words_through_sh() {
    let a = clean("watch -n 1 rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "x"]);
    assert_eq!(rm.wrappers, vec!["watch"]);
    assert!(a.opaque.is_empty());
    for script in
        ["watch -n1 rm x", "watch --interval=2 rm x", "watch --interval 2 -d rm x", "watch -dtb rm x"]
    {
        assert_eq!(only(&clean(script), "rm").argv, vec!["rm", "x"], "{script}");
    }
    // The words are joined and parsed by `sh -c`: a quoted list is two commands.
    let b = clean("watch 'ls; rm -rf ~'");
    assert_eq!(only(&b, "rm").argv, vec!["rm", "-rf", "~"]);
    assert_eq!(only(&b, "ls").wrappers, vec!["watch"]);
    // `-d` takes its argument only attached: `-d rm` is the flag then the command.
    assert_eq!(only(&clean("watch -d rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("watch -dpermanent rm x"), "rm").argv, vec!["rm", "x"]);
}

#[test]
fn watch_exec_does_not_use_a_shell() {
    let a = clean("watch -x rm -rf 'a b'");
    assert_eq!(only(&a, "rm").argv, vec!["rm", "-rf", "a b"]);
    assert_eq!(kinds(&clean("watch \"$CMD\"")), vec![OpaqueKind::ShellCode]);
}

#[test]
fn unknown_wrapper_options_fail_closed() {
    for script in [
        "watch --bogus rm x",
        "watch --int=1 rm x",
        "stdbuf -z rm x",
        "setsid --bogus rm x",
        "ionice -X rm x",
        "taskset -z 1 rm x",
        "chroot --bogus /srv rm x",
        "flock -Q l rm x",
        "su -Z -c 'rm x'",
        "script -Z -c 'rm x'",
        "nsenter --bogus rm x",
        "unshare -Z rm x",
        "systemd-run --bogus rm x",
        "parallel --bogus rm ::: a",
        "unbuffer -x rm",
        "busybox --bogus rm",
    ] {
        let a = analyze(script);
        assert!(kinds(&a).contains(&OpaqueKind::WrapperOption), "{script}: {:?}", a.opaque);
        assert!(!a.is_fully_static(), "{script}");
    }
    // The command is still reported, found by taking the option as a flag.
    assert_eq!(only(&clean("watch --bogus rm x"), "rm").argv, vec!["rm", "x"]);
    // An option missing its argument is refused too.
    assert_eq!(kinds(&clean("watch -n")), vec![OpaqueKind::WrapperOption]);
}

#[test]
fn su_c_is_shell_code() {
    for script in [
        "su -c 'rm x'",
        "su -c 'rm x' root",
        "su - root -c 'rm x'",
        "su root -c 'rm x'",
        "su -l root --command='rm x'",
        "su --command 'rm x' -s /bin/bash root",
        "su -mc 'rm x'",
        "su --session-command='rm x' root",
        "su - -c 'rm x' root",
        "su root -l -c 'rm x'",
        "su root -- -c 'rm x'",
    ] {
        let a = clean(script);
        let rm = only(&a, "rm");
        assert_eq!(rm.argv, vec!["rm", "x"], "{script}");
        assert_eq!(rm.wrappers, vec!["su"], "{script}");
        assert!(a.opaque.is_empty(), "{script}: {:?}", a.opaque);
    }
    assert!(clean("su - root").opaque.is_empty());
    assert_eq!(kinds(&clean("echo 'rm x' | su")), vec![OpaqueKind::StdinCode]);
    assert_eq!(kinds(&clean("su -s /usr/bin/python3 -c 'x' root")), vec![OpaqueKind::ShellCode]);
    assert_eq!(kinds(&clean("su root extra args")), vec![OpaqueKind::WrapperOption]);
    assert_eq!(kinds(&clean("su -c \"$X\"")), vec![OpaqueKind::ShellCode]);
}

#[test]
fn runuser_user_runs_the_command_directly() {
    let a = clean("runuser -u bob -- rm -rf x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "x"]);
    assert_eq!(rm.wrappers, vec!["runuser"]);
    assert_eq!(only(&clean("runuser -u bob rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("runuser --user=bob -g wheel rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(only(&clean("runuser - bob -c 'rm x'"), "rm").wrappers, vec!["runuser"]);
    assert_eq!(kinds(&clean("runuser -u bob -c 'rm x'")), vec![OpaqueKind::WrapperOption]);
}

#[test]
fn sg_command_is_shell_code() {
    let a = clean("sg wheel -c 'rm x; ls'");
    assert_eq!(only(&a, "rm").wrappers, vec!["sg"]);
    assert_eq!(programs(&a), vec!["sg", "rm", "ls"]);
    assert_eq!(only(&clean("sg - docker 'rm x'"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(kinds(&clean("echo 'rm x' | sg wheel")), vec![OpaqueKind::StdinCode]);
    let b = clean("sg wheel rm x");
    assert_eq!(kinds(&b), vec![OpaqueKind::WrapperOption]);
    assert_eq!(only(&b, "rm").argv, vec!["rm", "x"]);
}

#[test]
fn script_command_and_log_files() {
    let a = clean("script -qc 'rm x' out.log");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "x"]);
    assert_eq!(rm.wrappers, vec!["script"]);
    assert_eq!(redirs(&a), vec![("script", "out.log", true)]);
    // getopt permutes: options may follow the file.
    let b = clean("script out.log -q -c 'rm y'");
    assert_eq!(only(&b, "rm").argv, vec!["rm", "y"]);
    assert_eq!(redirs(&b), vec![("script", "out.log", true)]);
    assert_eq!(redirs(&clean("script -c ls")), vec![("script", "typescript", true)]);
    assert_eq!(
        redirs(&clean("script -c ls -O o.log -T t.log")),
        vec![("script", "o.log", true), ("script", "t.log", true)]
    );
    assert_eq!(kinds(&clean("echo 'rm x' | script -q /dev/null")), vec![OpaqueKind::StdinCode]);
    assert!(analyze("script --command='rm x' f").commands.iter().any(|c| c.program == "rm"));
}

#[test]
fn flock_command_forms() {
    let a = clean("flock -n -w 5 build.lock rm -rf target");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "target"]);
    assert_eq!(rm.wrappers, vec!["flock"]);
    assert_eq!(redirs(&a), vec![("flock", "build.lock", true)]);
    let b = clean("flock build.lock -c 'rm x && ls'");
    assert_eq!(programs(&b), vec!["flock", "rm", "ls"]);
    assert_eq!(only(&b, "rm").wrappers, vec!["flock"]);
    assert_eq!(only(&clean("flock --timeout=3 -x l --command 'rm x'"), "rm").argv, vec!["rm", "x"]);
    // `flock FD` locks an open descriptor and runs nothing.
    let c = clean("flock -n 9");
    assert_eq!(programs(&c), vec!["flock"]);
    assert!(c.redirections.is_empty());
    assert_eq!(kinds(&clean("flock l -c 'rm x' extra")), vec![OpaqueKind::WrapperOption]);
}

#[test]
fn chroot_runs_its_command_or_a_shell() {
    let a = clean("chroot --userspec=1000:1000 /srv/root rm -rf /");
    assert_eq!(only(&a, "rm").argv, vec!["rm", "-rf", "/"]);
    assert_eq!(only(&a, "rm").wrappers, vec!["chroot"]);
    assert_eq!(only(&clean("chroot --groups wheel /srv rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(kinds(&clean("echo 'rm x' | chroot /srv")), vec![OpaqueKind::StdinCode]);
    assert!(clean("chroot /srv").opaque.is_empty());
}

#[test]
fn busybox_applet_is_the_program() {
    let a = clean("busybox rm -rf x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "-rf", "x"]);
    assert_eq!(rm.wrappers, vec!["busybox"]);
    let b = clean("busybox sh -c 'rm y'");
    assert_eq!(only(&b, "rm").wrappers, vec!["busybox", "sh"]);
    assert_eq!(kinds(&clean("curl x | busybox sh")), vec![OpaqueKind::StdinCode]);
    assert_eq!(programs(&clean("busybox --list")), vec!["busybox"]);
}

#[test]
fn stdbuf_ionice_setsid_taskset_unbuffer() {
    for (script, wrapper) in [
        ("stdbuf -oL rm x", "stdbuf"),
        ("stdbuf -o L -e0 rm x", "stdbuf"),
        ("stdbuf --output=L rm x", "stdbuf"),
        ("ionice -c 3 rm x", "ionice"),
        ("ionice -c2 -n7 -t rm x", "ionice"),
        ("ionice --class idle rm x", "ionice"),
        ("setsid rm x", "setsid"),
        ("setsid -fw rm x", "setsid"),
        ("taskset 0x3 rm x", "taskset"),
        ("taskset -c 0-3 rm x", "taskset"),
        ("taskset --cpu-list 1,2 rm x", "taskset"),
        ("unbuffer rm x", "unbuffer"),
        ("unbuffer -p rm x", "unbuffer"),
    ] {
        let a = clean(script);
        let rm = only(&a, "rm");
        assert_eq!(rm.argv, vec!["rm", "x"], "{script}");
        assert_eq!(rm.wrappers, vec![wrapper], "{script}");
        assert!(a.opaque.is_empty(), "{script}: {:?}", a.opaque);
    }
    // With a pid, ionice and taskset change a running process and run nothing.
    assert_eq!(programs(&clean("ionice -c 3 -p 123 456")), vec!["ionice"]);
    assert_eq!(programs(&clean("taskset -p 0x3 123")), vec!["taskset"]);
}

#[test]
fn nsenter_and_unshare() {
    for script in [
        "nsenter -t 1 -m -u -i -n -p rm x",
        "nsenter --target=1 --mount=/proc/1/ns/mnt rm x",
        "nsenter -a -t 1 -- rm x",
        "unshare -r rm x",
        "unshare --map-user=0 --fork --pid --mount-proc rm x",
        "unshare -Ufp -R /srv -w / rm x",
    ] {
        let a = clean(script);
        assert_eq!(only(&a, "rm").argv, vec!["rm", "x"], "{script}");
        assert!(a.opaque.is_empty(), "{script}: {:?}", a.opaque);
    }
    assert_eq!(only(&clean("unshare -r rm x"), "rm").wrappers, vec!["unshare"]);
    assert_eq!(kinds(&clean("echo 'rm x' | nsenter -t 1 -a")), vec![OpaqueKind::StdinCode]);
}

#[test]
fn systemd_run_command_environment_and_properties() {
    let a = clean("systemd-run --user --scope -p MemoryMax=1G -E LANG=C rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "x"]);
    assert_eq!(rm.wrappers, vec!["systemd-run"]);
    assert_eq!(rm.env, vec![("LANG".into(), "C".into())]);
    assert!(a.opaque.is_empty());
    assert_eq!(only(&clean("systemd-run --unit=x --wait -t rm x"), "rm").argv, vec!["rm", "x"]);
    assert_eq!(
        kinds(&clean("systemd-run -p ExecStartPre='/bin/rm -rf /' true")),
        vec![OpaqueKind::WrapperOption]
    );
    assert_eq!(kinds(&clean("systemd-run -E LD_PRELOAD=/x.so ls")), vec![OpaqueKind::CodeInjectingVariable]);
    let remote = clean("systemd-run -H host rm x");
    assert_eq!(kinds(&remote), vec![OpaqueKind::RemoteCommand]);
    assert_eq!(programs(&remote), vec!["systemd-run"]);
}

#[test]
fn parallel_template_is_shell_code_with_dynamic_arguments() {
    let a = clean("parallel rm {} ::: a b");
    let rm = only(&a, "rm");
    assert_eq!(rm.argv, vec!["rm", "{}"]);
    assert_eq!(rm.wrappers, vec!["parallel"]);
    assert!(rm.dynamic);
    assert!(a.opaque.is_empty());
    let b = clean("parallel -j4 --keep-order 'gzip {}; rm {}' ::: *.log");
    assert_eq!(programs(&b), vec!["parallel", "gzip", "rm"]);
    assert!(b.commands[1..].iter().all(|c| c.dynamic && c.wrappers == ["parallel"]));
    assert_eq!(only(&clean("parallel -q rm {} ::: 'a b'"), "rm").argv, vec!["rm", "{}"]);
    assert_eq!(only(&clean("ls | parallel rm"), "rm").argv, vec!["rm"]);
    assert!(clean("parallel 'sort {} > {}.sorted' ::: a").redirections[0].dynamic);
    // Without a template, static arguments are the commands; inputs read at run time are opaque.
    let c = clean("parallel ::: 'rm x' 'ls -l'");
    assert_eq!(argvs(&c)[1..], [vec!["rm", "x"], vec!["ls", "-l"]]);
    assert_eq!(kinds(&clean("parallel < cmds.txt")), vec![OpaqueKind::StdinCode]);
    assert_eq!(kinds(&clean("parallel :::: cmds.txt")), vec![OpaqueKind::ShellCode]);
    assert_eq!(kinds(&clean("parallel echo '{= $_ = uc =}' ::: a")), vec![OpaqueKind::InterpreterCode]);
    assert_eq!(kinds(&clean("parallel -S host rm ::: a")), vec![OpaqueKind::RemoteCommand]);
    assert_eq!(
        redirs(&clean("parallel --joblog jobs.log ls ::: a")),
        vec![("parallel --joblog", "jobs.log", true)]
    );
}

#[test]
fn ssh_command_runs_remotely() {
    for script in [
        "ssh host rm -rf /",
        "ssh -p 2222 -i key user@host 'rm -rf /'",
        "ssh host -t rm x",
        "ssh -o StrictHostKeyChecking=no host -- ls",
        "echo 'rm x' | ssh host",
        "ssh -o RemoteCommand=ls host",
    ] {
        let a = clean(script);
        assert_eq!(kinds(&a), vec![OpaqueKind::RemoteCommand], "{script}");
        assert!(a.commands.iter().all(|c| c.program != "rm" && c.program != "ls"), "{script}");
        assert_eq!(a.commands.iter().filter(|c| c.program == "ssh").count(), 1, "{script}");
    }
    assert!(clean("ssh host").opaque.is_empty());
    assert!(clean("ssh -N -L 8080:localhost:80 host").opaque.is_empty());
    // Options that run local commands: opaque, and the inline command is judged.
    let a = clean("ssh -o ProxyCommand='rm -rf ~' host");
    assert_eq!(kinds(&a), vec![OpaqueKind::WrapperOption]);
    assert_eq!(only(&a, "rm").wrappers, vec!["ssh"]);
    assert_eq!(kinds(&clean("ssh -F ./evil_config host")), vec![OpaqueKind::WrapperOption]);
    assert!(clean("ssh -F /dev/null host").opaque.is_empty());
    assert_eq!(redirs(&clean("ssh -E ssh.log -N host")), vec![("ssh -E", "ssh.log", true)]);
    assert!(kinds(&analyze("ssh -Z host ls")).contains(&OpaqueKind::WrapperOption));
}

#[test]
fn awk_output_redirections_are_opaque() {
    for script in [
        "awk '{print > \"out.txt\"}' f",
        "awk '{print $1 >> \"/tmp/x\"}' f",
        "awk '{printf \"%s\\n\", $1 > $2}' f",
        "awk '{print | \"sh\"}' f",
        "awk '$1 > 5 { print $2 > \"big\" }' f",
        "gawk '@load \"filefuncs\"; BEGIN {}'",
    ] {
        assert_eq!(kinds(&clean(script)), vec![OpaqueKind::AwkCode], "{script}");
    }
    for script in [
        "awk '$1 > 5' f",
        "awk '{ if ($1 > 5) print $2 }' f",
        "awk '{print ($1 > 5)}' f",
        "awk '{print \"a > b\"}' f",
    ] {
        assert!(clean(script).opaque.is_empty(), "{script}");
    }
}

#[test]
fn sed_in_place_files_are_writes() {
    let a = clean("sed -i 's/a/b/' f.txt ../g.txt");
    assert!(a.opaque.is_empty());
    assert_eq!(redirs(&a), vec![("sed -i", "f.txt", true), ("sed -i", "../g.txt", true)]);
    assert_eq!(redirs(&clean("sed -i -e 's/a/b/' -e '/x/d' f")), vec![("sed -i", "f", true)]);
    assert_eq!(
        redirs(&clean("sed --in-place=.orig 's/a/b/' d/f")),
        vec![("sed -i", "d/f", true), ("sed -i", "d/f.orig", true)]
    );
    assert_eq!(
        redirs(&clean("sed -i'bak/*' 's/a/b/' d/f")),
        vec![("sed -i", "d/f", true), ("sed -i", "bak/f", true)]
    );
    assert_eq!(redirs(&clean("sed -ni 's/a/b/p' f")), vec![("sed -i", "f", true)]);
    // `-ie` is `-i` with suffix `e`, not a script option.
    assert_eq!(redirs(&clean("sed -ie 's/a/b/' f")), vec![("sed -i", "f", true), ("sed -i", "fe", true)]);
    assert!(clean("sed 's/a/b/' f").redirections.is_empty());
    assert!(clean("sed -i \"s/a/b/\" \"$F\"").redirections[0].dynamic);
    // perl -i is interpreter code anyway.
    assert_eq!(kinds(&clean("perl -pi -e 's/a/b/' f")), vec![OpaqueKind::InterpreterCode]);
    assert_eq!(kinds(&clean("perl -i.bak -pe 's/a/b/' f")), vec![OpaqueKind::InterpreterCode]);
}

#[test]
fn wrappers_nest() {
    let a = clean("sudo -u bob watch -n 5 flock l timeout 3 busybox rm x");
    let rm = only(&a, "rm");
    assert_eq!(rm.wrappers, vec!["sudo", "watch", "flock", "timeout", "busybox"]);
    assert_eq!(rm.argv, vec!["rm", "x"]);
}

#[test]
fn older_wrappers_fail_closed_on_options_they_do_not_know() {
    for script in [
        "sudo --bogus rm -rf /",
        "sudo -Z rm x",
        "timeout --bogus 5 rm x",
        "nice -z rm x",
        "xargs --frobnicate rm",
        "env --nope rm x",
        "time -Q rm x",
        "exec -z rm x",
        "doas -x rm x",
    ] {
        let a = analyze(script);
        assert!(kinds(&a).contains(&OpaqueKind::WrapperOption), "{script}: {:?}", kinds(&a));
        assert!(
            programs(&a).contains(&"rm"),
            "the guessed command is still judged: {script}: {:?}",
            programs(&a)
        );
    }
    for script in [
        "sudo -u root -E rm x",
        "sudo -iu root rm x",
        "sudo --user=root --preserve-env=PATH rm x",
        "timeout --signal=KILL -k 5 10 rm x",
        "timeout -v 5 rm x",
        "xargs -0 -n1 -I{} rm {}",
        "xargs -i rm {}",
        "nice -10 rm x",
        "nice -n 5 rm x",
        "env -i -u X FOO=1 rm x",
        "time -p rm x",
        "exec -a name rm x",
        "doas -u root rm x",
        "command -p rm x",
    ] {
        let a = analyze(script);
        assert!(!kinds(&a).contains(&OpaqueKind::WrapperOption), "{script}: {:?}", kinds(&a));
        assert!(programs(&a).contains(&"rm"), "{script}: {:?}", programs(&a));
    }
}
