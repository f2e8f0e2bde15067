//! The agents' door over raw HTTP, as the hub mounts it (the JSON-RPC screen, the caller watch, the
//! idempotency advertisement, the session bound and the fast lane in front of rmcp): 2026-07-28
//! stateless requests and 2025-11-25 sessions side by side, against a backend that records what it is
//! asked.
// Test helpers may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::agent_identity::AgentName;
use crate::backend::{ClientIdentity, GatewayBackend, WaitNotes};
use crate::http::{Caller, LOOPBACK_HOSTS, mcp_service};
use async_trait::async_trait;
use axum::Router;
use axum::extract::Request;
use axum::middleware::{Next, from_fn, from_fn_with_state};
use portcullis_harness::{CallOutcome, DecidedBy, McpRequest, ToolCallResult, ToolOutput, ToolSpec};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What the backend was asked: sessions opened (id, client name), closed, and calls (session, call id,
/// tool).
#[derive(Default)]
struct Recorded {
    opened: Vec<(String, String)>,
    closed: Vec<String>,
    calls: Vec<(String, String, String)>,
}

struct Backend {
    recorded: Mutex<Recorded>,
    changes: watch::Sender<u64>,
}

#[async_trait]
impl GatewayBackend for Backend {
    fn visible_tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::new("echo", "Echoes").with_parameters(json!({"type": "object"}))]
    }
    fn registered_names(&self) -> Vec<String> {
        vec!["echo".into()]
    }
    async fn open_session(&self, client: ClientIdentity) -> String {
        let mut recorded = self.recorded.lock().unwrap();
        let id = format!("s{}", recorded.opened.len() + 1);
        recorded.opened.push((id.clone(), client.name));
        id
    }
    async fn close_session(&self, session_id: String) {
        self.recorded.lock().unwrap().closed.push(session_id);
    }
    async fn call(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        _request: McpRequest,
        _cancel: CancellationToken,
        _waiting: Option<WaitNotes>,
    ) -> ToolCallResult {
        let call = (session_id.to_owned(), call_id.to_owned(), tool.to_owned());
        self.recorded.lock().unwrap().calls.push(call);
        ToolCallResult {
            call_id: call_id.into(),
            tool_name: tool.into(),
            outcome: CallOutcome::Finished { output: Arc::new(ToolOutput::text(arguments.to_string())) },
            decided_by: DecidedBy::DEFAULT,
            redacted: false,
        }
    }
    async fn refuse_malformed(
        &self,
        _session_id: &str,
        call_id: &str,
        tool: &str,
        _arguments: Value,
        message: String,
    ) -> ToolCallResult {
        ToolCallResult {
            call_id: call_id.into(),
            tool_name: tool.into(),
            outcome: CallOutcome::Finished { output: Arc::new(ToolOutput::text(message)) },
            decided_by: DecidedBy::DEFAULT,
            redacted: false,
        }
    }
    fn tools_changed(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// The door on a free loopback port, for agent `ci`: its address and the backend behind it.
async fn door() -> (std::net::SocketAddr, Arc<Backend>) {
    door_with(Default::default()).await
}

/// [`door`] with these session limits.
async fn door_with(limits: crate::sessions::SessionLimits) -> (std::net::SocketAddr, Arc<Backend>) {
    let backend = Arc::new(Backend { recorded: Mutex::default(), changes: watch::channel(0).0 });
    let hosts = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
    let mcp = mcp_service(backend.clone(), CancellationToken::new(), hosts, limits);
    let as_agent = |mut request: Request, next: Next| async move {
        request.extensions_mut().insert(Caller::Agent);
        request.extensions_mut().insert(AgentName("ci".into()));
        next.run(request).await
    };
    let router = Router::new()
        .nest_service("/mcp", mcp.service)
        .layer(from_fn_with_state(mcp.lane, crate::fast_lane::fast_lane))
        .layer(from_fn_with_state(mcp.bound, crate::sessions::bound_sessions))
        .layer(from_fn(crate::idempotency::advertise_idempotency))
        .layer(from_fn(crate::caller::watch_caller))
        .layer(from_fn(crate::jsonrpc::screen_jsonrpc))
        .layer(from_fn(as_agent));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (addr, backend)
}

/// An answer: the HTTP status, the JSON-RPC message in the body (the last one, JSON or SSE), and the
/// raw headers.
struct Answer {
    status: u16,
    message: Value,
    head: String,
}

/// POSTs `body` to `/mcp` with `headers`, on a connection of its own.
async fn post(addr: std::net::SocketAddr, headers: &[(&str, &str)], body: &Value) -> Answer {
    let body = body.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_to_string(&mut raw));
    read.await.expect("the door answered within 10 s").unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let message = rest
        .match_indices("{\"jsonrpc\"")
        .filter_map(|(at, _)| {
            let line = rest[at..].split(['\r', '\n']).next().unwrap_or("");
            serde_json::from_str::<Value>(line).ok()
        })
        .last()
        .unwrap_or(Value::Null);
    Answer { status, message, head: head.to_ascii_lowercase() }
}

