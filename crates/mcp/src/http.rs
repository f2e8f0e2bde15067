//! The Streamable HTTP side of the gateway: rmcp's service for `/mcp`, and the guard in front of every
//! route. The guard checks, in order, the Host (only the hub's own names: DNS rebinding), the Origin
//! (browser pages), and the bearer token, which says who calls: an agent or the operator. Agents and
//! operators hold separate tokens, and each route admits one of them (or both), so an agent cannot
//! answer its own prompts. rmcp's own Host allowlist stays on behind it. Every refusal is logged and,
//! when the guard has a [`RefusalLog`], handed to it (the hub records them in its ledger).

use crate::backend::GatewayBackend;
use crate::gateway::GatewayHandler;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, Uri, header};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

// The identity the guard puts in a request's extensions; its home is a leaf, so that what reads it
// (idempotency scoping, stateless clients' keys) need not name this module. Offered here as well, where
// the guard that names it is.
pub use crate::agent_identity::{AgentName, DEFAULT_AGENT};

/// The Host names a loopback gateway answers to (any port).
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The largest POST body `/mcp` reads (rmcp's default, set explicitly so the JSON-RPC screen in front
/// of it reads no more than rmcp would).
pub const MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Who a request's bearer token says it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// An agent: holds the gateway token (`/mcp`, the Claude Code hook).
    Agent,
    /// The operator: holds the operator token (approvals, session grants).
    Operator,
}

/// Which callers a route admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admits {
    Agents,
    Operators,
    Both,
}

/// A refused request: the status, a stable code and a message, answered as
/// `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: &'static str,
}

impl Refusal {
    const fn new(status: StatusCode, code: &'static str, message: &'static str) -> Self {
        Refusal { status, code, message }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = axum::Json(json!({ "error": { "code": self.code, "message": self.message } }));
        if self.status == StatusCode::UNAUTHORIZED {
            (self.status, [(header::WWW_AUTHENTICATE, "Bearer")], body).into_response()
        } else {
            (self.status, body).into_response()
        }
    }
}

/// Longest header value or path kept of a refused request, in bytes.
pub const MAX_REFUSED_FIELD_BYTES: usize = 256;

/// A refused request as a [`RefusalLog`] sees it: when, the answer's status and code, the request line,
/// the peer and the Origin, Host and User-Agent it presented (cut to [`MAX_REFUSED_FIELD_BYTES`]). Never
/// the Authorization header or any token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedRequest {
    pub at: portcullis_harness::Timestamp,
    pub status: u16,
    pub code: &'static str,
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The peer's address, when the server put it in the request (`ConnectInfo<SocketAddr>`).
    pub peer: Option<IpAddr>,
    pub origin: Option<String>,
    pub host: Option<String>,
    pub user_agent: Option<String>,
}

impl RefusedRequest {
    fn of(refusal: &Refusal, request: &Request) -> Self {
        Self::of_status(refusal.status.as_u16(), refusal.code, request)
    }

    /// A request refused with `status` and `code` by a guard of another crate (the hub's console).
    pub fn of_status(status: u16, code: &'static str, request: &Request) -> Self {
        let header = |name: header::HeaderName| {
            request.headers().get(name).map(|v| cut(&String::from_utf8_lossy(v.as_bytes())))
        };
        RefusedRequest {
            at: portcullis_harness::Timestamp::now(),
            status,
            code,
            method: cut(request.method().as_str()),
            path: cut(request.uri().path()),
            peer: request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()),
            origin: header(header::ORIGIN),
            host: header(header::HOST),
            user_agent: header(header::USER_AGENT),
        }
    }
}

/// `text`, cut to [`MAX_REFUSED_FIELD_BYTES`] at a character boundary.
fn cut(text: &str) -> String {
    let mut end = text.len().min(MAX_REFUSED_FIELD_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Where refusals go besides the log. Called on the refusal's path: it must not wait (queue and return).
pub trait RefusalLog: Send + Sync {
    fn refused(&self, request: RefusedRequest);
}

/// What the guard lets through.
#[derive(Clone)]
pub struct AccessGuard {
    agent_token: Arc<str>,
    /// Named agents' tokens (name, token): agents too, each its own identity.
    named_agents: Arc<[(Arc<str>, Arc<str>)]>,
    operator_token: Arc<str>,
    /// Origins allowed besides none at all (non-browser clients send none).
    allowed_origins: Arc<[String]>,
    /// Host names (any port) or `name:port` authorities the hub answers to, lower case, IPv6 without
    /// brackets.
    allowed_hosts: Arc<[String]>,
    refusals: Option<Arc<dyn RefusalLog>>,
}

impl std::fmt::Debug for AccessGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessGuard")
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .finish_non_exhaustive()
    }
}

