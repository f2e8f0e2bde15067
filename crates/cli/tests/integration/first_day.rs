//! Issue 10, "what a first-day user hits", through the binary: the ledger commands read the hub's own
//! ledger when no `--db` is given.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::{http, node_modules, portcullis, serve};
use serde_json::Value;

#[test]
fn ledger_commands_default_to_the_hubs_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    // A call recorded where the hub records by default (HOME is `base/home` for the binary).
    let ledger = base.join("home/.local/share/portcullis/ledger.db");
    std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
    let call = portcullis(&base)
        .args(["call", "shell", r#"{"command": "echo first-day"}"#, "--approver", "deny", "--db"])
        .arg(&ledger)
        .current_dir(&proj)
        .output()
        .unwrap();
    assert!(call.status.success(), "{}", String::from_utf8_lossy(&call.stderr));
    let query = portcullis(&base).args(["ledger", "query", "--json"]).current_dir(&proj).output().unwrap();
    assert!(query.status.success(), "{}", String::from_utf8_lossy(&query.stderr));
    let rows: Value = serde_json::from_slice(&query.stdout).unwrap();
    assert_eq!(rows["calls"].as_array().unwrap().len(), 1, "{rows}");
    let stats = portcullis(&base).args(["ledger", "stats"]).current_dir(&proj).output().unwrap();
    assert!(stats.status.success(), "{}", String::from_utf8_lossy(&stats.stderr));
    assert!(
        String::from_utf8_lossy(&stats.stdout).contains("shell"),
        "{}",
        String::from_utf8_lossy(&stats.stdout)
    );
    let call_id = rows["calls"][0]["call_id"].as_str().unwrap().to_owned();
    let show = portcullis(&base).args(["ledger", "show", &call_id]).current_dir(&proj).output().unwrap();
    assert!(show.status.success(), "{}", String::from_utf8_lossy(&show.stderr));
    let check = portcullis(&base).args(["ledger", "check"]).current_dir(&proj).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

/// Issue 10: no doubled words in what people read — "rule remove ((built-in default policy))" (the
/// terminal operator's name is checked by gate.rs's terminal test, which runs without USER).
#[test]
fn texts_do_not_double_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let out = portcullis(&base)
        .args(["policy", "check", "--", "rm -rf build"])
        .current_dir(&proj)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("rule remove (built-in default policy)"), "{text}");
    assert!(!text.contains("(("), "{text}");
}

/// Issue 10: a port in use is one clear error that says how to choose another, and nothing (token,
/// operator credential, ledger) is created before the port is bound.
#[test]
fn a_port_in_use_says_how_to_choose_another_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = portcullis(&base)
        .args(["serve", "--approver", "none", "--port", &port, "--db"])
        .arg(base.join("data/ledger.db"))
        .current_dir(&proj)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("port {port}")) && stderr.contains("--port"), "{stderr}");
    for made in ["config/token", "config/operator-token", "data/ledger.db", "data"] {
        assert!(!base.join(made).exists(), "{made} was created before the port was bound");
    }
    drop(taken);
}