const V2026: &str = "2026-07-28";

/// A 2026-07-28 request's body: `params` with the per-request `_meta` of client `client`.
fn stateless(id: u64, method: &str, mut params: Value, client: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1.0"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The headers a 2026-07-28 client sends with a request of `method` (about `name`).
fn modern<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'static str, &'a str)> {
    let mut headers = vec![("MCP-Protocol-Version", V2026), ("Mcp-Method", method)];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers
}

#[tokio::test]
async fn stateless_discover_list_and_calls_share_one_ledger_session_per_client() {
    let (addr, backend) = door().await;
    let discover =
        post(addr, &modern("server/discover", None), &stateless(1, "server/discover", json!({}), "codex"))
            .await;
    assert_eq!(discover.status, 200, "{}", discover.message);
    let versions = &discover.message["result"]["supportedVersions"];
    assert!(versions.as_array().unwrap().contains(&json!(V2026)), "{versions}");
    assert!(versions.as_array().unwrap().contains(&json!("2025-11-25")), "{versions}");
    assert_eq!(discover.message["result"]["capabilities"]["tools"]["idempotency"], json!({}));
    assert!(!discover.head.contains("mcp-session-id"));

    let list = post(addr, &modern("tools/list", None), &stateless(2, "tools/list", json!({}), "codex")).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.message["result"]["tools"][0]["name"], "echo", "{}", list.message);
    assert_eq!(list.message["result"]["resultType"], "complete");

    let call =
        |id, client| stateless(id, "tools/call", json!({"name": "echo", "arguments": {"n": id}}), client);
    for id in [3, 4] {
        let answer = post(addr, &modern("tools/call", Some("echo")), &call(id, "codex")).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.message["result"]["content"][0]["text"], format!("{{\"n\":{id}}}"));
    }
    post(addr, &modern("tools/call", Some("echo")), &call(5, "claude-code")).await;
    let recorded = backend.recorded.lock().unwrap();
    // One ledger session per client (not per request), with call ids unique within it.
    assert_eq!(recorded.opened, [("s1".into(), "codex".into()), ("s2".into(), "claude-code".into())]);
    let calls: Vec<(&str, &str)> = recorded.calls.iter().map(|(s, c, _)| (s.as_str(), c.as_str())).collect();
    assert_eq!(calls, [("s1", "c1"), ("s1", "c2"), ("s2", "c1")]);
    assert!(recorded.closed.is_empty(), "closed while in use: {:?}", recorded.closed);
}

