//! MCP 2026-07-28 clients at the agents' door: no `initialize`, no `Mcp-Session-Id`; every request
//! carries its protocol version, `clientInfo` and capabilities in `params._meta`, and rmcp serves each
//! one on a handler of its own. The gateway still needs what a session gave it: one ledger session for
//! the client's calls (with its call counter, so call ids stay unique), a name in the ledger, and the
//! scope of the operator's session grants.
//!
//! What "session" means for a stateless client: the agent identity its bearer token names
//! ([`crate::agent_identity::AgentName`], [`DEFAULT_AGENT`] for the gateway token) together with the
//! `clientInfo` (name and version) its requests carry in `_meta` — the key
//! `agent:<name>/<client name>@<client version>` ([`ClientKey`]). Every request under one key shares one
//! ledger session, opened at the key's first request and closed once no request has used it for the
//! gateway's session idle time. Idempotency keys were always scoped by the agent identity alone, so
//! they behave alike in both revisions. `clientInfo` is the client's own say: it separates one agent's
//! clients in the ledger, it grants nothing. At most `max_sessions` keys are held at once (as for
//! 2025-11-25 sessions); when they are all taken, further clients of an agent share the key
//! `agent:<name>/(other clients)`.

use crate::agent_identity::DEFAULT_AGENT;
use crate::backend::{ClientIdentity, GatewayBackend};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

/// Where a stateless client's requests are recorded: [`ClientKey`] as text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientKey(pub String);

/// The transport a stateless client's ledger session names: Streamable HTTP, 2026-07-28, one ledger
/// session per [`ClientKey`] rather than per MCP session.
pub const STATELESS_TRANSPORT: &str = "http 2026-07-28 stateless";

/// The client name a key has when all keys are taken.
pub const OTHER_CLIENTS: &str = "(other clients)";

impl ClientKey {
    /// The key of `agent`'s client `name` at `version`.
    pub fn new(agent: &str, name: &str, version: &str) -> Self {
        if name == OTHER_CLIENTS {
            return ClientKey(format!("agent:{agent}/{OTHER_CLIENTS}"));
        }
        ClientKey(format!("agent:{agent}/{name}@{version}"))
    }
}

/// The ledger session of one stateless client.
#[derive(Debug)]
pub(crate) struct StatelessSession {
    id: OnceCell<String>,
    calls: AtomicU64,
    /// Milliseconds since the registry's start at the key's last request.
    last_seen: AtomicU64,
    /// This client's calls parked on a question (Multi Round-Trip Requests toward the agent).
    pub(crate) parked: crate::input_rounds::ParkedCalls,
}

