//! The Streamable HTTP side of the gateway: rmcp's service for `/mcp`, and the guard in front of every
//! route — a bearer token (compared in constant time) and an Origin check against DNS rebinding and
//! browser pages. rmcp's own Host allowlist (loopback names) stays on behind it.

use crate::gateway::{GatewayBackend, GatewayHandler};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the guard lets through.
#[derive(Debug, Clone)]
pub struct AccessGuard {
    token: Arc<str>,
    /// Origins allowed besides none at all (non-browser clients send none).
    allowed_origins: Arc<[String]>,
}

impl AccessGuard {
    pub fn new(token: impl Into<Arc<str>>, allowed_origins: Vec<String>) -> Self {
        AccessGuard { token: token.into(), allowed_origins: allowed_origins.into() }
    }

    /// Why a request is refused, if it is.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let allowed = origin.to_str().is_ok_and(|o| self.allowed_origins.iter().any(|a| a == o));
            if !allowed {
                return Err((StatusCode::FORBIDDEN, "origin not allowed"));
            }
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")));
        match presented {
            Some(token) if constant_time_eq(token.as_bytes(), self.token.as_bytes()) => Ok(()),
            _ => Err((StatusCode::UNAUTHORIZED, "missing or wrong bearer token")),
        }
    }
}

/// Equal without leaking where the first difference is (the length is not secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The axum middleware applying [`AccessGuard`].
pub async fn guard(State(guard): State<AccessGuard>, request: Request, next: Next) -> Response {
    match guard.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err((status, why)) => {
            tracing::warn!(%status, why, path = %request.uri().path(), "gateway request refused");
            (status, [(header::WWW_AUTHENTICATE, "Bearer")], why).into_response()
        }
    }
}

/// rmcp's Streamable HTTP service over the gateway: one handler (and ledger session) per MCP session;
/// cancelling `shutdown` ends every session and its streams.
pub fn mcp_service(
    backend: Arc<dyn GatewayBackend>,
    shutdown: CancellationToken,
) -> StreamableHttpService<GatewayHandler, LocalSessionManager> {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_secs(30 * 60));
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
        .with_legacy_session_mode(true);
    StreamableHttpService::new(
        move || Ok(GatewayHandler::new(backend.clone(), "http")),
        Arc::new(sessions),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn token_and_origin() {
        let g = AccessGuard::new("s3cret-token", vec!["http://127.0.0.1:7777".into()]);
        assert!(g.check(&headers(&[("authorization", "Bearer s3cret-token")])).is_ok());
        assert_eq!(g.check(&headers(&[])).unwrap_err().0, StatusCode::UNAUTHORIZED);
        assert_eq!(
            g.check(&headers(&[("authorization", "Bearer s3cret-tokeN")])).unwrap_err().0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            g.check(&headers(&[("authorization", "Basic s3cret-token")])).unwrap_err().0,
            StatusCode::UNAUTHORIZED
        );
        let foreign = [("authorization", "Bearer s3cret-token"), ("origin", "http://evil.example")];
        assert_eq!(g.check(&headers(&foreign)).unwrap_err().0, StatusCode::FORBIDDEN);
        let own = [("authorization", "Bearer s3cret-token"), ("origin", "http://127.0.0.1:7777")];
        assert!(g.check(&headers(&own)).is_ok());
    }
}
