//! The client side of an upstream connection: what Portcullis tells a server it can do (sampling and
//! elicitation, relayed to agents), and what it does with what the server sends: list changes wake the
//! supervisor, progress goes to its call, resource updates and log messages become notices, and
//! sampling and elicitation requests are relayed to the agent of the call they serve.

use super::{Origins, ProgressRoutes, UpstreamNotice, cut};
use crate::client_side::{CallOrigin, ClientRelay, ELICITATION, ROOTS, SAMPLING};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{ClientLifecycleMode, NotificationContext};
use rmcp::{ClientHandler, RoleClient};
use serde::Serialize;
use std::sync::Arc;
use tokio::sync::{Notify, broadcast};

/// The client side of a connection: wakes the supervisor on `tools/list_changed` and routes progress
/// notifications to the calls they belong to.
#[derive(Clone)]
pub(super) struct UpstreamClient {
    pub(super) server: String,
    pub(super) changed: Arc<Notify>,
    pub(super) progress: ProgressRoutes,
    pub(super) notices: broadcast::Sender<UpstreamNotice>,
    pub(super) origins: Origins,
    pub(super) relay: Option<Arc<dyn ClientRelay>>,
}

impl UpstreamClient {
    /// The call a request of the server serves: the one whose stream it came on, else the only call
    /// in flight on this server (stdio has no streams); none when that cannot be told.
    fn origin_of(&self, context: &rmcp::service::RequestContext<RoleClient>) -> Option<CallOrigin> {
        let origins = self.origins.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match context.extensions.get::<rmcp::service::InboundStreamOrigin>() {
            Some(rmcp::service::InboundStreamOrigin::OutboundRequest(id)) => origins.get(id).cloned(),
            _ if origins.len() == 1 => origins.values().next().cloned(),
            _ => None,
        }
    }

    /// Relays a request of the server to the agent of the call it serves, as a judged call.
    async fn relay<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: impl Serialize,
        context: &rmcp::service::RequestContext<RoleClient>,
    ) -> Result<T, rmcp::ErrorData> {
        let Some(relay) = &self.relay else {
            return Err(rmcp::ErrorData::invalid_request(
                format!("Portcullis does not relay {method} here"),
                None,
            ));
        };
        let origin = self.origin_of(context).ok_or_else(|| {
            rmcp::ErrorData::invalid_request(
                format!("Portcullis relays {method} only during one call it can tell; none or several are in flight"),
                None,
            )
        })?;
        let params = serde_json::to_value(params).unwrap_or_default();
        let answer = relay.relay(&self.server, origin, method, params).await?;
        serde_json::from_value(answer).map_err(|e| {
            rmcp::ErrorData::internal_error(
                format!("the agent's answer to {method} does not fit MCP: {e}"),
                None,
            )
        })
    }
}

/// How a connection to an upstream opens: 2026-07-28 first (`server/discover`, no session), then the
/// 2025-11-25 `initialize` handshake when the server says it is older (or does not answer the probe
/// within rmcp's 10 s), so servers of either revision work. Both refusing is the connection's error,
/// which names the versions tried.
pub(super) fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        // Sampling and elicitation are relayed to the agent whose call asks (see `client_side`).
        let capabilities: ClientCapabilities = if self.relay.is_some() {
            serde_json::from_value(serde_json::json!({ "sampling": {}, "elicitation": {}, "roots": {} }))
                .unwrap_or_default()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("portcullis", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    // Sampling is deprecated in rmcp (SEP-2577) but servers on protocol versions up to 2025-11-25 use it.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.relay(SAMPLING, params, &context).await
    }

    // Roots are deprecated in rmcp (SEP-2577) like sampling.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        self.relay(ROOTS, serde_json::json!({}), &context).await
    }

    async fn create_elicitation(
        &self,
        params: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.relay(ELICITATION, params, &context).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self
            .notices
            .send(UpstreamNotice::ResourceUpdated { server: self.server.clone(), uri: params.uri });
    }

    // Logging is deprecated in rmcp (SEP-2577) but part of the protocol versions agents speak
    // (2025-11-25): upstream log messages are still relayed to agents that set a level.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let message = serde_json::to_value(params).unwrap_or_default();
        let _ = self.notices.send(UpstreamNotice::Log { server: self.server.clone(), message });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let reporter = self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        if let Some(target) = reporter {
            target
                .reporter
                .report(serde_json::json!({
                    "progress": params.progress,
                    "total": params.total,
                    "message": params.message.as_deref().map(|m| cut(m, 1024)),
                }))
                .await;
            target.handled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}
