//! A 2026-07-28 server has no session to send notifications on: the hub holds a
//! `subscriptions/listen` stream open to it for the life of the connection, so its tool, prompt and
//! resource list changes refresh the registry (and reach agents) as a 2025 server's notifications do.

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::{Peer, RoleClient};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How long the hub waits before listening again after a server ended the stream.
const AGAIN_AFTER: Duration = Duration::from_secs(1);
/// The most times a stream is opened again on one connection (a server that keeps ending it).
const MOST_OPENINGS: u32 = 64;

/// The list changes the hub listens for.
fn filter() -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::new();
    filter.tools_list_changed = Some(true);
    filter.prompts_list_changed = Some(true);
    filter.resources_list_changed = Some(true);
    filter
}

/// Whether `notification` says one of the server's lists changed.
fn is_list_change(notification: &ServerNotification) -> bool {
    matches!(
        notification,
        ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::PromptListChangedNotification(_)
            | ServerNotification::ResourceListChangedNotification(_)
    )
}

/// Listens to `peer` until its connection closes, waking `changed` at every list change. A server
/// that refuses the stream (it declares no list changes) is left alone.
pub(super) async fn hold(peer: Peer<RoleClient>, server: String, changed: Arc<Notify>) {
    for _ in 0..MOST_OPENINGS {
        let mut subscription = match peer.listen(filter()).await {
            Ok(subscription) => subscription,
            Err(e) => {
                tracing::debug!(%server, error = %e, "the server does not take subscriptions/listen");
                return;
            }
        };
        while let Ok(Some(notification)) = subscription.next().await {
            if is_list_change(&notification) {
                changed.notify_one();
            }
        }
        if peer.is_transport_closed() {
            return;
        }
        tracing::debug!(%server, end = ?subscription.end(), "the server ended its subscription stream");
        tokio::time::sleep(AGAIN_AFTER).await;
        // What changed while no stream was open is found by listing again.
        changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_list_changes_are_asked_for_and_recognised() {
        let asked = filter();
        assert_eq!(
            (asked.tools_list_changed, asked.prompts_list_changed, asked.resources_list_changed),
            (Some(true), Some(true), Some(true))
        );
        assert!(is_list_change(&ServerNotification::ToolListChangedNotification(Default::default())));
        assert!(is_list_change(&ServerNotification::PromptListChangedNotification(Default::default())));
        assert!(!is_list_change(&ServerNotification::CancelledNotification(
            rmcp::model::CancelledNotification::new(rmcp::model::CancelledNotificationParam::new(None, None))
        )));
    }
}