impl AccessGuard {
    /// A guard for the agents' token, the operator's token, the allowed Origins and the allowed Hosts
    /// (see [`LOOPBACK_HOSTS`]; entries are names, for any port, or `name:port`).
    pub fn new(
        agent_token: impl Into<Arc<str>>,
        operator_token: impl Into<Arc<str>>,
        allowed_origins: Vec<String>,
        allowed_hosts: Vec<String>,
    ) -> Self {
        let allowed_hosts: Vec<String> = allowed_hosts.iter().map(|h| normalize_host(h)).collect();
        AccessGuard {
            agent_token: agent_token.into(),
            named_agents: Arc::new([]),
            operator_token: operator_token.into(),
            allowed_origins: allowed_origins.into(),
            allowed_hosts: allowed_hosts.into(),
            refusals: None,
        }
    }

    /// Admits these named agents' tokens too, `(name, token)`, each as its own agent identity.
    pub fn with_named_agents(mut self, agents: Vec<(String, String)>) -> Self {
        self.named_agents = agents.into_iter().map(|(name, token)| (name.into(), token.into())).collect();
        self
    }

    /// Hands every refusal to `log` as well.
    pub fn with_refusal_log(mut self, log: Arc<dyn RefusalLog>) -> Self {
        self.refusals = Some(log);
        self
    }

    /// Logs a refusal (and hands it to the refusal log), then answers it.
    fn refused(&self, refusal: Refusal, request: &Request) -> Response {
        tracing::warn!(
            status = %refusal.status,
            why = refusal.code,
            path = %request.uri().path(),
            "gateway request refused"
        );
        if let Some(log) = &self.refusals {
            log.refused(RefusedRequest::of(&refusal, request));
        }
        refusal.into_response()
    }

    /// The guard of a route that admits `admits`.
    pub fn admitting(&self, admits: Admits) -> RouteGuard {
        RouteGuard { access: self.clone(), admits }
    }

    /// Whether the request is addressed to this hub, from no browser page or an allowed one.
    pub fn check_site(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.parse::<http::uri::Authority>().ok())
            .or_else(|| uri.authority().cloned());
        let allowed = host.is_some_and(|authority| {
            let name = normalize_host(authority.host());
            let with_port = authority.port_u16().map(|p| format!("{name}:{p}"));
            self.allowed_hosts.iter().any(|a| *a == name || with_port.as_deref() == Some(a.as_str()))
        });
        if !allowed {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "host_not_allowed",
                "the Host header does not name this hub",
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let allowed = origin.to_str().is_ok_and(|o| self.allowed_origins.iter().any(|a| a == o));
            if !allowed {
                return Err(Refusal::new(StatusCode::FORBIDDEN, "origin_not_allowed", "origin not allowed"));
            }
        }
        Ok(())
    }

    /// Who the bearer token says is calling, if the route admits them.
    pub fn check_caller(&self, headers: &HeaderMap, admits: Admits) -> Result<Caller, Refusal> {
        self.identify(headers, admits).map(|(caller, _)| caller)
    }

    /// Who the bearer token says is calling, and for an agent its identity, if the route admits them.
    pub fn identify(
        &self,
        headers: &HeaderMap,
        admits: Admits,
    ) -> Result<(Caller, Option<AgentName>), Refusal> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::as_bytes);
        // Every comparison always runs: which token matched does not show in the time taken.
        let (agent, operator) = match presented {
            Some(token) => {
                let mut agent =
                    constant_time_eq(token, self.agent_token.as_bytes()).then(|| Arc::from(DEFAULT_AGENT));
                for (name, named) in self.named_agents.iter() {
                    if constant_time_eq(token, named.as_bytes()) && agent.is_none() {
                        agent = Some(name.clone());
                    }
                }
                (agent, constant_time_eq(token, self.operator_token.as_bytes()))
            }
            None => (None, false),
        };
        let name = agent.clone().map(AgentName);
        let caller = match (agent.is_some(), operator) {
            (true, _) => Caller::Agent,
            (false, true) => Caller::Operator,
            (false, false) => {
                return Err(Refusal::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "missing or wrong bearer token",
                ));
            }
        };
        match (admits, caller) {
            (Admits::Both, _) | (Admits::Agents, Caller::Agent) | (Admits::Operators, Caller::Operator) => {
                Ok((caller, if caller == Caller::Agent { name } else { None }))
            }
            (Admits::Agents, Caller::Operator) => Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "agent_credential_required",
                "this route is for agents: use the gateway token, not the operator token",
            )),
            (Admits::Operators, Caller::Agent) => Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "operator_credential_required",
                "this route is for the operator: the gateway (agent) token cannot answer approvals or \
                 manage grants; use the operator token",
            )),
        }
    }
}

/// A host name as compared: lower case, IPv6 literals without brackets.
fn normalize_host(host: &str) -> String {
    host.trim().trim_start_matches('[').replace(']', "").to_ascii_lowercase()
}

/// Equal without leaking where the first difference is (the length is not secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The axum middleware checking Host and Origin on every route (unknown paths included).
pub async fn site_guard(State(access): State<AccessGuard>, request: Request, next: Next) -> Response {
    match access.check_site(request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => access.refused(refusal, &request),
    }
}

/// [`AccessGuard`] for one group of routes.
#[derive(Debug, Clone)]
pub struct RouteGuard {
    access: AccessGuard,
    admits: Admits,
}