impl StatelessSession {
    /// The next call id in this ledger session.
    pub(crate) fn next_call_id(&self) -> String {
        format!("c{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// The ledger session's id (opened by [`StatelessSessions::enter`]).
    pub(crate) fn id(&self) -> String {
        self.id.get().cloned().unwrap_or_default()
    }
}

/// The ledger sessions of the gateway's stateless clients, by [`ClientKey`].
pub struct StatelessSessions {
    backend: Arc<dyn GatewayBackend>,
    clients: Mutex<HashMap<ClientKey, Arc<StatelessSession>>>,
    max: usize,
    idle: Duration,
    started: Instant,
}

impl std::fmt::Debug for StatelessSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatelessSessions")
            .field("max", &self.max)
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

/// Whether a request is a stateless one: it names its protocol version in `_meta` and that version has
/// no `initialize` (rmcp serves such requests each on a fresh handler).
pub fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context.meta.protocol_version().is_some_and(|v| !v.has_initialize())
}

impl StatelessSessions {
    /// The registry for `backend`, holding at most `max` clients and closing those idle for `idle`; the
    /// closing task ends with `shutdown`, closing every ledger session still open.
    pub fn start(
        backend: Arc<dyn GatewayBackend>,
        max: usize,
        idle: Duration,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let registry = Arc::new(StatelessSessions {
            backend,
            clients: Mutex::new(HashMap::new()),
            max: max.max(1),
            idle,
            started: Instant::now(),
        });
        let weak: Weak<Self> = Arc::downgrade(&registry);
        let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let ending = tokio::select! {
                    () = shutdown.cancelled() => true,
                    _ = tick.tick() => false,
                };
                let Some(registry) = weak.upgrade() else { break };
                registry.close_idle(ending).await;
                if ending {
                    break;
                }
            }
        });
        registry
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ClientKey, Arc<StatelessSession>>> {
        self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Clients held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no client is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ledger session of the stateless client that sent the request of `context` (opened at its
    /// first request), marked as used now.
    pub(crate) async fn enter(&self, context: &RequestContext<RoleServer>) -> Arc<StatelessSession> {
        let agent = crate::idempotency::agent_of(context).unwrap_or_else(|| DEFAULT_AGENT.to_owned());
        let info = context.meta.client_info();
        let (name, version) =
            info.as_ref().map_or(("unknown", ""), |i| (i.name.as_str(), i.version.as_str()));
        let (key, name) = self.key(&agent, name, version);
        let session = {
            let mut clients = self.lock();
            let fresh = || {
                Arc::new(StatelessSession {
                    id: OnceCell::new(),
                    calls: AtomicU64::new(0),
                    last_seen: AtomicU64::new(0),
                    parked: Default::default(),
                })
            };
            clients.entry(key.clone()).or_insert_with(fresh).clone()
        };
        session.last_seen.store(self.now(), Ordering::Relaxed);
        session
            .id
            .get_or_init(|| async {
                let id = self
                    .backend
                    .open_session(ClientIdentity {
                        name,
                        version: version.to_owned(),
                        // Shown wherever the session is (the ledger, Live): no MCP session behind it.
                        transport: STATELESS_TRANSPORT,
                        linked_session: crate::agent_names::linked_session(context),
                        project: crate::agent_names::agent_project(context),
                    })
                    .await;
                tracing::info!(client = %key.0, session = %id, "stateless client: ledger session opened");
                id
            })
            .await;
        session
    }

    /// The key `agent`'s client `name`@`version` is recorded under, and the client name recorded: its
    /// own while keys are free, else the agent's shared one.
    fn key(&self, agent: &str, name: &str, version: &str) -> (ClientKey, String) {
        let own = ClientKey::new(agent, name, version);
        let clients = self.lock();
        if clients.contains_key(&own) || clients.len() < self.max {
            return (own, name.to_owned());
        }
        (ClientKey::new(agent, OTHER_CLIENTS, ""), OTHER_CLIENTS.to_owned())
    }

    /// Closes the ledger sessions of clients idle for the idle time, except those with a request in
    /// flight; all of them when `all` (the gateway is shutting down).
    async fn close_idle(&self, all: bool) {
        let now = self.now();
        let idle = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
        let closed: Vec<(ClientKey, Arc<StatelessSession>)> = {
            let mut clients = self.lock();
            let expired: Vec<ClientKey> = clients
                .iter()
                .filter(|(_, s)| {
                    // The registry holds one reference; a request in flight holds another.
                    all || (Arc::strong_count(s) == 1
                        && now.saturating_sub(s.last_seen.load(Ordering::Relaxed)) >= idle)
                })
                .map(|(k, _)| k.clone())
                .collect();
            expired.into_iter().filter_map(|k| clients.remove(&k).map(|s| (k, s))).collect()
        };
        for (key, session) in closed {
            if let Some(id) = session.id.get() {
                tracing::info!(client = %key.0, session = %id, "stateless client: ledger session closed after idling");
                self.backend.close_session(id.clone()).await;
            }
        }
    }
}

/// The methods 2026-07-28 removed (the handshake, logging and the legacy subscriptions): a request of
/// that revision naming one is answered "method not found" (HTTP 404), whatever its params.
pub const REMOVED_IN_2026: [&str; 4] =
    ["initialize", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// Where a 2026-07-28 request names its protocol version, in `params._meta`.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Refuses a request of a revision without `initialize` (its `_meta` protocol version, else its
/// `MCP-Protocol-Version` header) to a method that revision removed. Most bodies are not parsed.
pub fn check_removed_method(
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<(), crate::envelope::EnvelopeError> {
    let header = headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok());
    // Dated versions compare as text (rmcp's `has_initialize` does the same).
    let modern = |v: &str| v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str();
    let in_meta = body.windows(META_PROTOCOL_VERSION.len()).any(|w| w == META_PROTOCOL_VERSION.as_bytes());
    if !in_meta && !header.is_some_and(modern) {
        return Ok(());
    }
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else { return Ok(()) };
    let Some(method) = message.get("method").and_then(serde_json::Value::as_str) else { return Ok(()) };
    let version = message["params"]["_meta"][META_PROTOCOL_VERSION].as_str().or(header);
    if !REMOVED_IN_2026.contains(&method) || !version.is_some_and(modern) {
        return Ok(());
    }
    let id = match message.get("id") {
        Some(id @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) => id.clone(),
        _ => serde_json::Value::Null,
    };
    Err(crate::envelope::EnvelopeError {
        code: rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        message: format!("Method not found: {method} is not part of MCP {}", version.unwrap_or_default()),
        id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_2026_removed_are_not_found_for_its_requests_only() {
        let body = |method: &str, version: &str| {
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": method,
                "params": {"_meta": {META_PROTOCOL_VERSION: version}}})
            .to_string()
        };
        let none = http::HeaderMap::new();
        for method in REMOVED_IN_2026 {
            let refused = check_removed_method(&none, body(method, "2026-07-28").as_bytes()).unwrap_err();
            assert_eq!((refused.code.0, refused.id), (-32601, serde_json::json!(3)), "{method}");
        }
        assert!(check_removed_method(&none, body("tools/list", "2026-07-28").as_bytes()).is_ok());
        assert!(check_removed_method(&none, body("logging/setLevel", "2025-11-25").as_bytes()).is_ok());
        let init =
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        assert!(check_removed_method(&none, init.as_bytes()).is_ok());
        let modern = crate::http::tests::headers(&[("mcp-protocol-version", "2026-07-28")]);
        let set_level = r#"{"jsonrpc":"2.0","id":"x","method":"logging/setLevel","params":{"level":"info"}}"#;
        assert_eq!(check_removed_method(&modern, set_level.as_bytes()).unwrap_err().code.0, -32601);
    }

    #[test]
    fn keys_name_the_agent_and_its_client() {
        assert_eq!(ClientKey::new("default", "claude-code", "2.1").0, "agent:default/claude-code@2.1");
        assert_eq!(ClientKey::new("ci", OTHER_CLIENTS, "9").0, "agent:ci/(other clients)");
    }
}
