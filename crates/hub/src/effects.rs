//! The live book of claimed effects (SEP-3182 idempotency keys): the hub's compare-and-set. A call with
//! a key claims `(agent, key)` here under one lock before anything runs; the claim is then made durable
//! in the ledger (`effect_calls.rs`) before the effect. A retry with the same arguments gets the first
//! call's answer (or waits for it), other arguments are a conflict, and a claim whose call never ended
//! (the hub died, or the call's future was dropped) is `unknown` until an operator marks it. The ledger
//! holds the same rows, so the book is rebuilt from it at start.

use portcullis_harness::{Timestamp, ToolCallResult};
use portcullis_ledger::{EffectMarkOutcome, EffectRow, EffectState};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// How long a key is kept by default (then a call with it runs as a new one).
pub const DEFAULT_EFFECT_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// The agent identity of calls whose transport names none (stdio, in-process).
pub const LOCAL_AGENT: &str = "local";

/// An answer a waiting retry receives: the first call's result, or nothing when that call never ran
/// (refused by the pipeline: the key is free) or never ended (its outcome is unknown).
type Answer = Option<Arc<ToolCallResult>>;

/// SHA-256 (hex) of a tool name and its arguments in canonical JSON (object keys sorted at every level),
/// so the same arguments in another key order are the same call.
pub fn effect_digest(tool: &str, arguments: &Value) -> String {
    let text = portcullis_harness::canonical_json(arguments);
    let mut hash = Sha256::new();
    hash.update(tool.as_bytes());
    hash.update([0u8]);
    hash.update(text.as_bytes());
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The key a tool's declared arguments make (see `Tool::effect_key`): `<tool>(<values>)` in canonical
/// JSON, or `<tool>#<SHA-256 of that>` when longer than a key may be.
pub fn declared_key(tool: &str, values: &[Value]) -> String {
    let text = portcullis_harness::canonical_json(&Value::Array(values.to_vec()));
    let key = format!("{tool}({})", &text[1..text.len() - 1]);
    if key.len() <= portcullis_mcp::idempotency::MAX_KEY_BYTES && !key.chars().any(char::is_control) {
        return key;
    }
    let digest: String = Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("{tool}#{digest}")
}

#[derive(Debug, Clone)]
enum Standing {
    Running(watch::Receiver<Answer>),
    Done(Arc<ToolCallResult>),
    Unknown,
    Marked { done: bool, operator: String, note: Option<String> },
}

#[derive(Debug, Clone)]
struct Slot {
    digest: String,
    call_id: String,
    claimed_at: Timestamp,
    expires_at: Timestamp,
    standing: Standing,
}

impl Slot {
    /// Whether the key is free again: past its window, unless its outcome waits for an operator.
    fn expired(&self, now: Timestamp) -> bool {
        !matches!(self.standing, Standing::Unknown | Standing::Running(_)) && self.expires_at.0 <= now.0
    }
}

/// What a call with a key may do.
#[derive(Debug)]
pub enum Claim {
    /// The key is this call's: run it, then [`EffectBook::finish`] or [`EffectBook::release`].
    Run(Box<ClaimTicket>),
    /// A retry of a call that ended: its answer.
    Answered { original: String, result: Arc<ToolCallResult> },
    /// A retry of a call still running: wait, then claim again.
    Wait { original: String, answer: watch::Receiver<Answer> },
    /// The key was claimed by a call with other arguments (or another tool).
    Conflict { original: String },
    /// The first call's outcome is unknown: refused until an operator marks it.
    Unknown { original: String, claimed_at: Timestamp },
    /// An operator said what happened to the first call: not run again.
    Marked { original: String, done: bool, operator: String, note: Option<String> },
}

/// The right to run the call that claimed a key. Dropped without [`EffectBook::finish`] or
/// [`EffectBook::release`] (the call's future was dropped mid-way), the key's outcome is unknown.
#[derive(Debug)]
pub struct ClaimTicket {
    pub agent: String,
    pub key: String,
    pub row: EffectRow,
    answer: Option<watch::Sender<Answer>>,
    book: Arc<Mutex<HashMap<(String, String), Slot>>>,
}

impl Drop for ClaimTicket {
    fn drop(&mut self) {
        let Some(answer) = self.answer.take() else { return };
        let mut slots = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = slots.get_mut(&(self.agent.clone(), self.key.clone()))
            && slot.call_id == self.row.call_id
        {
            slot.standing = Standing::Unknown;
        }
        let _ = answer.send(None);
    }
}

/// Why an operator's mark was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkError {
    #[error("agent {agent:?} has no claimed effect with the key {key:?}")]
    NotFound { agent: String, key: String },
    #[error(
        "the effect of agent {agent:?} with the key {key:?} has a known outcome ({state}): only unknown outcomes are marked"
    )]
    NotUnknown { agent: String, key: String, state: &'static str },
}

