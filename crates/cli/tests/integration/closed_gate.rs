//! Issue 39, the judge's findings through every entry point they were found at: `policy check`, the
//! Claude Code hook binary, `portcullis call`, and `portcullis serve` with the official SDK client. Each
//! payload would make bash run a program or touch a file the judge did not see; none may be allowed, and
//! none of the markers they would leave may appear.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{hook_decision, node_modules, portcullis, serve};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Reads, prints and file tools allowed; everything else asks, and nobody answers within a second.
const POLICY: &str = r#"{
  "grants": [ { "name": "agent", "allow": ["shell", "read", "write", "edit"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "reads", "pattern": [["ls", "cat", "echo", "grep", "rg", "git", "date", "head", "true", ":"]],
        "decision": "allow", "match": ["ls"] },
      { "id": "files", "pattern": [["touch", "mkdir", "cp"]], "decision": "allow", "match": ["touch x"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 1 }
}"#;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Payloads, each meant to create `MARK` in the project through a construct the judge once missed.
fn payloads() -> Vec<(&'static str, String)> {
    let make = "python3 -c \"open('MARK','w')\"";
    vec![
        ("heredoc backquotes", format!("cat <<EOF\n`{make}`\nEOF")),
        ("heredoc backquotes inside text", format!("cat <<EOF > notes.md\nsee `{make}` here\nEOF")),
        ("operand backquotes :-", format!("x=${{y:-`{make}`}}")),
        ("operand backquotes in [[ ]]", format!("[[ ${{y#`{make}`}} ]]")),
        ("operand backquotes /a/", format!("echo ${{y/a/`{make}`}}")),
        ("arithmetic on a name", "x='a[$(touch MARK)]'; ((x))".to_owned()),
        ("arithmetic expansion", "x='a[$(touch MARK)]'; echo $((x))".to_owned()),
        ("[[ -eq ]]", "x='a[$(touch MARK)]'; [[ x -eq 1 ]]".to_owned()),
        ("indirection", "x='a[$(touch MARK)]'; echo ${!x}".to_owned()),
        ("prompt expansion", "x='$(touch MARK)'; echo ${x@P}".to_owned()),
        ("[[ -v ]]", "x='$(touch MARK)'; [[ -v a[x] ]]".to_owned()),
        ("for (( ))", "x='a[$(touch MARK)]'; for ((i=x; i<1; i++)); do :; done".to_owned()),
    ]
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("proj/.portcullis")).unwrap();
    std::fs::create_dir_all(base.join("home/.config/portcullis")).unwrap();
    std::fs::create_dir_all(base.join("home/.ssh")).unwrap();
    std::fs::write(base.join("home/.ssh/id_rsa"), "PRIVATE KEY").unwrap();
    std::fs::write(base.join("proj/.portcullis/policy.json"), POLICY).unwrap();
    std::fs::write(base.join("proj/README.md"), "readme").unwrap();
    (dir, base)
}

#[test]
fn policy_check_judges_every_red_team_case_of_the_corpus() {
    let corpus = repo_root().join("tests/policy-corpus/008_red_team_judge");
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus.join("cases.json")).unwrap()).unwrap();
    assert!(cases.len() >= 60);
    let (_dir, base) = project();
    for case in &cases {
        let mut check = portcullis(&base);
        check.args(["policy", "check", "--json", "--policy"]).arg(corpus.join("policy.json"));
        let shown = match (case["shell"].as_str(), case["write"].as_str()) {
            (Some(command), _) => {
                check.arg("--").arg(command);
                command.to_owned()
            }
            (None, Some(path)) => {
                let call = json!({"name": "write", "arguments": {"path": path, "content": "x"}});
                check.arg("--call").arg(call.to_string());
                format!("write {path}")
            }
            _ => panic!("a case of an unknown kind: {case}"),
        };
        let out = check.current_dir(&corpus).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["decision"], case["expect"], "{shown:?}: {}", case["why"]);
    }
}

#[test]
fn the_hook_never_allows_what_bash_would_do_beyond_the_judgement() {
    let (_dir, base) = project();
    let home = base.join("home");
    std::os::unix::fs::symlink(home.join(".ssh"), base.join("proj/keys")).unwrap();
    let mut commands: Vec<String> = payloads().into_iter().map(|(_, c)| c).collect();
    commands.extend([
        // 6: `~+` is $PWD, which the script sets.
        format!("PWD={}/.config/portcullis; cat ~+/operator-token", home.display()),
        "PWD=/tmp; echo x > ~+/.bashrc".to_owned(),
        // 8: variables that make git load the project's own configuration or write anywhere.
        "HOME=. git status".to_owned(),
        "XDG_CONFIG_HOME=cfg git status".to_owned(),
        "GIT_TRACE=/tmp/trace git status".to_owned(),
        // 11: a recursive read that follows the link to the keys.
        "grep -R PRIVATE .".to_owned(),
        "rg -L PRIVATE".to_owned(),
    ]);
    for command in &commands {
        let decision = hook_decision(&base, "Bash", json!({ "command": command }));
        assert_ne!(decision, "allow", "{command:?}");
    }
    // 15: Glob and Grep are judged by the fixed start of their pattern too, not by `path` alone.
    let ssh = home.join(".ssh");
    for (tool, input) in [
        ("Glob", json!({ "pattern": format!("{}/*", ssh.display()) })),
        ("Glob", json!({ "pattern": "../home/.ssh/**" })),
        ("Glob", json!({ "pattern": "../home/.ssh/id_*", "path": base.join("proj") })),
        ("Glob", json!({ "pattern": "**/../../home/.ssh/*" })),
        ("Grep", json!({ "pattern": "PRIVATE", "glob": format!("{}/*", ssh.display()) })),
        ("Grep", json!({ "pattern": "PRIVATE", "path": ".", "glob": "../home/.ssh/*" })),
    ] {
        assert_ne!(hook_decision(&base, tool, input.clone()), "allow", "{tool} {input}");
    }
    for (tool, input) in [
        ("Glob", json!({ "pattern": "**/*.md" })),
        ("Glob", json!({ "pattern": "src/**/*.rs", "path": base.join("proj") })),
        ("Grep", json!({ "pattern": "readme", "glob": "*.md" })),
    ] {
        assert_eq!(hook_decision(&base, tool, input.clone()), "allow", "{tool} {input}");
    }
    // Still allowed: the same programs without the constructs.
    for command in ["git status", "grep -r PRIVATE .", "cat README.md", "LANG=C git status"] {
        assert_eq!(hook_decision(&base, "Bash", json!({ "command": command })), "allow", "{command:?}");
    }
}

