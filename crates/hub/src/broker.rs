//! The approval broker: the harness's approval seam for the hub. A prompt becomes a pending approval
//! with a deadline; any number of approvers (the terminal, the HTTP API, the desktop app) see it and the
//! first answer wins. Session grants answer repeats; "always" amends the policy file and puts the amended
//! policy in force. An unanswered approval is denied as a timeout, never as an operator's denial.

use async_trait::async_trait;
use portcullis_harness::{
    ApprovalAnswer, ApprovalRequest, Approvals, DecidedBy, ExecutionAction, Receipt, RuleRef, Timestamp,
    arguments_digest,
};
use portcullis_ledger::ApprovalOutcome;
use portcullis_policy::approval::{always_offer, settle};
use portcullis_policy::host_approval::{asks_for_host, host_offer};
use portcullis_policy::{Amendment, ApprovalChoice, LivePolicy, RuleScope, SessionGrants};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use thiserror::Error;
use tokio::sync::{broadcast, oneshot};

/// How the denial of such a prompt ends.
pub const NO_OPERATOR_SUFFIX: &str = "; no operator is attached to this hub, so the call is denied";

/// A pending approval as approvers see it.
#[derive(Debug, Clone, Serialize)]
pub struct PendingApproval {
    pub id: u64,
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    /// Redacted arguments.
    pub arguments: serde_json::Value,
    /// The SHA-256 of `arguments` in canonical JSON ([`arguments_digest`]): an answer must name it, so
    /// it approves the arguments its operator was shown and no others.
    pub arguments_sha256: String,
    /// The version of the policy that asked (a content hash of its layers), as the call records it.
    pub policy_version: Option<String>,
    pub action: ExecutionAction,
    /// Why the policy asks.
    pub reason: Option<String>,
    pub matched_rules: Vec<RuleRef>,
    pub requested_at: Timestamp,
    pub deadline: Timestamp,
    /// What "always" would add, or why it is not offered.
    pub always: AlwaysOffer,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "offered", rename_all = "snake_case")]
pub enum AlwaysOffer {
    /// `creates`: the file does not exist yet; "always" creates it (see
    /// [`portcullis_policy::approval::always_target`]).
    Yes {
        file: String,
        creates: bool,
        amendment: Amendment,
    },
    No {
        why: String,
    },
}

/// What happened to a pending approval.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum BrokerEvent {
    Pending(Box<PendingApproval>),
    Resolved { id: u64, outcome: String, operator: Option<String> },
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BrokerError {
    #[error("no pending approval {0}")]
    Unknown(u64),
    #[error("approval {0} was already answered or timed out")]
    AlreadyAnswered(u64),
    #[error("\"always\" is not offered for approval {id}: {why}")]
    AlwaysNotOffered { id: u64, why: String },
    #[error("the scope given for approval {id}'s \"always\" rules does not fit: {why}")]
    BadScope { id: u64, why: String },
    /// The answer names other arguments than the waiting call's (`given`: the digest it named): it
    /// approves nothing, and the call still waits.
    #[error(
        "the answer to approval {id} was given for other arguments than its call's (arguments_sha256 \
         {given:?} is not theirs): nothing is approved and the call still waits; list the pending \
         approvals again and answer with the arguments_sha256 shown"
    )]
    ReceiptMismatch { id: u64, given: String },
}

impl BrokerError {
    pub fn code(&self) -> &'static str {
        match self {
            BrokerError::Unknown(_) => "approval_unknown",
            BrokerError::AlreadyAnswered(_) => "approval_answered",
            BrokerError::AlwaysNotOffered { .. } => "always_not_offered",
            BrokerError::BadScope { .. } => "bad_scope",
            BrokerError::ReceiptMismatch { .. } => "receipt_mismatch",
        }
    }
}