/// The claimed effects, by agent and key.
pub struct EffectBook {
    slots: Arc<Mutex<HashMap<(String, String), Slot>>>,
    window: Duration,
    /// The book's size at which expired keys are swept next (amortized: an agent that sends a new key
    /// with every call does not grow the book past its window).
    sweep_at: std::sync::atomic::AtomicUsize,
}

/// The smallest size at which the book sweeps expired keys.
const SWEEP_FLOOR: usize = 1024;

impl EffectBook {
    /// A book of the ledger's effects (`rows`; expired ones are left out), keys kept for `window`.
    pub fn load(rows: Vec<EffectRow>, window: Duration, now: Timestamp) -> Self {
        let mut slots = HashMap::new();
        for row in rows {
            let standing = match row.state {
                // The ledger made every `running` one `unknown` when it opened.
                EffectState::Running | EffectState::Unknown => Standing::Unknown,
                EffectState::Done => {
                    match row.result.as_deref().map(serde_json::from_str::<ToolCallResult>) {
                        Some(Ok(result)) => Standing::Done(Arc::new(result)),
                        // An answer that cannot be read back is not invented: its outcome is unknown.
                        _ => Standing::Unknown,
                    }
                }
                EffectState::MarkedDone | EffectState::MarkedFailed => Standing::Marked {
                    done: row.state == EffectState::MarkedDone,
                    operator: row.operator.clone().unwrap_or_default(),
                    note: row.note.clone(),
                },
            };
            let slot = Slot {
                digest: row.digest,
                call_id: row.call_id,
                claimed_at: row.claimed_at,
                expires_at: row.expires_at,
                standing,
            };
            if !slot.expired(now) {
                slots.insert((row.agent, row.key), slot);
            }
        }
        let sweep_at = std::sync::atomic::AtomicUsize::new((slots.len() * 2).max(SWEEP_FLOOR));
        EffectBook { slots: Arc::new(Mutex::new(slots)), window, sweep_at }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `key` for `agent`'s call (compare-and-set under one lock), or says what the key holds.
    #[allow(clippy::too_many_arguments)] // the key's scope, the call, and the clock
    pub fn claim(
        &self,
        agent: &str,
        key: &str,
        tool: &str,
        digest: &str,
        call_id: &str,
        session_id: &str,
        now: Timestamp,
    ) -> Claim {
        let mut slots = self.lock();
        if slots.len() >= self.sweep_at.load(std::sync::atomic::Ordering::Relaxed) {
            slots.retain(|_, slot| !slot.expired(now));
            let next = (slots.len() * 2).max(SWEEP_FLOOR);
            self.sweep_at.store(next, std::sync::atomic::Ordering::Relaxed);
        }
        let id = (agent.to_owned(), key.to_owned());
        if let Some(slot) = slots.get(&id).filter(|s| !s.expired(now)) {
            let original = slot.call_id.clone();
            if slot.digest != digest {
                return Claim::Conflict { original };
            }
            return match &slot.standing {
                Standing::Running(answer) => Claim::Wait { original, answer: answer.clone() },
                Standing::Done(result) => Claim::Answered { original, result: result.clone() },
                Standing::Unknown => Claim::Unknown { original, claimed_at: slot.claimed_at },
                Standing::Marked { done, operator, note } => {
                    Claim::Marked { original, done: *done, operator: operator.clone(), note: note.clone() }
                }
            };
        }
        let window = i64::try_from(self.window.as_micros()).unwrap_or(i64::MAX);
        let expires_at = Timestamp(now.0.saturating_add(window));
        let (sender, receiver) = watch::channel(None);
        slots.insert(
            id,
            Slot {
                digest: digest.to_owned(),
                call_id: call_id.to_owned(),
                claimed_at: now,
                expires_at,
                standing: Standing::Running(receiver),
            },
        );
        Claim::Run(Box::new(ClaimTicket {
            agent: agent.to_owned(),
            key: key.to_owned(),
            row: EffectRow {
                agent: agent.to_owned(),
                key: key.to_owned(),
                tool: tool.to_owned(),
                summary: None,
                digest: digest.to_owned(),
                call_id: call_id.to_owned(),
                session_id: session_id.to_owned(),
                state: EffectState::Running,
                claimed_at: now,
                ended_at: None,
                expires_at,
                result: None,
                operator: None,
                marked_at: None,
                note: None,
            },
            answer: Some(sender),
            book: self.slots.clone(),
        }))
    }

    /// The claiming call ended with `result`: retries get it from now on.
    pub fn finish(&self, mut ticket: Box<ClaimTicket>, result: Arc<ToolCallResult>) {
        let Some(answer) = ticket.answer.take() else { return };
        if let Some(slot) = self.lock().get_mut(&(ticket.agent.clone(), ticket.key.clone()))
            && slot.call_id == ticket.row.call_id
        {
            slot.standing = Standing::Done(result.clone());
        }
        let _ = answer.send(Some(result));
    }

    /// The claiming call never ran (refused by the pipeline, or its claim could not be made durable):
    /// the key is free, and a waiting retry claims it anew.
    pub fn release(&self, mut ticket: Box<ClaimTicket>) {
        let Some(answer) = ticket.answer.take() else { return };
        let id = (ticket.agent.clone(), ticket.key.clone());
        let mut slots = self.lock();
        if slots.get(&id).is_some_and(|slot| slot.call_id == ticket.row.call_id) {
            slots.remove(&id);
        }
        drop(slots);
        let _ = answer.send(None);
    }

    /// The call whose outcome is unknown for `agent`'s `key`, or why there is none to decide about.
    pub fn unknown_call(&self, agent: &str, key: &str) -> Result<String, MarkError> {
        let slots = self.lock();
        let Some(slot) = slots.get(&(agent.to_owned(), key.to_owned())) else {
            return Err(MarkError::NotFound { agent: agent.to_owned(), key: key.to_owned() });
        };
        let state = match slot.standing {
            Standing::Unknown => return Ok(slot.call_id.clone()),
            Standing::Running(_) => "running",
            Standing::Done(_) => "done",
            Standing::Marked { done: true, .. } => "marked done",
            Standing::Marked { done: false, .. } => "marked failed",
        };
        Err(MarkError::NotUnknown { agent: agent.to_owned(), key: key.to_owned(), state })
    }

    /// Applies an operator's decision on the unknown outcome of `call_id` (see [`Self::unknown_call`]):
    /// done or failed (retries are answered so, and do not run), or retryable (the key is free).
    /// Refused when the key no longer holds that unknown outcome (another operator decided first).
    pub fn mark(
        &self,
        agent: &str,
        key: &str,
        call_id: &str,
        outcome: EffectMarkOutcome,
        operator: &str,
        note: Option<String>,
    ) -> Result<(), MarkError> {
        let id = (agent.to_owned(), key.to_owned());
        let mut slots = self.lock();
        match slots.get_mut(&id) {
            Some(slot) if matches!(slot.standing, Standing::Unknown) && slot.call_id == call_id => {
                match outcome {
                    EffectMarkOutcome::Retryable => {
                        slots.remove(&id);
                    }
                    EffectMarkOutcome::Done | EffectMarkOutcome::Failed => {
                        slot.standing = Standing::Marked {
                            done: outcome == EffectMarkOutcome::Done,
                            operator: operator.to_owned(),
                            note,
                        };
                    }
                }
                Ok(())
            }
            _ => {
                drop(slots);
                self.unknown_call(agent, key).and_then(|_| {
                    Err(MarkError::NotUnknown {
                        agent: agent.to_owned(),
                        key: key.to_owned(),
                        state: "decided",
                    })
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::{CallOutcome, DecidedBy, ToolOutput};
    use serde_json::json;

    fn result(call: &str) -> Arc<ToolCallResult> {
        Arc::new(ToolCallResult {
            call_id: call.into(),
            tool_name: "t".into(),
            outcome: CallOutcome::Finished { output: ToolOutput::text("ok").into() },
            decided_by: DecidedBy::DEFAULT,
            redacted: false,
        })
    }

    fn book() -> EffectBook {
        EffectBook::load(Vec::new(), Duration::from_secs(60), Timestamp(0))
    }

    fn claim(book: &EffectBook, agent: &str, key: &str, digest: &str, call: &str, now: i64) -> Claim {
        book.claim(agent, key, "t", digest, call, "s", Timestamp(now))
    }

    #[test]
    fn digests_ignore_key_order_and_see_every_value() {
        let a = effect_digest("t", &json!({"a": 1, "b": {"x": [1, 2], "y": "z"}}));
        let b = effect_digest("t", &json!({"b": {"y": "z", "x": [1, 2]}, "a": 1}));
        assert_eq!(a, b);
        assert_ne!(a, effect_digest("t", &json!({"a": 1, "b": {"x": [2, 1], "y": "z"}})));
        assert_ne!(a, effect_digest("u", &json!({"a": 1, "b": {"x": [1, 2], "y": "z"}})));
    }

    #[test]
    fn declared_keys_name_the_values_or_their_digest() {
        assert_eq!(
            declared_key("deploy", &[json!("web"), json!({"b": 1, "a": 2})]),
            r#"deploy("web",{"a":2,"b":1})"#
        );
        assert_eq!(declared_key("deploy", &[Value::Null]), "deploy(null)");
        let long = declared_key("deploy", &[json!("x".repeat(400))]);
        assert!(long.starts_with("deploy#") && long.len() == "deploy#".len() + 64, "{long}");
        let control = declared_key("deploy", &[json!("a\u{7}b")]);
        assert!(!control.chars().any(char::is_control), "{control}");
    }

    #[tokio::test]
    async fn a_key_runs_once_retries_wait_or_get_the_answer_and_other_arguments_conflict() {
        let book = book();
        let Claim::Run(ticket) = claim(&book, "a", "k", "d1", "c1", 1) else { panic!() };
        let Claim::Wait { original, mut answer } = claim(&book, "a", "k", "d1", "c2", 2) else { panic!() };
        assert_eq!(original, "c1");
        assert!(matches!(claim(&book, "a", "k", "d2", "c3", 2), Claim::Conflict { .. }));
        // Another agent's key of the same name is its own.
        assert!(matches!(claim(&book, "b", "k", "d1", "c4", 2), Claim::Run(_)));
        book.finish(ticket, result("c1"));
        answer.changed().await.unwrap();
        assert_eq!(answer.borrow().as_ref().map(|r| r.call_id.to_string()), Some("c1".into()));
        let Claim::Answered { result: got, .. } = claim(&book, "a", "k", "d1", "c5", 3) else { panic!() };
        assert_eq!(got, result("c1"));
    }

    #[test]
    fn a_released_key_is_free_and_an_expired_one_too_but_never_an_unknown_one() {
        let book = book();
        let Claim::Run(ticket) = claim(&book, "a", "k", "d", "c1", 1) else { panic!() };
        book.release(ticket);
        let Claim::Run(ticket) = claim(&book, "a", "k", "d", "c2", 2) else { panic!() };
        book.finish(ticket, result("c2"));
        assert!(matches!(claim(&book, "a", "k", "d", "c3", 3), Claim::Answered { .. }));
        let after_window = 2 + 60_000_000;
        assert!(matches!(claim(&book, "a", "k", "d", "c4", after_window), Claim::Run(_)));
        // A ticket dropped mid-call: unknown, and it stays so past the window.
        let Claim::Run(ticket) = claim(&book, "a", "j", "d", "c5", 1) else { panic!() };
        drop(ticket);
        assert!(matches!(claim(&book, "a", "j", "d", "c6", after_window * 2), Claim::Unknown { .. }));
    }

    #[test]
    fn expired_keys_are_swept_as_the_book_grows() {
        let book = book();
        for i in 0..SWEEP_FLOOR {
            let Claim::Run(ticket) = claim(&book, "a", &format!("k{i}"), "d", "c", 1) else { panic!() };
            book.finish(ticket, result("c"));
        }
        // One unknown outcome among them: never swept.
        let Claim::Run(ticket) = claim(&book, "a", "open", "d", "c", 1) else { panic!() };
        drop(ticket);
        assert_eq!(book.lock().len(), SWEEP_FLOOR + 1);
        // A window later, as many new keys again: the expired ones are swept on the way, so the book
        // never holds more than twice what is live.
        let later = 1 + 61_000_000;
        for i in 0..SWEEP_FLOOR {
            assert!(matches!(claim(&book, "a", &format!("n{i}"), "d", "c", later), Claim::Run(_)));
        }
        let size = book.lock().len();
        assert!(size <= SWEEP_FLOOR + 1, "{size}: the expired keys were swept");
        assert!(matches!(claim(&book, "a", "open", "d", "c", later), Claim::Unknown { .. }));
    }

    #[test]
    fn only_unknown_outcomes_are_marked_and_a_retryable_one_runs_again() {
        let rows = vec![EffectRow {
            agent: "a".into(),
            key: "k".into(),
            tool: "t".into(),
            summary: None,
            digest: "d".into(),
            call_id: "c1".into(),
            session_id: "s".into(),
            state: EffectState::Unknown,
            claimed_at: Timestamp(1),
            ended_at: None,
            expires_at: Timestamp(2),
            result: None,
            operator: None,
            marked_at: None,
            note: None,
        }];
        let book = EffectBook::load(rows, Duration::from_secs(60), Timestamp(10));
        assert!(matches!(claim(&book, "a", "k", "d", "c2", 10), Claim::Unknown { .. }));
        assert_eq!(
            book.unknown_call("a", "nope"),
            Err(MarkError::NotFound { agent: "a".into(), key: "nope".into() })
        );
        assert_eq!(book.unknown_call("a", "k"), Ok("c1".into()));
        // A decision on a call the key no longer holds changes nothing.
        assert!(book.mark("a", "k", "c0", EffectMarkOutcome::Retryable, "op", None).is_err());
        assert!(matches!(claim(&book, "a", "k", "d", "c2", 10), Claim::Unknown { .. }));
        assert_eq!(book.mark("a", "k", "c1", EffectMarkOutcome::Retryable, "op", None), Ok(()));
        let Claim::Run(ticket) = claim(&book, "a", "k", "d", "c3", 11) else { panic!() };
        assert!(matches!(book.unknown_call("a", "k"), Err(MarkError::NotUnknown { state: "running", .. })));
        assert!(book.mark("a", "k", "c3", EffectMarkOutcome::Done, "op", None).is_err());
        drop(ticket);
        assert_eq!(book.unknown_call("a", "k"), Ok("c3".into()));
        assert_eq!(
            book.mark("a", "k", "c3", EffectMarkOutcome::Failed, "op", Some("bounced".into())),
            Ok(())
        );
        let Claim::Marked { done, note, .. } = claim(&book, "a", "k", "d", "c4", 12) else { panic!() };
        assert!(!done);
        assert_eq!(note.as_deref(), Some("bounced"));
    }
}
