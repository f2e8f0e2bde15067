//! What the hub serves on its loopback port: the MCP gateway at `/mcp` and the operator's API at `/v1`
//! (health, pending approvals and answers, session grants), all behind the bearer token and the Origin
//! check. Binding elsewhere than loopback must be asked for.

use crate::broker::BrokerError;
use crate::config::{RuntimeInfo, load_or_create_token};
use crate::error::HubError;
use crate::hub::{Hub, HubBackend};
use axum::extract::{Path as UrlPath, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use http::StatusCode;
use portcullis_mcp::http::{AccessGuard, guard, mcp_service};
use portcullis_policy::ApprovalChoice;
use portcullis_policy::discovery::user_config_dir;
use serde::Deserialize;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// A hub that listens.
pub struct RunningHub {
    pub hub: Hub,
    pub addr: SocketAddr,
    pub token: String,
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

/// Binds the gateway and the API, writes the runtime file, and serves until the hub shuts down.
pub async fn serve(hub: Hub) -> Result<RunningHub, HubError> {
    let config = &hub.state.config;
    let addr = config.listen;
    if !addr.ip().is_loopback() {
        if !config.allow_remote {
            return Err(HubError::Config(format!(
                "{addr} is not a loopback address; the gateway listens on 127.0.0.1 unless --allow-remote is given"
            )));
        }
        tracing::warn!(%addr, "the gateway listens beyond this machine: anyone who can reach it and holds the token can run tools");
    }
    let dir = config
        .config_dir
        .clone()
        .or_else(user_config_dir)
        .ok_or_else(|| HubError::Config("no config folder for the token (set HOME)".into()))?;
    let token = load_or_create_token(&dir)
        .map_err(|e| HubError::Config(format!("token in {}: {e}", dir.display())))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| HubError::Listen { addr: addr.to_string(), source })?;
    let addr = listener.local_addr()?;
    let mut origins = vec![format!("http://{addr}")];
    if addr.ip().is_loopback() {
        origins.push(format!("http://localhost:{}", addr.port()));
    }
    origins.extend(config.allowed_origins.iter().cloned());
    let access = AccessGuard::new(token.clone(), origins);
    let shutdown = hub.shutdown_token();
    let backend = Arc::new(HubBackend::new(hub.clone()));
    let app = Router::new()
        .nest_service("/mcp", mcp_service(backend, shutdown.child_token()))
        .route("/v1/health", get(health))
        .route("/v1/approvals", get(pending))
        .route("/v1/approvals/{id}", post(answer))
        .route(
            "/v1/hook/claude",
            post(claude_hook).layer(axum::extract::DefaultBodyLimit::max(crate::hook::MAX_HOOK_INPUT_BYTES)),
        )
        .route("/v1/session-grants", get(session_grants))
        .route("/v1/session-grants/{id}", delete(revoke_grant))
        .with_state(hub.clone())
        .layer(axum::middleware::from_fn_with_state(access, guard));
    RuntimeInfo::new(addr, &config.db).write(&dir)?;
    let stop = shutdown.clone();
    // Small streamed answers must not wait for the client's delayed ACK (a ~40 ms stall per call on
    // kept-alive connections).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
    });
    let server = tokio::spawn(async move {
        if let Err(e) =
            axum::serve(listener, app).with_graceful_shutdown(async move { stop.cancelled().await }).await
        {
            tracing::error!(error = %e, "the gateway stopped with an error");
        }
    });
    tracing::info!(%addr, "gateway listening");
    Ok(RunningHub { hub, addr, token, server })
}

fn error(status: StatusCode, code: &str, message: String) -> Response {
    (status, Json(json!({ "error": { "code": code, "message": message } }))).into_response()
}

async fn health(State(hub): State<Hub>) -> Response {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "project": hub.project().display().to_string(),
        "policies": hub.policy_sources(),
        "tools": hub.visible_tools().iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
        "pending_approvals": hub.broker().pending().len(),
        "servers": hub.upstream_states(),
    }))
    .into_response()
}

async fn pending(State(hub): State<Hub>) -> Response {
    Json(json!({ "approvals": hub.broker().pending() })).into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    /// once | session | always | deny
    answer: String,
    #[serde(default)]
    operator: Option<String>,
}

async fn answer(State(hub): State<Hub>, UrlPath(id): UrlPath<u64>, body: Option<Json<Answer>>) -> Response {
    let Some(Json(body)) = body else {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "expected {\"answer\": \"once|session|always|deny\"}".into(),
        );
    };
    let choice = match body.answer.as_str() {
        "once" => ApprovalChoice::Once,
        "session" => ApprovalChoice::Session,
        "always" => ApprovalChoice::Always,
        "deny" => ApprovalChoice::Deny,
        other => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_answer",
                format!("unknown answer {other:?}: expected once, session, always or deny"),
            );
        }
    };
    let operator = body.operator.unwrap_or_else(|| "api".into());
    match hub.broker().answer(id, choice, &operator) {
        Ok(()) => Json(json!({ "answered": id })).into_response(),
        Err(e) => {
            let status = match e {
                BrokerError::Unknown(_) => StatusCode::NOT_FOUND,
                BrokerError::AlreadyAnswered(_) | BrokerError::AlwaysNotOffered { .. } => {
                    StatusCode::CONFLICT
                }
            };
            error(status, e.code(), e.to_string())
        }
    }
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
    let answer = match crate::hook::parse_input(&body) {
        Ok(input) => {
            let wait = std::time::Duration::from_secs(query.wait.unwrap_or(50).clamp(1, 600));
            hub.decide_hook(&input, wait).await
        }
        Err(why) => {
            crate::hook::HookAnswer::deny(format!("Portcullis refused a malformed hook input: {why}"))
        }
    };
    Json(answer.to_hook_output()).into_response()
}

async fn session_grants(State(hub): State<Hub>) -> Response {
    Json(json!({ "grants": hub.broker().session_grants().list() })).into_response()
}

async fn revoke_grant(State(hub): State<Hub>, UrlPath(id): UrlPath<String>) -> Response {
    if hub.broker().session_grants().revoke(&id) {
        Json(json!({ "revoked": id })).into_response()
    } else {
        error(StatusCode::NOT_FOUND, "grant_unknown", format!("no session grant {id}"))
    }
}
