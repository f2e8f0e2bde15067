//! The live feed's listing of each call: the ledger's own `CallRow` (the type the ledger browser and
//! `portcullis ledger query` list), folded from the call's lifecycle events as they pass, so a front end
//! shows a live call and a recorded one from one shape. One fold per feed, bounded ([`LIVE_ROWS`]
//! calls: the oldest is forgotten first; a call seen again then starts a new row).

use super::call_steps;
use super::types::CallDecision;
use portcullis_harness::DeciderKind;
use portcullis_harness::{DecidedBy, EventPayload, ToolEvent};
use portcullis_ledger::RowDecider;
use portcullis_ledger::{CallHead, CallRow, CallStatus, StoredPolicyDecision};
use std::collections::{HashMap, VecDeque};

/// The most calls one feed keeps a row for.
pub const LIVE_ROWS: usize = 1024;

type Key = (String, String);

#[derive(Default)]
pub(crate) struct LiveRows {
    rows: HashMap<Key, CallRow>,
    order: VecDeque<Key>,
}

impl LiveRows {
    /// The row of `event`'s call with the event applied.
    pub(crate) fn apply(&mut self, event: &ToolEvent) -> CallRow {
        let key = (event.call.session_id.to_string(), event.call.call_id.to_string());
        if !self.rows.contains_key(&key) {
            if self.order.len() >= LIVE_ROWS
                && let Some(oldest) = self.order.pop_front()
            {
                self.rows.remove(&oldest);
            }
            self.order.push_back(key.clone());
        }
        let row = self.rows.entry(key).or_insert_with(|| first_row(event));
        applied(row, event);
        row.clone()
    }
}

fn first_row(event: &ToolEvent) -> CallRow {
    let head = CallHead::new(
        &*event.call.session_id,
        &*event.call.run_id,
        &*event.call.call_id,
        &*event.call.owner,
        &*event.tool_name,
        event.at,
    );
    // Not recorded yet as far as the feed knows: the ledger gives the id.
    CallRow::new(0, head, CallStatus::Running, RowDecider::of_kind(DeciderKind::Default))
}

fn decided(row: &mut CallRow, by: &DecidedBy) {
    row.decider = RowDecider::of(by);
}

/// What the policy said, as the event's policy step tells it, and the rule that said it.
fn policy(row: &mut CallRow, payload: &EventPayload, asked_by: Option<&DecidedBy>, by: &DecidedBy) {
    let step = call_steps::steps_of(payload)
        .into_iter()
        .find(|s| s.stage == super::types::PipelineStage::Policy)
        .and_then(|s| s.decision);
    row.head.policy_decision = match step {
        Some(CallDecision::Allow | CallDecision::Contained) => Some(StoredPolicyDecision::Allow),
        Some(CallDecision::Prompt) => Some(StoredPolicyDecision::Prompt),
        Some(CallDecision::Forbidden) => Some(StoredPolicyDecision::Forbidden),
        _ => row.head.policy_decision,
    };
    row.head.policy_rule = match asked_by.unwrap_or(by) {
        DecidedBy::Rule { rule_id, .. } if row.head.policy_decision.is_some() => Some(rule_id.clone()),
        _ => row.head.policy_rule.clone(),
    };
}

/// The call's marks, as the ledger reads them from its terminal record (see `call_marks.rs`).
fn marked(row: &mut CallRow, marks: portcullis_ledger::CallMarks) {
    row.changes = marks.changes;
    row.contained = marks.contained;
}

