//! Issue 51, the third red team's judge findings through every entry point they were found at: `policy
//! check` (the whole corpus `tests/policy-corpus/009_red_team_round_three`), the Claude Code hook binary,
//! `portcullis call`, and `portcullis serve` with the official SDK client. Each payload would make a
//! program run code, write a protected file or print a secret the judge did not see: none may be allowed,
//! and none of the traces they would leave may appear.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{hook_decision, node_modules, portcullis, serve};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The red team's broad policy: reads, prints and file tools allowed (with the programs they allowed
/// as "reads or prints"); everything else asks, and nobody answers within a second.
const POLICY: &str = r#"{
  "grants": [ { "name": "agent", "allow": ["shell", "read", "write", "edit"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "reads", "pattern": [["ls", "cat", "echo", "grep", "rg", "git", "env", "find", "sed", "test",
        "xxd", "tar", "awk", "printf", "head", "true"]], "decision": "allow", "match": ["ls"] },
      { "id": "files", "pattern": [["touch", "mkdir", "cp"]], "decision": "allow", "match": ["touch x"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 1 }
}"#;

const SECRET: &str = "OPERATOR-SECRET-51";
const KEY: &str = "PRIVATE KEY 51";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// A project with the policy, a README, a script `rg --pre` would run, and a home with the operator's
/// credential and a private key.
fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("proj/.portcullis")).unwrap();
    std::fs::create_dir_all(base.join("home/.config/portcullis")).unwrap();
    std::fs::create_dir_all(base.join("home/.ssh")).unwrap();
    std::fs::write(base.join("home/.config/portcullis/operator-token"), SECRET).unwrap();
    std::fs::write(base.join("home/.ssh/id_rsa"), KEY).unwrap();
    std::fs::write(base.join("proj/.portcullis/policy.json"), POLICY).unwrap();
    std::fs::write(base.join("proj/README.md"), "hello\n").unwrap();
    let pre = base.join("proj/pre.sh");
    std::fs::write(&pre, "#!/bin/sh\ntouch MARK\ncat \"$1\"\n").unwrap();
    std::fs::set_permissions(&pre, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (dir, base)
}

/// Each finding's payloads as an agent would send them (`{home}` is the home folder).
fn payloads(home: &Path) -> Vec<(&'static str, String)> {
    let home = home.display();
    vec![
        ("1: braces build rg --pre", "rg {--pre,./pre.sh} hello".to_owned()),
        (
            "1: braces build git --output",
            "git log -1 --format=x {--output,.portcullis/policy.json}".to_owned(),
        ),
        ("4: braces build find -exec", "find . -name README.md {-exec,sh} -c 'touch MARK' \\;".to_owned()),
        (
            "4: braces build -exec from its halves",
            "find . -name README.md -ex{ec,} sh -c 'touch MARK' \\;".to_owned(),
        ),
        ("3: env -C moves the operand home", format!("env -C {home} cat .config/portcullis/operator-token")),
        ("3: an abbreviated --chdir", "env --ch=.. touch MARK".to_owned()),
        ("3: -C in a cluster", "env -iC .. touch MARK".to_owned()),
        ("5: sed --expr is --expression", "sed --expr='1e touch MARK' README.md".to_owned()),
        ("5: sed --e is --expression", "sed --e='1e touch MARK' README.md".to_owned()),
        ("6: test -v evaluates a subscript", "test -v 'a[$(touch MARK)]'".to_owned()),
        ("6: printf -v evaluates a subscript", "printf -v 'a[$(touch MARK)]' x".to_owned()),
        ("7: xxd writes its second operand", "xxd README.md .portcullis/policy.json".to_owned()),
        ("7: sed r reads the file it names", format!("sed 1r{home}/.ssh/id_rsa README.md")),
        ("7: find -delete", "find .portcullis -delete".to_owned()),
    ]
}

/// No payload left a trace: no marker in the project or beside it, the policy as it was.
fn untouched(base: &Path, what: &str) {
    assert!(!base.join("proj/MARK").exists() && !base.join("MARK").exists(), "{what}: the payload ran");
    let policy = std::fs::read_to_string(base.join("proj/.portcullis/policy.json")).unwrap_or_default();
    assert_eq!(policy, POLICY, "{what}: the policy file changed");
}

#[test]
fn policy_check_judges_every_case_of_the_third_red_team_corpus() {
    let corpus = repo_root().join("tests/policy-corpus/009_red_team_round_three");
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus.join("cases.json")).unwrap()).unwrap();
    assert!(cases.len() >= 60);
    let (_dir, base) = project();
    for case in &cases {
        let command = case["shell"].as_str().unwrap();
        let out = portcullis(&base)
            .args(["policy", "check", "--json", "--policy"])
            .arg(corpus.join("policy.json"))
            .arg("--")
            .arg(command)
            .current_dir(&corpus)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["decision"], case["expect"], "{command:?}: {}", case["why"]);
    }
}

#[test]
fn the_hook_allows_none_of_the_payloads() {
    let (_dir, base) = project();
    for (what, command) in payloads(&base.join("home")) {
        assert_ne!(
            hook_decision(&base, "Bash", json!({ "command": command })),
            "allow",
            "{what}: {command:?}"
        );
    }
    // Still allowed: the same programs without the constructs.
    for command in
        ["rg hello", "env -C . cat README.md", "sed -n 1p README.md", "echo {a,b}", "xxd README.md"]
    {
        assert_eq!(hook_decision(&base, "Bash", json!({ "command": command })), "allow", "{command:?}");
    }
}

#[test]
fn portcullis_call_runs_none_of_the_payloads() {
    let (_dir, base) = project();
    for (what, command) in payloads(&base.join("home")) {
        let out = portcullis(&base)
            .args(["call", "shell", "--approver", "deny", "--db"])
            .arg(base.join("call.db"))
            .arg(json!({ "command": command }).to_string())
            .current_dir(base.join("proj"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{what}: {printed}");
        assert!(!printed.contains(SECRET) && !printed.contains(KEY), "{what}: a secret was printed");
        untouched(&base, what);
    }
}

#[test]
fn serve_with_the_sdk_client_runs_none_of_the_payloads() {
    node_modules();
    let served = serve(POLICY);
    let project = served.project();
    std::fs::write(project.join("README.md"), "hello\n").unwrap();
    let home = served.dir.path().join("home");
    let steps: Vec<Value> = payloads(&home)
        .iter()
        .map(|(_, command)| json!({"op": "call", "name": "shell", "arguments": {"command": command}}))
        .collect();
    let report = served.agent(Value::Array(steps));
    for (i, (what, _)) in payloads(&home).iter().enumerate() {
        let result = &report["results"][i]["result"];
        assert_eq!(result["isError"], true, "{what}: {result}");
    }
    assert!(!project.join("MARK").exists(), "a payload ran through the gateway");
    // The hub still runs what is allowed, braces expanded as bash expands them.
    let report =
        served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo {a,b}-fine"}}]));
    assert_eq!(report["results"][0]["result"]["isError"], false, "{report}");
    assert_eq!(report["results"][0]["result"]["structuredContent"]["stdout"], "a-fine b-fine\n", "{report}");
}
