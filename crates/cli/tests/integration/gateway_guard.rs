//! The gateway's guard as a hostile local process meets it, through `portcullis serve` over raw HTTP and
//! the SDK client: agents and operators hold separate credentials (an agent cannot answer its own
//! prompts, nor name itself the operator), both tokens are redacted wherever a tool echoes them, every
//! route checks Host (DNS rebinding), idle and half-sent connections are closed and capped while
//! clients are still served, and malformed JSON-RPC gets JSON-RPC errors (a malformed `tools/call` is
//! recorded as a blocked call).
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::{
    Served, http, interop_dir, ledger_calls_when, node_modules, portcullis, raw_http, serve, text_of,
};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell", "read", "write", "edit"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "printing", "pattern": [["echo", "ls"]], "decision": "allow", "match": ["echo hi"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 60 }
}
"#;

/// The SDK client run in a thread (the caller answers prompts meanwhile).
fn agent_in_background(served: &Served, steps: Value) -> std::thread::JoinHandle<Value> {
    let scenario = json!({"url": served.mcp_url, "token": served.token, "steps": steps});
    std::thread::spawn(move || {
        let out = Command::new("node")
            .arg(interop_dir().join("client.mjs"))
            .arg(scenario.to_string())
            .current_dir(interop_dir())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    })
}

fn error_code(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: not a JSON error: {body}"));
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("no error code: {body}")).to_owned()
}

fn host_port(served: &Served) -> String {
    served.api.trim_start_matches("http://").trim_end_matches("/v1").to_owned()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-agent","version":"1"}}}"#;

#[test]
fn agents_cannot_answer_their_own_prompts_and_the_operator_is_named_by_the_channel() {
    node_modules();
    let served = serve(POLICY);
    let (api, agent, operator) = (served.api.clone(), served.token.clone(), served.operator_token.clone());
    // The agent's token does not open the operator's routes, whatever it asks.
    let (status, body) = http(&format!("{api}/approvals"), "GET", Some(&agent), &[], None);
    assert_eq!(status, 403, "the agent token listed approvals: {body}");
    assert_eq!(error_code(&body), "operator_credential_required");
    let answer = json!({"answer": "once"}).to_string();
    let (status, body) = http(&format!("{api}/approvals/1"), "POST", Some(&agent), &[], Some(&answer));
    assert_eq!(status, 403, "{body}");
    assert_eq!(error_code(&body), "operator_credential_required");
    let (status, _) = http(&format!("{api}/session-grants"), "GET", Some(&agent), &[], None);
    assert_eq!(status, 403);
    let (status, _) = http(&format!("{api}/session-grants/g1"), "DELETE", Some(&agent), &[], None);
    assert_eq!(status, 403);
    // A separate operator credential exists, owner-only, and is not an agent credential.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(served.path("config/operator-token")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(operator.len() >= 32 && operator != agent);
    let accept = ("Accept", "application/json, text/event-stream");
    let (status, body) = http(&served.mcp_url, "POST", Some(&operator), &[accept], Some(INIT));
    assert_eq!(status, 403, "{body}");
    assert_eq!(error_code(&body), "agent_credential_required");
    let (status, _) = http(&format!("{api}/hook/claude"), "POST", Some(&operator), &[], Some("{}"));
    assert_eq!(status, 403);
    // The operator's views take only the operator's token.
    for view in ["sessions", "tools", "servers"] {
        let (status, body) = http(&format!("{api}/{view}"), "GET", Some(&operator), &[], None);
        assert_eq!(status, 200, "{view}: {body}");
        assert!(serde_json::from_str::<Value>(&body).unwrap()[view].is_array(), "{view}: {body}");
        let (status, body) = http(&format!("{api}/{view}"), "GET", Some(&agent), &[], None);
        assert_eq!(status, 403, "{view}: {body}");
        assert_eq!(error_code(&body), "operator_credential_required");
    }
    // Health answers either.
    for token in [&agent, &operator] {
        let (status, body) = http(&format!("{api}/health"), "GET", Some(token), &[], None);
        assert_eq!(status, 200, "{body}");
    }
    // A prompt: the operator answers it through the API; a body naming the operator is refused.
    let run = agent_in_background(
        &served,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "touch by-the-agent"}}]),
    );
    let (id, digest) = first_pending(&served);
    let forged = json!({"answer": "once", "arguments_sha256": digest, "operator": "terminal"}).to_string();
    let (status, body) = http(&format!("{api}/approvals/{id}"), "POST", Some(&operator), &[], Some(&forged));
    assert_eq!(status, 400, "a body naming the operator was accepted: {body}");
    assert!(body.contains("operator"), "{body}");
    // An answer that is not one of the four is a bad request, with its code.
    let maybe = json!({"answer": "maybe", "arguments_sha256": digest}).to_string();
    let (status, body) = http(&format!("{api}/approvals/{id}"), "POST", Some(&operator), &[], Some(&maybe));
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_code(&body), "bad_request");
    // The operator's note reaches the agent with the denial.
    let deny =
        json!({"answer": "deny", "arguments_sha256": digest, "note": "use make check instead"}).to_string();
    let (status, body) = http(&format!("{api}/approvals/{id}"), "POST", Some(&operator), &[], Some(&deny));
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(&format!("{api}/approvals/{id}"), "POST", Some(&operator), &[], Some(&deny));
    assert_eq!(status, 409, "{body}");
    assert_eq!(error_code(&body), "approval_answered");
    let report = run.join().unwrap();
    let result = &report["results"][0]["result"];
    assert!(text_of(result).contains("denied by the operator (api)"), "{report}");
    assert!(text_of(result).contains("the operator says: use make check instead"), "{report}");
    assert!(!served.project().join("by-the-agent").exists());
    let calls = ledger_calls_when(&served, 1);
    assert_eq!(calls[0]["decided_by"], "operator", "{calls:#?}");
    assert_eq!(calls[0]["decided_operator"], "api: denied", "{calls:#?}");
}

