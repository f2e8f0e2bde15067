//! Upstream MCP servers behind `portcullis serve`: the reference "everything" server over stdio and over
//! Streamable HTTP (tools namespaced, grants and per-tool decisions applied, text, images and structured
//! content passed through, results bounded), and a server whose tools misbehave (crash, hang, oversize,
//! garbage): bounded errors, a restart with backoff, and the hub serving everything else meanwhile.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{
    Served, everything_over_http, http, ledger_calls_when, node_modules, serve_with, text_of,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn health(served: &Served) -> Value {
    let (status, body) = http(&format!("{}/health", served.api), "GET", Some(&served.token), &[], None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Waits until the hub reports `server` in this state.
fn wait_for_state(served: &Served, server: &str, state: &str) -> Value {
    let started = Instant::now();
    loop {
        let h = health(served);
        if let Some(s) =
            h["servers"].as_array().unwrap().iter().find(|s| s["id"] == server && s["state"] == state)
        {
            return s.clone();
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{server} never became {state}: {h}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_everything_server_over_stdio_and_http_passes_the_pipeline() {
    node_modules();
    let (_http_server, url) = everything_over_http();
    let policy = format!(
        r#"{{
  "grants": [ {{ "name": "agents", "allow": ["shell", "mcp:ev:echo", "mcp:ev:get-tiny-image", "mcp:ev:get-structured-content",
                 "mcp:ev:get-env", "mcp:evh:echo", "mcp:evh:get-sum", "mcp:ev:trigger-long-running-operation"],
                 "deny": ["mcp:ev:get-env"] }} ],
  "servers": [
    {{ "id": "ev", "command": "node", "args": ["{{INTEROP}}/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"] }},
    {{ "id": "evh", "url": "{url}", "headers_from_env": {{ "X-Portcullis-Test": "EVH_HEADER" }},
       "tools": {{ "get-sum": "prompt" }} }}
  ],
  "approvals": {{ "timeout_seconds": 2 }}
}}"#
    );
    let served = serve_with(&policy, &[("EVH_HEADER", "from-the-environment")]);
    wait_for_state(&served, "ev", "ready");
    wait_for_state(&served, "evh", "ready");
    let report = served.agent(json!([
        {"op": "list"},
        {"op": "call", "name": "ev__echo", "arguments": {"message": "over stdio"}},
        {"op": "call", "name": "evh__echo", "arguments": {"message": "over http"}},
        {"op": "call", "name": "ev__get-tiny-image", "arguments": {}},
        {"op": "call", "name": "ev__get-structured-content", "arguments": {"location": "Chicago"}},
        {"op": "call", "name": "ev__get-env", "arguments": {}},
        {"op": "call", "name": "evh__get-sum", "arguments": {"a": 1, "b": 2}},
        {"op": "call", "name": "ev__echo", "arguments": {"message": 7}},
        {"op": "call", "name": "ev__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 4}, "progress": true},
    ]));
    let tools = report["results"][0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "shell",
            "ev__echo",
            "ev__get-structured-content",
            "ev__get-tiny-image",
            "ev__trigger-long-running-operation",
            "evh__echo",
            "evh__get-sum"
        ],
        "only granted tools, namespaced per server"
    );
    let echo = tools.iter().find(|t| t["name"] == "ev__echo").unwrap();
    assert_eq!(echo["annotations"]["readOnlyHint"], true, "upstream annotations are kept: {echo}");
    assert_eq!(echo["inputSchema"]["properties"]["message"]["type"], "string", "{echo}");

    let result = |i: usize| report["results"][i]["result"].clone();
    assert_eq!(text_of(&result(1)), "Echo: over stdio");
    assert_eq!(text_of(&result(2)), "Echo: over http");
    let image = result(3);
    let block = image["content"].as_array().unwrap().iter().find(|b| b["type"] == "image").unwrap().clone();
    assert_eq!(block["mimeType"], "image/png");
    assert!(block["data"].as_str().unwrap().len() > 100);
    assert_eq!(result(4)["structuredContent"]["temperature"], 36, "{}", result(4));
    let hidden = result(5);
    assert_eq!(hidden["isError"], true);
    assert!(text_of(&hidden).contains("tool_denied"), "{hidden}");
    let prompted = result(6);
    assert!(text_of(&prompted).contains("approval timeout"), "a per-tool prompt nobody answered: {prompted}");
    let invalid = result(7);
    assert!(text_of(&invalid).contains("validation_failed"), "the upstream schema applies: {invalid}");
    // Progress of a long upstream operation reaches the agent as progress notifications.
    let long = &report["results"][8];
    assert_eq!(long["result"]["isError"], false, "{long}");
    let progress = long["progress"].as_array().unwrap();
    assert!(progress.len() >= 2, "{long}");
    assert_eq!(progress.last().unwrap()["total"], 4, "{long}");

    let calls = ledger_calls_when(&served, 8);
    let tools_called: Vec<&str> = calls.iter().rev().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools_called,
        [
            "mcp:ev:echo",
            "mcp:evh:echo",
            "mcp:ev:get-tiny-image",
            "mcp:ev:get-structured-content",
            "mcp:ev:get-env",
            "mcp:evh:get-sum",
            "mcp:ev:echo",
            "mcp:ev:trigger-long-running-operation"
        ]
    );
}

#[test]
fn results_over_the_byte_bound_are_refused() {
    node_modules();
    let policy = r#"{
  "servers": [ { "id": "ev", "command": "node",
                 "args": ["{INTEROP}/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
                 "limits": { "result_bytes": 300 } } ]
}"#;
    let served = serve_with(policy, &[]);
    wait_for_state(&served, "ev", "ready");
    let report = served.agent(json!([
        {"op": "call", "name": "ev__get-tiny-image", "arguments": {}},
        {"op": "call", "name": "ev__echo", "arguments": {"message": "small"}},
    ]));
    let big = &report["results"][0]["result"];
    assert_eq!(big["isError"], true);
    assert!(text_of(big).contains("upstream_result_too_large"), "{big}");
    assert!(!big.to_string().contains("\"image\""));
    assert_eq!(text_of(&report["results"][1]["result"]), "Echo: small");
}

#[test]
fn a_misbehaving_server_gives_bounded_errors_and_is_restarted() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let policy = format!(
        r#"{{
  "servers": [ {{ "id": "bad", "command": "node", "args": ["{{INTEROP}}/misbehaving-server.mjs", "{}"],
                  "limits": {{ "call_timeout_seconds": 2, "result_bytes": 100000 }} }} ],
  "commands": {{ "rules": [ {{ "id": "printing", "pattern": ["echo"], "decision": "allow" }} ] }}
}}"#,
        starts.display()
    );
    let served = serve_with(&policy, &[]);
    wait_for_state(&served, "bad", "ready");
    let report = served.agent(json!([
        {"op": "call", "name": "bad__ok", "arguments": {}},
        {"op": "call", "name": "bad__big", "arguments": {}},
        {"op": "call", "name": "bad__hang", "arguments": {}},
        {"op": "call", "name": "bad__garbage", "arguments": {}},
        {"op": "call", "name": "bad__crash", "arguments": {}},
        {"op": "call", "name": "shell", "arguments": {"command": "echo still-serving"}},
    ]));
    let result = |i: usize| report["results"][i]["result"].clone();
    assert_eq!(text_of(&result(0)), "fine");
    assert!(text_of(&result(1)).contains("upstream_result_too_large"), "{}", result(1));
    assert!(text_of(&result(2)).contains("upstream_timeout"), "{}", result(2));
    // A junk line on stdout is not a message: the call still completes or fails, bounded.
    let garbage = text_of(&result(3));
    assert!(garbage.contains("after garbage") || garbage.contains("upstream_"), "{garbage}");
    let crash = result(4);
    assert_eq!(crash["isError"], true);
    assert!(text_of(&crash).contains("upstream_"), "{crash}");
    assert!(text_of(&result(5)).contains("still-serving"));
    // The crash is seen, the server is started again, and its tools work again.
    let started = Instant::now();
    loop {
        let count = std::fs::read_to_string(&starts).unwrap_or_default().lines().count();
        if count >= 2 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "not restarted: {} starts", count);
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for_state(&served, "bad", "ready");
    let again = served.agent(json!([{"op": "call", "name": "bad__ok", "arguments": {}}]));
    assert_eq!(text_of(&again["results"][0]["result"]), "fine");
}

