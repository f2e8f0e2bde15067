//! One test per row of the convention tables (`conventions.rs`): each builds the record the row is
//! about, as the ledger stores it, and checks what the export makes of it.

use super::*;
use portcullis_harness::{BlockedReason, CallError, CallErrorCode, DecidedBy, Timestamp, ToolOutput};
use portcullis_ledger::{CallHead, RecordBody};
use std::sync::Arc;

/// A terminal record of `kind` whose policy said `policy`; `started`: the call had started.
pub(crate) fn record(kind: StoredKind, policy: Option<StoredPolicyDecision>, started: bool) -> StoredRecord {
    StoredRecord {
        id: 9,
        head: CallHead {
            started_at: started.then_some(Timestamp(1_500_000)),
            duration_us: started.then_some(500_000),
            reason: (kind == StoredKind::Blocked).then_some(BlockedReason::ExecutionDenied),
            error_code: match kind {
                StoredKind::Blocked => Some(CallErrorCode::ExecutionDenied),
                StoredKind::Error => Some(CallErrorCode::ToolError),
                _ => None,
            },
            policy_decision: policy,
            ..CallHead::new("s1", "mcp", "c1", "agent", "shell", Timestamp(2_000_000))
        },
        kind,
        body: RecordBody {
            arguments: None,
            action: None,
            progress: None,
            output: None,
            error: (kind == StoredKind::Error).then(|| CallError::new(CallErrorCode::ToolError, "exit 1")),
            matched_rules: Vec::new(),
            decided_by: DecidedBy::DEFAULT,
            policy_decided_by: None,
            cwd: None,
            files: Vec::new(),
            policy_version: None,
            mcp: None,
        },
    }
}

/// One test per row of `GUARDRAIL_DECISIONS`: the record of that case decides as the row says.
macro_rules! guardrail_row {
    ($name:ident, $policy:expr, $kind:expr, $started:expr, $row:expr) => {
        #[test]
        fn $name() {
            let row = GUARDRAIL_DECISIONS[$row];
            let record = record($kind, $policy, $started);
            let passage = Passage::of(&record).unwrap();
            assert_eq!((row.policy, row.passage), ($policy, passage), "the row is about this case");
            assert_eq!(guardrail_decision(record.head.policy_decision, passage), (row.decision, row.reason));
        }
    };
}

guardrail_row!(allow_and_ran_is_allowed, Some(Allow), StoredKind::Finished, true, 0);
guardrail_row!(allow_then_refused_is_denied, Some(Allow), StoredKind::Blocked, false, 1);
guardrail_row!(allow_never_settled_is_denied, Some(Allow), StoredKind::Interrupted, false, 2);
guardrail_row!(prompt_approved_is_allowed, Some(Prompt), StoredKind::Error, true, 3);
guardrail_row!(prompt_refused_is_denied, Some(Prompt), StoredKind::Blocked, false, 4);
guardrail_row!(prompt_unanswered_is_denied, Some(Prompt), StoredKind::Interrupted, false, 5);
guardrail_row!(forbidden_yet_ran_is_allowed, Some(Forbidden), StoredKind::Interrupted, true, 6);
guardrail_row!(forbidden_is_denied, Some(Forbidden), StoredKind::Blocked, false, 7);
guardrail_row!(forbidden_never_settled_is_denied, Some(Forbidden), StoredKind::Interrupted, false, 8);
guardrail_row!(no_policy_stage_and_ran_is_allowed, None, StoredKind::Finished, true, 9);
guardrail_row!(refused_before_the_policy_is_denied, None, StoredKind::Blocked, false, 10);
guardrail_row!(no_policy_never_settled_is_denied, None, StoredKind::Interrupted, false, 11);

#[test]
fn every_policy_decision_and_passage_has_exactly_one_row() {
    let policies = [None, Some(Allow), Some(Prompt), Some(Forbidden)];
    for policy in policies {
        for passage in [Ran, Refused, NeverSettled] {
            let rows = GUARDRAIL_DECISIONS.iter().filter(|r| r.policy == policy && r.passage == passage);
            assert_eq!(rows.count(), 1, "{policy:?} {passage:?}");
        }
    }
}

#[test]
fn records_that_end_nothing_have_no_passage() {
    assert_eq!(Passage::of(&record(StoredKind::Started, None, true)), None);
    assert_eq!(Passage::of(&record(StoredKind::Progress, None, true)), None);
}

/// One test per row of `ERROR_TYPES`.
#[test]
fn a_finished_call_has_no_error_type_unless_its_result_says_is_error() {
    assert_eq!(ERROR_TYPES[0], (StoredKind::Finished, ErrorTypeSource::ToolResult));
    let mut finished = record(StoredKind::Finished, Some(Allow), true);
    assert_eq!(error_type(&finished), None);
    finished.body.output = Some(Arc::new(ToolOutput { is_error: true, ..ToolOutput::text("no") }));
    assert_eq!(error_type(&finished).as_deref(), Some("tool_error"));
}

#[test]
fn an_error_record_gives_its_error_code() {
    assert_eq!(ERROR_TYPES[1], (StoredKind::Error, ErrorTypeSource::ErrorCode));
    let mut error = record(StoredKind::Error, Some(Allow), true);
    error.head.error_code = Some(CallErrorCode::Cancelled);
    assert_eq!(error_type(&error).as_deref(), Some("cancelled"));
}

#[test]
fn a_blocked_record_gives_why_it_was_blocked() {
    assert_eq!(ERROR_TYPES[2], (StoredKind::Blocked, ErrorTypeSource::BlockedReason));
    let blocked = record(StoredKind::Blocked, Some(Forbidden), false);
    assert_eq!(error_type(&blocked).as_deref(), Some("execution_denied"));
}

#[test]
fn an_interrupted_record_says_interrupted() {
    assert_eq!(ERROR_TYPES[3], (StoredKind::Interrupted, ErrorTypeSource::Interrupted));
    let interrupted = record(StoredKind::Interrupted, Some(Allow), true);
    assert_eq!(error_type(&interrupted).as_deref(), Some("interrupted"));
}
