//! `subscriptions/listen` (MCP 2026-07-28), the stateless client's way to hear that the tools, prompts
//! or resources changed: the request's stream stays open and carries `notifications/*/list_changed`
//! whenever the visible registry may have changed (grants, policy, upstream servers), as a 2025-11-25
//! session's standalone stream does. Resource updates (`resourceSubscriptions`) are not accepted yet:
//! the filter acknowledged leaves them out.

use crate::gateway::GatewayHandler;
use rmcp::ErrorData as McpError;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::SubscriptionContext;

impl GatewayHandler {
    /// The part of `requested` the gateway sends: the three list changes, whichever were asked.
    pub(crate) fn listen_filter(requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|on| *on);
        accepted.prompts_list_changed = requested.prompts_list_changed.filter(|on| *on);
        accepted.resources_list_changed = requested.resources_list_changed.filter(|on| *on);
        accepted
    }

    /// Sends the accepted list changes on the subscription's stream until the client ends it.
    pub(crate) async fn listen_for_changes(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.connection.backend.tools_changed();
        changes.mark_unchanged();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = changes.changed() => if changed.is_err() { return Ok(()) },
            }
            let notices = [
                ServerNotification::ToolListChangedNotification(Default::default()),
                ServerNotification::PromptListChangedNotification(Default::default()),
                ServerNotification::ResourceListChangedNotification(Default::default()),
            ];
            for notice in notices {
                // A list the client did not ask for is refused by the sink: nothing to report.
                if let Err(e) = subscription.sink().send(notice).await {
                    tracing::trace!(error = %e, "list change not sent on the subscription");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_changes_are_accepted_and_resource_updates_are_not() {
        let mut requested = SubscriptionFilter::new();
        requested.tools_list_changed = Some(true);
        requested.prompts_list_changed = Some(false);
        requested.resource_subscriptions = Some(vec!["file:///x".into()]);
        let accepted = GatewayHandler::listen_filter(&requested);
        assert_eq!(accepted.tools_list_changed, Some(true));
        assert_eq!(accepted.prompts_list_changed, None);
        assert_eq!(accepted.resources_list_changed, None);
        assert_eq!(accepted.resource_subscriptions, None);
    }
}
