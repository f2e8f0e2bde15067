//! One request to an upstream server on behalf of a call: sent on the live connection, its progress
//! routed back to the call, cancelled upstream when the call is cancelled or times out, its answer
//! bounded in size, and every failure named with the server's id and an error code.

use super::{LivePeer, Origins, ProgressRoutes, ProgressTarget, UpstreamLimits, cut};
use crate::client_side::CallOrigin;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{ProgressReporter, ToolError};
use rmcp::model::{CancelledNotificationParam, ClientRequest, ProgressToken, ServerResult};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use tokio_util::sync::CancellationToken;

/// What a request needs of its server: its id, live connection, bounds, and where progress and the
/// calls its requests serve are kept. Every tool and method of a server holds one.
#[derive(Clone)]
pub(super) struct Reach {
    pub server: String,
    pub live: LivePeer,
    pub limits: UpstreamLimits,
    pub progress: ProgressRoutes,
    pub origins: Origins,
    /// Who relays what the server asks of an agent (input rounds too): none on a hub without agents.
    pub relay: Option<std::sync::Arc<dyn crate::client_side::ClientRelay>>,
    pub log_level: LogLevel,
}

/// The log level agents asked for, for a server that takes it per request (2026-07-28). Logging is
/// deprecated in rmcp (SEP-2577), not in the revisions agents speak.
#[allow(deprecated)]
pub(super) type LogLevel = std::sync::Arc<std::sync::Mutex<Option<rmcp::model::LoggingLevel>>>;

/// Whether the connection to `peer` speaks 2026-07-28 or later (per-request `_meta`, no sessions).
pub(super) fn speaks_2026(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| {
        info.protocol_version.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
    })
}

/// The `_meta` that declares to a 2026-07-28 server, for one request, what the hub can answer for the
/// call's agent: the relayed capabilities (sampling, elicitation, roots) the agent itself declared, so
/// the server asks only what the agent can answer (and refuses with -32021 what needs more) instead of
/// what the hub declared for every agent at once.
fn capabilities_meta(declared: &serde_json::Value) -> rmcp::model::RequestMetaObject {
    let relayable: serde_json::Map<String, serde_json::Value> = crate::client_side::RELAYED
        .iter()
        .filter_map(|(_, capability)| {
            declared.get(*capability).map(|v| ((*capability).to_owned(), v.clone()))
        })
        .collect();
    let capabilities: rmcp::model::ClientCapabilities =
        serde_json::from_value(serde_json::Value::Object(relayable)).unwrap_or_default();
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_client_capabilities(capabilities);
    meta
}

/// Forgets which call an upstream request serves once it is answered.
struct OriginEntry {
    origins: Origins,
    id: rmcp::model::RequestId,
}

impl Drop for OriginEntry {
    fn drop(&mut self) {
        self.origins.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.id);
    }
}

/// How long a request that reported progress waits after its result for progress still being handled.
const PROGRESS_STRAGGLERS: std::time::Duration = std::time::Duration::from_millis(25);

/// Removes a call's progress route when the call ends, however it ends.
struct ProgressRoute {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        self.routes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.token);
    }
}

/// The live connection, or `upstream_unavailable`.
pub(super) fn live_peer(route: &Reach) -> Result<Peer<RoleClient>, ToolError> {
    let live = route.live.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    match live {
        Some(peer) if !peer.is_transport_closed() => Ok(peer),
        _ => Err(ToolError::new(
            CallErrorCode::UpstreamUnavailable,
            format!("the server {} is not connected", route.server),
        )),
    }
}

