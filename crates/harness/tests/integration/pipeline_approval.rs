//! The dispatch pipeline's execution policy and approval: deny / ask / allow and what decided, the
//! approved action is the executed action, denials, timeouts, no approver, cancelling the wait.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::pipeline::*;
use async_trait::async_trait;
use portcullis_harness::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct ForbidWrites;

#[async_trait]
impl ExecutionPolicy for ForbidWrites {
    async fn evaluate(&self, request: PolicyRequest<'_>) -> PolicyVerdict {
        let rule = |id: &str| RuleRef { id: id.into(), source: "policy.json".into(), decision: None };
        match request.action.paths.first().and_then(|p| p.to_str()) {
            Some(p) if p.starts_with("/etc") => PolicyVerdict::deny(
                DecidedBy::Rule { rule_id: "no-etc".into(), source: "policy.json".into() },
                "no /etc",
            )
            .with_matched_rules(vec![rule("no-etc")]),
            Some(_) => PolicyVerdict::ask(DecidedBy::DEFAULT, "writes need approval")
                .with_matched_rules(vec![rule("ask-writes")]),
            None => {
                PolicyVerdict::allow(DecidedBy::Rule { rule_id: "pure".into(), source: "policy.json".into() })
            }
        }
    }
}

/// Answers from a script, and tries to tamper with the action it is shown.
struct Operator {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait]
impl Approvals for Operator {
    async fn request(&self, mut request: ApprovalRequest) -> ApprovalAnswer {
        request.action.paths = vec!["/tampered".into()];
        self.asked.lock().unwrap().push(request);
        self.answer.clone()
    }
}

#[tokio::test]
async fn policy_deny_ask_allow_and_what_decided() {
    let f = Fixture::new();
    let operator = Arc::new(Operator {
        answer: ApprovalAnswer::Allow {
            decided_by: DecidedBy::Operator {
                outcome: OperatorOutcome::ApprovedOnce,
                operator: Some("ana".into()),
                rule_written: None,
                receipt: None,
            },
        },
        asked: Mutex::new(Vec::new()),
    });
    let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(operator.clone()).build();
    let r = run();

    let denied = d.dispatch(call("x1", "write_file", json!({"text": "t", "path": "/etc/passwd"})), &r).await;
    assert_eq!(denied.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert_eq!(denied.decided_by, DecidedBy::Rule { rule_id: "no-etc".into(), source: "policy.json".into() });
    assert_eq!(f.ledger.for_call("x1")[0].matched_rules[0].id, "no-etc");

    let approved =
        d.dispatch(call("x2", "write_file", json!({"text": SECRET, "path": "/work/a.txt"})), &r).await;
    assert!(approved.is_finished(), "{:?}", approved.error());
    assert!(matches!(
        approved.decided_by,
        DecidedBy::Operator { outcome: OperatorOutcome::ApprovedOnce, .. }
    ));
    let asked = operator.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].arguments.to_string().contains(SECRET), "the approver sees redacted arguments");
    assert_eq!(asked[0].verdict.reason.as_deref(), Some("writes need approval"));
    // The executed action is the evaluated one, not the approver's tampered copy.
    let seen = f.seen_actions.lock().unwrap().clone();
    assert_eq!(seen.last().unwrap().paths, vec![std::path::PathBuf::from("/work/a.txt")]);
    let started = &f.ledger.for_call("x2")[0];
    assert_eq!(started.action.as_ref().unwrap().paths, vec![std::path::PathBuf::from("/work/a.txt")]);
    assert!(matches!(started.decided_by, DecidedBy::Operator { .. }));
    assert_eq!(started.matched_rules[0].id, "ask-writes");

    let pure = d.dispatch(call("x3", "echo", json!({"text": "t"})), &r).await;
    assert_eq!(pure.decided_by, DecidedBy::Rule { rule_id: "pure".into(), source: "policy.json".into() });

    let unresolvable = d.dispatch(call("x4", "write_file", json!({"text": "t", "path": ""})), &r).await;
    assert_eq!(unresolvable.blocked_reason(), Some(BlockedReason::ValidationFailed));
    assert_eq!(f.runs(), 2);
}

