//! Policy documents: the committed JSON Schema is current, shipped policies load and pass their own
//! tests, load errors say file, line and column, rule examples are checked at load, and layers combine
//! with the strictest decision winning.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_policy::{
    Access, Decision, EvalContext, Policy, PolicyError, PolicyLayer, policy_json_schema,
};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Set PORTCULLIS_BLESS=1 to rewrite the committed schema after changing the document types.
#[test]
fn the_committed_json_schema_is_current() {
    let path = workspace().join("tool-manifests/schemas/policy.schema.json");
    let generated = serde_json::to_string_pretty(&policy_json_schema()).unwrap() + "\n";
    if std::env::var_os("PORTCULLIS_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: run `PORTCULLIS_BLESS=1 cargo test -p portcullis-policy --test integration documents` and commit it",
        path.display()
    );
}

#[test]
fn shipped_policies_reference_the_schema_load_and_hold_tests() {
    let dir = workspace().join("tool-manifests/policies");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["$schema"], "../schemas/policy.schema.json", "{}", path.display());
        // Their test cases are judged through the pipeline: crates/api/tests/integration/corpus_judged.rs.
        let policy = Policy::load(std::slice::from_ref(&path), Path::new("/home/agent/project"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!policy.test_calls(Some(Path::new("/home/agent"))).is_empty());
    }
    assert!(seen >= 1);
}

fn layer(source: &str, text: &str) -> Result<PolicyLayer, PolicyError> {
    PolicyLayer::parse(source, text, PathBuf::from("/project"))
}

#[test]
fn syntax_and_type_errors_give_file_line_and_column() {
    let err = layer("p.json", "{\n  \"commands\": {\n    \"rules\": [ {\"id\": \"x\", \"pattern\": [\"ls\"], \"decision\": \"maybe\"} ]\n  }\n}")
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("p.json:3:"), "{text}");
    assert!(
        text.contains("unknown variant `maybe`, expected one of `allow`, `contain`, `prompt`, `forbidden`"),
        "{text}"
    );
    assert_eq!(err.code(), "policy_syntax");

    let err = layer("p.json", "{\n \"comands\": {}\n}").unwrap_err().to_string();
    assert!(err.starts_with("p.json:2:") && err.contains("unknown field `comands`"), "{err}");
    let err = layer("p.json", "{ \"commands\": { \"rules\": [ ").unwrap_err().to_string();
    assert!(err.starts_with("p.json:1:"), "{err}");
}

#[test]
fn failing_examples_refuse_the_policy_and_name_rule_and_example() {
    let text = r#"{
  "commands": { "rules": [
    { "id": "git-read", "pattern": ["git", "status"], "decision": "allow",
      "match": ["git status", "git stash"] }
  ] }
}"#;
    let err = Policy::from_layers(vec![layer("user.json", text).unwrap()]).err().unwrap();
    let message = err.to_string();
    assert_eq!(err.code(), "policy_rule");
    assert!(message.starts_with("user.json:4:"), "{message}");
    assert!(
        message.contains("rule `git-read`: example \"git stash\" should match but does not"),
        "{message}"
    );

    let text = r#"{ "commands": { "rules": [
    { "id": "rm", "pattern": ["rm"], "decision": "prompt", "not_match": ["ls; rm x"] } ] } }"#;
    let message = Policy::from_layers(vec![layer("p.json", text).unwrap()]).err().unwrap().to_string();
    assert!(message.contains("example \"ls; rm x\" should not match but does"), "{message}");

    for (text, says) in [
        (
            r#"{ "commands": { "rules": [ { "id": "a", "pattern": [], "decision": "allow" } ] } }"#,
            "pattern is empty",
        ),
        (
            r#"{ "commands": { "rules": [ { "id": "a", "pattern": ["x"], "decision": "allow" }, { "id": "a", "pattern": ["y"], "decision": "allow" } ] } }"#,
            "duplicate rule id",
        ),
        (r#"{ "approvals": { "on_timeout": "allow" } }"#, "on_timeout must be"),
    ] {
        let message = Policy::from_layers(vec![layer("p.json", text).unwrap()]).err().unwrap().to_string();
        assert!(message.contains(says), "{message}");
    }
}

