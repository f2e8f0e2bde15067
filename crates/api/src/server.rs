//! What the hub serves on its loopback port: the MCP gateway at `/mcp` and the Claude Code hook for
//! agents (the gateway token), the approval and session-grant API for the operator (the operator token),
//! health for either; every route behind the Host and Origin checks, `/mcp` behind the JSON-RPC screen,
//! and the accept loop's connection cap and header-read timeout; refused requests are recorded in the
//! ledger. Binding elsewhere than loopback must be asked for.

use crate::{ApiError, Channel, Client, Connected, ErrorCode, HubState, Operator, OperatorApi};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, State};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use portcullis_hub::HubError;
use portcullis_hub::RefusalRecorder;
use portcullis_hub::RuntimeInfo;
use portcullis_hub::{BodyBound, ConnectionLimits, ConnectionSlots, read_body_within, serve_connections};
use portcullis_hub::{Hub, HubBackend};
use portcullis_mcp::caller::watch_caller;
use portcullis_mcp::http::{
    AccessGuard, Admits, LOOPBACK_HOSTS, MAX_REQUEST_BODY_BYTES, caller_guard, mcp_service, site_guard,
};
use portcullis_mcp::jsonrpc::screen_jsonrpc;
use portcullis_policy::discovery::user_config_dir;
use serde::Deserialize;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The operator recorded for answers given through the operator API: the channel, never the request.
pub const API_OPERATOR: &str = "api";

/// A hub that listens.
pub struct RunningHub {
    pub hub: Hub,
    pub addr: SocketAddr,
    /// The agents' (gateway) token.
    pub token: String,
    /// The operator's token (approvals, session grants).
    pub operator_token: String,
    /// The SHA-256 fingerprint of its TLS certificate, when it serves TLS.
    pub tls_fingerprint: Option<String>,
    server: JoinHandle<()>,
}

impl RunningHub {
    /// Stops accepting, lets calls finish (grace period), flushes and closes the ledger.
    pub async fn shutdown(self) -> Result<(), HubError> {
        let result = self.hub.close().await;
        let _ = self.server.await;
        result
    }
}

/// The Host names the gateway answers to: the loopback names, the address it listens on, and (only with
/// `allow_remote`) the configured ones.
fn allowed_hosts(hub: &Hub, addr: SocketAddr) -> Result<Vec<String>, HubError> {
    let config = &hub.state.config;
    if !config.allowed_hosts.is_empty() && !config.allow_remote {
        return Err(HubError::Config(
            "allowed hosts are for a gateway that listens beyond this machine (--allow-remote); a \
             loopback gateway answers only to localhost, 127.0.0.1 and ::1"
                .into(),
        ));
    }
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    if !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    } else if config.allowed_hosts.is_empty() {
        tracing::warn!(%addr, "listening on every address, but only loopback names are accepted as Host: name this machine's with --allow-host");
    }
    hosts.extend(config.allowed_hosts.iter().cloned());
    Ok(hosts)
}

/// Binds the gateway and the API, writes the runtime file, and serves until the hub shuts down.
pub async fn serve(hub: Hub) -> Result<RunningHub, HubError> {
    let listener = bind(&hub.state.config).await?;
    serve_on(hub, listener).await
}

/// Binds the address `config` says (loopback unless `allow_remote`). Front ends bind before they open
/// the hub, so that a port in use leaves nothing behind (no token, no ledger).
pub async fn bind(config: &portcullis_hub::HubConfig) -> Result<tokio::net::TcpListener, HubError> {
    let addr = config.listen;
    if !addr.ip().is_loopback() {
        if !config.allow_remote {
            return Err(HubError::Config(format!(
                "{addr} is not a loopback address; the gateway listens on 127.0.0.1 unless --allow-remote is given"
            )));
        }
        if config.tls.is_none() {
            return Err(HubError::Config(format!(
                "{addr} is beyond this machine: a hub that listens there serves TLS only (give --tls-cert FILE \
                 --tls-key FILE, or --tls-self-signed); or keep it on 127.0.0.1 and forward the port over SSH"
            )));
        }
        tracing::warn!(%addr, "the gateway listens beyond this machine: anyone who can reach it and holds the token can run tools");
    }
    tokio::net::TcpListener::bind(addr).await.map_err(|source| {
        let hint = if source.kind() == std::io::ErrorKind::AddrInUse {
            format!(
                " (another program, maybe another hub, uses port {}: choose another with --port N, or --port 0 for any free one)",
                addr.port()
            )
        } else {
            String::new()
        };
        HubError::Listen { addr: addr.to_string(), source, hint }
    })
}

