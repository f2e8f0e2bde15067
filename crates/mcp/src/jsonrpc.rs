//! The screen in front of rmcp's `/mcp` service: a POST's JSON-RPC envelope is checked
//! ([`crate::envelope`]) before rmcp reads it, and so are the methods 2026-07-28 removed, the routing
//! headers (`Mcp-Method`, `Mcp-Name`) that contradict the body ([`crate::route_headers`]) and a
//! `tools/call`'s idempotency key; what passes goes on with the message as read ([`Screened`]).

use crate::envelope::{Screened, screen};
use crate::http::MAX_REQUEST_BODY_BYTES;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};

/// The axum middleware in front of rmcp's `/mcp` service: POSTs with a JSON body are read (at most
/// [`MAX_REQUEST_BODY_BYTES`], else 413) and answered with a JSON-RPC error when their envelope is not
/// one rmcp takes; everything else goes on unchanged.
pub async fn screen_jsonrpc(request: Request, next: Next) -> Response {
    let is_json =
        request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
            v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
    if request.method() != Method::POST || !is_json {
        // rmcp answers these (405, 415) itself.
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match Limited::new(body, MAX_REQUEST_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            let message =
                format!("Payload Too Large: the request body exceeds {MAX_REQUEST_BODY_BYTES} bytes");
            return (StatusCode::PAYLOAD_TOO_LARGE, message).into_response();
        }
        Err(e) => {
            tracing::debug!(error = %e, "request body not read");
            return (StatusCode::BAD_REQUEST, "the request body could not be read").into_response();
        }
    };
    let mut parts = parts;
    if let Err(error) = crate::stateless::check_removed_method(&parts.headers, &bytes) {
        tracing::debug!(message = %error.message, "a method 2026-07-28 removed");
        return error.into_response();
    }
    match screen(&bytes) {
        Ok(message) => {
            if let Err(error) = crate::route_headers::check(&parts.headers, &message, &bytes) {
                tracing::debug!(message = %error.message, "routing headers contradict the body");
                return error.into_response();
            }
            match crate::idempotency::key_in_body(&message, &bytes) {
                Ok(Some(key)) => {
                    parts.extensions.insert(key);
                }
                Ok(None) => {}
                Err(error) => return error.into_response(),
            }
            parts.extensions.insert(Screened(message));
        }
        Err(error) => {
            tracing::debug!(code = error.code.0, message = %error.message, "JSON-RPC message refused");
            return error.into_response();
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