/// The REST routes are aliases of the command table: they answer with the table's errors and record
/// the operator the table's client names (the operator header's, else the channel's).
#[test]
fn the_rest_routes_answer_through_the_command_table() {
    node_modules();
    let served = serve(POLICY);
    let (api, operator) = (served.api.clone(), served.operator_token.clone());
    let (status, body) = http(&format!("{api}/servers/nope"), "GET", Some(&operator), &[], None);
    assert_eq!((status, error_code(&body).as_str()), (404, "server_unknown"), "{body}");
    let (status, body) = http(&format!("{api}/session-grants/g-9"), "DELETE", Some(&operator), &[], None);
    assert_eq!(error_code(&body), "grant_unknown", "{status}: {body}");
    let (status, body) = http(&format!("{api}/approvals/x"), "POST", Some(&operator), &[], Some("{}"));
    assert_eq!((status, error_code(&body).as_str()), (400, "bad_request"), "{body}");
    let run = agent_in_background(
        &served,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "touch by-the-agent"}}]),
    );
    let (id, digest) = first_pending(&served);
    let deny = json!({"answer": "deny", "arguments_sha256": digest}).to_string();
    let named = ("x-portcullis-operator", "alice");
    let (status, body) =
        http(&format!("{api}/approvals/{id}"), "POST", Some(&operator), &[named], Some(&deny));
    assert_eq!(status, 200, "{body}");
    let answered: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (answered["answered"].as_u64(), answered["receipt"]["operator"].as_str()),
        (Some(id), Some("alice"))
    );
    run.join().unwrap();
    let calls = ledger_calls_when(&served, 1);
    assert_eq!(calls[0]["decided_operator"], "alice: denied", "{calls:#?}");
}