#[tokio::test]
async fn approval_denial_timeout_and_no_approver() {
    let timeout = DecidedBy::ApprovalTimeout { after_ms: 120_000 };
    let denial = DecidedBy::Operator {
        outcome: OperatorOutcome::Denied,
        operator: None,
        rule_written: None,
        receipt: None,
    };
    for decided_by in [timeout, denial] {
        let f = Fixture::new();
        let operator = Arc::new(Operator {
            answer: ApprovalAnswer::Deny { reason: "nope".into(), decided_by: decided_by.clone() },
            asked: Mutex::new(Vec::new()),
        });
        let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(operator).build();
        let result = d.dispatch(call("y", "write_file", json!({"text": "t", "path": "/w/x"})), &run()).await;
        assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
        assert_eq!(result.decided_by, decided_by);
        assert_eq!(f.ledger.for_call("y")[0].decided_by, decided_by, "timeouts are recorded as timeouts");
        assert_eq!(f.runs(), 0);
    }
    let f = Fixture::new();
    let d = f.builder().policy(Arc::new(ForbidWrites)).build();
    let result = d.dispatch(call("z", "write_file", json!({"text": "t", "path": "/w/x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert!(result.error().unwrap().message.contains("no approver"));
    assert_eq!(f.runs(), 0);
}

/// Never answers.
struct AbsentOperator;

#[async_trait]
impl Approvals for AbsentOperator {
    async fn request(&self, _: ApprovalRequest) -> ApprovalAnswer {
        std::future::pending().await
    }
}

#[tokio::test]
async fn an_unanswered_approval_times_out_as_a_timeout() {
    let f = Fixture::new();
    let d = f
        .builder()
        .policy(Arc::new(ForbidWrites))
        .approvals(Arc::new(AbsentOperator))
        .approval_timeout(Some(Duration::from_millis(30)))
        .build();
    let result = d.dispatch(call("w1", "write_file", json!({"text": "t", "path": "/w/x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert_eq!(result.decided_by, DecidedBy::ApprovalTimeout { after_ms: 30 });
    assert_eq!(f.ledger.for_call("w1")[0].decided_by, DecidedBy::ApprovalTimeout { after_ms: 30 });

    // Cancelling the run stops the wait too, and is not recorded as a timeout or an operator's denial.
    let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(Arc::new(AbsentOperator)).build();
    let r = run();
    let cancel = r.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let result = d.dispatch(call("w2", "write_file", json!({"text": "t", "path": "/w/x"})), &r).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert_eq!(result.decided_by, DecidedBy::Default { detail: Some("run cancelled".into()) });
    assert_eq!(f.runs(), 0);
}

/// How a scripted approver's receipt is made.
#[derive(Clone, Copy)]
enum Forgery {
    /// For the arguments it was shown: a true receipt.
    None,
    /// For other arguments than it was shown.
    OtherArguments,
    /// For another call of the same session.
    OtherCall,
    /// True, then edited after it was made (the operator's name).
    Edited,
}

/// Allows once with a receipt made as `forgery` says.
struct Receipting(Forgery);

#[async_trait]
impl Approvals for Receipting {
    async fn request(&self, request: ApprovalRequest) -> ApprovalAnswer {
        let other = json!({"text": "t", "path": "/work/elsewhere.txt"});
        let arguments = match self.0 {
            Forgery::OtherArguments => &other,
            _ => &*request.arguments,
        };
        let mut receipt = Receipt::identified(Receipt {
            id: String::new(),
            approval_id: "1".into(),
            session_id: request.call.session_id.to_string(),
            call_id: match self.0 {
                Forgery::OtherCall => "another-call".into(),
                _ => request.call.call_id.to_string(),
            },
            tool: request.tool_name.clone(),
            arguments_sha256: arguments_digest(arguments),
            policy_version: Some("v1".into()),
            operator: "ana (app)".into(),
            channel: "app".into(),
            outcome: OperatorOutcome::ApprovedOnce,
            at: Timestamp(1_700_000_000_000_000),
        });
        if let Forgery::Edited = self.0 {
            receipt.operator = "mallory (app)".into();
        }
        ApprovalAnswer::Allow {
            decided_by: DecidedBy::Operator {
                outcome: OperatorOutcome::ApprovedOnce,
                operator: Some("ana (app)".into()),
                rule_written: None,
                receipt: Some(Box::new(receipt)),
            },
        }
    }
}

/// An operator's "allow" runs the call only when its receipt covers the arguments the operator was
/// shown, for this very call, unaltered; otherwise the call is refused, never run, and its record says
/// why with the receipt it came with.
#[tokio::test]
async fn an_allow_whose_receipt_does_not_cover_the_call_never_runs_it() {
    for (forgery, why) in [
        (Forgery::OtherArguments, "approves other arguments"),
        (Forgery::OtherCall, "answers another call"),
        (Forgery::Edited, "altered"),
    ] {
        let f = Fixture::new();
        let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(Arc::new(Receipting(forgery))).build();
        let result =
            d.dispatch(call("w1", "write_file", json!({"text": "t", "path": "/work/a.txt"})), &run()).await;
        assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied), "{why}");
        assert_eq!(
            result.decided_by,
            DecidedBy::Validator { validator: portcullis_harness::receipt::RECEIPT_VALIDATOR.into() }
        );
        let error = result.error().unwrap();
        assert!(error.message.contains(why), "{}", error.message);
        let details = error.details.as_ref().unwrap();
        // The receipt it came with is kept with the refusal, as given.
        let given = if matches!(forgery, Forgery::Edited) { "mallory (app)" } else { "ana (app)" };
        assert_eq!(details["receipt"]["operator"], given, "{details}");
        assert_eq!(f.runs(), 0, "{why}: the call ran");
        let records = f.ledger.for_call("w1");
        assert_eq!(records.len(), 1, "one blocked record, no started: {records:?}");
        assert_eq!(records[0].kind, RecordKind::Blocked);
    }
    // A true receipt: the call runs and carries it.
    let f = Fixture::new();
    let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(Arc::new(Receipting(Forgery::None))).build();
    let result =
        d.dispatch(call("w2", "write_file", json!({"text": "t", "path": "/work/a.txt"})), &run()).await;
    assert!(result.is_finished(), "{:?}", result.error());
    let DecidedBy::Operator { receipt: Some(receipt), .. } = &result.decided_by else {
        panic!("{:?}", result.decided_by)
    };
    assert!(receipt.is_intact());
    assert_eq!(receipt.call_id, "w2");
    assert_eq!(f.runs(), 1);
    let started = &f.ledger.for_call("w2")[0];
    assert!(matches!(&started.decided_by, DecidedBy::Operator { receipt: Some(r), .. } if r == receipt));
}
