//! SEP-3182 on the wire: the `idempotencyKey` of a `tools/call` (rmcp's typed params drop fields they do
//! not know, so the screen reads it from the body), or `_meta.idempotencyKey` where only the typed
//! request is seen (stdio); the agent identity its token names; and the `tools.idempotency` capability
//! in the `initialize` answer (rmcp's capability type has no such field, so it is added to the answer's
//! bytes).

use crate::agent_identity::AgentName;
use crate::envelope::{EnvelopeError, Screened};
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt as _;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcMessage};
use rmcp::service::RequestContext;
use serde::Deserialize;
use serde_json::Value;

/// The longest idempotency key taken, in bytes.
pub const MAX_KEY_BYTES: usize = 255;

/// A `tools/call`'s `params.idempotencyKey`, as the screen read it from the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKeyParam(pub String);

#[derive(Deserialize)]
struct Envelope {
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(rename = "idempotencyKey")]
    key: Option<Value>,
}

/// A key as given, or why it is refused (not a string, empty, too long).
pub fn check_key(value: &Value) -> Result<String, String> {
    match value {
        Value::String(key) if key.is_empty() => Err("idempotencyKey must not be empty".into()),
        Value::String(key) if key.len() > MAX_KEY_BYTES => {
            Err(format!("idempotencyKey is longer than {MAX_KEY_BYTES} bytes"))
        }
        Value::String(key) if key.chars().any(char::is_control) => {
            Err("idempotencyKey must not hold control characters".into())
        }
        Value::String(key) => Ok(key.clone()),
        _ => Err("idempotencyKey must be a string".into()),
    }
}

/// The `params.idempotencyKey` of a `tools/call` body (`message` is what the screen read of it), or
/// the JSON-RPC error a malformed one is owed: a key that cannot be honoured is never dropped silently.
pub(crate) fn key_in_body(
    message: &ClientJsonRpcMessage,
    body: &[u8],
) -> Result<Option<IdempotencyKeyParam>, EnvelopeError> {
    let JsonRpcMessage::Request(request) = message else { return Ok(None) };
    if !matches!(request.request, ClientRequest::CallToolRequest(_)) {
        return Ok(None);
    }
    // Most calls carry none: no second parse for them.
    if memchr_key(body).is_none() {
        return Ok(None);
    }
    let invalid = |message: String| EnvelopeError {
        code: ErrorCode::INVALID_PARAMS,
        message: format!("Invalid params: {message}"),
        id: serde_json::to_value(&request.id).unwrap_or(Value::Null),
    };
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| invalid(e.to_string()))?;
    match envelope.params.and_then(|p| p.key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => check_key(&value).map(|k| Some(IdempotencyKeyParam(k))).map_err(invalid),
    }
}

fn memchr_key(body: &[u8]) -> Option<usize> {
    const NEEDLE: &[u8] = b"\"idempotencyKey\"";
    body.windows(NEEDLE.len()).position(|w| w == NEEDLE)
}

/// A value of the request's extensions, or of the HTTP request's (rmcp keeps those in its `Parts`).
fn extension<T: Clone + Send + Sync + 'static>(context: &RequestContext<RoleServer>) -> Option<T> {
    context.extensions.get::<T>().cloned().or_else(|| {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<T>().cloned())
    })
}

/// The call's idempotency key: `params.idempotencyKey`, else `params._meta.idempotencyKey`. A malformed
/// one in `_meta` is an error too.
pub fn key_of(context: &RequestContext<RoleServer>) -> Result<Option<String>, String> {
    if let Some(IdempotencyKeyParam(key)) = extension::<IdempotencyKeyParam>(context) {
        return Ok(Some(key));
    }
    match context.meta.get("idempotencyKey") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => check_key(value).map(Some),
    }
}

/// The agent identity the request's token named (none where the transport has no token: stdio).
pub fn agent_of(context: &RequestContext<RoleServer>) -> Option<String> {
    extension::<AgentName>(context).map(|AgentName(name)| name.to_string())
}