/// An operator's answer to one approval, as approvers give it.
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a> {
    pub choice: ApprovalChoice,
    /// The pending approval's `arguments_sha256` as the operator was shown it: an answer naming other
    /// arguments is refused ([`BrokerError::ReceiptMismatch`]).
    pub arguments_sha256: &'a str,
    /// Who answers (`alice (app)`), and through which front end (`app`, `browser`, `terminal`, `api`).
    pub operator: &'a str,
    pub channel: &'a str,
    /// Words for the agent (read with a denial) and the ledger (kept with any answer).
    pub note: Option<&'a str>,
    /// With "always": its rules cut to this scope, one per offered rule (`None`: as offered, exact).
    pub scope: Option<&'a [RuleScope]>,
}

impl<'a> Reply<'a> {
    /// `choice` for the arguments of digest `arguments_sha256`, by `operator` through the API.
    pub fn new(choice: ApprovalChoice, arguments_sha256: &'a str, operator: &'a str) -> Self {
        Reply { choice, arguments_sha256, operator, channel: "api", note: None, scope: None }
    }
}

/// An operator's answer as the waiting call receives it.
struct Given {
    choice: ApprovalChoice,
    operator: String,
    /// Words for the agent (with a denial) and the ledger.
    note: Option<String>,
    /// "Always" with the operator's scope: the offered amendment cut to it.
    scoped: Option<Amendment>,
    /// The answer bound to what it approved.
    receipt: Receipt,
}

struct Waiting {
    pending: PendingApproval,
    answer: oneshot::Sender<Given>,
}

/// The longest note an operator's answer carries (characters).
pub const MAX_NOTE_CHARS: usize = 2000;

/// The hub's approval broker.
pub struct ApprovalBroker {
    live: Arc<LivePolicy>,
    grants: Arc<SessionGrants>,
    waiting: Mutex<HashMap<u64, Waiting>>,
    next: AtomicU64,
    events: broadcast::Sender<BrokerEvent>,
    /// The same events for those who only watch (an agent's gateway connection, told that its call
    /// waits): they do not count as approvers attending the hub.
    watchers: broadcast::Sender<BrokerEvent>,
    timeout: Mutex<Duration>,
    /// The user's config folder: on a first day "always" creates the user's policy file there.
    user_config: Option<std::path::PathBuf>,
    /// Deny at once when no approver is subscribed (a hub without an operator API: waiting is futile).
    deny_unattended: bool,
    /// "Always" is not offered for an action holding a secret (the rule would write it to a file).
    redactor: Option<portcullis_harness::Redactor>,
    /// Where every approval asked is recorded with how it ended (the ledger's approvals table).
    ledger: Option<Arc<portcullis_ledger::SqliteLedger>>,
}

impl ApprovalBroker {
    pub fn new(live: Arc<LivePolicy>, timeout: Duration, user_config: Option<std::path::PathBuf>) -> Self {
        ApprovalBroker {
            live,
            grants: Arc::new(SessionGrants::new()),
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            events: broadcast::channel(256).0,
            watchers: broadcast::channel(256).0,
            timeout: Mutex::new(timeout),
            user_config,
            deny_unattended: false,
            redactor: None,
            ledger: None,
        }
    }

    /// Records every approval asked — answered (by whom: the operator's name says the channel), timed
    /// out or withdrawn, with when it was asked and settled — in this ledger, linked to its call.
    pub fn with_ledger(mut self, ledger: Arc<portcullis_ledger::SqliteLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Writes the approval row of `pending` (in the background: a settled approval never waits for it):
    /// answered `by` an operator with the answer's receipt, or not answered at all.
    fn record(
        &self,
        pending: &PendingApproval,
        outcome: ApprovalOutcome,
        by: Option<(&str, &Receipt)>,
        note: Option<String>,
        written: Option<&Amendment>,
    ) {
        let Some(ledger) = self.ledger.clone() else { return };
        let rule_written = match (written, outcome) {
            (Some(amendment), ApprovalOutcome::ApprovedAlways) => {
                let added = amendment.rules.iter().map(|r| r.id.clone());
                let widened = amendment.hosts.iter().map(|h| format!("{} (+{})", h.rule, h.host));
                let written = added.chain(widened).collect::<Vec<_>>().join(", ");
                // The rules name the receipt that created them (in the file, and here).
                Some(match by {
                    Some((_, receipt)) => format!("{written} (receipt {})", receipt.id),
                    None => written,
                })
            }
            _ => None,
        };
        let row = portcullis_ledger::ApprovalRecord {
            session_id: pending.session_id.clone(),
            call_id: pending.call_id.clone(),
            tool: pending.tool.clone(),
            requested_at: pending.requested_at,
            resolved_at: Some(Timestamp::now()),
            outcome: Some(outcome),
            operator: by.map(|(operator, _)| operator.to_owned()),
            note,
            rule_written,
            receipt: by.map(|(_, receipt)| receipt.clone()),
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(id = pending.id, "approval not recorded: no runtime");
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = ledger.record_approval(row).await {
                tracing::warn!(error = %e, "approval not recorded");
            }
        });
    }

