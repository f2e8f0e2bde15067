//! Requests of an established MCP session answered from the HTTP request's own handling.
//!
//! rmcp's Streamable HTTP server passes every request through a chain of tasks (the connection, the
//! session's worker, the service loop, a handler task, back through the worker to an SSE stream), and
//! frames even a single answer as an event stream. Each hop is a wake-up; on a loaded 2-core machine
//! they were most of what the gateway added to a call. A request of a session that finished
//! `initialize`, with the headers that session negotiated, is handled here instead: the session's own
//! handler runs it (the same `ServerHandler` dispatch rmcp would run, with the same context: the
//! session's peer, the request's `_meta` and HTTP parts) in one task, and the answer goes back as
//! `application/json`, which the transport allows for any request. When the call reports progress
//! first (a progress token, or a wait for an operator), or takes longer than a second, the answer is
//! an event stream instead: its progress, then the answer. Anything else (`initialize`, a per-request
//! protocol version, odd headers, a session not known here) goes on to rmcp unchanged.
//!
//! Because requests served here never reach rmcp's session worker, the lane also keeps the sessions'
//! idle clock (rmcp's would expire a session whose every request took the lane) and forwards a
//! client's `notifications/cancelled` to the calls it started. Requests an upstream server makes
//! during such a call (sampling, elicitation, relayed to the agent) go on the session's standalone
//! stream, as rmcp sends them for a request whose own stream has ended.

use crate::connection::Connection;
use crate::envelope::Screened;
use crate::gateway::GatewayHandler;
use crate::progress::LaneSink;
use axum::body::Body;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode, header};
use rmcp::model::{
    ClientNotification, ClientRequest, ErrorData, GetExtensions, GetMeta, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::service::{RequestContext, Service as _};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

// The lane's table of sessions lives below the handler, with the connections it holds; offered here as
// well, where the middleware that serves from it is.
pub use crate::connection::FastLane;

const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// Whether the headers let a request be answered here: the client takes JSON (and, as the transport
/// requires, event streams), names no method in headers (rmcp checks those against the body), and
/// names the protocol version its session negotiated, or none.
fn headers_fit(headers: &HeaderMap, negotiated: Option<&str>) -> bool {
    let mut json = false;
    let mut sse = false;
    for accept in headers.get_all(header::ACCEPT) {
        for media in accept.to_str().unwrap_or("").split(',') {
            let essence = media.split(';').next().unwrap_or("").trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    let version_fits = match headers.get(PROTOCOL_HEADER) {
        None => true,
        Some(given) => negotiated.is_some_and(|n| given.as_bytes() == n.as_bytes()),
    };
    json && sse && version_fits && !headers.contains_key("mcp-method") && !headers.contains_key("mcp-name")
}

/// The axum middleware in front of rmcp's `/mcp` service (inside the JSON-RPC screen and the caller
/// watch): serves what it can, keeps the sessions' clocks, and passes everything else on.
pub async fn fast_lane(State(lane): State<Arc<FastLane>>, mut request: Request, next: Next) -> Response {
    let Some(id) = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned)
    else {
        let opens = request.method() == Method::POST;
        let response = next.run(request).await;
        if opens
            && response.status().is_success()
            && let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())
        {
            lane.opened(id);
        }
        return response;
    };
    let known = lane.seen(&id);
    if request.method() == Method::DELETE {
        let response = next.run(request).await;
        if response.status().is_success() {
            lane.forget(&id);
        }
        return response;
    }
    let (Some(known), Method::POST) = (known, request.method().clone()) else {
        return next.run(request).await;
    };
    let Some(connection) = known.connection.upgrade() else { return next.run(request).await };
    let Some(Screened(message)) = request.extensions_mut().remove::<Screened>() else {
        return next.run(request).await;
    };
    match message {
        JsonRpcMessage::Request(call)
            if !matches!(call.request, ClientRequest::InitializeRequest(_))
                && call.request.get_meta().protocol_version().is_none()
                && headers_fit(request.headers(), connection.negotiated_version().as_deref()) =>
        {
            let Some(peer) = connection.peer() else { return next.run(request).await };
            let (parts, _body) = request.into_parts();
            serve(connection, peer, call.id, call.request, parts).await
        }
        JsonRpcMessage::Notification(notice) => {
            if let ClientNotification::CancelledNotification(cancelled) = &notice.notification
                && let Some(request_id) = &cancelled.params.request_id
            {
                connection.cancel_fast(request_id);
            }
            next.run(request).await
        }
        _ => next.run(request).await,
    }
}

/// How long a request's answer may take before the lane answers with an event stream instead of JSON:
/// the stream's headers go out at once and comments keep it open, so a call waiting minutes for an
/// operator is not cut by a client's header timeout.
const JSON_WITHIN: Duration = Duration::from_secs(1);
/// A comment on an open event stream this often.
const STREAM_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Runs one request on the session's handler, and answers it as JSON when the answer is all there is to say within [`JSON_WITHIN`]; else as an event stream of
/// its progress and then the answer.
async fn serve(
    connection: Arc<Connection>,
    peer: rmcp::Peer<rmcp::RoleServer>,
    id: RequestId,
    mut request: ClientRequest,
    parts: http::request::Parts,
) -> Response {
    let (sink, mut notes) = mpsc::unbounded_channel();
    let mut context = RequestContext::new(id.clone(), peer);
    context.meta = std::mem::take(request.get_meta_mut());
    context.extensions = std::mem::take(request.extensions_mut());
    context.extensions.insert(parts);
    context.extensions.insert(LaneSink::new(sink));
    let cancel = CancellationToken::new();
    context.ct = cancel.child_token();
    let handler = GatewayHandler { connection: connection.clone() };
    let answer_id = id.clone();
    let mut call = Finishing::new(async move {
        let _in_flight = handler.connection.start_fast(answer_id.clone(), cancel);
        let result = handler.handle_request(request, context).await;
        answer(result, answer_id)
    });
    let first = tokio::select! {
        biased;
        Some(note) = notes.recv() => Some(note),
        done = &mut call => return json_response(&done),
        () = tokio::time::sleep(JSON_WITHIN) => None,
    };
    event_stream(first, notes, call)
}

/// A request's handling, run in the HTTP request's own task (no hop to another task). If the request
/// is dropped before the handling ends (the client went away), the rest runs on in a task of its own,
/// as it would have under rmcp: a call is never cut off half done; its caller token, fired by the
/// same drop, withdraws it through the pipeline, which records how it ended.
struct Finishing<F: Future<Output = ServerJsonRpcMessage> + Send + 'static>(Option<std::pin::Pin<Box<F>>>);

impl<F: Future<Output = ServerJsonRpcMessage> + Send + 'static> Finishing<F> {
    fn new(handling: F) -> Self {
        Finishing(Some(Box::pin(handling)))
    }
}