#[test]
fn layers_combine_and_the_strictest_wins() {
    let user = r#"{ "commands": { "default": "allow", "rules": [
        { "id": "user-allows-curl", "pattern": ["curl"], "decision": "allow" } ] },
      "grants": [ { "name": "user", "deny": ["shell_unsafe"] } ] }"#;
    let project = r#"{ "commands": { "rules": [
        { "id": "project-forbids-curl", "pattern": ["curl"], "decision": "forbidden", "justification": "no network" } ] },
      "grants": [ { "name": "project", "allow": ["shell", "read"] } ] }"#;
    let policy =
        Policy::from_layers(vec![layer("user.json", user).unwrap(), layer("project.json", project).unwrap()])
            .unwrap();
    let ctx = EvalContext { cwd: PathBuf::from("/project"), home: None };
    let e = policy.evaluate_command("curl https://x", &ctx);
    assert_eq!(e.decision, Decision::Forbidden);
    assert_eq!(e.matched_rules.len(), 2);
    let deciding = e.deciding_rule.unwrap();
    assert_eq!((deciding.id.as_str(), deciding.source.as_str()), ("project-forbids-curl", "project.json"));
    assert_eq!(deciding.line, 2, "the rule is declared on line 2 of project.json");
    assert!(e.reasons.iter().any(|r| r.contains("no network")));
    // The user's default allow is the only default set.
    assert_eq!(policy.evaluate_command("make", &ctx).decision, Decision::Allow);
    let grants = policy.grants();
    assert!(grants.permits("shell") && !grants.permits("write") && !grants.permits("shell_unsafe"));
    assert_eq!(policy.evaluate_path("/project/src/a.rs", Access::Write, &ctx).decision, Decision::Allow);
}

/// A matched rule names the line that declares it: the `"id"` member, not an earlier word that
/// happens to be spelled like the id, and not a same-named server.
#[test]
fn a_matched_rule_names_the_line_that_declares_it() {
    let text = r#"{
  "servers": [ { "id": "git", "command": "git-mcp" } ],
  "commands": {
    "rules": [
      { "id": "deploy", "pattern": ["git"], "decision": "allow" },
      { "id": "git",
        "pattern": ["git", "push"], "decision": "forbidden" }
    ]
  }
}"#;
    let policy = Policy::from_layers(vec![layer("p.json", text).unwrap()]).unwrap();
    let ctx = EvalContext { cwd: PathBuf::from("/project"), home: None };
    let e = policy.evaluate_command("git push origin", &ctx);
    let lines: Vec<(&str, usize)> = e.matched_rules.iter().map(|r| (r.id.as_str(), r.line)).collect();
    assert_eq!(lines, vec![("deploy", 5), ("git", 6)]);
    assert_eq!(e.deciding_rule.map(|r| r.line), Some(6));
    let server = policy.evaluate_mcp_tool("mcp:git:status");
    assert_eq!(server.deciding_rule.map(|r| (r.id, r.line)), Some(("server:git".to_owned(), 2)));
}

/// Issue 9, finding 1: a project layer (which an agent might have written) narrows, never widens, what
/// the user layer allows: not by rules, not by its default, not by roots, not by turning off deny globs.
#[test]
fn a_project_layer_cannot_widen_the_user_layer() {
    let user = r#"{ "commands": { "rules": [
        { "id": "user-reads", "pattern": [["ls", "cat", "echo"]], "decision": "allow" } ] },
      "paths": { "roots": [ { "path": "/home/u/proj", "access": "write" } ] } }"#;
    let project = r#"{ "commands": { "default": "allow", "rules": [
        { "id": "project-allows-sudo", "pattern": ["sudo"], "decision": "allow" },
        { "id": "project-forbids-cat", "pattern": ["cat"], "decision": "forbidden" } ] },
      "paths": { "roots": [ { "path": "/", "access": "write" } ], "default_deny": false } }"#;
    let user_layer =
        PolicyLayer::parse("user.json", user, PathBuf::from("/home/u/.config/portcullis")).unwrap();
    let project_layer = PolicyLayer::parse("project.json", project, PathBuf::from("/home/u/proj")).unwrap();
    let policy = Policy::from_layers(vec![user_layer, project_layer]).unwrap();
    let ctx = EvalContext { cwd: PathBuf::from("/home/u/proj"), home: Some(PathBuf::from("/home/u")) };
    let decide = |command: &str| policy.evaluate_command(command, &ctx);
    // The project's allow rule and allow default do not override the user layer's unset default (prompt).
    let sudo = decide("sudo ls");
    assert_eq!(sudo.decision, Decision::Prompt, "{:?}", sudo.reasons);
    assert_eq!(decide("make").decision, Decision::Prompt);
    // Narrowing works: the project forbids what the user allows.
    assert_eq!(decide("cat a").decision, Decision::Forbidden);
    assert_eq!(decide("ls").decision, Decision::Allow);
    // Roots are strictest-wins: the project's root "/" does not widen the user's.
    let bashrc = decide("echo x > ~/.bashrc");
    assert_eq!(bashrc.decision, Decision::Forbidden, "{:?}", bashrc.reasons);
    assert!(
        bashrc.reasons.iter().any(|r| r.contains("outside every write root of user.json")),
        "{:?}",
        bashrc.reasons
    );
    assert_eq!(decide("echo x > out.txt").decision, Decision::Allow);
    // One layer turning the built-in deny globs off does not turn them off for the other.
    assert_eq!(decide("echo x > .env").decision, Decision::Forbidden);
    // The default the policy reports is the strictest a layer sets.
    assert_eq!(policy.default_decision(), Decision::Prompt);
}