/// How many bytes `value` takes as JSON, counted without writing them anywhere.
fn json_size(value: &ServerResult) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// Sends `request` and waits for its answer within the server's bounds; the server's progress for it
/// goes to `progress`, and `cancel` withdraws it (upstream too).
pub(super) async fn send(
    route: &Reach,
    request: ClientRequest,
    progress: Option<&ProgressReporter>,
    cancel: &CancellationToken,
    origin: Option<CallOrigin>,
) -> Result<ServerResult, ToolError> {
    let server = route.server.as_str();
    let peer = live_peer(route)?;
    let mut request = request;
    let level = *route.log_level.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(level) = level.filter(|_| speaks_2026(&peer)) {
        use rmcp::model::GetMeta;
        request.get_meta_mut().set_log_level(level);
    }
    let mut options = PeerRequestOptions::no_options();
    if let (Some(relay), Some(origin)) = (route.relay.as_ref(), origin.as_ref())
        && speaks_2026(&peer)
    {
        options.meta = relay.declared(origin).map(|declared| capabilities_meta(&declared));
    }
    let handle = match peer.send_request_with_option(request, options).await {
        Ok(handle) => handle,
        Err(e) => {
            return Err(ToolError::new(
                CallErrorCode::UpstreamUnavailable,
                format!("{server}: {}", cut(&e.to_string(), 4096)),
            ));
        }
    };
    // Progress the server sends for this request reaches the harness (events, ledger, the agent).
    let handled = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let _route = progress.map(|reporter| {
        let target = ProgressTarget { reporter: reporter.clone(), handled: handled.clone() };
        route
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(handle.progress_token.clone(), target);
        ProgressRoute { routes: route.progress.clone(), token: handle.progress_token.clone() }
    });
    // What the server asks the client while it serves this request goes to the call's agent.
    let _origin = origin.map(|origin| {
        route
            .origins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(handle.id.clone(), origin);
        OriginEntry { origins: route.origins.clone(), id: handle.id.clone() }
    });
    let (peer, id) = (handle.peer.clone(), handle.id.clone());
    let cancel_upstream = |reason: &str| {
        let param = CancelledNotificationParam::new(Some(id.clone()), Some(reason.to_owned()));
        let peer = peer.clone();
        tokio::spawn(async move { peer.notify_cancelled(param).await });
    };
    let timeout = route.limits.call_timeout;
    let result = tokio::select! {
        r = tokio::time::timeout(timeout, handle.await_response()) => r,
        () = cancel.cancelled() => {
            cancel_upstream("cancelled by the caller");
            return Err(ToolError::new(CallErrorCode::Cancelled, "the call was cancelled"));
        }
    };
    let gone = |e: &dyn std::fmt::Display| {
        ToolError::new(CallErrorCode::UpstreamUnavailable, format!("the server {server} went away: {e}"))
    };
    let result = match result {
        Err(_) => {
            cancel_upstream("timed out");
            return Err(ToolError::new(
                CallErrorCode::UpstreamTimeout,
                format!("{server} did not answer within {} s", timeout.as_secs()),
            ));
        }
        Ok(Err(ServiceError::McpError(e))) => {
            // The server's own code and data go along: the gateway passes some on to the agent (a
            // missing resource's -32602 with its `uri`), as the agent's revision expects.
            let upstream = serde_json::json!({ "upstream_error": { "code": e.code.0, "data": e.data } });
            return Err(ToolError::new(
                CallErrorCode::UpstreamError,
                format!("{server} answered with an error: {}", cut(&e.message, 4096)),
            )
            .with_details(upstream));
        }
        // The connection closed under the call (the server died, or an operator restarted it); the
        // transport may be seen closed a moment after the call's answer is dropped.
        Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
            return Err(gone(&e));
        }
        Ok(Err(e)) if peer.is_transport_closed() => return Err(gone(&e)),
        Ok(Err(e)) => {
            return Err(ToolError::new(
                CallErrorCode::UpstreamError,
                format!("{server}: {}", cut(&e.to_string(), 4096)),
            ));
        }
        Ok(Ok(result)) => result,
    };
    // rmcp hands each notification to its own task, so a server's last progress, sent before its
    // result, may be handled after the result arrives. A request that reported progress gives its
    // stragglers a moment before the call ends (and its route goes).
    if progress.is_some() && handled.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        tokio::time::sleep(PROGRESS_STRAGGLERS).await;
    }
    let bytes = json_size(&result);
    if bytes > route.limits.result_bytes {
        return Err(ToolError::new(
            CallErrorCode::UpstreamResultTooLarge,
            format!("{server} returned {bytes} bytes (limit {})", route.limits.result_bytes),
        ));
    }
    Ok(result)
}
