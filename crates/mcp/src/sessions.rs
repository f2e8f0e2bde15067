//! Bounds on MCP sessions, so that an agent cannot spend the hub's memory on idle ones: at most
//! `max_sessions` open sessions for the agents' token (each costs ~130 KB: 7,500 `initialize` posts once
//! took a hub to 954 MB), idle ones expire, and an `initialize` (or a stateless 2026-07-28 request, in
//! its `_meta`) carries a bounded `clientInfo`. A refused
//! `initialize` gets a JSON-RPC error saying which bound and what to do; nothing else changes.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Sessions the agents' token may hold open at once.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// A session without a request for this long is closed (its next request gets 404, and the client
/// starts a new one).
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(10 * 60);
/// The longest `clientInfo` field (`name`, `title`, `version`) accepted, in characters.
pub const MAX_CLIENT_INFO_CHARS: usize = 256;
/// The largest `initialize` request accepted, in bytes.
pub const MAX_INITIALIZE_BYTES: usize = 64 * 1024;

/// How many sessions, and how long one may idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    pub max_sessions: usize,
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits { max_sessions: DEFAULT_MAX_SESSIONS, idle: DEFAULT_SESSION_IDLE }
    }
}

/// The state of [`bound_sessions`]: the gateway's sessions and their limits.
#[derive(Clone)]
pub struct SessionBound {
    pub(crate) sessions: Arc<LocalSessionManager>,
    pub(crate) limits: SessionLimits,
}

impl std::fmt::Debug for SessionBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionBound").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl SessionBound {
    /// Sessions open now.
    pub async fn open(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }
}

/// Why an `initialize` is refused, if it is: a `clientInfo` field too long, or a request too large.
pub fn check_initialize(body: &[u8]) -> Result<(), String> {
    if body.len() > MAX_INITIALIZE_BYTES {
        return Err(format!(
            "the initialize request is {} bytes; at most {MAX_INITIALIZE_BYTES}",
            body.len()
        ));
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else { return Ok(()) };
    check_client_info(&message["params"]["clientInfo"], "clientInfo")
}

/// Where a stateless (2026-07-28) request names its client.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// Why the `clientInfo` a stateless request carries in `params._meta` is refused, if it is: it names the
/// client's ledger session ([`crate::stateless`]), so it is bounded as an `initialize`'s is.
pub fn check_meta_client_info(message: &Value) -> Result<(), String> {
    check_client_info(&message["params"]["_meta"][META_CLIENT_INFO], &format!("_meta[{META_CLIENT_INFO:?}]"))
}

fn check_client_info(info: &Value, what: &str) -> Result<(), String> {
    for field in ["name", "title", "version"] {
        if let Some(text) = info[field].as_str()
            && text.chars().count() > MAX_CLIENT_INFO_CHARS
        {
            return Err(format!(
                "{what}.{field} is {} characters; at most {MAX_CLIENT_INFO_CHARS}",
                text.chars().count()
            ));
        }
    }
    Ok(())
}

fn refusal(status: StatusCode, code: i64, message: String, id: &Value) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The axum middleware in front of rmcp's `/mcp` service: an `initialize` (a POST that opens a session)
/// is refused with a JSON-RPC error when the agents' token holds `max_sessions` already (429) or its
/// `clientInfo` is out of bounds (invalid params); so is a stateless request (no session) whose
/// `_meta` clientInfo is out of bounds. Every other request goes on unchanged.
pub async fn bound_sessions(State(bound): State<SessionBound>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST || request.headers().contains_key("mcp-session-id") {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // The JSON-RPC screen in front has read and bounded the body already.
    let Ok(collected) = body.collect().await else {
        return (StatusCode::BAD_REQUEST, "the request body could not be read").into_response();
    };
    let bytes = collected.to_bytes();
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if message["method"] != "initialize"
        && let Err(why) = check_meta_client_info(&message)
    {
        return refusal(StatusCode::BAD_REQUEST, -32602, format!("Invalid params: {why}"), &message["id"]);
    }
    if message["method"] == "initialize" {
        let id = message["id"].clone();
        if let Err(why) = check_initialize(&bytes) {
            return refusal(StatusCode::BAD_REQUEST, -32602, format!("Invalid params: {why}"), &id);
        }
        let open = bound.open().await;
        if open >= bound.limits.max_sessions {
            let message = format!(
                "too many MCP sessions: {open} are open for this token, at most {}; end sessions you no longer use (DELETE with their Mcp-Session-Id) or wait for idle ones to expire after {} s",
                bound.limits.max_sessions,
                bound.limits.idle.as_secs()
            );
            tracing::warn!(open, max = bound.limits.max_sessions, "initialize refused: session cap");
            return refusal(StatusCode::TOO_MANY_REQUESTS, -32000, message, &id);
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_info_and_size_are_bounded() {
        let init = |name: &str| {
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": name, "version": "1"}}})
            .to_string()
        };
        assert!(check_initialize(init("claude-code").as_bytes()).is_ok());
        let long = "x".repeat(MAX_CLIENT_INFO_CHARS + 1);
        assert!(check_initialize(init(&long).as_bytes()).is_err_and(|e| e.contains("clientInfo.name")));
        let huge = init(&"y".repeat(10)).replace(
            "\"capabilities\":{}",
            &format!("\"capabilities\":{{\"x\":\"{}\"}}", "z".repeat(MAX_INITIALIZE_BYTES)),
        );
        assert!(check_initialize(huge.as_bytes()).is_err_and(|e| e.contains("bytes")));
    }

    #[test]
    fn a_stateless_requests_client_info_is_bounded_too() {
        let call = |name: &str| {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                   "params": {"_meta": {META_CLIENT_INFO: {"name": name, "version": "1"}}}})
        };
        assert!(check_meta_client_info(&call("codex")).is_ok());
        assert!(check_meta_client_info(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).is_ok());
        let long = "x".repeat(MAX_CLIENT_INFO_CHARS + 1);
        assert!(check_meta_client_info(&call(&long)).is_err_and(|e| e.contains("clientInfo\"].name is")));
    }
}