/// What rmcp writes for the tools capability, and what the answer says instead.
const TOOLS_CAPABILITY: &[u8] = br#""tools":{"listChanged":true}"#;
const TOOLS_CAPABILITY_WITH_KEYS: &[u8] = br#""tools":{"listChanged":true,"idempotency":{}}"#;

/// The axum middleware in front of `/mcp` that advertises `tools.idempotency` in the answer to
/// `initialize` or `server/discover` (a JSON answer, or the one SSE event of the request's stream).
pub async fn advertise_idempotency(request: Request, next: Next) -> Response {
    // The capabilities are in the answer to `initialize` (2025-11-25) or `server/discover` (2026-07-28).
    let is_initialize = request.extensions().get::<Screened>().is_some_and(|s| {
        matches!(&s.0, JsonRpcMessage::Request(r)
            if matches!(r.request, ClientRequest::InitializeRequest(_) | ClientRequest::DiscoverRequest(_)))
    });
    let response = next.run(request).await;
    if !is_initialize {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = body.map_frame(|frame| frame.map_data(|data: Bytes| with_capability(data)));
    Response::from_parts(parts, Body::new(body))
}

fn with_capability(data: Bytes) -> Bytes {
    let Some(at) = data.windows(TOOLS_CAPABILITY.len()).position(|w| w == TOOLS_CAPABILITY) else {
        return data;
    };
    let mut out = Vec::with_capacity(data.len() + TOOLS_CAPABILITY_WITH_KEYS.len());
    out.extend_from_slice(&data[..at]);
    out.extend_from_slice(TOOLS_CAPABILITY_WITH_KEYS);
    out.extend_from_slice(&data[at + TOOLS_CAPABILITY.len()..]);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(body: &str) -> Result<Option<String>, i32> {
        let message: ClientJsonRpcMessage = serde_json::from_str(body).unwrap();
        key_in_body(&message, body.as_bytes()).map(|k| k.map(|k| k.0)).map_err(|e| e.code.0)
    }

    #[test]
    fn keys_are_read_from_tool_calls_only_and_checked() {
        let call =
            |params: &str| format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
        // One row per params: the key read, or the JSON-RPC error code.
        let rows: &[(&str, Result<Option<&str>, i32>)] = &[
            (r#"{"name":"t","arguments":{}}"#, Ok(None)),
            (r#"{"name":"t","idempotencyKey":"k-1"}"#, Ok(Some("k-1"))),
            (r#"{"name":"t","idempotencyKey":null}"#, Ok(None)),
            (r#"{"name":"t","arguments":{"idempotencyKey":"inner"}}"#, Ok(None)),
            (r#"{"name":"t","idempotencyKey":""}"#, Err(-32602)),
            (r#"{"name":"t","idempotencyKey":7}"#, Err(-32602)),
            (r#"{"name":"t","idempotencyKey":"a\nb"}"#, Err(-32602)),
        ];
        for (params, expected) in rows {
            let expected = expected.map(|k| k.map(str::to_owned));
            assert_eq!(read(&call(params)), expected, "{params}");
        }
        let long = format!(r#"{{"name":"t","idempotencyKey":"{}"}}"#, "k".repeat(MAX_KEY_BYTES + 1));
        assert_eq!(read(&call(&long)), Err(-32602));
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"idempotencyKey":7}}"#;
        assert_eq!(read(ping), Ok(None));
        assert_eq!(check_key(&json!("x")), Ok("x".into()));
    }

    #[test]
    fn the_capability_is_added_to_the_tools_capability_once() {
        let answer = Bytes::from_static(
            br#"data: {"result":{"capabilities":{"tools":{"listChanged":true}},"serverInfo":{}}}"#,
        );
        let patched = with_capability(answer);
        let text = std::str::from_utf8(&patched).unwrap();
        assert!(text.contains(r#""tools":{"listChanged":true,"idempotency":{}}"#), "{text}");
        let other = Bytes::from_static(b"data: {\"result\":{}}");
        assert_eq!(with_capability(other.clone()), other);
    }
}