#[test]
fn a_stopped_server_takes_everything_it_started_with_it() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("helper.pid");
    // The server starts a helper of its own (as `npx` starts `node`), then becomes the MCP server.
    let policy = format!(
        r#"{{ "servers": [ {{ "id": "parent", "command": "sh",
             "args": ["-c", "sleep 300 & echo $! > {}; exec node {{INTEROP}}/misbehaving-server.mjs"] }} ] }}"#,
        pid_file.display()
    );
    let mut served = serve_with(&policy, &[]);
    wait_for_state(&served, "parent", "ready");
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    let alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
    };
    assert!(alive(&pid), "the helper runs while its server does");
    // The policy no longer declares the server: it is stopped, helper included.
    std::fs::write(served.policy_file(), "{}").unwrap();
    let started = Instant::now();
    while alive(&pid) {
        assert!(started.elapsed() < Duration::from_secs(15), "the server's helper {pid} outlived it");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = served.stop();
    assert!(out.status.success());
}

#[test]
fn progress_reaches_an_agent_through_the_stdio_relay() {
    node_modules();
    let policy = r#"{ "servers": [ { "id": "ev", "command": "node",
        "args": ["{INTEROP}/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"] } ] }"#;
    let served = serve_with(policy, &[]);
    wait_for_state(&served, "ev", "ready");
    let (report, code) = served.client(json!({
        "command": env!("CARGO_BIN_EXE_portcullis"),
        "args": ["mcp"],
        "env": { "PORTCULLIS_CONFIG_DIR": served.path("config"), "HOME": served.path("home") },
        "steps": [
            {"op": "call", "name": "ev__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}, "progress": true},
            {"op": "call", "name": "ev__echo", "arguments": {"message": "no progress asked"}},
        ]
    }));
    assert_eq!(code, 0, "{report}");
    let long = &report["results"][0];
    assert_eq!(long["result"]["isError"], false, "{long}");
    let progress = long["progress"].as_array().unwrap();
    assert!(progress.len() >= 2, "{long}");
    assert_eq!(progress.last().unwrap()["total"], 3, "{long}");
    assert_eq!(text_of(&report["results"][1]["result"]), "Echo: no progress asked");
}