impl<F: Future<Output = ServerJsonRpcMessage> + Send + 'static> Future for Finishing<F> {
    type Output = ServerJsonRpcMessage;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        // Polled again after its end (no caller does): nothing more will come.
        let Some(handling) = self.0.as_mut() else {
            return std::task::Poll::Pending;
        };
        let done = handling.as_mut().poll(cx);
        if done.is_ready() {
            self.0 = None;
        }
        done
    }
}

impl<F: Future<Output = ServerJsonRpcMessage> + Send + 'static> Drop for Finishing<F> {
    fn drop(&mut self) {
        if let (Some(handling), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(handling);
        }
    }
}

fn answer(result: Result<rmcp::model::ServerResult, ErrorData>, id: RequestId) -> ServerJsonRpcMessage {
    match result {
        Ok(result) => JsonRpcMessage::response(result, id),
        Err(error) => JsonRpcMessage::error(error, Some(id)),
    }
}

fn json_response(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], Body::from(body)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "an answer could not be written as JSON");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// One message as a server-sent event.
fn event(message: &ServerJsonRpcMessage) -> Option<Bytes> {
    match serde_json::to_string(message) {
        Ok(data) => Some(Bytes::from(format!("data: {data}\n\n"))),
        Err(e) => {
            tracing::error!(error = %e, "a message could not be written as JSON");
            None
        }
    }
}

