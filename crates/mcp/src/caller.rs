//! Whether the agent that sent a request is still there to read its answer. rmcp keeps a call running
//! when the connection that carries its response stream closes (a client could resume the stream), so a
//! call waiting for an operator's approval would outlive its caller, and an approval given after that
//! would run a command for nobody. This middleware marks each `/mcp` request with a token that fires
//! when its response body is dropped — the connection closed, or the response ended — and the gateway
//! withdraws a call whose caller is gone.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Body as HttpBody, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio_util::sync::{CancellationToken, DropGuard};

/// Put in a request's extensions: fires when the response to the request can no longer be delivered
/// (or has been). rmcp hands the request's parts to the handler, which finds it there.
#[derive(Debug, Clone, Default)]
pub struct CallerGone(pub CancellationToken);

impl CallerGone {
    /// The token of the request whose `http::request::Parts` rmcp put in a handler's extensions.
    pub fn of(extensions: &rmcp::model::Extensions) -> Option<CancellationToken> {
        let parts = extensions.get::<http::request::Parts>()?;
        parts.extensions.get::<CallerGone>().map(|gone| gone.0.clone())
    }
}

/// The axum middleware in front of `/mcp`: each request gets a [`CallerGone`] token, fired when the
/// response body is dropped, or when the request is dropped before it has one.
pub async fn watch_caller(mut request: Request, next: Next) -> Response {
    let gone = CancellationToken::new();
    request.extensions_mut().insert(CallerGone(gone.clone()));
    // Armed before the request runs: a connection that closes before the answer began also fires it.
    let guard = gone.drop_guard();
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(WatchedBody { inner: body, _gone: guard }))
}

/// A response body that fires its caller's token when hyper drops it.
struct WatchedBody {
    inner: Body,
    _gone: DropGuard,
}

impl HttpBody for WatchedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_body_fires_and_a_live_one_does_not() {
        let gone = CancellationToken::new();
        let body = WatchedBody { inner: Body::from("x"), _gone: gone.clone().drop_guard() };
        assert!(!gone.is_cancelled());
        drop(body);
        assert!(gone.is_cancelled());
    }
}
