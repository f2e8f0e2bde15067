//! The operator API's event feed: one subscription with the broker's approvals and the calls' lifecycle
//! in order, numbered; a feed that fell behind says how many events it missed.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::types::{
    Answer, CallDecision, Choice, DeciderKind, FeedEvent, FeedItem, PipelineStage, StepOutcome,
};
use portcullis_api::{Operator, OperatorApi};
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The next item about approvals or calls (the hub also says, for one, that its servers changed).
async fn next(feed: &mut portcullis_api::events::EventFeed) -> FeedItem {
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), feed.next()).await.unwrap().unwrap();
        if !matches!(item.event, FeedEvent::ServersChanged { .. }) {
            return item;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_feed_carries_the_approval_and_the_call_in_order_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let mut feed = api.events();
    let call = {
        let hub = hub.clone();
        tokio::spawn(async move {
            hub.call("s1", "c1", "shell", json!({"command": "echo fed"}), "t", CancellationToken::new()).await
        })
    };
    let asked = next(&mut feed).await;
    let FeedEvent::ApprovalAsked { approval } = &asked.event else { panic!("{asked:?}") };
    assert_eq!(approval.action.command.as_deref(), Some("echo fed"));
    assert_eq!(
        approval.evaluation.as_ref().unwrap().commands,
        vec![vec!["echo".to_owned(), "fed".to_owned()]]
    );
    api.answer_approval(
        approval.id,
        &Answer {
            answer: Choice::Once,
            arguments_sha256: approval.arguments_sha256.clone(),
            note: None,
            scope: None,
        },
        &Operator::named("app"),
    )
    .unwrap();
    assert!(call.await.unwrap().is_finished());
    let mut items = vec![asked];
    while !items
        .iter()
        .any(|i| matches!(&i.event, FeedEvent::Call { stage, .. } if stage == "tool_execution_finished"))
    {
        items.push(next(&mut feed).await);
    }
    let seqs: Vec<u64> = items.iter().map(|i| i.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let kinds: Vec<String> = items
        .iter()
        .map(|i| match &i.event {
            FeedEvent::ApprovalAsked { .. } => "asked".to_owned(),
            FeedEvent::ApprovalSettled { outcome, operator, .. } => {
                format!("settled {outcome} by {}", operator.as_deref().unwrap_or("-"))
            }
            FeedEvent::Call { stage, row, .. } => format!("{} {stage}", row.head.call_id),
            other => format!("{other:?}"),
        })
        .collect();
    let started = kinds.iter().position(|k| k == "c1 tool_execution_started").unwrap();
    let settled = kinds.iter().position(|k| k == "settled once by app").unwrap();
    assert!(settled < started, "{kinds:?}");
    assert_eq!(kinds.last().unwrap(), "c1 tool_execution_finished", "{kinds:?}");
    // The start says each check passed and how long it took, that the operator approved it (the approval
    // stage), and what runs; the finish how long the run and the redaction took.
    let calls: Vec<&FeedEvent> =
        items.iter().map(|i| &i.event).filter(|e| matches!(e, FeedEvent::Call { .. })).collect();
    let FeedEvent::Call { steps, action, row, at: started_at, .. } = calls[0] else { unreachable!() };
    // The call's listing, as the ledger lists it: who, what, and that it runs.
    assert_eq!((row.head.owner.as_str(), row.head.tool.as_str()), ("t", "shell"));
    assert_eq!((row.status.as_str(), row.summary.as_deref()), ("running", Some("echo fed")));
    assert_eq!(row.decider.kind.as_str(), "operator", "{row:?}");
    assert_eq!(action.as_deref(), Some("echo fed"));
    let stages: Vec<(PipelineStage, StepOutcome)> = steps.iter().map(|s| (s.stage, s.outcome)).collect();
    assert_eq!(
        stages,
        vec![
            (PipelineStage::Grant, StepOutcome::Passed),
            (PipelineStage::Arguments, StepOutcome::Passed),
            (PipelineStage::Policy, StepOutcome::Passed),
            (PipelineStage::Approval, StepOutcome::Passed),
            (PipelineStage::Ledger, StepOutcome::Passed),
            (PipelineStage::Execution, StepOutcome::Started),
        ]
    );
    assert!(steps[..5].iter().all(|s| s.duration_us.is_some()), "{steps:?}");
    assert_eq!(steps[3].decision, Some(CallDecision::Approved));
    // The approval took as long as the operator did (answered after the card was listed).
    assert!(steps[3].duration_us.unwrap() > steps[0].duration_us.unwrap(), "{steps:?}");
    let decider = steps[3].decided_by.as_ref().unwrap();
    assert_eq!((decider.kind, decider.words.as_str()), (DeciderKind::Operator, "app: approved once"));
    let FeedEvent::Call { steps, at: finished_at, .. } = calls[calls.len() - 1] else { unreachable!() };
    assert_eq!((steps[0].stage, steps[0].outcome), (PipelineStage::Redaction, StepOutcome::Passed));
    assert_eq!((steps[1].stage, steps[1].outcome), (PipelineStage::Execution, StepOutcome::Finished));
    assert!(steps[1].duration_us.unwrap() >= steps[0].duration_us.unwrap(), "{steps:?}");
    assert!(finished_at >= started_at);
    hub.close().await.unwrap();
}

/// A call a rule allows passes the policy stage with the rule named; one the policy forbids stops there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_event_says_which_stage_decided_and_who() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let policy = r#"{ "commands": { "default": "prompt", "rules": [
        { "id": "echo-ok", "pattern": ["echo"], "decision": "allow" },
        { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden" } ] } }"#;
    let hub = common::hub(&dir, policy).await;
    let api = OperatorApi::new(hub.clone());
    let mut feed =
        api.events_from(portcullis_api::events::FeedSources { hub: false, approvals: false, calls: true });
    let allowed =
        hub.call("s1", "c1", "shell", json!({"command": "echo hi"}), "t", CancellationToken::new()).await;
    assert!(allowed.is_finished(), "{allowed:?}");
    let refused =
        hub.call("s1", "c2", "shell", json!({"command": "rm -rf x"}), "t", CancellationToken::new()).await;
    assert!(!refused.is_finished());
    let mut steps_of = std::collections::BTreeMap::<String, Vec<portcullis_api::types::CallStep>>::new();
    while steps_of.get("c2").is_none_or(Vec::is_empty) {
        if let FeedEvent::Call { row, steps, .. } = next(&mut feed).await.event {
            steps_of.entry(row.head.call_id).or_default().extend(steps);
        }
    }
    let c1 = &steps_of["c1"];
    assert_eq!((c1[0].stage, c1[1].stage), (PipelineStage::Grant, PipelineStage::Arguments));
    assert_eq!((c1[2].stage, c1[2].decision), (PipelineStage::Policy, Some(CallDecision::Allow)));
    let words = &c1[2].decided_by.as_ref().unwrap().words;
    assert!(words.starts_with("rule echo-ok (") && words.ends_with("policy.json)"), "{words}");
    let c2 = &steps_of["c2"];
    assert_eq!(
        (c2[0].stage, c2[0].outcome, c2[0].decision),
        (PipelineStage::Policy, StepOutcome::Blocked, Some(CallDecision::Forbidden))
    );
    assert!(c2[0].error.as_deref().unwrap().starts_with("execution_denied"), "{c2:?}");
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_that_fell_behind_says_how_many_events_it_missed() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    let mut feed = api.events();
    // Nobody reads while calls come: a blocked call is one event each (the tool is unknown).
    let calls =
        portcullis_api::events::FEED_BUFFER + portcullis_harness::events::DEFAULT_EVENT_CAPACITY + 1000;
    for i in 0..calls {
        hub.call("s1", &format!("c{i}"), "no-such-tool", json!({}), "t", CancellationToken::new()).await;
    }
    let mut seen = 0u64;
    let mut missed = 0u64;
    let mut last_seq = 0;
    while seen + missed < calls as u64 {
        let item = next(&mut feed).await;
        assert!(item.seq > last_seq);
        last_seq = item.seq;
        match item.event {
            FeedEvent::Call { .. } => seen += 1,
            FeedEvent::Missed { source, count } => {
                assert_eq!(source, "calls");
                missed += count;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(missed > 0, "the feed never fell behind");
    assert_eq!(seen + missed, calls as u64);
    hub.close().await.unwrap();
}

/// A feed of chosen sources carries only theirs: without `calls`, an allowed call's lifecycle is not
/// in it; with only `calls`, it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_follows_only_the_sources_it_names() {
    use portcullis_api::events::FeedSources;
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "allow" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    let mut no_calls = api.events_from(FeedSources { calls: false, ..FeedSources::ALL });
    let mut only_calls = api.events_from(FeedSources { hub: false, approvals: false, calls: true });
    let result =
        hub.call("s1", "c1", "shell", json!({"command": "echo fed"}), "t", CancellationToken::new()).await;
    assert!(result.is_finished(), "{result:?}");
    let first = next(&mut only_calls).await;
    assert!(matches!(&first.event, FeedEvent::Call { row, .. } if row.head.call_id == "c1"), "{first:?}");
    assert_eq!(first.seq, 1);
    // Nothing about the call reaches the other feed (the hub's own events may).
    let quiet = tokio::time::timeout(Duration::from_millis(300), async {
        loop {
            match no_calls.next().await.map(|i| i.event) {
                Some(FeedEvent::Call { .. }) => return true,
                Some(_) => continue,
                None => return false,
            }
        }
    })
    .await;
    assert!(!matches!(quiet, Ok(true)), "a call's event reached a feed without calls");
    hub.close().await.unwrap();
}