/// The answer as an event stream: `first`, the progress that follows, then the answer; a comment
/// every [`STREAM_KEEP_ALIVE`] meanwhile.
fn event_stream(
    first: Option<ServerJsonRpcMessage>,
    mut notes: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    mut call: impl Future<Output = ServerJsonRpcMessage> + Send + Unpin + 'static,
) -> Response {
    let (events, body) = mpsc::unbounded_channel::<Bytes>();
    if let Some(first) = first.as_ref().and_then(event) {
        let _ = events.send(first);
    }
    tokio::spawn(async move {
        let mut keep_alive =
            tokio::time::interval_at(tokio::time::Instant::now() + STREAM_KEEP_ALIVE, STREAM_KEEP_ALIVE);
        loop {
            let sent = tokio::select! {
                biased;
                Some(note) = notes.recv() => event(&note).map_or(Ok(()), |e| events.send(e)),
                done = &mut call => {
                    while let Ok(note) = notes.try_recv() {
                        if let Some(e) = event(&note) {
                            let _ = events.send(e);
                        }
                    }
                    if let Some(e) = event(&done) {
                        let _ = events.send(e);
                    }
                    break;
                }
                _ = keep_alive.tick() => events.send(Bytes::from_static(b": keep-alive\n\n")),
            };
            // The client is gone: the call goes on (its caller token withdraws it) but nobody reads.
            if sent.is_err() {
                break;
            }
        }
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")],
        Body::new(EventBody(body)),
    )
        .into_response()
}

/// A response body of the events a channel carries; it ends when the sender goes.
struct EventBody(mpsc::UnboundedReceiver<Bytes>);

impl http_body::Body for EventBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|event| event.map(|bytes| Ok(http_body::Frame::data(bytes))))
    }
}

/// Forgets a fast-lane request when it ends, however it ends.
struct FastCall<'a> {
    connection: &'a Connection,
    id: rmcp::model::RequestId,
}

impl Drop for FastCall<'_> {
    fn drop(&mut self) {
        self.connection.fast_calls().remove(&self.id);
    }
}

impl Connection {
    fn fast_calls(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<rmcp::model::RequestId, CancellationToken>> {
        self.fast_calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The agent's side of the session, once it sent `initialize`.
    fn peer(&self) -> Option<rmcp::Peer<rmcp::RoleServer>> {
        self.peer.get().cloned()
    }

    /// The protocol version `initialize` agreed on.
    fn negotiated_version(&self) -> Option<String> {
        self.negotiated.get().cloned()
    }

    /// A fast-lane request `id` runs until the guard drops; `cancel` fires on the client's cancel.
    fn start_fast(&self, id: rmcp::model::RequestId, cancel: CancellationToken) -> FastCall<'_> {
        self.fast_calls().insert(id.clone(), cancel);
        FastCall { connection: self, id }
    }

    /// The client cancelled request `id`: a fast-lane request of that id stops.
    fn cancel_fast(&self, id: &rmcp::model::RequestId) {
        if let Some(cancel) = self.fast_calls().get(id) {
            cancel.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::tests::headers;

    #[test]
    fn only_requests_with_the_sessions_own_headers_take_the_lane() {
        let both = ("accept", "application/json, text/event-stream");
        assert!(headers_fit(&headers(&[both]), Some("2025-06-18")));
        assert!(headers_fit(&headers(&[both, ("mcp-protocol-version", "2025-06-18")]), Some("2025-06-18")));
        assert!(headers_fit(
            &headers(&[("accept", "application/json"), ("accept", "text/event-stream;q=0.9")]),
            None
        ));
        // Another version than the session's, or one before the session negotiated any: rmcp checks it.
        assert!(!headers_fit(&headers(&[both, ("mcp-protocol-version", "2025-03-26")]), Some("2025-06-18")));
        assert!(!headers_fit(&headers(&[both, ("mcp-protocol-version", "2025-06-18")]), None));
        assert!(!headers_fit(&headers(&[("accept", "application/json")]), None));
        assert!(!headers_fit(&headers(&[("accept", "text/event-stream")]), None));
        assert!(!headers_fit(&headers(&[both, ("mcp-method", "tools/call")]), None));
        assert!(!headers_fit(&headers(&[both, ("mcp-name", "echo")]), None));
    }
}
