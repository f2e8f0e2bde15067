//! Behaviour of the shell analyzer on the constructs a policy must see through: lists and compound
//! commands, substitutions, quoting, comments, heredocs, syntax errors and the size and depth bounds.
//! Wrappers are in `shell_wrappers.rs`, nested shells and opaque code in `shell_opaque.rs`,
//! redirections in `shell_redirections.rs`.

// Test helpers run only inside tests; panicking on a missing command is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_policy::shell::{MAX_SCRIPT_BYTES, OpaqueKind, analyze};

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
fn globs_and_tilde_stay_literal_and_braces_expand() {
    let a = clean("rm -rf *.txt ~/x {a,b}");
    assert_eq!(a.commands[0].argv, vec!["rm", "-rf", "*.txt", "~/x", "a", "b"]);
    assert!(!a.commands[0].dynamic);
}

#[test]
fn opaque_text_is_the_command_source() {
    let a = clean("curl x | sh");
    assert_eq!(a.opaque[0].text, "sh");
}