    /// The redactor of the hub's secrets, when one is set.
    pub fn redactor(&self) -> Option<&portcullis_harness::Redactor> {
        self.redactor.as_ref()
    }

    /// Secrets this redactor finds are never written into an "always" rule.
    pub fn with_redactor(mut self, redactor: portcullis_harness::Redactor) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// A broker that denies at once when no approver is subscribed.
    pub fn unattended(mut self) -> Self {
        self.deny_unattended = true;
        self
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Follows pending and resolved approvals.
    pub fn subscribe(&self) -> broadcast::Receiver<BrokerEvent> {
        self.events.subscribe()
    }

    /// Follows pending and resolved approvals without attending them: a hub whose only subscribers
    /// watch is still unattended.
    pub fn watch(&self) -> broadcast::Receiver<BrokerEvent> {
        self.watchers.subscribe()
    }

    fn publish(&self, event: BrokerEvent) {
        if self.watchers.receiver_count() > 0 {
            let _ = self.watchers.send(event.clone());
        }
        let _ = self.events.send(event);
    }

    /// How many approvals wait, without copying them.
    pub fn pending_count(&self) -> usize {
        self.lock_waiting().len()
    }

    /// Approvals waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<PendingApproval> {
        let mut list: Vec<PendingApproval> =
            self.lock_waiting().values().map(|w| w.pending.clone()).collect();
        list.sort_by_key(|p| p.id);
        list
    }

    /// Approval `id` while it waits; else why not (answered or never asked).
    pub fn pending_one(&self, id: u64) -> Result<PendingApproval, BrokerError> {
        match self.lock_waiting().get(&id) {
            Some(entry) => Ok(entry.pending.clone()),
            None if id > 0 && id <= self.next.load(Ordering::Relaxed) => {
                Err(BrokerError::AlreadyAnswered(id))
            }
            None => Err(BrokerError::Unknown(id)),
        }
    }

    pub fn session_grants(&self) -> &Arc<SessionGrants> {
        &self.grants
    }

    /// The approval timeout follows the policy on reload.
    pub fn configure(&self, timeout: Duration) {
        *self.timeout.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = timeout;
    }

