//! The "always" sheet through the operator API: the preview names the rule, the file and its diff and
//! what the rule would have changed over the ledger; the answer writes exactly the previewed rule, cut to
//! the scope the operator chose; a scope that does not fit is a typed error and writes nothing.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::line_diff::{DiffLine, line_diff};
use portcullis_api::types::{Answer, Approval, Choice};
use portcullis_api::{ErrorCode, Operator, OperatorApi};
use portcullis_harness::ToolCallResult;
use portcullis_hub::Hub;
use portcullis_policy::RuleScope;
use std::time::Duration;
use tokio::task::JoinHandle;

const POLICY: &str = r#"{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "reads", "pattern": [["ls", "echo"]], "decision": "allow" }
    ]
  }
}
"#;

fn call(hub: &Hub, id: &str, command: &str) -> JoinHandle<ToolCallResult> {
    common::shell_call(hub, "s1", id, command)
}

fn answer(asked: &Approval, choice: Choice, scope: Option<Vec<RuleScope>>) -> Answer {
    Answer { answer: choice, arguments_sha256: asked.arguments_sha256.clone(), note: None, scope }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_shows_rule_file_diff_and_ledger_impact_and_always_writes_exactly_it() {
    let (_tmp, dir) = common::folder();
    let hub = common::hub(&dir, POLICY).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let op = Operator::named("alice (app)");
    let file = dir.join("proj/.portcullis/policy.json");

    // History: the same push once denied, once allowed; another command denied.
    for (id, command, choice) in [
        ("c1", "git push origin main", Choice::Deny),
        ("c2", "git push origin main", Choice::Once),
        ("c3", "make deploy", Choice::Deny),
    ] {
        let running = call(&hub, id, command);
        let asked = common::pending_one(&api).await;
        api.answer_approval(asked.id, &answer(&asked, choice, None), &op).unwrap();
        running.await.unwrap();
    }

    let running = call(&hub, "c4", "git push origin main");
    let asked = common::pending_one(&api).await;
    let mut preview = api.always_preview(asked.id, None).unwrap();
    for _ in 0..200 {
        if preview.impact.as_ref().is_some_and(|i| i.would_allow >= 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        preview = api.always_preview(asked.id, None).unwrap();
    }
    assert!(preview.file.ends_with("proj/.portcullis/policy.json"), "{preview:?}");
    assert_eq!(preview.rules.len(), 1);
    let rule = &preview.rules[0];
    assert_eq!(
        (rule.pattern.join(" "), rule.exact, rule.words_offered),
        ("git push origin main".into(), true, 4)
    );
    assert!(preview.allows_call);
    let impact = preview.impact.clone().unwrap();
    assert_eq!((impact.would_allow, impact.were_refused), (2, 1), "{impact:?}");
    assert_eq!(impact.examples, vec!["git push origin main".to_owned()]);
    assert!(
        preview
            .diff
            .iter()
            .any(|l| matches!(l, DiffLine::Added { text, .. } if text.contains("\"exact\":true")))
    );

    // Scoped to `git push`: a prefix rule; it would also have allowed nothing more in this ledger.
    let prefix = vec![RuleScope { words: 2, exact: false }];
    let scoped = api.always_preview(asked.id, Some(&prefix)).unwrap();
    assert_eq!((scoped.rules[0].pattern.join(" "), scoped.rules[0].exact), ("git push".into(), false));

    // Scopes that do not fit: a typed error, nothing written.
    let before = std::fs::read_to_string(&file).unwrap();
    for bad in [
        vec![RuleScope { words: 0, exact: false }],
        vec![RuleScope { words: 5, exact: false }],
        vec![RuleScope { words: 2, exact: true }],
        vec![],
    ] {
        let e = api.always_preview(asked.id, Some(&bad)).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadArgument, "{bad:?}: {e}");
        assert_eq!(e.details["field"], "scope");
        let e = api.answer_approval(asked.id, &answer(&asked, Choice::Always, Some(bad)), &op).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadArgument);
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    // The answer writes exactly the previewed change, its rule naming the answer's receipt.
    let receipt = api.answer_approval(asked.id, &answer(&asked, Choice::Always, Some(prefix)), &op).unwrap();
    assert!(running.await.unwrap().is_finished());
    let after = std::fs::read_to_string(&file).unwrap();
    let stamp = format!("; receipt {}", receipt.id);
    assert_eq!(after.matches(&stamp).count(), 1, "{after}");
    assert_eq!(line_diff(&before, &after.replace(&stamp, "")), scoped.diff);
    // The prefix rule allows the next push with other words, without asking.
    assert!(call(&hub, "c5", "git push --tags").await.unwrap().is_finished());
    assert!(api.pending_approvals().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exact_always_rule_allows_only_that_command() {
    let (_tmp, dir) = common::folder();
    let hub = common::hub(&dir, POLICY).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let op = Operator::named("alice (app)");
    let running = call(&hub, "c1", "git push origin main");
    let asked = common::pending_one(&api).await;
    api.answer_approval(asked.id, &answer(&asked, Choice::Always, None), &op).unwrap();
    assert!(running.await.unwrap().is_finished());
    assert!(call(&hub, "c2", "git push origin main").await.unwrap().is_finished());
    // More words than the exact rule: asked again.
    let more = call(&hub, "c3", "git push origin main --force");
    let again = common::pending_one(&api).await;
    assert_eq!(again.action.command.as_deref(), Some("git push origin main --force"));
    api.answer_approval(again.id, &answer(&again, Choice::Deny, None), &op).unwrap();
    assert!(!more.await.unwrap().is_finished());
    // Answered or never asked: the preview says so as the answer does.
    assert_eq!(api.always_preview(asked.id, None).unwrap_err().code, ErrorCode::ApprovalAnswered);
    assert_eq!(api.always_preview(999, None).unwrap_err().code, ErrorCode::ApprovalUnknown);
}