#[tokio::test]
async fn stateless_requests_with_contradicting_headers_are_refused_with_header_mismatch() {
    let (addr, backend) = door().await;
    let call = stateless(1, "tools/call", json!({"name": "echo", "arguments": {}}), "codex");
    for headers in [modern("tools/call", Some("other")), modern("tools/list", Some("echo"))] {
        let answer = post(addr, &headers, &call).await;
        assert_eq!((answer.status, &answer.message["error"]["code"]), (400, &json!(-32020)), "{headers:?}");
        assert_eq!(answer.message["id"], 1);
    }
    // A 2026-07-28 request without them is refused by rmcp (they are required), also -32020.
    let bare = post(addr, &[("MCP-Protocol-Version", V2026)], &call).await;
    assert_eq!((bare.status, &bare.message["error"]["code"]), (400, &json!(-32020)));
    assert!(backend.recorded.lock().unwrap().calls.is_empty());
}

#[tokio::test]
async fn sessions_of_2025_11_25_work_as_before_and_refuse_contradicting_headers_too() {
    let (addr, backend) = door().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    let answer = post(addr, &[], &init).await;
    assert_eq!(answer.message["result"]["protocolVersion"], "2025-11-25", "{}", answer.message);
    assert_eq!(answer.message["result"]["capabilities"]["tools"]["idempotency"], json!({}));
    let id = answer.head.lines().find_map(|l| l.strip_prefix("mcp-session-id: ")).unwrap().trim().to_owned();
    let session = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(addr, &session, &initialized).await.status, 202);

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}}});
    let answer = post(addr, &session, &call).await;
    assert_eq!(answer.message["result"]["content"][0]["text"], "{}", "{}", answer.message);
    assert!(answer.message["result"].get("resultType").is_none(), "a 2025-11-25 answer has no resultType");
    let contradicting = [session[0], session[1], ("Mcp-Method", "tools/list")];
    let refused = post(addr, &contradicting, &call).await;
    assert_eq!((refused.status, &refused.message["error"]["code"]), (400, &json!(-32020)));
    let matching = [session[0], session[1], ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    assert!(post(addr, &matching, &call).await.message["result"].is_object());
    // A 2026-07-28 initialize is answered with the newest version that has one.
    let newer = json!({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {
        "protocolVersion": V2026, "capabilities": {}, "clientInfo": {"name": "new", "version": "1"}}});
    assert_eq!(post(addr, &[], &newer).await.message["result"]["protocolVersion"], "2025-11-25");
    let recorded = backend.recorded.lock().unwrap();
    assert_eq!(recorded.calls.len(), 2, "the refused call never ran: {:?}", recorded.calls);
}

#[tokio::test]
async fn methods_2026_removed_are_not_found() {
    let (addr, _backend) = door().await;
    for method in ["logging/setLevel", "resources/subscribe", "initialize"] {
        let answer = post(addr, &modern(method, None), &stateless(1, method, json!({}), "codex")).await;
        assert_eq!((answer.status, &answer.message["error"]["code"]), (404, &json!(-32601)), "{method}");
    }
}

#[tokio::test]
async fn a_stateless_clients_ledger_session_closes_after_idling_and_the_next_request_opens_another() {
    let idle = std::time::Duration::from_millis(80);
    let (addr, backend) = door_with(crate::sessions::SessionLimits { max_sessions: 1, idle }).await;
    let call = |id, client| stateless(id, "tools/call", json!({"name": "echo", "arguments": {}}), client);
    post(addr, &modern("tools/call", Some("echo")), &call(1, "codex")).await;
    // All keys taken: another client of the agent shares the agent's overflow key.
    post(addr, &modern("tools/call", Some("echo")), &call(2, "claude-code")).await;
    tokio::time::sleep(idle * 5).await;
    let closed = backend.recorded.lock().unwrap().closed.clone();
    assert_eq!(closed.len(), 2, "{closed:?}");
    post(addr, &modern("tools/call", Some("echo")), &call(3, "codex")).await;
    let recorded = backend.recorded.lock().unwrap();
    let names: Vec<&str> = recorded.opened.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["codex", crate::stateless::OTHER_CLIENTS, "codex"]);
    assert_eq!(recorded.calls.last().map(|c| c.1.as_str()), Some("c1"));
}
