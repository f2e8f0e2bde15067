//! Lifecycle events on a broadcast bus: any number of subscribers, a slow one never blocks dispatch,
//! and a subscriber that falls behind is told how many events it missed (never silently).

use crate::call::{BlockedReason, CallContext, CallError, DecidedBy};
use crate::execution::ExecutionAction;
use crate::guardrail::{GuardrailRule, GuardrailStage};
use crate::time::Timestamp;
use crate::tool::ToolOutput;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tokio::sync::broadcast;

/// The kinds of event, by their wire names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolEventKind {
    ToolExecutionBlocked,
    ToolExecutionStarted,
    ToolExecutionProgress,
    ToolExecutionFinished,
    ToolExecutionError,
    GuardrailDecision,
}

impl ToolEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolEventKind::ToolExecutionBlocked => "tool_execution_blocked",
            ToolEventKind::ToolExecutionStarted => "tool_execution_started",
            ToolEventKind::ToolExecutionProgress => "tool_execution_progress",
            ToolEventKind::ToolExecutionFinished => "tool_execution_finished",
            ToolEventKind::ToolExecutionError => "tool_execution_error",
            ToolEventKind::GuardrailDecision => "guardrail_decision",
        }
    }
}

/// A guardrail's verdict as an event reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailOutcome {
    Allow,
    Block,
    Tripwire,
    /// The guardrail failed (error, panic, garbage) and the call was blocked for it.
    Failed,
}

/// How long each check before a call's start took, in microseconds, as the dispatcher measured them: the
/// lookup and grants, the arguments (permission, shape, JSON Schema, the tool describing its action), the
/// execution policy, an operator's answer (when asked), and the ledger's `started` row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StageTimes {
    pub grant_us: u64,
    pub arguments_us: u64,
    pub policy_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_us: Option<u64>,
    pub ledger_us: u64,
    /// Whether anyone will read them (an event subscriber): else the clock is not read at all.
    #[serde(skip)]
    pub(crate) timed: bool,
}

impl StageTimes {
    pub(crate) fn when(timed: bool) -> Self {
        StageTimes { timed, ..StageTimes::default() }
    }

    /// Now, when the stages are timed.
    pub(crate) fn clock(&self) -> Option<std::time::Instant> {
        self.timed.then(std::time::Instant::now)
    }
}

/// Microseconds since `since` (0 when the clock was not read), saturating.
pub(crate) fn micros_since(since: Option<std::time::Instant>) -> u64 {
    since.map_or(0, |t| u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX))
}

/// What happened. Every text in it is redacted.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventPayload {
    #[serde(rename = "tool_execution_blocked")]
    Blocked {
        reason: BlockedReason,
        error: CallError,
        decided_by: DecidedBy,
        /// When the execution policy asked an operator: what made it ask (a rule, a protected place,
        /// the default); `decided_by` is then whoever settled the call. None otherwise (the policy
        /// decided, and `decided_by` says so; or the call never reached it).
        #[serde(skip_serializing_if = "Option::is_none")]
        policy_decided_by: Option<DecidedBy>,
    },
    #[serde(rename = "tool_execution_started")]
    Started {
        arguments: Arc<Value>,
        action: Arc<ExecutionAction>,
        decided_by: DecidedBy,
        /// As for `Blocked`.
        #[serde(skip_serializing_if = "Option::is_none")]
        policy_decided_by: Option<DecidedBy>,
        stages: StageTimes,
    },
    #[serde(rename = "tool_execution_progress")]
    Progress { progress: Value },
    #[serde(rename = "tool_execution_finished")]
    /// `redaction_us`: redacting the output, after the tool ran (inside `duration_us`).
    Finished { output: Arc<ToolOutput>, duration_us: u64, redaction_us: u64 },
    #[serde(rename = "tool_execution_error")]
    Error { error: CallError, duration_us: u64 },
    GuardrailDecision {
        stage: GuardrailStage,
        guardrail: String,
        outcome: GuardrailOutcome,
        #[serde(skip_serializing_if = "Option::is_none")]
        rule: Option<GuardrailRule>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// One event.
#[derive(Debug, Clone, Serialize)]
pub struct ToolEvent {
    #[serde(flatten)]
    pub call: Arc<CallContext>,
    pub tool_name: Arc<str>,
    pub at: Timestamp,
    #[serde(flatten)]
    pub payload: EventPayload,
}

impl ToolEvent {
    pub fn kind(&self) -> ToolEventKind {
        match self.payload {
            EventPayload::Blocked { .. } => ToolEventKind::ToolExecutionBlocked,
            EventPayload::Started { .. } => ToolEventKind::ToolExecutionStarted,
            EventPayload::Progress { .. } => ToolEventKind::ToolExecutionProgress,
            EventPayload::Finished { .. } => ToolEventKind::ToolExecutionFinished,
            EventPayload::Error { .. } => ToolEventKind::ToolExecutionError,
            EventPayload::GuardrailDecision { .. } => ToolEventKind::GuardrailDecision,
        }
    }
}

/// Default number of events a subscriber may fall behind before it starts missing some.
pub const DEFAULT_EVENT_CAPACITY: usize = 4096;

/// The event bus. Cloning shares it.
#[derive(Clone)]
pub struct EventBus {
    sender: broadcast::Sender<Arc<ToolEvent>>,
    missed: Arc<AtomicU64>,
    /// Live subscriptions, kept here because the channel's own count takes its lock, and the
    /// dispatcher asks on every call (three times a call were ~100 instructions and six atomic
    /// operations).
    subscribers: Arc<AtomicUsize>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(DEFAULT_EVENT_CAPACITY)
    }
}