/// `POST /v1/servers/{id}/restart`: the operator's token only, the hub's own Origin only; an unknown id
/// is a 404 with its code; a restart is accepted, and the server is back, ready, its restarts counted
/// and its stderr (across both runs) in `/v1/servers/{id}`.
#[test]
fn an_operator_restarts_an_upstream_over_http() {
    node_modules();
    let policy = r#"{ "servers": [ { "id": "ev", "command": "sh",
        "args": ["-c", "echo \"started as $$\" >&2; exec node {INTEROP}/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio"] } ] }"#;
    let served = serve_with(policy, &[]);
    wait_for_state(&served, "ev", "ready");
    let restart = format!("{}/servers/ev/restart", served.api);
    let code = |body: &str| serde_json::from_str::<Value>(body).unwrap()["error"]["code"].clone();
    let (status, body) = http(&restart, "POST", None, &[], None);
    assert_eq!(status, 401, "{body}");
    let (status, body) = http(&restart, "POST", Some(&served.token), &[], None);
    assert_eq!((status, code(&body)), (403, json!("operator_credential_required")), "{body}");
    let foreign = [("Origin", "http://evil.example")];
    let (status, body) = http(&restart, "POST", Some(&served.operator_token), &foreign, None);
    assert_eq!(status, 403, "{body}");
    let (status, body) = http(
        &format!("{}/servers/nope/restart", served.api),
        "POST",
        Some(&served.operator_token),
        &[],
        None,
    );
    assert_eq!((status, code(&body)), (404, json!("server_unknown")), "{body}");
    let (status, body) =
        http(&format!("{}/servers/nope", served.api), "GET", Some(&served.operator_token), &[], None);
    assert_eq!((status, code(&body)), (404, json!("server_unknown")), "{body}");
    let server = || {
        let (status, body) =
            http(&format!("{}/servers/ev", served.api), "GET", Some(&served.operator_token), &[], None);
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["server"].clone()
    };
    assert_eq!(server()["restarts"], 0);
    let (status, body) = http(&restart, "POST", Some(&served.operator_token), &[], None);
    assert_eq!(status, 202, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"restarting": "ev"}));
    let started = Instant::now();
    let back = loop {
        let s = server();
        if s["state"] == "ready" && s["restarts"] == 1 {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "not back: {s}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let starts = back["stderr_tail"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l.as_str().unwrap().starts_with("started as "))
        .count();
    assert_eq!(starts, 2, "{back}");
    let again = served.agent(json!([{"op": "call", "name": "ev__echo", "arguments": {"message": "back"}}]));
    assert_eq!(text_of(&again["results"][0]["result"]), "Echo: back");
}
