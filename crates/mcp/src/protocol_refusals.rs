//! Clients turned away at the MCP layer — for their protocol version, their `Mcp-Method`/`Mcp-Name`
//! headers, their per-request `_meta`, a method their revision removed, a capability they lack — are
//! refusals like a wrong token is: a row in the ledger's refusals (`ledger refusals`), not only a log
//! line. The guard in front of `/mcp` records what it refuses itself; this middleware, around the
//! JSON-RPC screen and rmcp, records the answers that refuse a request at the protocol level (an HTTP
//! error status whose body is a JSON-RPC error), named by the error's code.

use crate::http::{RefusalLog, RefusedRequest};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::header;
use http_body_util::BodyExt;
use std::sync::Arc;

/// The longest refusal body read to name it (protocol refusals are a few hundred bytes).
const MAX_REFUSAL_BODY_BYTES: usize = 16 * 1024;

/// What each JSON-RPC error code of a protocol-level refusal is called in the ledger.
pub const REFUSAL_CODES: [(i64, &str); 7] = [
    (-32022, "protocol_version_refused"),
    (-32020, "routing_headers_refused"),
    (-32021, "client_capability_missing"),
    (-32602, "request_meta_refused"),
    (-32601, "method_removed_or_unknown"),
    (-32600, "invalid_request"),
    (-32001, "session_refused"),
];

/// The ledger's name for a refusal answered with JSON-RPC error `code`.
pub fn refusal_code(code: i64) -> &'static str {
    REFUSAL_CODES.iter().find(|(c, _)| *c == code).map_or("protocol_refused", |(_, name)| name)
}

/// Records the protocol-level refusals of `/mcp` in `log` (none: nothing to do).
pub async fn record_protocol_refusals(
    State(log): State<Option<Arc<dyn RefusalLog>>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(log) = log else { return next.run(request).await };
    // What the refusal row keeps of the request (never its token), taken before it is consumed.
    let seen = RefusedRequest::of_status(0, "", &request);
    let response = next.run(request).await;
    let status = response.status();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    // Only a body known to be small is read (a protocol refusal is a few hundred bytes): anything else,
    // a stream among them, goes on untouched.
    let small = http_body::Body::size_hint(response.body())
        .upper()
        .is_some_and(|n| n <= MAX_REFUSAL_BODY_BYTES as u64);
    if !(status.is_client_error() && json && small) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_REFUSAL_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        // The length said it fits: a body that does not is cut short by its sender; nothing to name.
        Err(_) => return Response::from_parts(parts, Body::empty()),
    };
    let code = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.get("code")).and_then(serde_json::Value::as_i64));
    if let Some(code) = code {
        let name = refusal_code(code);
        tracing::info!(status = %status, code, refusal = name, "an MCP request was refused at the protocol level");
        log.refused(RefusedRequest { status: status.as_u16(), code: name, ..seen });
    }
    Response::from_parts(parts, Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_error_code_has_its_refusal_name() {
        for (code, name) in REFUSAL_CODES {
            assert_eq!(refusal_code(code), name);
        }
        assert_eq!(refusal_code(-32000), "protocol_refused");
        let names: std::collections::HashSet<&str> = REFUSAL_CODES.iter().map(|(_, n)| *n).collect();
        assert_eq!(names.len(), REFUSAL_CODES.len(), "names are distinct");
    }
}
