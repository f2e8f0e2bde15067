//! Issue 10: an approval lives no longer than the call that asked for it, and an agent can know how long
//! it may wait. Through `portcullis serve` and the official MCP TypeScript SDK client.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::{Served, http, node_modules, serve};
use serde_json::Value;
use std::time::{Duration, Instant};

fn spawn_agent(served: &Served, steps: Value) -> std::process::Child {
    let scenario = serde_json::json!({"url": served.mcp_url, "token": served.token, "steps": steps});
    std::process::Command::new("node")
        .arg(common::interop_dir().join("client.mjs"))
        .arg(scenario.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Answers the approval `asked` (as listed) for the arguments it shows.
fn answer(served: &Served, asked: &Value, answer: &str) -> (u16, String) {
    let url = format!("{}/approvals/{}", served.api, asked["id"]);
    let body =
        serde_json::json!({ "answer": answer, "arguments_sha256": asked["arguments_sha256"] }).to_string();
    http(&url, "POST", Some(&served.operator_token), &[], Some(&body))
}

/// The agent's process dies while its call waits for approval: its connection closes without a cancel.
/// The prompt is withdrawn at once (not after the 120 s timeout), an operator's late "once" runs nothing,
/// and the approval is recorded as withdrawn.
#[test]
fn a_prompt_is_withdrawn_when_its_callers_connection_closes() {
    node_modules();
    let mut served = serve(r#"{ "commands": { "default": "prompt" } }"#);
    let mut agent = spawn_agent(
        &served,
        serde_json::json!([{"op": "call", "name": "shell", "arguments": {"command": "touch ran-for-nobody"}}]),
    );
    let asked = common::first_pending(&served);
    agent.kill().unwrap();
    let _ = agent.wait();
    let started = Instant::now();
    while !common::pending(&served).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the prompt outlived its caller's connection: {:?}",
            common::pending(&served)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, body) = answer(&served, &asked, "once");
    assert_eq!(status, 409, "a late answer must find nothing to approve: {body}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!served.project().join("ran-for-nobody").exists(), "the command ran for nobody");
    let stopped = served.stop();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let db = rusqlite::Connection::open(served.db()).unwrap();
    let outcomes: Vec<String> = db
        .prepare("SELECT outcome FROM approvals")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(outcomes, ["withdrawn"]);
}

/// A client that gave a progress token hears, while its call waits, that it waits for an operator and
/// for how long; a client that resets its timeout on progress keeps waiting past its own timeout (6 s
/// here, the operator answers after 8 s) and gets the result.
#[test]
fn a_waiting_call_sends_progress_that_keeps_patient_clients_waiting() {
    node_modules();
    let served = serve(r#"{ "commands": { "default": "prompt" }, "approvals": { "timeout_seconds": 60 } }"#);
    let agent = spawn_agent(
        &served,
        serde_json::json!([{"op": "call", "name": "shell", "arguments": {"command": "echo approved-late"},
            "progress": true, "timeoutMs": 6000, "resetTimeoutOnProgress": true}]),
    );
    let asked = common::first_pending(&served);
    std::thread::sleep(Duration::from_secs(8));
    let (status, body) = answer(&served, &asked, "once");
    assert_eq!(status, 200, "{body}");
    let out = agent.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let call = &report["results"][0];
    assert!(common::text_of(&call["result"]).contains("approved-late"), "{call}");
    let progress = call["progress"].as_array().unwrap();
    assert!(progress.len() >= 2, "progress while waiting: {progress:?}");
    let first = &progress[0];
    let message = first["message"].as_str().unwrap_or_default();
    assert!(message.contains("operator") && message.contains("60 s"), "{first}");
    let steps: Vec<f64> = progress.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "progress must increase: {steps:?}");
}

/// The operator at the terminal is not left with a question nobody waits for: when the agent's process
/// dies mid-wait, the terminal says the approval was withdrawn and that nothing runs, and a late "o"
/// approves nothing.
#[test]
fn the_terminal_says_when_an_approval_is_withdrawn() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(base.join("proj/.portcullis")).unwrap();
    std::fs::write(base.join("proj/.portcullis/policy.json"), r#"{ "commands": { "default": "prompt" } }"#)
        .unwrap();
    let (mut hub, info) = common::serve_on_terminal(&base, &[("RUST_LOG", "warn")], &[]);
    let token = std::fs::read_to_string(base.join("config/token")).unwrap();
    let scenario = serde_json::json!({"url": info["mcp_url"], "token": token, "steps": [
        {"op": "call", "name": "shell", "arguments": {"command": "touch ran-for-nobody"}}
    ]});
    let mut agent = std::process::Command::new("node")
        .arg(common::interop_dir().join("client.mjs"))
        .arg(scenario.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let operator = std::fs::read_to_string(base.join("config/operator-token")).unwrap();
    let api = info["api_url"].as_str().unwrap();
    let started = Instant::now();
    loop {
        let (_, body) = http(&format!("{api}/approvals"), "GET", Some(&operator), &[], None);
        if body.contains("ran-for-nobody") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the prompt never came: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    agent.kill().unwrap();
    let _ = agent.wait();
    std::thread::sleep(Duration::from_secs(2));
    let mut stdin = hub.stdin.take().unwrap();
    use std::io::Write as _;
    stdin.write_all(b"o\n").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let pid = info["pid"].as_u64().unwrap().to_string();
    std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    drop(stdin);
    let shown = hub.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&shown.stdout);
    assert!(screen.contains("touch ran-for-nobody"), "the prompt was shown: {screen}");
    assert!(
        screen.contains("approval #1 was withdrawn: the agent stopped waiting")
            && screen.contains("nothing runs"),
        "{screen}"
    );
    assert!(!base.join("proj/ran-for-nobody").exists(), "the late answer ran the command");
}

/// Claude Code kills its hook (the user pressed Esc, or the hook's timeout passed) while the hub asks the
/// operator: the prompt goes with it, recorded as withdrawn.
#[test]
fn a_hook_killed_mid_wait_withdraws_its_prompt() {
    let mut served = serve(r#"{ "commands": { "default": "prompt" } }"#);
    let input = serde_json::json!({
        "session_id": "claude-session-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "touch killed-hook"},
        "cwd": served.project(),
    });
    let mut hook = common::portcullis(served.dir.path())
        .args(["hook", "claude", "--wait", "60"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    hook.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    common::first_pending(&served);
    hook.kill().unwrap();
    let _ = hook.wait();
    let started = Instant::now();
    while !common::pending(&served).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(20), "the prompt outlived its hook");
        std::thread::sleep(Duration::from_millis(100));
    }
    let stopped = served.stop();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let db = rusqlite::Connection::open(served.db()).unwrap();
    let outcome: String = db.query_row("SELECT outcome FROM approvals", [], |r| r.get(0)).unwrap();
    assert_eq!(outcome, "withdrawn");
}
