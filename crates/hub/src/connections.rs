//! The gateway's accept loop, with the two bounds `axum::serve` lacks: a header-read timeout (a
//! connection that is idle or sends half a request is closed, keep-alive ones between requests too) and
//! a cap on open connections (at the cap, new ones wait in the listen backlog until one closes), so
//! nobody can hold the hub's file descriptors and starve agents and the operator of it. A request's body
//! gets the same time to arrive. Each request carries its peer's address (`ConnectInfo`), which the
//! refusal log records.

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

/// Serves one connection (plain or TLS) until it ends; at `stop`, idle ones close at once and a request
/// in progress finishes first.
async fn serve_connection<IO>(
    io: TokioIo<IO>,
    service: TowerToHyperService<WithPeer>,
    header_read_timeout: Duration,
    stop: &CancellationToken,
) -> Result<(), hyper::Error>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_read_timeout);
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    let ended = tokio::select! {
        ended = connection.as_mut() => Some(ended),
        _ = stop.cancelled() => None,
    };
    match ended {
        Some(ended) => ended,
        None => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    }
}

/// File descriptors kept out of the connection cap's reach: the ledger, policy watches, upstream
/// servers' pipes, process tools.
const RESERVED_FDS: u64 = 128;

/// The open-connection slots: one per connection, held while it is open.
#[derive(Clone)]
pub struct ConnectionSlots {
    slots: Arc<Semaphore>,
    max: usize,
}

impl ConnectionSlots {
    /// `requested` slots, or fewer when the process may not open that many files: at most half of the
    /// open-file limit left after a reserve (at least 16).
    pub fn new(requested: usize) -> Self {
        let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map(|(soft, _)| soft)
            .unwrap_or(1024);
        let room = usize::try_from(limit.saturating_sub(RESERVED_FDS) / 2).unwrap_or(usize::MAX).max(16);
        let max = requested.clamp(1, room);
        if max < requested {
            tracing::warn!(
                requested,
                max,
                open_file_limit = limit,
                "the connection cap is lowered to stay under the open-file limit"
            );
        }
        ConnectionSlots { slots: Arc::new(Semaphore::new(max)), max }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.max.saturating_sub(self.slots.available_permits())
    }
}

/// The app as one connection serves it: every request gets the peer's address as `ConnectInfo`.
#[derive(Clone)]
struct WithPeer {
    app: Router,
    peer: SocketAddr,
}

impl Service<http::Request<Incoming>> for WithPeer {
    type Response = Response;
    type Error = Infallible;
    type Future = <Router as Service<http::Request<Incoming>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<http::Request<Incoming>>::poll_ready(&mut self.app, cx)
    }

    fn call(&mut self, mut request: http::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        self.app.call(request)
    }
}

/// How long a request's body may take to arrive, and how large it may be.
#[derive(Debug, Clone, Copy)]
pub struct BodyBound {
    pub timeout: Duration,
    pub max_bytes: usize,
}

/// The axum middleware that reads a request's whole body (at most `max_bytes`, else 413) within
/// `timeout` (else 408, and the connection is closed) before the route sees it: a client dribbling a
/// body holds its connection no longer than one sending half its headers.
pub async fn read_body_within(State(bound): State<BodyBound>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let read = Limited::new(body, bound.max_bytes).collect();
    let bytes = match tokio::time::timeout(bound.timeout, read).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            let message = format!("the request body exceeds {} bytes", bound.max_bytes);
            return (StatusCode::PAYLOAD_TOO_LARGE, [(header::CONNECTION, "close")], message).into_response();
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "request body not read");
            let message = "the request body could not be read";
            return (StatusCode::BAD_REQUEST, [(header::CONNECTION, "close")], message).into_response();
        }
        Err(_) => {
            tracing::warn!(path = %parts.uri.path(), "a request body did not arrive in time");
            let message = "the request body did not arrive in time";
            return (StatusCode::REQUEST_TIMEOUT, [(header::CONNECTION, "close")], message).into_response();
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// How connections are served.
#[derive(Clone)]
pub struct ConnectionLimits {
    pub slots: ConnectionSlots,
    pub header_read_timeout: Duration,
    /// How long, after `stop`, open connections get to finish before the loop returns anyway.
    pub drain: Duration,
    /// TLS on every connection (its handshake gets the header-read time too); none: plain HTTP.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Serves `app` on `listener` until `stop`: then accepts no more, lets open connections finish their
/// requests (bounded by `limits.drain`) and returns.
pub async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
) {
    let slots = limits.slots.slots.clone();
    // Said once each time the cap is reached, not for every connection accepted while it lasts.
    let mut at_cap = false;
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                at_cap = false;
                slot
            }
            Err(_) => {
                if !at_cap {
                    at_cap = true;
                    tracing::warn!(
                        max = limits.slots.max,
                        "connection cap reached: new connections wait until one closes"
                    );
                }
                tokio::select! {
                    _ = stop.cancelled() => break,
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                }
            }
        };
        let (tcp, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted: wait a
                    // moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                    }
                }
            },
        };
        // Small streamed answers must not wait for the client's delayed ACK (a ~40 ms stall per call on
        // kept-alive connections).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
        let service = TowerToHyperService::new(WithPeer { app: app.clone(), peer });
        let stop = stop.clone();
        let header_read_timeout = limits.header_read_timeout;
        let tls = limits.tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let ended = match tls {
                None => serve_connection(TokioIo::new(tcp), service, header_read_timeout, &stop).await,
                Some(tls) => match tokio::time::timeout(header_read_timeout, tls.accept(tcp)).await {
                    Ok(Ok(stream)) => {
                        serve_connection(TokioIo::new(stream), service, header_read_timeout, &stop).await
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                },
            };
            if let Err(e) = ended {
                tracing::debug!(%peer, error = %e, "connection closed");
            }
        });
    }
    // Every open connection holds a slot: all slots back means all connections closed.
    let all = u32::try_from(limits.slots.max).unwrap_or(u32::MAX);
    if tokio::time::timeout(limits.drain, slots.acquire_many(all)).await.is_err() {
        tracing::warn!(open = limits.slots.open(), "connections still open at shutdown are dropped");
    }
}