/// Serves the gateway and the API on a bound listener (see [`bind`]) and writes the runtime file.
pub async fn serve_on(hub: Hub, listener: tokio::net::TcpListener) -> Result<RunningHub, HubError> {
    let config = &hub.state.config;
    let dir = config
        .config_dir
        .clone()
        .or_else(user_config_dir)
        .ok_or_else(|| HubError::Config("no config folder for the tokens (set HOME)".into()))?;
    let credentials = hub
        .credentials()
        .cloned()
        .ok_or_else(|| HubError::Config("no config folder for the tokens (set HOME)".into()))?;
    let addr = listener.local_addr()?;
    let hosts = allowed_hosts(&hub, addr)?;
    let tls = match &config.tls {
        Some(source) => Some(portcullis_hub::load_tls(source, &dir, &hosts)?),
        None => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let _ = hub.state.served_scheme.set(scheme);
    let _ = hub.state.served_at.set(addr);
    let mut origins = vec![format!("{scheme}://{addr}")];
    if addr.ip().is_loopback() {
        origins.push(format!("{scheme}://localhost:{}", addr.port()));
    }
    // The console's own pages come from these only; other allowed Origins may call the gateway.
    let own_origins = origins.clone();
    origins.extend(config.allowed_origins.iter().cloned());
    let shutdown = hub.shutdown_token();
    // Refused requests go to the ledger too, from a background task (see `refusals`).
    let refusals = RefusalRecorder::start(
        hub.state.ledger.clone(),
        hub.state.dispatcher.redactor().clone(),
        shutdown.clone(),
    );
    let access =
        AccessGuard::new(credentials.agent.clone(), credentials.operator.clone(), origins, hosts.clone())
            .with_named_agents(credentials.named_agents.clone())
            .with_refusal_log(refusals.clone());
    let backend = Arc::new(HubBackend::new(hub.clone()));
    let slots = ConnectionSlots::new(config.max_connections);
    // Each group of routes admits one credential; the agents' token never opens the operator's routes.
    // A caller the guard admitted then has the header-read time to send its body.
    let body = BodyBound { timeout: config.header_read_timeout, max_bytes: MAX_REQUEST_BODY_BYTES };
    let body = from_fn_with_state(body, read_body_within);
    let mcp = mcp_service(backend, shutdown.child_token(), hosts, config.sessions);
    let mcp = Router::new()
        .nest_service("/mcp", mcp.service)
        .layer(from_fn_with_state(mcp.lane, portcullis_mcp::fast_lane::fast_lane))
        .layer(from_fn_with_state(mcp.bound, portcullis_mcp::sessions::bound_sessions))
        .layer(from_fn(portcullis_mcp::idempotency::advertise_idempotency))
        .layer(from_fn(watch_caller))
        .layer(from_fn(screen_jsonrpc))
        .layer(from_fn_with_state(
            Some(refusals.clone() as Arc<dyn portcullis_mcp::http::RefusalLog>),
            portcullis_mcp::protocol_refusals::record_protocol_refusals,
        ));
    let for_agents = Router::new()
        .merge(mcp)
        .route(
            "/v1/hook/claude",
            post(claude_hook)
                .layer(axum::extract::DefaultBodyLimit::max(portcullis_hub::MAX_HOOK_INPUT_BYTES)),
        )
        .route("/v1/hook/claude/run", post(claude_hook_run))
        .layer(body.clone())
        .layer(from_fn_with_state(access.admitting(Admits::Agents), caller_guard));
    // The token's clients serve the table and its REST aliases alike.
    let clients = crate::operator_http::OperatorClients::new(
        operator_client(&hub, addr, &dir, Operator::named(API_OPERATOR)),
        clients_named(&hub, addr, &dir, None),
    );
    let for_the_operator = Router::new()
        .merge(crate::operator_rest::routes(clients.clone()))
        .merge(crate::operator_http::routes(clients))
        .layer(body.clone())
        .layer(from_fn_with_state(access.admitting(Admits::Operators), caller_guard));
    let for_both = Router::new()
        .route("/v1/health", get(health))
        .layer(body.clone())
        .layer(from_fn_with_state(access.admitting(Admits::Both), caller_guard));
    // The browser console: open pages, and the command table behind a session cookie (no token).
    let console = if config.console.enabled {
        crate::console::Console::new(
            config.console,
            hub.state.console_codes.clone(),
            addr.port(),
            own_origins,
            scheme == "https",
            clients_named(&hub, addr, &dir, Some(Channel::Browser)),
            Some(refusals.clone() as Arc<dyn portcullis_mcp::http::RefusalLog>),
        )
        .routes()
        .layer(body)
    } else {
        Router::new()
    };
    let app = for_agents
        .merge(for_the_operator)
        .merge(for_both)
        .merge(console)
        .with_state(hub.clone())
        .layer(Extension(slots.clone()))
        .layer(from_fn_with_state(access, site_guard));
    let runtime = RuntimeInfo::new(addr, &config.db);
    let runtime = match &tls {
        Some(tls) => runtime.with_tls(&tls.cert_file),
        None => runtime,
    };
    runtime.write(&dir)?;
    let limits = ConnectionLimits {
        slots,
        header_read_timeout: config.header_read_timeout,
        drain: config.shutdown_grace,
        tls: tls.as_ref().map(|t| t.acceptor.clone()),
    };
    let server = tokio::spawn(serve_connections(listener, app, limits, shutdown.clone()));
    tracing::info!(%addr, scheme, "gateway listening");
    Ok(RunningHub {
        hub,
        addr,
        token: credentials.agent,
        operator_token: credentials.operator,
        tls_fingerprint: tls.map(|t| t.fingerprint),
        server,
    })
}

async fn health(State(hub): State<Hub>, Extension(slots): Extension<ConnectionSlots>) -> Response {
    let mut status = serde_json::to_value(OperatorApi::new(hub).status()).unwrap_or_default();
    if let Some(fields) = status.as_object_mut() {
        fields.insert("status".into(), json!("ok"));
        fields.insert("connections".into(), json!({ "open": slots.open(), "max": slots.max() }));
    }
    Json(status).into_response()
}

use crate::operator_http::api_error;

/// Makes the client of an operator named at run time: through the browser console, recorded as the
/// name followed by its channel (`alice (browser)`); through the operator token (`None`), as named by
/// the request's header — the API's channel, or the app's for the name the desktop app sends
/// (`alice (app)`).
fn clients_named(
    hub: &Hub,
    addr: SocketAddr,
    dir: &std::path::Path,
    channel: Option<Channel>,
) -> Arc<dyn Fn(&str) -> Client + Send + Sync> {
    let (hub, dir) = (hub.clone(), dir.to_owned());
    Arc::new(move |name: &str| {
        let operator = match channel {
            Some(channel) => Operator::through(channel, format!("{name} ({})", channel.as_str())),
            None if name.ends_with(" (app)") => Operator::through(Channel::App, name),
            None => Operator::named(name),
        };
        operator_client(&hub, addr, &dir, operator)
    })
}

/// A client of the command table's HTTP routes: the hub's operator API answering as `operator` (the
/// token's routes: [`API_OPERATOR`]; a console session: its operator), its library file in the hub's
/// config folder.
fn operator_client(hub: &Hub, addr: SocketAddr, dir: &std::path::Path, operator: Operator) -> Client {
    let config = &hub.state.config;
    let state = HubState::Running {
        mcp_url: format!("{}://{addr}/mcp", hub.state.scheme()),
        token_file: dir.join("token").display().to_string(),
        project: config.project.display().to_string(),
        ledger: config.db.display().to_string(),
    };
    let connected = Connected::Hub { api: OperatorApi::new(hub.clone()), state };
    Client::new(connected, operator, Some(dir.join("ledger-library.json")))
}

#[derive(Debug, Deserialize)]
struct HookQuery {
    /// Seconds the caller waits for an operator (Claude Code's hook timeout, less a margin).
    wait: Option<u64>,
}

async fn claude_hook(
    State(hub): State<Hub>,
    axum::extract::Query(query): axum::extract::Query<HookQuery>,
    body: String,
) -> Response {
    let answer = match portcullis_hub::parse_hook_input(&body) {
        Ok(input) => {
            let wait = std::time::Duration::from_secs(query.wait.unwrap_or(50).clamp(1, 600));
            hub.decide_hook(&input, wait).await
        }
        Err(why) => {
            portcullis_hub::HookAnswer::deny(format!("Portcullis refused a malformed hook input: {why}"))
        }
    };
    Json(answer.to_hook_output()).into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunTicket {
    ticket: String,
}

/// `portcullis run --ticket T`: the sandboxed run of a `Bash` command the hook allowed, streamed as
/// JSON lines (`hook_run::RunUpdate`) until it ends.
async fn claude_hook_run(State(hub): State<Hub>, body: Result<Json<RunTicket>, JsonRejection>) -> Response {
    let ticket = match body {
        Ok(Json(body)) => body.ticket,
        Err(rejection) => {
            return api_error(ApiError::new(
                ErrorCode::BadRequest,
                format!("expected {{\"ticket\"}} and nothing else: {}", rejection.body_text()),
                serde_json::Value::Null,
            ));
        }
    };
    match hub.redeem_ticket(&ticket) {
        Ok(updates) => {
            let lines = futures::stream::unfold(updates, |mut updates| async move {
                let update = updates.recv().await?;
                let mut line = serde_json::to_vec(&update).unwrap_or_default();
                line.push(b'\n');
                Some((Ok::<_, std::convert::Infallible>(line), updates))
            });
            let mut response = axum::body::Body::from_stream(lines).into_response();
            response
                .headers_mut()
                .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/x-ndjson"));
            response
        }
        Err(why) => api_error(ApiError::new(ErrorCode::BadArgument, why, serde_json::Value::Null)),
    }
}
