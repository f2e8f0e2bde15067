//! The window's command table: the hub the app runs (or attached to at start), and the hubs the operator
//! attaches since (a forwarded or remote hub, by its address and operator token), with one approvals inbox
//! across them. Every command goes to the first hub except the inbox's: the pending approvals, answers,
//! "always" previews and the feed's approval events come from every hub. Each approval is labelled with
//! its hub and its id made unique across hubs (the hub's number in the high bits); each answer goes to its
//! own hub with that hub's id.

use portcullis_api::always::AlwaysPreview;
use portcullis_api::start::RemoteHub;
use portcullis_api::types::{Answer, Approval, FeedEvent, FeedItem, Receipt, RuleScope, Timestamp};
use portcullis_api::{ApiError, ErrorCode, HubClient, HubState, RemoteClient, Sink, TableCalls};
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Approval ids of the first hub stay as they are; the others' carry their hub's number from this bit.
const HUB_SHIFT: u32 = 40;

/// A hub attached beside the first, as the window lists it.
#[derive(Debug, Clone, serde::Serialize, specta::Type)]
pub struct AttachedHub {
    /// `HOST:PORT`, as each of its cards says.
    pub label: String,
    /// Its API (`http(s)://HOST:PORT/v1`).
    pub url: String,
}

#[derive(Clone)]
struct Other {
    number: u64,
    label: String,
    client: RemoteClient,
}

/// Whether an inbox id belongs to a hub attached beside the first.
pub fn from_attached_hub(id: u64) -> bool {
    id >> HUB_SHIFT != 0
}

impl Other {
    fn relabel(&self, mut approval: Approval) -> Approval {
        approval.id |= self.number << HUB_SHIFT;
        approval.hub = Some(self.label.clone());
        approval
    }
}

/// One follower's feed (the window's, the title and tray's), shared by the streams of every hub: its
/// sink and the sequence it numbers items by.
#[derive(Clone)]
struct SharedFeed {
    sink: Arc<Mutex<Sink<Vec<FeedItem>>>>,
    /// The follower has gone (its sink said so): no hub attached later streams to it.
    gone: Arc<std::sync::atomic::AtomicBool>,
    seq: Arc<AtomicU64>,
    /// The first hub's label once another hub is attached (its cards say it then).
    first_label: Arc<Mutex<Option<String>>>,
}

impl SharedFeed {
    /// Numbers `batch` in the window's sequence and hands it on; false once the window has gone.
    fn send(&self, mut batch: Vec<FeedItem>) -> bool {
        if batch.is_empty() {
            return true;
        }
        for item in &mut batch {
            item.seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        }
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let open = sink(batch);
        if !open {
            self.gone.store(true, Ordering::Relaxed);
        }
        open
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The window's table over its hubs.
pub struct WindowTable {
    first: HubClient,
    others: Mutex<Vec<Other>>,
    next_number: AtomicU64,
    /// Everyone following the feed (the window, the title and tray): a hub attached later joins each.
    feeds: Mutex<Vec<SharedFeed>>,
    /// Who answers through attached hubs (`alice (app)`).
    operator: String,
}

impl WindowTable {
    pub fn new(first: HubClient, operator: String) -> Self {
        WindowTable {
            first,
            others: Mutex::new(Vec::new()),
            next_number: AtomicU64::new(1),
            feeds: Mutex::new(Vec::new()),
            operator,
        }
    }

    /// The first hub's client.
    pub fn first(&self) -> &HubClient {
        &self.first
    }

    fn others(&self) -> Vec<Other> {
        lock(&self.others).clone()
    }

    /// The hubs attached beside the first.
    pub fn attached(&self) -> Vec<AttachedHub> {
        self.others()
            .into_iter()
            .map(|o| AttachedHub { url: o.client.api_url().to_owned(), label: o.label })
            .collect()
    }

    /// Attaches the hub at `url` with its operator `token`; its waiting calls join the inbox at once.
    pub async fn attach(&self, url: &str, token: &str) -> Result<Vec<AttachedHub>, ApiError> {
        let remote = RemoteHub::at(url, token)?.answering_as(&self.operator)?;
        let client = RemoteClient::new(remote);
        let api_url = client.api_url().to_owned();
        if self.others().iter().any(|o| o.client.api_url() == api_url) {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("{api_url} is attached already"),
                json!({}),
            ));
        }
        // A hub that answers its status is a hub, with that token.
        client.hub_status().await?;
        let label = label_of(&api_url);
        let other = Other { number: self.next_number.fetch_add(1, Ordering::Relaxed), label, client };
        lock(&self.others).push(other.clone());
        let feeds: Vec<SharedFeed> = {
            let mut feeds = lock(&self.feeds);
            feeds.retain(|f| !f.gone.load(Ordering::Relaxed));
            feeds.clone()
        };
        if !feeds.is_empty() {
            let first_label = first_label(&self.first).await;
            let pending = other.client.pending_approvals().await.unwrap_or_default();
            for feed in feeds {
                *lock(&feed.first_label) = Some(first_label.clone());
                follow_other(&other, feed.clone()).await;
                let now = Timestamp::now();
                let asked = (pending.iter().cloned())
                    .map(|a| FeedItem {
                        seq: 0,
                        at: now,
                        event: FeedEvent::ApprovalAsked { approval: Box::new(other.relabel(a)) },
                    })
                    .collect();
                feed.send(asked);
            }
        }
        Ok(self.attached())
    }