#[test]
fn tokens_echoed_by_a_tool_never_reach_results_or_the_ledger() {
    node_modules();
    let mut served = serve(POLICY);
    let command = format!("echo agent={} operator={}", served.token, served.operator_token);
    let report = served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": command}}]));
    let result = &report["results"][0]["result"];
    assert_eq!(result["isError"], false, "{result}");
    let shown = result.to_string();
    assert!(shown.contains("agent=") && shown.contains("operator="), "{shown}");
    assert!(!shown.contains(&served.token), "the agent token reached the result: {shown}");
    assert!(!served.operator_token.is_empty(), "no operator token");
    assert!(!shown.contains(&served.operator_token), "the operator token reached the result: {shown}");
    ledger_calls_when(&served, 1);
    let out = served.stop();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let export = portcullis(served.dir.path())
        .args(["ledger", "export", "--format", "jsonl", "--db"])
        .arg(served.db())
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let ledger = String::from_utf8_lossy(&export.stdout);
    assert!(ledger.contains("agent="), "{ledger}");
    assert!(!ledger.contains(&served.token), "the agent token is in the ledger: {ledger}");
    assert!(!ledger.contains(&served.operator_token), "the operator token is in the ledger: {ledger}");
}

#[test]
fn every_route_refuses_a_foreign_host() {
    node_modules();
    let served = serve(POLICY);
    let addr = host_port(&served);
    let port = addr.rsplit(':').next().unwrap().to_owned();
    let (agent, operator) = (served.token.clone(), served.operator_token.clone());
    let routes: [(&str, &str, &str, &str); 4] = [
        ("GET", "/v1/health", &agent, ""),
        ("GET", "/v1/approvals", &operator, ""),
        ("POST", "/v1/hook/claude", &agent, "{}"),
        ("POST", "/mcp", &agent, INIT),
    ];
    for host in
        [format!("evil.example:{port}"), "evil.example".to_owned(), format!("127.0.0.1.evil.example:{port}")]
    {
        for (method, path, token, body) in routes {
            let head = format!(
                "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            );
            let response = raw_http(&addr, &head, body);
            assert_eq!(response.status, 403, "{method} {path} with Host {host}: {}", response.body);
        }
    }
    let head = format!("GET /v1/health HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {agent}\r\n");
    assert_eq!(error_code(&raw_http(&addr, &head, "").body), "host_not_allowed");
    // Loopback names, with or without the port, are the hub's own.
    for host in [
        "localhost".to_owned(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        let head = format!("GET /v1/health HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {agent}\r\n");
        let response = raw_http(&addr, &head, "");
        assert_eq!(response.status, 200, "Host {host}: {}", response.body);
    }
}

#[test]
fn idle_and_half_sent_connections_are_closed_and_capped_while_clients_are_served() {
    node_modules();
    let served =
        common::serve_with_args(POLICY, &[], &["--max-connections", "8", "--header-read-timeout", "2"]);
    let addr = host_port(&served);
    // A slowloris: three times the cap of connections that never finish a request: idle ones, half-sent
    // headers, and (with the agent's token) a body that stops coming.
    let slow_body = format!(
        "POST /v1/hook/claude HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"tool_",
        served.token
    );
    let mut hogs = Vec::new();
    for i in 0..24 {
        let mut stream = TcpStream::connect(&addr).unwrap();
        match i % 3 {
            1 => stream.write_all(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").unwrap(),
            2 => stream.write_all(slow_body.as_bytes()).unwrap(),
            _ => {}
        }
        hogs.push(stream);
    }
    // A legitimate client is still served (once the hogs' time is up), and the hub never holds more
    // connections than its cap.
    let head =
        format!("GET /v1/health HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n", served.token);
    let response = raw_http(&addr, &head, "");
    assert_eq!(response.status, 200, "{}", response.body);
    let health = response.json();
    assert_eq!(health["connections"]["max"], 8, "{health}");
    assert!(health["connections"]["open"].as_u64().unwrap() <= 8, "{health}");
    // Every hog is closed by the hub (generous bound: a loaded machine may be slow to get to them).
    let readers: Vec<_> = hogs
        .into_iter()
        .map(|mut stream| {
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
                let mut buf = [0u8; 1024];
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) => return Ok(()),
                        Ok(_) => continue, // a 408 or similar before the close
                        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
                        Err(e) => return Err(e.to_string()),
                    }
                }
            })
        })
        .collect();
    for (i, reader) in readers.into_iter().enumerate() {
        let outcome = reader.join().unwrap();
        assert!(outcome.is_ok(), "connection {i} was never closed: {outcome:?}");
    }
    // And the hub serves as before; a call waiting for its approval longer than the header-read timeout
    // is not cut (its request was read; the answer is what it waits for).
    let response = raw_http(&addr, &head, "");
    assert_eq!(response.status, 200);
    let run = agent_in_background(
        &served,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "touch after-a-long-wait"}}]),
    );
    let (id, digest) = first_pending(&served);
    std::thread::sleep(Duration::from_secs(4));
    let once = json!({"answer": "once", "arguments_sha256": digest}).to_string();
    let url = format!("{}/approvals/{id}", served.api);
    let (status, body) = http(&url, "POST", Some(&served.operator_token), &[], Some(&once));
    assert_eq!(status, 200, "{body}");
    let report = run.join().unwrap();
    assert_eq!(report["results"][0]["result"]["isError"], false, "{report}");
    assert!(served.project().join("after-a-long-wait").exists());
}