impl EventBus {
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        EventBus { sender, missed: Arc::new(AtomicU64::new(0)), subscribers: Arc::new(AtomicUsize::new(0)) }
    }

    pub fn subscribe(&self) -> EventSubscription {
        self.subscribers.fetch_add(1, Ordering::Relaxed);
        EventSubscription {
            receiver: self.sender.subscribe(),
            missed: self.missed.clone(),
            subscribers: self.subscribers.clone(),
        }
    }

    /// Whether anyone listens (dispatch skips building events when nobody does). A hint, as the
    /// channel's own count was: a subscription made meanwhile sees the next call's events.
    pub fn has_subscribers(&self) -> bool {
        self.subscribers.load(Ordering::Relaxed) > 0
    }

    pub fn subscriber_count(&self) -> usize {
        self.subscribers.load(Ordering::Relaxed)
    }

    /// Sends an event to every subscriber; never waits.
    pub fn emit(&self, event: ToolEvent) {
        // An error only means nobody is subscribed.
        let _ = self.sender.send(Arc::new(event));
    }

    /// Events missed by lagging subscribers so far, summed over subscribers.
    pub fn missed_total(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }
}

/// What a subscriber receives.
#[derive(Debug, Clone)]
pub enum EventDelivery {
    Event(Arc<ToolEvent>),
    /// The subscriber fell behind and `missed` events were dropped for it (oldest first).
    Lagged {
        missed: u64,
    },
}

/// One subscriber.
pub struct EventSubscription {
    receiver: broadcast::Receiver<Arc<ToolEvent>>,
    missed: Arc<AtomicU64>,
    subscribers: Arc<AtomicUsize>,
}

impl Drop for EventSubscription {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl EventSubscription {
    /// The next delivery; `None` once the bus is gone.
    pub async fn recv(&mut self) -> Option<EventDelivery> {
        match self.receiver.recv().await {
            Ok(event) => Some(EventDelivery::Event(event)),
            Err(broadcast::error::RecvError::Lagged(n)) => Some(self.lagged(n)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next delivery if one is waiting.
    pub fn try_recv(&mut self) -> Option<EventDelivery> {
        match self.receiver.try_recv() {
            Ok(event) => Some(EventDelivery::Event(event)),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(self.lagged(n)),
            Err(_) => None,
        }
    }

    /// Every event waiting now (lag notices included), without waiting for more.
    pub fn drain(&mut self) -> Vec<EventDelivery> {
        std::iter::from_fn(|| self.try_recv()).collect()
    }

    fn lagged(&self, n: u64) -> EventDelivery {
        self.missed.fetch_add(n, Ordering::Relaxed);
        tracing::warn!(missed = n, "event subscriber lagged; events were dropped for it");
        EventDelivery::Lagged { missed: n }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bus_counts_its_live_subscriptions() {
        let bus = EventBus::new(4);
        assert!(!bus.has_subscribers());
        let first = bus.subscribe();
        let second = bus.clone().subscribe();
        assert_eq!(bus.subscriber_count(), 2, "clones share the count");
        drop(first);
        assert!(bus.has_subscribers());
        drop(second);
        assert!(!bus.has_subscribers());
        assert_eq!(bus.subscriber_count(), 0);
    }
}