/// Issue 10: a session whose client never closed it (no DELETE) is ended when the hub stops cleanly.
#[test]
fn sessions_left_open_by_their_clients_end_with_the_hub() {
    node_modules();
    let mut served = serve(r#"{ "commands": { "default": "prompt" } }"#);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"never-says-goodbye","version":"1"}}}"#;
    let accept = [("Accept", "application/json, text/event-stream")];
    let (status, body) = http(&served.mcp_url, "POST", Some(&served.token), &accept, Some(init));
    assert_eq!(status, 200, "{body}");
    // And the official SDK client, which closes its transport without ending the session.
    served.agent(serde_json::json!([{"op": "list"}]));
    let out = served.stop();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let db = rusqlite::Connection::open(served.db()).unwrap();
    let sessions: Vec<(String, Option<i64>)> = db
        .prepare("SELECT client_name, ended_at FROM sessions")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(sessions.iter().any(|(client, _)| client == "never-says-goodbye"), "{sessions:?}");
    assert!(sessions.iter().all(|(_, ended)| ended.is_some()), "a session was left open: {sessions:?}");
}

/// Issue 10: every approval asked is a row of the ledger's approvals table, linked to its call: answered
/// (by whom, the channel in the name), timed out, or withdrawn because its caller stopped waiting.
#[test]
fn every_approval_is_recorded_with_how_it_ended() {
    node_modules();
    let policy = r#"{ "commands": { "default": "prompt" }, "approvals": { "timeout_seconds": 2 } }"#;
    let mut served = serve(policy);
    let agent = {
        let url = served.mcp_url.clone();
        let token = served.token.clone();
        std::thread::spawn(move || {
            let scenario = serde_json::json!({"url": url, "token": token, "steps": [
                {"op": "call", "name": "shell", "arguments": {"command": "touch answered-once"}},
                {"op": "call", "name": "shell", "arguments": {"command": "touch answered-deny"}},
                {"op": "call", "name": "shell", "arguments": {"command": "touch nobody-answers"}},
            ]});
            std::process::Command::new("node")
                .arg(common::interop_dir().join("client.mjs"))
                .arg(scenario.to_string())
                .output()
                .unwrap()
        })
    };
    for answer in ["once", "deny"] {
        let started = std::time::Instant::now();
        loop {
            let (_, body) =
                http(&format!("{}/approvals", served.api), "GET", Some(&served.operator_token), &[], None);
            let v: Value = serde_json::from_str(&body).unwrap();
            if let Some(p) = v["approvals"].as_array().unwrap().first() {
                let url = format!("{}/approvals/{}", served.api, p["id"]);
                let body = serde_json::json!({"answer": answer, "arguments_sha256": p["arguments_sha256"]})
                    .to_string();
                let (status, text) = http(&url, "POST", Some(&served.operator_token), &[], Some(&body));
                assert_eq!(status, 200, "{text}");
                break;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(20), "no approval came");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let out = agent.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stopped = served.stop();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let calls = common::ledger_calls(&served);
    let mut outcomes = Vec::new();
    for call in &calls {
        let show = portcullis(served.dir.path())
            .args(["ledger", "show", "--json", "--db"])
            .arg(served.db())
            .arg(call["call_id"].as_str().unwrap())
            .output()
            .unwrap();
        assert!(show.status.success(), "{}", String::from_utf8_lossy(&show.stderr));
        let timeline: Value = serde_json::from_slice(&show.stdout).unwrap();
        let approvals = timeline["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 1, "one approval row per prompted call: {timeline}");
        let a = &approvals[0];
        assert!(a["resolved_at"].as_i64().unwrap() >= a["requested_at"].as_i64().unwrap(), "{a}");
        outcomes.push((a["outcome"].as_str().unwrap().to_owned(), a["operator"].as_str().map(str::to_owned)));
    }
    outcomes.sort();
    assert_eq!(
        outcomes,
        [
            ("approved_once".to_owned(), Some("api".to_owned())),
            ("denied".to_owned(), Some("api".to_owned())),
            ("timed_out".to_owned(), None),
        ]
    );
}

/// Issue 10: `serve` says which project folder it guards, and `--project` guards another folder than
/// the one it was started in (`cargo run` runs inside the repository).
#[test]
fn serve_says_which_project_it_guards() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("my-app");
    std::fs::create_dir_all(&proj).unwrap();
    let child = portcullis(&base)
        .args(["serve", "--approver", "none", "--port", "0", "--project"])
        .arg(&proj)
        .arg("--db")
        .arg(base.join("ledger.db"))
        .current_dir(&base)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let runtime = base.join("config/hub.json");
    let started = std::time::Instant::now();
    while !runtime.exists() {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the hub did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("guarding the project {}", proj.display())), "{stderr}");
}

/// Issue 10: how long a call may wait for an operator is knowable by the agent: every tool's description
/// says it (the SDK client gives up after 60 s; the policy here waits 2 s).
#[test]
fn tool_descriptions_say_how_long_approval_may_take() {
    node_modules();
    let served = serve(r#"{ "commands": { "default": "prompt" }, "approvals": { "timeout_seconds": 2 } }"#);
    let report = served.agent(serde_json::json!([{"op": "list"}]));
    let tools = report["results"][0]["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    for tool in tools {
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(description.contains("waits up to 2 s"), "{tool}");
    }
}