fn applied(row: &mut CallRow, event: &ToolEvent) {
    row.head.at = event.at;
    match &event.payload {
        EventPayload::Started { arguments, decided_by, policy_decided_by, .. } => {
            row.status = CallStatus::Running;
            row.head.started_at = Some(event.at);
            row.summary = portcullis_ledger::query::argument_summary(arguments);
            decided(row, decided_by);
            policy(row, &event.payload, policy_decided_by.as_ref(), decided_by);
        }
        EventPayload::Blocked { reason, error, decided_by, policy_decided_by } => {
            row.status = CallStatus::Blocked;
            row.head.reason = Some(*reason);
            row.head.error_code = Some(error.code.clone());
            decided(row, decided_by);
            policy(row, &event.payload, policy_decided_by.as_ref(), decided_by);
        }
        EventPayload::Progress { .. } | EventPayload::GuardrailDecision { .. } => {}
        EventPayload::Finished { duration_us, output, .. } => {
            row.status = CallStatus::Finished;
            row.head.duration_us = i64::try_from(*duration_us).ok();
            marked(row, portcullis_ledger::call_marks::marks_of(Some(output), None));
        }
        EventPayload::Error { error, duration_us } => {
            row.status = CallStatus::Error;
            row.head.error_code = Some(error.code.clone());
            row.head.duration_us = i64::try_from(*duration_us).ok();
            marked(row, portcullis_ledger::call_marks::marks_of(None, Some(error)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::{
        ActionKind, BlockedReason, CallContext, CallError, CallErrorCode, ExecutionAction, StageTimes,
        Timestamp, ToolOutput,
    };
    use serde_json::json;
    use std::sync::Arc;

    fn event(call: &str, at: i64, payload: EventPayload) -> ToolEvent {
        ToolEvent {
            call: Arc::new(CallContext {
                session_id: Arc::from("s1"),
                run_id: Arc::from("r1"),
                call_id: Arc::from(call),
                owner: Arc::from("claude-code"),
                cwd: None,
                mcp: None,
            }),
            tool_name: Arc::from("shell"),
            at: Timestamp(at),
            payload,
        }
    }

    #[test]
    fn a_call_is_listed_as_the_ledger_lists_it_as_its_events_pass() {
        let mut rows = LiveRows::default();
        let rule = DecidedBy::Rule { rule_id: "build".into(), source: "p.json".into() };
        let started = rows.apply(&event(
            "c1",
            10,
            EventPayload::Started {
                arguments: Arc::new(json!({"command": "make build"})),
                action: Arc::new(ExecutionAction::new(ActionKind::Execute, "exec")),
                decided_by: rule.clone(),
                policy_decided_by: None,
                stages: StageTimes::default(),
            },
        ));
        assert_eq!((started.status, started.summary.as_deref()), (CallStatus::Running, Some("make build")));
        assert_eq!((started.decider.kind.as_str(), started.decider.rule.as_deref()), ("rule", Some("build")));
        assert_eq!(started.head.policy_decision, Some(StoredPolicyDecision::Allow));
        assert_eq!(started.head.policy_rule.as_deref(), Some("build"));
        let done = rows.apply(&event(
            "c1",
            30,
            EventPayload::Finished {
                output: Arc::new(ToolOutput::text("ok")),
                duration_us: 20,
                redaction_us: 0,
            },
        ));
        assert_eq!(
            (done.status, done.head.duration_us, done.head.started_at),
            (CallStatus::Finished, Some(20), Some(Timestamp(10)))
        );
        assert_eq!(done.summary.as_deref(), Some("make build"), "kept from the start");
    }

    #[test]
    fn a_forbidden_call_is_blocked_by_its_rule() {
        let mut rows = LiveRows::default();
        let row = rows.apply(&event(
            "c2",
            5,
            EventPayload::Blocked {
                reason: BlockedReason::ExecutionDenied,
                error: CallError::new(CallErrorCode::ExecutionDenied, "no"),
                decided_by: DecidedBy::Rule { rule_id: "no-rm".into(), source: "p.json".into() },
                policy_decided_by: None,
            },
        ));
        assert_eq!(row.status, CallStatus::Blocked);
        assert_eq!(
            (row.head.reason.map(BlockedReason::as_str), row.head.error_code.as_ref().map(|c| c.as_str())),
            (Some("execution_denied"), Some("execution_denied"))
        );
        assert_eq!(row.head.policy_decision, Some(StoredPolicyDecision::Forbidden));
    }

    #[test]
    fn the_fold_is_bounded() {
        let mut rows = LiveRows::default();
        for i in 0..LIVE_ROWS + 10 {
            rows.apply(&event(&format!("c{i}"), 1, EventPayload::Progress { progress: json!({}) }));
        }
        assert_eq!(rows.rows.len(), LIVE_ROWS);
        assert!(!rows.rows.contains_key(&("s1".to_owned(), "c0".to_owned())));
    }
}
