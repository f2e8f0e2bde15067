//! `policy test` and live calls agree: every case of `tests/policy-corpus` is judged by the judge (what
//! `portcullis policy test` and `policy check --call` run) and sent as a live call through a hub (its
//! gateway pipeline, broker and ledger), and the two must say the same.
//!
//! Live, a prompt is seen as the approval the operator is asked (then denied through the operator API),
//! an allowed call as its `tool_execution_started` event (then cancelled: the command starts, in a copy
//! of the corpus folder, and is killed), anything else as the reason the call was blocked. `~` is
//! `/home/agent` on both sides.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::corpus::{call_of, folders};
use portcullis_api::judge::Judge;
use portcullis_api::types::{Answer, Choice, FeedEvent};
use portcullis_api::{Operator, OperatorApi};
use portcullis_harness::{BlockedReason, CallOutcome};
use portcullis_hub::{Hub, HubConfig};
use portcullis_policy::Policy;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a live call met: `allow`, `prompt`, `forbidden`, or the reason it was blocked.
async fn live(hub: &Hub, api: &OperatorApi, id: &str, tool: &str, arguments: Value) -> String {
    let mut feed = api.events();
    let cancel = CancellationToken::new();
    let call = {
        let (hub, id, tool, cancel) = (hub.clone(), id.to_owned(), tool.to_owned(), cancel.clone());
        tokio::spawn(async move { hub.call("corpus", &id, &tool, arguments, "corpus", cancel).await })
    };
    let operator = Operator::named("corpus test");
    let (mut asked, mut started) = (false, false);
    // Every call ends with one of these events (the feed keeps each source's order).
    let ends = ["tool_execution_finished", "tool_execution_error", "tool_execution_blocked"];
    loop {
        match feed.next().await.map(|i| i.event) {
            Some(FeedEvent::ApprovalAsked { approval }) if approval.call_id == id => {
                asked = true;
                let deny = Answer {
                    answer: Choice::Deny,
                    arguments_sha256: approval.arguments_sha256.clone(),
                    note: None,
                    scope: None,
                };
                api.answer_approval(approval.id, &deny, &operator).unwrap();
            }
            Some(FeedEvent::Call { row, stage, .. }) if row.head.call_id == id => {
                if stage == "tool_execution_started" {
                    started = true;
                    cancel.cancel();
                } else if ends.contains(&stage.as_str()) {
                    break;
                }
            }
            Some(_) => {}
            None => panic!("the hub stopped"),
        }
    }
    let result = call.await.unwrap();
    match (&result.outcome, asked, started) {
        (_, true, false) => "prompt".into(),
        (_, false, true) => "allow".into(),
        (CallOutcome::Blocked { reason: BlockedReason::ExecutionDenied, .. }, false, false) => {
            "forbidden".into()
        }
        (CallOutcome::Blocked { reason, .. }, false, false) => {
            serde_json::to_value(reason).unwrap().as_str().unwrap().to_owned()
        }
        (outcome, asked, started) => format!("neither blocked nor started ({asked}, {started}): {outcome:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_test_and_live_calls_agree_on_every_corpus_case() {
    let home = PathBuf::from("/home/agent");
    let folders = folders();
    let (mut total, mut by_answer) = (0, std::collections::BTreeMap::<String, usize>::new());
    let mut disagreements = Vec::new();
    for folder in folders {
        // A copy of the folder is the project, so allowed commands (started, then killed) touch only it.
        let tmp = tempfile::tempdir().unwrap();
        let tmp = std::fs::canonicalize(tmp.path()).unwrap();
        let project = tmp.join(folder.file_name().unwrap());
        std::fs::create_dir_all(&project).unwrap();
        // The whole folder: cases may rely on files beside the policy (a repository look-alike's HEAD).
        copy_tree(&folder, &project);
        let policy_file = project.join("policy.json");
        let hub = Hub::open(HubConfig {
            policy_files: vec![policy_file.clone()],
            config_dir: Some(tmp.join("config")),
            home: Some(home.clone()),
            ..HubConfig::new(&project, tmp.join("ledger.db"))
        })
        .await
        .unwrap();
        let api = OperatorApi::new(hub.clone());
        let _attending = hub.broker().subscribe();
        let mut judge =
            Judge::with_home(Policy::load(&[policy_file], &project).unwrap(), &project, Some(home.clone()))
                .unwrap();
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(project.join("cases.json")).unwrap()).unwrap();
        for (n, case) in cases.iter().enumerate() {
            total += 1;
            let (tool, arguments) = call_of(case);
            let judged = judge.judge(&tool, arguments.clone(), &project).await.judged.as_str().to_owned();
            let id = format!("case-{n}");
            let got = tokio::time::timeout(
                Duration::from_secs(30),
                live(&hub, &api, &id, &tool, arguments.clone()),
            )
            .await
            .unwrap_or_else(|_| "no answer within 30 s".into());
            *by_answer.entry(got.clone()).or_default() += 1;
            if got != judged || judged != case["expect"].as_str().unwrap() {
                disagreements.push(format!(
                    "{}: {tool} {arguments}: expected {}, judged {judged}, live {got}",
                    folder.file_name().unwrap().to_string_lossy(),
                    case["expect"]
                ));
            }
        }
        hub.close().await.unwrap();
    }
    assert!(total >= 400, "the corpus holds {total} cases");
    // Every kind of answer is exercised live.
    for answer in ["allow", "prompt", "forbidden", "validation_failed", "unknown_tool"] {
        assert!(by_answer.contains_key(answer), "no case was {answer} live: {by_answer:?}");
    }
    assert!(
        disagreements.is_empty(),
        "{} of {total} cases disagree:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
