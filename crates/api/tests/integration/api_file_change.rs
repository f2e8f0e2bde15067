//! A waiting `write` or `edit` call shows the operator what it would do to its file: a diff of the file
//! as it is and as the call would leave it.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::line_diff::DiffLine;
use portcullis_api::types::{Answer, Choice};
use portcullis_api::{Operator, OperatorApi};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_write_shows_its_diff_and_a_shell_call_none() {
    let (_tmp, dir) = common::folder();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    std::fs::write(dir.join("proj/run.sh"), "#!/bin/sh\necho one\necho two\n").unwrap();

    let h = hub.clone();
    let running = tokio::spawn(async move {
        let args = json!({"path": "run.sh", "content": "#!/bin/sh\necho one\necho 2\n", "executable": true});
        h.call("s1", "c1", "write", args, "tester", CancellationToken::new()).await
    });
    let asked = common::pending_one(&api).await;
    let change = asked.file_change.clone().expect("a write shows its change");
    assert!(change.exists);
    assert!(change.path.ends_with("proj/run.sh"), "{change:?}");
    let changed: Vec<&DiffLine> =
        change.diff.iter().filter(|l| !matches!(l, DiffLine::Same { .. })).collect();
    assert_eq!(
        changed,
        vec![
            &DiffLine::Removed { old: 3, text: "echo two".into() },
            &DiffLine::Added { new: 3, text: "echo 2".into() }
        ]
    );
    api.answer_approval(
        asked.id,
        &Answer {
            answer: Choice::Deny,
            arguments_sha256: asked.arguments_sha256.clone(),
            note: None,
            scope: None,
        },
        &Operator::named("t"),
    )
    .unwrap();
    assert!(!running.await.unwrap().is_finished());
    assert_eq!(std::fs::read_to_string(dir.join("proj/run.sh")).unwrap(), "#!/bin/sh\necho one\necho two\n");

    // A shell call has no file change.
    let h = hub.clone();
    let shell = tokio::spawn(async move {
        h.call("s1", "c2", "shell", json!({"command": "make"}), "tester", CancellationToken::new()).await
    });
    let asked = common::pending_one(&api).await;
    assert!(asked.file_change.is_none());
    api.answer_approval(
        asked.id,
        &Answer {
            answer: Choice::Deny,
            arguments_sha256: asked.arguments_sha256.clone(),
            note: None,
            scope: None,
        },
        &Operator::named("t"),
    )
    .unwrap();
    shell.await.unwrap();
}