    pub fn timeout(&self) -> Duration {
        *self.timeout.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers a pending approval; the first answer wins. The answer must name the digest of the
    /// arguments the approval shows (else it is refused and the call still waits); its note is read by
    /// the agent with a denial and kept by the ledger with any answer (cut to [`MAX_NOTE_CHARS`]).
    /// Returns the answer's receipt: what it approved, under which policy, by whom, through which
    /// channel and when — the waiting call carries it to its records.
    pub fn answer(&self, id: u64, reply: Reply<'_>) -> Result<Receipt, BrokerError> {
        let Reply { choice, arguments_sha256, operator, channel, note, scope } = reply;
        let mut waiting = self.lock_waiting();
        let Some(entry) = waiting.get(&id) else {
            return Err(if id > 0 && id <= self.next.load(Ordering::Relaxed) {
                BrokerError::AlreadyAnswered(id)
            } else {
                BrokerError::Unknown(id)
            });
        };
        if entry.pending.arguments_sha256 != arguments_sha256 {
            tracing::warn!(id, "an answer named other arguments than its approval's; refused");
            let given = arguments_sha256.chars().take(64).collect();
            return Err(BrokerError::ReceiptMismatch { id, given });
        }
        if let (ApprovalChoice::Always, AlwaysOffer::No { why }) = (choice, &entry.pending.always) {
            return Err(BrokerError::AlwaysNotOffered { id, why: why.clone() });
        }
        let scoped = match (choice, &entry.pending.always, scope) {
            (ApprovalChoice::Always, AlwaysOffer::Yes { amendment, .. }, Some(scope)) => {
                Some(amendment.scoped(scope).map_err(|why| BrokerError::BadScope { id, why })?)
            }
            _ => None,
        };
        let Some(entry) = waiting.remove(&id) else { return Err(BrokerError::Unknown(id)) };
        drop(waiting);
        let note =
            note.map(str::trim).filter(|n| !n.is_empty()).map(|n| n.chars().take(MAX_NOTE_CHARS).collect());
        let pending = &entry.pending;
        let receipt = Receipt::identified(Receipt {
            id: String::new(),
            approval_id: id.to_string(),
            session_id: pending.session_id.clone(),
            call_id: pending.call_id.clone(),
            tool: pending.tool.clone(),
            arguments_sha256: pending.arguments_sha256.clone(),
            policy_version: Some(self.live.current().version().to_string()),
            operator: operator.to_owned(),
            channel: channel.to_owned(),
            outcome: choice.outcome(),
            at: Timestamp::now(),
        });
        let given = Given { choice, operator: operator.to_owned(), note, scoped, receipt: receipt.clone() };
        entry.answer.send(given).map_err(|_| BrokerError::AlreadyAnswered(id))?;
        Ok(receipt)
    }

    fn resolved(&self, id: u64, outcome: &str, operator: Option<String>) {
        self.publish(BrokerEvent::Resolved { id, outcome: outcome.into(), operator });
    }
}

#[async_trait]
impl Approvals for ApprovalBroker {
    async fn request(&self, request: ApprovalRequest) -> ApprovalAnswer {
        self.request_within(request, None).await
    }
}

impl ApprovalBroker {
    /// [`Approvals::request`], with a deadline of the caller's that may come before the policy's (the
    /// Claude Code hook's wait): the card counts down the nearer one, and a call not answered by it is
    /// denied as a timeout that says whose wait ran out.
    pub async fn request_within(&self, request: ApprovalRequest, limit: Option<Duration>) -> ApprovalAnswer {
        if let Some(decided_by) = self.grants.covering(&request) {
            return ApprovalAnswer::Allow { decided_by };
        }
        if self.deny_unattended && self.events.receiver_count() == 0 {
            return ApprovalAnswer::Deny {
                reason: format!(
                    "approval required ({}){NO_OPERATOR_SUFFIX}",
                    request.verdict.reason.as_deref().unwrap_or("the policy asks")
                ),
                decided_by: DecidedBy::Default { detail: Some(portcullis_harness::NO_APPROVER.into()) },
            };
        }
        // Where "always" writes follows the policy in force (a file "always" created is its layer now).
        let target =
            portcullis_policy::approval::always_target(&self.live.current(), self.user_config.as_deref());
        let file = target.as_ref().map(|t| t.file.as_str());
        let always = if asks_for_host(&request.action) {
            // A host goes into the rule that asked for it, in that rule's own file.
            match host_offer(&self.live.current(), &request) {
                Ok((file, amendment)) => AlwaysOffer::Yes { file, creates: false, amendment },
                Err(why) => AlwaysOffer::No { why },
            }
        } else {
            match (always_offer(&self.live, &request, file, "operator", self.redactor.as_ref()), target) {
                (Ok(amendment), Some(target)) => {
                    AlwaysOffer::Yes { file: target.file, creates: target.creates, amendment }
                }
                (Err(why), _) => AlwaysOffer::No { why },
                (Ok(_), None) => AlwaysOffer::No { why: "no policy file to write to".into() },
            }
        };
        let policy_timeout = self.timeout();
        let timeout = limit.map_or(policy_timeout, |limit| limit.min(policy_timeout));
        let whose = if timeout < policy_timeout { " (the Claude Code hook's wait ran out)" } else { "" };
        let now = Timestamp::now();
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let pending = PendingApproval {
            id,
            session_id: request.call.session_id.to_string(),
            call_id: request.call.call_id.to_string(),
            tool: request.tool_name.clone(),
            arguments: (*request.arguments).clone(),
            arguments_sha256: arguments_digest(&request.arguments),
            policy_version: request.verdict.policy_version.as_deref().map(str::to_owned),
            action: request.action.clone(),
            reason: request.verdict.reason.clone(),
            matched_rules: request.verdict.matched_rules.clone(),
            requested_at: now,
            deadline: Timestamp(now.0.saturating_add(i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX))),
            always,
        };
        let (tx, rx) = oneshot::channel();
        self.lock_waiting().insert(id, Waiting { pending: pending.clone(), answer: tx });
        self.publish(BrokerEvent::Pending(Box::new(pending.clone())));
        tracing::info!(id, tool = %pending.tool, "approval pending");
        // Dropped by the dispatcher (its own timeout, a cancelled run): the entry must not linger.
        let mut cleanup = RemoveOnDrop { broker: self, pending: &pending, armed: true };
        let answer = tokio::time::timeout(timeout, rx).await;
        cleanup.armed = false;
        self.lock_waiting().remove(&id);
        let Given { choice, operator, note, scoped, receipt } = match answer {
            Ok(Ok(given)) => given,
            Ok(Err(_)) | Err(_) => {
                self.resolved(id, "timeout", None);
                let note = format!("no answer within {} s{whose}", timeout.as_secs());
                self.record(&pending, ApprovalOutcome::TimedOut, None, Some(note), None);
                return ApprovalAnswer::Deny {
                    reason: format!("no answer within {} s{whose}; the call is denied", timeout.as_secs()),
                    decided_by: DecidedBy::ApprovalTimeout {
                        after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                    },
                };
            }
        };
        let outcome = serde_json::to_value(choice).ok().and_then(|v| v.as_str().map(str::to_owned));
        self.resolved(id, outcome.as_deref().unwrap_or("answered"), Some(operator.clone()));
        let recorded = match choice {
            ApprovalChoice::Once => ApprovalOutcome::ApprovedOnce,
            ApprovalChoice::Session => ApprovalOutcome::ApprovedForSession,
            ApprovalChoice::Always => ApprovalOutcome::ApprovedAlways,
            ApprovalChoice::Deny => ApprovalOutcome::Denied,
        };
        let offered = match &pending.always {
            AlwaysOffer::Yes { file, amendment, .. } => {
                Some((file.as_str(), scoped.as_ref().unwrap_or(amendment)))
            }
            AlwaysOffer::No { .. } => None,
        };
        let by = Some((operator.as_str(), &receipt));
        self.record(&pending, recorded, by, note.clone(), offered.map(|(_, a)| a));
        let settled = settle(choice, &request, offered, &operator, Some(&receipt), &self.grants, &self.live);
        match (settled, note) {
            (ApprovalAnswer::Deny { reason, decided_by }, Some(note)) => {
                ApprovalAnswer::Deny { reason: format!("{reason}; the operator says: {note}"), decided_by }
            }
            (answer, _) => answer,
        }
    }
}

struct RemoveOnDrop<'a> {
    broker: &'a ApprovalBroker,
    pending: &'a PendingApproval,
    armed: bool,
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let id = self.pending.id;
        if self.armed && self.broker.lock_waiting().remove(&id).is_some() {
            self.broker.resolved(id, "withdrawn", None);
            let note =
                "the call stopped waiting before an answer (its caller went away or its run was cancelled)";
            self.broker.record(self.pending, ApprovalOutcome::Withdrawn, None, Some(note.into()), None);
        }
    }
}
