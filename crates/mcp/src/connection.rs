//! One agent connection's state, shared by the clones rmcp makes of its handler ([`Connection`]), and
//! the fast lane's table of the HTTP sessions' connections ([`FastLane`]). The two hold each other (a
//! connection the lane it registers on, the lane its sessions' connections, weakly), so they are one
//! layer; it sits below the handler (`gateway.rs`), which runs on a connection, and below the lane's
//! middleware (`fast_lane.rs`), which serves a session's requests on its connection's handler: the
//! handler registers with the lane without naming that middleware.

use crate::backend::GatewayBackend;
use crate::stateless::{StatelessSession, StatelessSessions};
use rmcp::transport::streamable_http_server::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{Peer, RoleServer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// One connection's state, shared by the clones rmcp makes of the handler; closing the ledger session
/// when the last clone goes.
pub(crate) struct Connection {
    pub(crate) backend: Arc<dyn GatewayBackend>,
    pub(crate) transport: &'static str,
    pub(crate) session: OnceLock<String>,
    pub(crate) calls: AtomicU64,
    /// The least severe log level this agent asked for (`logging/setLevel`); none: no log messages.
    pub(crate) log_level: std::sync::Mutex<Option<u8>>,
    /// The resource URIs (as this agent names them) it subscribed to.
    pub(crate) subscriptions: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Where this connection's requests may be answered without rmcp's session worker (HTTP only).
    pub(crate) lane: Option<Arc<FastLane>>,
    /// The agent's side of the session, and the protocol version agreed, from `initialize`.
    pub(crate) peer: OnceLock<Peer<RoleServer>>,
    pub(crate) negotiated: OnceLock<String>,
    /// The requests served on the fast lane still running, to cancel them on `notifications/cancelled`.
    pub(crate) fast_calls:
        std::sync::Mutex<std::collections::HashMap<rmcp::model::RequestId, CancellationToken>>,
    /// Where stateless (2026-07-28) clients' ledger sessions are kept (HTTP only).
    pub(crate) stateless: Option<Arc<StatelessSessions>>,
    /// The ledger session of the stateless client whose one request this handler serves: not this
    /// connection's to close.
    pub(crate) shared: OnceLock<Arc<StatelessSession>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let (Some(session), Ok(runtime)) = (self.session.take(), tokio::runtime::Handle::try_current()) {
            let backend = self.backend.clone();
            runtime.spawn(async move { backend.close_session(session).await });
        }
    }
}

/// One session as the lane knows it.
pub(crate) struct Lane {
    /// The session's handler state, once the client sent `notifications/initialized`.
    pub(crate) connection: Weak<Connection>,
    /// Milliseconds since the lane's start at the session's last request.
    last_seen: AtomicU64,
}

/// The sessions of one gateway, by MCP session id.
pub struct FastLane {
    sessions: Mutex<HashMap<Arc<str>, Arc<Lane>>>,
    manager: Arc<LocalSessionManager>,
    idle: Duration,
    started: Instant,
}

impl std::fmt::Debug for FastLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastLane").field("idle", &self.idle).finish_non_exhaustive()
    }
}

impl FastLane {
    /// The lane over `manager`'s sessions, closing those idle for `idle`; the closing task ends with
    /// `shutdown`.
    pub fn start(
        manager: Arc<LocalSessionManager>,
        idle: Duration,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let lane = Arc::new(FastLane {
            sessions: Mutex::new(HashMap::new()),
            manager,
            idle,
            started: Instant::now(),
        });
        let weak = Arc::downgrade(&lane);
        let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let Some(lane) = weak.upgrade() else { break };
                lane.close_idle().await;
            }
        });
        lane
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<Lane>>> {
        self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A session rmcp just created.
    pub(crate) fn opened(&self, id: &str) {
        let lane = Lane { connection: Weak::new(), last_seen: AtomicU64::new(self.now()) };
        self.lock().insert(Arc::from(id), Arc::new(lane));
    }

    /// The handler of session `id` finished `initialize`: its requests may take the lane.
    pub(crate) fn attach(&self, id: &str, connection: Weak<Connection>) {
        let now = self.now();
        let mut sessions = self.lock();
        let lane = Lane { connection, last_seen: AtomicU64::new(now) };
        sessions.insert(Arc::from(id), Arc::new(lane));
    }

    /// Marks a request of session `id`; returns what the lane knows of it.
    pub(crate) fn seen(&self, id: &str) -> Option<Arc<Lane>> {
        let lane = self.lock().get(id).cloned()?;
        lane.last_seen.store(self.now(), Ordering::Relaxed);
        Some(lane)
    }

    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Closes the sessions idle for longer than the limit, and forgets those rmcp no longer holds.
    async fn close_idle(&self) {
        let now = self.now();
        let idle = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
        let known: Vec<(Arc<str>, u64)> = self
            .lock()
            .iter()
            .map(|(id, lane)| (id.clone(), lane.last_seen.load(Ordering::Relaxed)))
            .collect();
        for (id, last_seen) in known {
            let session: rmcp::transport::streamable_http_server::SessionId = id.clone();
            if now.saturating_sub(last_seen) >= idle {
                tracing::info!(session = %id, idle_s = self.idle.as_secs(), "MCP session closed after idling");
                if let Err(e) = self.manager.close_session(&session).await {
                    tracing::debug!(error = %e, "idle session not closed");
                }
                self.forget(&id);
            } else if !self.manager.has_session(&session).await.unwrap_or(true) {
                self.forget(&id);
            }
        }
    }
}
