//! The operator's event feed: one subscription merging the hub's events (reloads, sessions, servers),
//! the broker's (approvals asked and settled) and the calls' (lifecycle, progress), each numbered, with
//! a [`FeedEvent::Missed`] item where the feed fell behind a source. A feed costs nothing while nobody
//! holds one: the calls' events are emitted only to subscribers.

use super::types::{FeedEvent, FeedItem};
use super::{OperatorApi, call_steps};
use portcullis_harness::{EventDelivery, Timestamp};
use portcullis_hub::BrokerEvent;
use portcullis_hub::HubEvent;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

/// Items a feed holds for a slow reader before its sources start dropping events for it.
pub const FEED_BUFFER: usize = 1024;

/// A subscription to the hub's events; dropping it ends it.
pub struct EventFeed {
    items: mpsc::Receiver<FeedItem>,
    _merger: AbortOnDropHandle<()>,
}

impl EventFeed {
    /// The next item; `None` once the hub has shut down.
    pub async fn next(&mut self) -> Option<FeedItem> {
        self.items.recv().await
    }
}

/// Which sources a feed follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedSources {
    /// Reloads, rejected policies and manifests, sessions, servers.
    pub hub: bool,
    /// Approvals asked and settled.
    pub approvals: bool,
    /// Every call's lifecycle (the pipeline emits these only while someone follows them).
    pub calls: bool,
}

impl FeedSources {
    pub const ALL: FeedSources = FeedSources { hub: true, approvals: true, calls: true };
}

impl OperatorApi {
    /// Subscribes to everything operators watch, from now on.
    pub fn events(&self) -> EventFeed {
        self.events_from(FeedSources::ALL)
    }

    /// Subscribes to the events of `sources`, from now on.
    pub fn events_from(&self, sources: FeedSources) -> EventFeed {
        let mut hub_events = self.hub.subscribe();
        let mut approvals = self.hub.broker().watch();
        let mut calls = sources.calls.then(|| self.hub.dispatcher().events().subscribe());
        let live = self.hub.live_policy().clone();
        let redactor = self.hub.broker().redactor().cloned();
        let (tx, items) = mpsc::channel(FEED_BUFFER);
        let merger = tokio::spawn(async move {
            let mut seq = 0;
            let mut rows = super::live_rows::LiveRows::default();
            loop {
                // In this order when several are ready: an approval is settled before its call starts.
                let event = tokio::select! {
                    biased;
                    e = hub_events.recv(), if sources.hub => match e {
                        Ok(e) => hub_event(e),
                        Err(RecvError::Lagged(count)) => FeedEvent::Missed { source: "hub".into(), count },
                        Err(RecvError::Closed) => break,
                    },
                    e = approvals.recv(), if sources.approvals => match e {
                        Ok(e) => approval_event(e, &live, redactor.as_ref()),
                        Err(RecvError::Lagged(count)) => FeedEvent::Missed { source: "approvals".into(), count },
                        Err(RecvError::Closed) => break,
                    },
                    Some(e) = next_call(&mut calls) => match e {
                        EventDelivery::Event(e) => FeedEvent::Call {
                            row: Box::new(rows.apply(&e)),
                            at: e.at,
                            stage: e.kind().as_str().to_owned(),
                            steps: call_steps::steps_of(&e.payload),
                            action: call_steps::action_of(&e.payload),
                            sandbox: call_steps::sandbox_of(&e.payload),
                            connections: call_steps::connections_of(&e.payload),
                        },
                        EventDelivery::Lagged { missed } => FeedEvent::Missed { source: "calls".into(), count: missed },
                    },
                    else => break,
                };
                seq += 1;
                if tx.send(FeedItem { seq, at: Timestamp::now(), event }).await.is_err() {
                    break;
                }
            }
        });
        EventFeed { items, _merger: AbortOnDropHandle::new(merger) }
    }
}

/// The next call event, or never when calls are not followed; `None` once the pipeline is gone.
async fn next_call(calls: &mut Option<portcullis_harness::EventSubscription>) -> Option<EventDelivery> {
    match calls {
        Some(calls) => calls.recv().await,
        None => std::future::pending().await,
    }
}

fn hub_event(e: HubEvent) -> FeedEvent {
    match e {
        HubEvent::PolicyReloaded { sources } => FeedEvent::PolicyReloaded { sources },
        HubEvent::PolicyRejected { code, message } => FeedEvent::PolicyRejected { code, message },
        HubEvent::SessionOpened { session_id, client, version } => {
            FeedEvent::SessionOpened { session_id, client, version }
        }
        HubEvent::SessionClosed { session_id } => FeedEvent::SessionClosed { session_id },
        HubEvent::ManifestRejected { message } => FeedEvent::ManifestRejected { message },
        HubEvent::Upstreams { servers } => FeedEvent::ServersChanged { servers },
    }
}

fn approval_event(
    e: BrokerEvent,
    live: &portcullis_policy::LivePolicy,
    redactor: Option<&portcullis_harness::Redactor>,
) -> FeedEvent {
    match e {
        BrokerEvent::Pending(p) => {
            FeedEvent::ApprovalAsked { approval: Box::new(super::approvals::evaluated(*p, live, redactor)) }
        }
        BrokerEvent::Resolved { id, outcome, operator } => {
            FeedEvent::ApprovalSettled { id, outcome, operator }
        }
    }
}
