//! Issue 37: requests of an initialized MCP session are answered without rmcp's session worker (the
//! gateway's fast lane). Through `portcullis serve`, with raw HTTP as a client sends it: a quick answer
//! is one JSON body, a call that waits for an operator is an event stream of its progress then its
//! answer, a client's cancel reaches a call the lane runs, and what the lane does not take (another
//! protocol version, no session) is answered as before.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{self, RawResponse, Served, raw_http, serve};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const VERSION: &str = "2025-06-18";

/// Where the gateway listens and the agents' token: what a raw request needs (sent from client threads).
#[derive(Clone)]
struct Gateway {
    addr: String,
    token: String,
}

impl Gateway {
    fn of(served: &Served) -> Self {
        let addr = served.mcp_url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
        Gateway { addr, token: served.token.clone() }
    }

    fn post(&self, session: Option<&str>, extra: &str, body: &Value) -> RawResponse {
        let Gateway { addr, token } = self;
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{extra}"
        );
        if let Some(session) = session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        raw_http(addr, &head, &body.to_string())
    }
}

fn post(served: &Served, session: Option<&str>, extra: &str, body: &Value) -> RawResponse {
    Gateway::of(served).post(session, extra, body)
}

/// A session that finished `initialize` (and `notifications/initialized`).
fn session(served: &Served) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "lane-test", "version": "1"}}});
    let answer = post(served, None, "", &init);
    assert_eq!(answer.status, 200, "{}", answer.body);
    let id = answer.header("mcp-session-id").unwrap().to_owned();
    let ready =
        post(served, Some(&id), "", &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(ready.status, 202, "{}", ready.body);
    // rmcp hands the notification to the session's handler a moment after answering 202.
    std::thread::sleep(Duration::from_millis(200));
    id
}

/// The first line of a `tools/call` answer's text (the shell tool adds its exit code below).
fn first_line(answer: &Value) -> Option<&str> {
    answer["result"]["content"][0]["text"].as_str().and_then(|t| t.lines().next())
}

fn call(id: u64, command: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "shell", "arguments": {"command": command}}})
}

#[test]
fn quick_answers_are_json_and_the_same_as_over_rmcps_event_streams() {
    let served = serve(
        r#"{ "commands": { "default": "prompt",
             "rules": [ { "id": "printing", "pattern": ["echo"], "decision": "allow", "match": ["echo hi"] } ] } }"#,
    );
    let session = session(&served);
    let version = format!("Mcp-Protocol-Version: {VERSION}\r\n");

    let ping = post(&served, Some(&session), &version, &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    assert_eq!(ping.status, 200);
    assert_eq!(ping.header("content-type"), Some("application/json"), "{}", ping.body);
    assert_eq!(ping.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));

    let lane = post(&served, Some(&session), &version, &call(2, "echo lane"));
    assert_eq!(lane.header("content-type"), Some("application/json"), "{}", lane.body);
    let lane = lane.json();
    assert_eq!(first_line(&lane), Some("lane"), "{lane}");

    // Another protocol version than the session's is not the lane's: rmcp checks (and answers) it.
    let other = post(&served, Some(&session), "Mcp-Protocol-Version: 2025-03-26\r\n", &call(3, "echo rmcp"));
    assert_eq!(other.status, 200, "{}", other.body);
    assert_eq!(other.header("content-type"), Some("text/event-stream"), "{}", other.body);
    let other = other.json();
    assert_eq!(first_line(&other), Some("rmcp"), "{other}");
    // Both answers have the same shape (the result's fields, apart from the text).
    let keys = |v: &Value| v["result"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&lane), keys(&other));

    // An unknown session is refused as before (404), never served.
    let unknown = post(&served, Some("no-such-session"), &version, &call(4, "echo nobody"));
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let calls = common::ledger_calls_when(&served, 2);
    assert_eq!(calls.len(), 2, "{calls:?}");
}

#[test]
fn a_call_waiting_for_the_operator_streams_its_progress_and_a_cancel_reaches_it() {
    let served = serve(r#"{ "commands": { "default": "prompt" } }"#);
    let session = session(&served);
    let version = format!("Mcp-Protocol-Version: {VERSION}\r\n");

    // With a progress token, the wait is reported before the answer: an event stream.
    let waiting = {
        let (gateway, session, version) = (Gateway::of(&served), session.clone(), version.clone());
        std::thread::spawn(move || {
            let mut body = call(7, "touch approved-file");
            body["params"]["_meta"] = json!({"progressToken": "p7"});
            gateway.post(Some(&session), &version, &body)
        })
    };
    let asked = common::first_pending(&served);
    let (status, body) = common::http(
        &format!("{}/approvals/{}", served.api, asked["id"]),
        "POST",
        Some(&served.operator_token),
        &[],
        Some(&json!({"answer": "once", "arguments_sha256": asked["arguments_sha256"]}).to_string()),
    );
    assert_eq!(status, 200, "{body}");
    let answered = waiting.join().unwrap();
    assert_eq!(answered.header("content-type"), Some("text/event-stream"), "{}", answered.body);
    let events: Vec<Value> = answered
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    let (last, progress) = events.split_last().unwrap();
    assert!(!progress.is_empty(), "no progress before the answer: {events:?}");
    assert!(
        progress
            .iter()
            .all(|p| p["method"] == "notifications/progress" && p["params"]["progressToken"] == "p7")
    );
    assert_eq!(last["id"], 7, "{last}");
    assert_eq!(last["result"]["isError"], false, "{last}");
    assert!(served.project().join("approved-file").exists());

    // A call the lane runs stops on the client's `notifications/cancelled`: its prompt goes, nothing runs.
    let cancelled = {
        let (gateway, session, version) = (Gateway::of(&served), session.clone(), version.clone());
        std::thread::spawn(move || gateway.post(Some(&session), &version, &call(8, "touch cancelled-file")))
    };
    let _ = common::first_pending(&served);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8, "reason": "changed my mind"}});
    let accepted = post(&served, Some(&session), &version, &cancel);
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let started = Instant::now();
    while !common::pending(&served).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(20), "the cancelled call still waits");
        std::thread::sleep(Duration::from_millis(100));
    }
    let answer = cancelled.join().unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!served.project().join("cancelled-file").exists(), "a cancelled call ran");
    let calls = common::ledger_calls_when(&served, 2);
    let cancelled = calls
        .iter()
        .find(|c| c.to_string().contains("cancelled-file"))
        .unwrap_or_else(|| panic!("no record of the cancelled call: {calls:?}"));
    assert_ne!(cancelled["status"], "finished", "{cancelled}");
}