    /// The hub an inbox id belongs to, and the id that hub knows.
    fn route(&self, id: u64) -> Result<(HubClient, u64), ApiError> {
        let number = id >> HUB_SHIFT;
        let own = id & ((1 << HUB_SHIFT) - 1);
        if number == 0 {
            return Ok((self.first.clone(), own));
        }
        let other = self.others().into_iter().find(|o| o.number == number).ok_or_else(|| {
            ApiError::new(
                ErrorCode::ApprovalUnknown,
                format!("approval {id}: its hub is not attached"),
                json!({}),
            )
        })?;
        Ok((HubClient::Attached(other.client), own))
    }
}

/// `HOST:PORT` of a hub's address.
fn label_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// The first hub's label: where its agents connect.
async fn first_label(first: &HubClient) -> String {
    match first.hub_state().await {
        Ok(HubState::Running { mcp_url, .. }) => label_of(&mcp_url),
        _ => "this hub".to_owned(),
    }
}

/// Follows `other`'s approvals into the window's feed (its other events stay on that hub).
async fn follow_other(other: &Other, feed: SharedFeed) {
    let relabel = other.clone();
    let sink: Sink<Vec<FeedItem>> = Box::new(move |batch: Vec<FeedItem>| {
        let kept = batch
            .into_iter()
            .filter_map(|item| {
                let event = match item.event {
                    FeedEvent::ApprovalAsked { approval } => {
                        FeedEvent::ApprovalAsked { approval: Box::new(relabel.relabel(*approval)) }
                    }
                    FeedEvent::ApprovalSettled { id, outcome, operator } => FeedEvent::ApprovalSettled {
                        id: id | (relabel.number << HUB_SHIFT),
                        outcome,
                        operator,
                    },
                    _ => return None,
                };
                Some(FeedItem { event, ..item })
            })
            .collect();
        feed.send(kept)
    });
    if let Err(e) = other.client.follow_events(sink).await {
        tracing::warn!(hub = %other.label, "the attached hub's approvals are not followed: {}", e.message);
    }
}

impl TableCalls for WindowTable {
    fn forward_to(&self) -> HubClient {
        self.first.clone()
    }

    fn pending_approvals(&self) -> impl Future<Output = Result<Vec<Approval>, ApiError>> + Send {
        let (first, others) = (self.first.clone(), self.others());
        async move {
            let mut all = first.pending_approvals().await?;
            if others.is_empty() {
                return Ok(all);
            }
            let label = first_label(&first).await;
            for approval in &mut all {
                approval.hub = Some(label.clone());
            }
            for other in others {
                match other.client.pending_approvals().await {
                    Ok(theirs) => all.extend(theirs.into_iter().map(|a| other.relabel(a))),
                    Err(e) => tracing::warn!(hub = %other.label, "its pending approvals: {}", e.message),
                }
            }
            all.sort_by_key(|a| a.requested_at);
            Ok(all)
        }
    }

    fn answer_approval(
        &self,
        id: u64,
        answer: Answer,
    ) -> impl Future<Output = Result<Receipt, ApiError>> + Send {
        let routed = self.route(id);
        async move {
            let (hub, own) = routed?;
            hub.answer_approval(own, answer).await
        }
    }

    fn always_preview(
        &self,
        id: u64,
        scope: Option<Vec<RuleScope>>,
    ) -> impl Future<Output = Result<AlwaysPreview, ApiError>> + Send {
        let routed = self.route(id);
        async move {
            let (hub, own) = routed?;
            hub.always_preview(own, scope).await
        }
    }

    fn follow_events(&self, sink: Sink<Vec<FeedItem>>) -> impl Future<Output = Result<u32, ApiError>> + Send {
        let feed = SharedFeed {
            sink: Arc::new(Mutex::new(sink)),
            gone: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            seq: Arc::new(AtomicU64::new(0)),
            first_label: Arc::new(Mutex::new(None)),
        };
        {
            let mut feeds = lock(&self.feeds);
            feeds.retain(|f| !f.gone.load(Ordering::Relaxed));
            feeds.push(feed.clone());
        }
        let (first, others) = (self.first.clone(), self.others());
        async move {
            if !others.is_empty() {
                *lock(&feed.first_label) = Some(first_label(&first).await);
            }
            let forward = feed.clone();
            let first_sink: Sink<Vec<FeedItem>> = Box::new(move |mut batch: Vec<FeedItem>| {
                let label = lock(&forward.first_label).clone();
                if let Some(label) = label {
                    for item in &mut batch {
                        if let FeedEvent::ApprovalAsked { approval } = &mut item.event {
                            approval.hub = Some(label.clone());
                        }
                    }
                }
                forward.send(batch)
            });
            let id = first.follow_events(first_sink).await?;
            for other in &others {
                follow_other(other, feed.clone()).await;
            }
            Ok(id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hub_is_labelled_by_its_host_and_port() {
        assert_eq!(label_of("http://127.0.0.1:7391/v1"), "127.0.0.1:7391");
        assert_eq!(label_of("https://devbox.example:7391/mcp"), "devbox.example:7391");
    }
}