/// The axum middleware checking the bearer token of a group of routes; the [`Caller`] is put in the
/// request's extensions for the handlers.
pub async fn caller_guard(State(guard): State<RouteGuard>, mut request: Request, next: Next) -> Response {
    match guard.access.identify(request.headers(), guard.admits) {
        Ok((caller, agent)) => {
            request.extensions_mut().insert(caller);
            if let Some(agent) = agent {
                request.extensions_mut().insert(agent);
            }
            next.run(request).await
        }
        Err(refusal) => guard.access.refused(refusal, &request),
    }
}

/// rmcp's Streamable HTTP service over the gateway: one handler (and ledger session) per MCP session,
/// and for stateless (2026-07-28) requests one handler per request and one ledger session per client
/// ([`crate::stateless`]); cancelling `shutdown` ends every session and its streams. `allowed_hosts` as for [`AccessGuard`].
/// Also returns the state of [`crate::sessions::bound_sessions`], which bounds the sessions it holds,
/// and the [`crate::fast_lane`] in front of it, which closes the sessions idle for `limits.idle` (rmcp's
/// own idle clock does not see the requests the lane serves).
pub fn mcp_service(
    backend: Arc<dyn GatewayBackend>,
    shutdown: CancellationToken,
    allowed_hosts: Vec<String>,
    limits: crate::sessions::SessionLimits,
) -> McpService {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = None;
    let sessions = Arc::new(sessions);
    let lane = crate::connection::FastLane::start(sessions.clone(), limits.idle, shutdown.child_token());
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_allowed_hosts(allowed_hosts)
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        .with_legacy_session_mode(true);
    let stateless = crate::stateless::StatelessSessions::start(
        backend.clone(),
        limits.max_sessions,
        limits.idle,
        config.cancellation_token.child_token(),
    );
    let bound = crate::sessions::SessionBound { sessions: sessions.clone(), limits };
    let for_handlers = lane.clone();
    let service = StreamableHttpService::new(
        move || {
            let (lane, stateless) = (Some(for_handlers.clone()), Some(stateless.clone()));
            Ok(GatewayHandler::on_lane(backend.clone(), "http", lane, stateless))
        },
        sessions,
        config,
    );
    McpService { service, bound, lane }
}

/// The gateway's `/mcp` service and the state of the middleware in front of it.
pub struct McpService {
    pub service: StreamableHttpService<GatewayHandler, LocalSessionManager>,
    pub bound: crate::sessions::SessionBound,
    pub lane: Arc<crate::connection::FastLane>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use http::HeaderValue;

    /// Request headers from pairs (a name given twice has both values, as a client may send them).
    pub(crate) fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn guard() -> AccessGuard {
        AccessGuard::new(
            "agent-token-0000",
            "operator-token-00",
            vec!["http://127.0.0.1:7777".into()],
            LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(["hub.example:8443".into()]).collect(),
        )
    }

    #[test]
    fn tokens_say_who_calls_and_routes_admit_one_or_both() {
        let g = guard();
        let agent = headers(&[("authorization", "Bearer agent-token-0000")]);
        let operator = headers(&[("authorization", "Bearer operator-token-00")]);
        assert_eq!(g.check_caller(&agent, Admits::Agents), Ok(Caller::Agent));
        assert_eq!(g.check_caller(&agent, Admits::Both), Ok(Caller::Agent));
        assert_eq!(
            g.check_caller(&agent, Admits::Operators).unwrap_err().code,
            "operator_credential_required"
        );
        assert_eq!(g.check_caller(&operator, Admits::Operators), Ok(Caller::Operator));
        assert_eq!(g.check_caller(&operator, Admits::Agents).unwrap_err().code, "agent_credential_required");
        for wrong in [
            &headers(&[]),
            &headers(&[("authorization", "Bearer agent-token-000O")]),
            &headers(&[("authorization", "Basic agent-token-0000")]),
        ] {
            assert_eq!(g.check_caller(wrong, Admits::Both).unwrap_err().status, StatusCode::UNAUTHORIZED);
        }
    }

    #[test]
    fn hosts_and_origins() {
        let g = guard();
        let uri: Uri = "/v1/health".parse().unwrap();
        for host in ["localhost", "LOCALHOST:7391", "127.0.0.1:1", "[::1]:7391", "hub.example:8443"] {
            assert!(g.check_site(&uri, &headers(&[("host", host)])).is_ok(), "{host}");
        }
        for host in
            ["evil.example", "hub.example", "hub.example:8444", "127.0.0.1.evil.example", "localhost."]
        {
            assert_eq!(g.check_site(&uri, &headers(&[("host", host)])).unwrap_err().code, "host_not_allowed");
        }
        assert_eq!(g.check_site(&uri, &headers(&[])).unwrap_err().code, "host_not_allowed");
        let foreign = [("host", "127.0.0.1:7777"), ("origin", "http://evil.example")];
        assert_eq!(g.check_site(&uri, &headers(&foreign)).unwrap_err().code, "origin_not_allowed");
        let own = [("host", "127.0.0.1:7777"), ("origin", "http://127.0.0.1:7777")];
        assert!(g.check_site(&uri, &headers(&own)).is_ok());
    }
}