#[test]
fn portcullis_call_runs_none_of_the_payloads() {
    let (_dir, base) = project();
    for (what, command) in payloads() {
        let out = portcullis(&base)
            .args(["call", "shell", "--approver", "deny", "--db"])
            .arg(base.join("call.db"))
            .arg(json!({ "command": command }).to_string())
            .current_dir(base.join("proj"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(!base.join("proj/MARK").exists(), "{what}: the payload ran");
    }
}

#[test]
fn serve_with_the_sdk_client_runs_none_of_the_payloads() {
    node_modules();
    let served = serve(POLICY);
    let steps: Vec<Value> = payloads()
        .iter()
        .map(|(_, command)| json!({"op": "call", "name": "shell", "arguments": {"command": command}}))
        .collect();
    let report = served.agent(Value::Array(steps));
    for (i, (what, _)) in payloads().iter().enumerate() {
        let result = &report["results"][i]["result"];
        assert_eq!(result["isError"], true, "{what}: {result}");
    }
    assert!(!served.project().join("MARK").exists(), "a payload ran through the gateway");
    // The hub still runs what is allowed.
    let report =
        served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo fine"}}]));
    assert_eq!(report["results"][0]["result"]["isError"], false, "{report}");
}

/// Finding 13: `ledger show` (and the tables of `ledger query`) print agent text through the one escape
/// the terminal approver uses: bidi overrides and isolates, zero-width and other format characters
/// are shown as escapes, never raw.
#[test]
fn ledger_show_escapes_bidi_and_format_characters() {
    let (_dir, base) = project();
    let db = base.join("bidi.db");
    let hidden = ["\u{202e}", "\u{2066}", "\u{2069}", "\u{200b}", "\u{feff}", "\u{2028}", "\u{e0041}"];
    let command = format!("echo safe{}", hidden.concat());
    let out = portcullis(&base)
        .args(["call", "shell", "--approver", "deny", "--db"])
        .arg(&db)
        .arg(json!({ "command": command }).to_string())
        .current_dir(base.join("proj"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let query = portcullis(&base).args(["ledger", "query", "--json", "--db"]).arg(&db).output().unwrap();
    let calls: Value = serde_json::from_slice(&query.stdout).unwrap();
    let id = calls["calls"][0]["call_id"].as_str().unwrap().to_owned();
    for args in [vec!["ledger", "show", id.as_str()], vec!["ledger", "query"]] {
        let shown = portcullis(&base).args(&args).arg("--db").arg(&db).output().unwrap();
        let text = String::from_utf8(shown.stdout).unwrap();
        for c in hidden {
            assert!(!text.contains(c), "{args:?} printed {:?} raw: {text}", c);
        }
        if args[1] == "show" {
            assert!(text.contains("safe") && text.contains("\\u{202e}"), "{args:?}: {text}");
        }
    }
}

/// Finding 12: MCP sessions are bounded. Past `--max-sessions` an `initialize` gets a JSON-RPC error that
/// says the bound (so 7,500 posts cannot fill the hub's memory); an idle session expires (its next
/// request is 404, as the MCP specification says, so a client starts a new one) and frees its place; a
/// `clientInfo` out of bounds is invalid params; the SDK client still works.
#[test]
fn mcp_sessions_are_capped_and_expire_when_idle() {
    node_modules();
    let served = crate::common::serve_with_args(POLICY, &[], &["--max-sessions", "3", "--session-idle", "2"]);
    let addr = served.mcp_url.strip_prefix("http://").unwrap().split('/').next().unwrap().to_owned();
    let auth = format!("Bearer {}", served.token);
    let initialize = |name: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}})
        .to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        );
        crate::common::raw_http(&addr, &head, &body)
    };
    let mut ids = Vec::new();
    for i in 0..3 {
        let opened = initialize(&format!("client-{i}"));
        assert_eq!(opened.status, 200, "{}", opened.body);
        ids.push(opened.header("mcp-session-id").unwrap().to_owned());
    }
    let refused = initialize("one-too-many");
    assert_eq!(refused.status, 429, "{}", refused.body);
    let error = refused.json();
    assert_eq!(error["id"], 7);
    assert_eq!(error["error"]["code"], -32000);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("3 are open") && message.contains("at most 3"), "{message}");
    // clientInfo out of bounds.
    let long = initialize(&"n".repeat(300));
    assert_eq!(long.status, 400, "{}", long.body);
    assert_eq!(long.json()["error"]["code"], -32602);
    // Idle sessions expire, and their places are free again.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let expired_head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nMcp-Session-Id: {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n",
        ids[0]
    );
    let expired =
        crate::common::raw_http(&addr, &expired_head, r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
    assert_eq!(expired.status, 404, "{}", expired.body);
    assert_eq!(initialize("after-expiry").status, 200);
    let report =
        served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo fine"}}]));
    assert_eq!(report["results"][0]["result"]["isError"], false, "{report}");
}