/// The id of the first pending approval and the digest of the arguments it shows, once there is one
/// (asked with the operator token).
fn first_pending(served: &Served) -> (u64, String) {
    let started = Instant::now();
    loop {
        let url = format!("{}/approvals", served.api);
        let (status, body) = http(&url, "GET", Some(&served.operator_token), &[], None);
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        if let Some(p) = v["approvals"].as_array().unwrap().first() {
            return (p["id"].as_u64().unwrap(), p["arguments_sha256"].as_str().unwrap().to_owned());
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the prompt never came");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn malformed_json_rpc_gets_json_rpc_errors_and_bad_tool_calls_are_recorded() {
    node_modules();
    let served = serve(POLICY);
    let addr = host_port(&served);
    let base = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n",
        served.token
    );
    let init = raw_http(&addr, &base, INIT);
    assert_eq!(init.status, 200, "{}", init.body);
    let session = init.header("mcp-session-id").expect("a session id").to_owned();
    let head = format!("{base}Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let initialized = raw_http(&addr, &head, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(initialized.status, 202, "{}", initialized.body);

    let cases: [(&str, u16, i64, Value); 6] = [
        (r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list""#, 400, -32700, Value::Null),
        (r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#, 400, -32600, Value::Null),
        (r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#, 400, -32600, json!(4)),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}"#,
            200,
            -32602,
            json!(5),
        ),
        (r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":42}}"#, 200, -32602, json!(6)),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell","arguments":"echo hi"}}"#,
            200,
            -32602,
            json!(7),
        ),
    ];
    for (body, status, code, id) in cases {
        let response = raw_http(&addr, &head, body);
        assert_eq!(response.status, status, "{body}: {} {}", response.status, response.body);
        let v = response.json();
        assert_eq!(v["jsonrpc"], "2.0", "{body}: {v}");
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
        assert_eq!(v["id"], id, "{body}: {v}");
    }
    // The session still works.
    let ping = raw_http(&addr, &head, r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
    assert_eq!(ping.json()["result"], json!({}), "{}", ping.body);
    // Each malformed tools/call is one blocked row: invalid_arguments.
    let calls = ledger_calls_when(&served, 3);
    assert_eq!(calls.len(), 3, "{calls:#?}");
    for call in &calls {
        assert_eq!(call["status"], "blocked", "{call}");
        assert_eq!(call["reason"], "invalid_arguments", "{call}");
        assert!(call["owner"].as_str().unwrap().starts_with("raw-agent"), "{call}");
    }
    assert!(calls.iter().any(|c| c["tool"] == "shell"), "{calls:#?}");
}
