//! The JSON-RPC envelope of a POST to `/mcp` as MCP takes it, and the error a message is owed when
//! rmcp could not take it: rmcp answers a body it cannot parse with HTTP 415 and no JSON-RPC error at
//! all, and a request to a known method with malformed params as an unknown method (-32601). Agents are
//! owed -32700 (parse error), -32600 (invalid request: batches, `jsonrpc` other than "2.0", ...) and
//! -32602 (invalid params). A `tools/call` with malformed params is let through: the gateway records it
//! as a blocked call and answers -32602 itself.
//!
//! A leaf: the screen in front of rmcp (`jsonrpc.rs`) applies it, and the checks it runs besides
//! (routing headers, idempotency keys, methods a revision removed) answer with its [`EnvelopeError`]
//! without reaching up to the screen.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcMessage};
use serde_json::{Value, json};

/// The methods of MCP a client sends; their params have a schema, so params that do not fit it are
/// invalid params (-32602), not an unknown method.
pub const CLIENT_METHODS: [&str; 21] = [
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// The method whose malformed params the gateway records (as a blocked call) before answering.
pub const TOOLS_CALL: &str = "tools/call";

/// A JSON-RPC error answered without reaching rmcp.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeError {
    pub code: ErrorCode,
    pub message: String,
    /// The request's id when it had a usable one, else null.
    pub id: Value,
}

impl IntoResponse for EnvelopeError {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code.0, "message": self.message },
        });
        // 2026-07-28 answers an unknown (or removed) method with 404; every other refusal here is a 400.
        let status = if self.code == ErrorCode::METHOD_NOT_FOUND {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::BAD_REQUEST
        };
        (status, axum::Json(body)).into_response()
    }
}

/// A POST's message as the screen read it, kept in the request's extensions for the middleware behind
/// it (the fast lane, the idempotency capability); rmcp reads the body again.
#[derive(Debug, Clone)]
pub struct Screened(pub ClientJsonRpcMessage);

/// Whether `body` is a message rmcp can take; if not, the JSON-RPC error it is owed.
pub fn check_envelope(body: &[u8]) -> Result<(), EnvelopeError> {
    screen(body).map(|_| ())
}

/// The message `body` holds when rmcp can take it; if not, the JSON-RPC error it is owed.
pub fn screen(body: &[u8]) -> Result<ClientJsonRpcMessage, EnvelopeError> {
    let unread = match serde_json::from_slice::<ClientJsonRpcMessage>(body) {
        Ok(message) => {
            check_params(&message)?;
            return Ok(message);
        }
        Err(e) => e,
    };
    let value: Value = serde_json::from_slice(body).map_err(|e| EnvelopeError {
        code: ErrorCode::PARSE_ERROR,
        message: format!("Parse error: {e}"),
        id: Value::Null,
    })?;
    let invalid =
        |message: String, id: Value| EnvelopeError { code: ErrorCode::INVALID_REQUEST, message, id };
    let object = match value {
        Value::Array(_) => {
            return Err(invalid("Invalid Request: JSON-RPC batches are not supported".into(), Value::Null));
        }
        Value::Object(object) => object,
        _ => return Err(invalid("Invalid Request: a JSON-RPC message is an object".into(), Value::Null)),
    };
    let id = match object.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("Invalid Request: \"jsonrpc\" must be \"2.0\"".into(), id));
    }
    let is_request = object.get("method").is_some_and(Value::is_string) && id != Value::Null;
    if is_request && object.get("params").is_some_and(|p| !p.is_object()) {
        return Err(EnvelopeError {
            code: ErrorCode::INVALID_PARAMS,
            message: "Invalid params: MCP params are an object".into(),
            id,
        });
    }
    let why = unread.to_string();
    Err(invalid(format!("Invalid Request: not a JSON-RPC request, notification or response: {why}"), id))
}

/// A request to a known method that rmcp could only read as a custom request had params that do not
/// fit the method.
fn check_params(message: &ClientJsonRpcMessage) -> Result<(), EnvelopeError> {
    let JsonRpcMessage::Request(request) = message else { return Ok(()) };
    let ClientRequest::CustomRequest(custom) = &request.request else { return Ok(()) };
    if custom.method == TOOLS_CALL || !CLIENT_METHODS.contains(&custom.method.as_str()) {
        return Ok(());
    }
    Err(EnvelopeError {
        code: ErrorCode::INVALID_PARAMS,
        message: format!("Invalid params: the params of {} do not fit its schema", custom.method),
        id: serde_json::to_value(&request.id).unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<(i32, Value)> {
        check_envelope(body.as_bytes()).err().map(|e| (e.code.0, e.id))
    }

    #[test]
    fn envelopes_get_their_json_rpc_codes() {
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"vendor/thing","params":{"a":[1]}}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"vendor/thing","params":[1]}"#),
            Some((-32602, json!(1)))
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"#), Some((-32700, Value::Null)));
        assert_eq!(code(""), Some((-32700, Value::Null)));
        assert_eq!(code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), Some((-32600, Value::Null)));
        assert_eq!(code("42"), Some((-32600, Value::Null)));
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#), Some((-32600, json!("a"))));
        assert_eq!(code(r#"{"id":3,"method":"ping"}"#), Some((-32600, json!(3))));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#).map(|c| c.0), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":4,"method":7}"#), Some((-32600, json!(4))));
    }

    #[test]
    fn known_methods_with_bad_params_are_invalid_params_but_tool_calls_go_on_to_be_recorded() {
        let init = r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1}}"#;
        assert_eq!(code(init), Some((-32602, json!(9))));
        let read = r#"{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":5}}"#;
        assert_eq!(code(read).map(|c| c.0), Some(-32602));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":42}}"#), None);
    }
}
