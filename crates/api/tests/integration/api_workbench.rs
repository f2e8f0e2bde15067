//! The policy workbench through the operator API: the hub's layers as files, a draft checked as it is
//! typed (where it breaks, which example fails and why), tried on a command, linted, diffed, saved only
//! over the version read and only to the hub's own files, and replayed over the hub's ledger against
//! the policy in force.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::draft_replay::DraftReplayUpdate;
use portcullis_api::types::{Answer, Choice};
use portcullis_api::workbench::{LayerKind, TrialInput};
use portcullis_api::{Operator, OperatorApi};
use portcullis_policy::{CallVerdict, ExampleCommands};
use serde_json::json;
use std::sync::atomic::AtomicBool;
use tokio_util::sync::CancellationToken;

const POLICY: &str = r#"{
  "commands": {
    "rules": [
      { "id": "git-read", "pattern": ["git", ["status", "log"]], "decision": "allow",
        "match": ["git status"], "not_match": ["git push"] },
      { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden", "match": ["rm -rf x"] },
      { "id": "ask-curl", "pattern": ["curl"], "decision": "prompt" }
    ],
    "default": "prompt"
  }
}"#;

fn with_rule(policy: &str, rule: &str) -> String {
    policy.replacen("\"rules\": [\n", &format!("\"rules\": [\n      {rule},\n"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_is_checked_tried_and_saved_only_over_what_was_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let hub = common::hub(&dir, POLICY).await;
    let api = OperatorApi::new(hub.clone());
    let file = dir.join("proj/.portcullis/policy.json").display().to_string();

    let layers = api.policy_layers().unwrap();
    let project = layers.layers.iter().find(|l| l.source == file).expect("the project file is a layer");
    assert_eq!(
        (project.kind, project.layer, project.in_force, project.editable),
        (LayerKind::Project, Some(0), true, true)
    );
    assert_eq!(project.text, POLICY);
    let read = project.version.clone().unwrap();

    // As typed: a syntax error says where.
    let mut parsed = ExampleCommands::default();
    let broken = POLICY.replace("\"default\": \"prompt\"", "\"default\": prompt");
    let check = api.check_policy_draft(&file, &broken, &mut parsed).unwrap();
    let problem = check.problem.unwrap();
    assert_eq!((problem.line, problem.code.as_str()), (9, "policy_syntax"), "{problem:?}");
    assert!(problem.column > 0);
    // A failing example says which word left the pattern.
    let failing = POLICY.replace("\"match\": [\"git status\"]", "\"match\": [\"git status\", \"git diff\"]");
    let check = api.check_policy_draft(&file, &failing, &mut parsed).unwrap();
    let failed: Vec<_> = check.examples.iter().filter(|e| !e.passed).collect();
    assert_eq!(failed.len(), 1, "{:?}", check.examples);
    assert_eq!(
        (failed[0].rule.as_str(), failed[0].example.as_str(), failed[0].rule_index, failed[0].example_index),
        ("git-read", "git diff", 0, 1)
    );
    assert_eq!(
        failed[0].why.as_deref(),
        Some("word 2 of `git diff` is `diff`; the pattern wants one of `status`, `log`")
    );
    assert_eq!(failed[0].line, 5, "{:?}", failed[0]);
    assert_eq!(check.problem.unwrap().rule.as_deref(), Some("git-read"));
    let good = api.check_policy_draft(&file, POLICY, &mut parsed).unwrap();
    assert!(good.problem.is_none() && good.examples.iter().all(|e| e.passed));
    assert_eq!(good.summary.unwrap().rules, 3);
    assert_eq!(good.examples.len(), 3);

    // Only the hub's own policy files are drafts.
    let e = api.check_policy_draft("/etc/passwd", POLICY, &mut parsed).unwrap_err();
    assert_eq!(e.code.as_str(), "bad_argument");
    let e =
        api.save_policy_file(&dir.join("elsewhere.json").display().to_string(), POLICY, None).unwrap_err();
    assert_eq!(e.code.as_str(), "bad_argument");
    assert!(!dir.join("elsewhere.json").exists());

    // The playground: the trace names the deciding rule.
    let trial = api
        .try_policy_draft(&file, POLICY, TrialInput::Command { script: "git status && rm -rf ~".into() })
        .await
        .unwrap();
    let CallVerdict::Evaluated(evaluation) = trial.verdict else { panic!("{:?}", trial.verdict) };
    assert_eq!(evaluation.decision.as_str(), "forbidden");
    assert_eq!(evaluation.deciding_rule.as_ref().unwrap().id, "no-rm");
    assert_eq!(
        evaluation.commands,
        vec![vec!["git".to_string(), "status".into()], vec!["rm".into(), "-rf".into(), "~".into()]]
    );
    assert_eq!(trial.layers, vec![file.clone()]);
    let trial = api
        .try_policy_draft(
            &file,
            POLICY,
            TrialInput::Call { tool: "shell".into(), arguments: json!({"command": "git log"}) },
        )
        .await
        .unwrap();
    let CallVerdict::Evaluated(evaluation) = trial.verdict else { panic!() };
    assert_eq!(evaluation.deciding_rule.unwrap().id, "git-read");

    // The draft's test cases, judged as live calls.
    let with_test = POLICY.replace(
        "\n}",
        r#", "tests": [ { "name": "rm refused", "call": { "name": "shell", "arguments": { "command": "rm -rf /" } }, "expect": "forbidden" },
                      { "name": "wrong", "call": { "name": "shell", "arguments": { "command": "git status" } }, "expect": "forbidden" } ] }"#,
    );
    let tests = api.test_policy_draft(&file, &with_test).await.unwrap();
    assert_eq!(
        tests.iter().map(|t| (t.name.as_str(), t.passed)).collect::<Vec<_>>(),
        [("rm refused", true), ("wrong", false)]
    );
    assert_eq!(tests[1].decided_by, format!("rule git-read ({file})"));

    // Grants: which tools agents would see with the draft's scopes.
    let scoped = POLICY.replacen(
        "{\n",
        "{\n  \"grants\": [ { \"name\": \"no-shell\", \"deny\": [\"shell\"] } ],\n",
        1,
    );
    let grants = api.grants_with_draft(&file, &scoped).unwrap();
    let shell = grants.iter().find(|g| g.name == "shell").unwrap();
    assert_eq!(
        (shell.visible_now, shell.visible_with_draft, shell.refused_by.as_deref()),
        (true, false, Some("no-shell"))
    );
    let reader = grants.iter().find(|g| g.name == "read").unwrap();
    assert!(reader.visible_now && reader.visible_with_draft && reader.refused_by.is_none());

    // Paths: asked of the real read and write tools, which resolve symlinks.
    std::fs::write(dir.join("proj/README.md"), "# proj\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", dir.join("proj/host")).unwrap();
    let decision = |v: &CallVerdict| match v {
        CallVerdict::Evaluated(e) => e.decision.as_str().to_owned(),
        CallVerdict::Blocked { reason, .. } => reason.clone(),
    };
    let inside = api.probe_path_draft(&file, POLICY, "README.md").await.unwrap();
    assert_eq!(inside.resolved.as_deref(), Some(dir.join("proj/README.md").to_str().unwrap()));
    assert_eq!((decision(&inside.read), decision(&inside.write)), ("allow".into(), "allow".into()));
    let link = api.probe_path_draft(&file, POLICY, "host").await.unwrap();
    assert_eq!(link.resolved.as_deref(), Some("/etc/hostname"), "{link:?}");
    assert_eq!(decision(&link.write), "forbidden", "{link:?}");
    assert_ne!(decision(&link.read), "allow", "{link:?}");

    // Lint with the layers around it: a rule shadowed by an earlier one.
    let shadowed = with_rule(POLICY, r#"{ "id": "all-git", "pattern": ["git"], "decision": "prompt" }"#);
    let lint = api.lint_policy_draft(&file, &shadowed).unwrap();
    assert!(lint.findings.iter().any(|f| f.rule == "git-read" || f.rule == "all-git"), "{:?}", lint.findings);

    // Save: a draft that does not load is refused and the file stays.
    let e = api.save_policy_file(&file, &failing, Some(&read)).unwrap_err();
    assert_eq!(e.code.as_str(), "policy_rule");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), POLICY);
    // A change on disk since it was read is detected, never overwritten.
    let theirs = with_rule(POLICY, r#"{ "id": "ls", "pattern": ["ls"], "decision": "allow" }"#);
    std::fs::write(&file, &theirs).unwrap();
    let mine = with_rule(POLICY, r#"{ "id": "cat", "pattern": ["cat"], "decision": "allow" }"#);
    let e = api.save_policy_file(&file, &mine, Some(&read)).unwrap_err();
    assert_eq!(e.code.as_str(), "policy_changed");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);
    let diff = api.diff_policy_draft(&file, &mine).unwrap();
    assert!(diff.diff.iter().any(|l| matches!(l, portcullis_api::line_diff::DiffLine::Added { text, .. } if text.contains("\"cat\""))), "{:?}", diff.diff);
    let on_disk = diff.version_on_disk.unwrap();
    assert_ne!(on_disk, read);
    let saved = api.save_policy_file(&file, &mine, Some(&on_disk)).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), mine);
    hub.reload().unwrap();
    let layers = api.policy_layers().unwrap();
    let project = layers.layers.iter().find(|l| l.source == file).unwrap();
    assert_eq!((project.version.as_deref(), project.in_force), (Some(saved.as_str()), true));
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_replays_over_the_ledger_against_the_policy_in_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let hub = common::hub(&dir, POLICY).await;
    let api = OperatorApi::new(hub.clone());
    let file = dir.join("proj/.portcullis/policy.json").display().to_string();
    let commands =
        ["git status", "git log", "curl example.com", "curl -I example.com", "rm -rf x", "echo hi"];
    for (i, command) in commands.iter().enumerate() {
        let (hub2, script) = (hub.clone(), command.to_string());
        let call = tokio::spawn(async move {
            hub2.call(
                "s1",
                &format!("c{i}"),
                "shell",
                json!({ "command": script }),
                "t",
                CancellationToken::new(),
            )
            .await
        });
        if command.starts_with("curl") || command.starts_with("echo") {
            // The operator denies the prompt.
            let asked = common::pending_one(&api).await;
            let deny = Answer {
                answer: Choice::Deny,
                arguments_sha256: asked.arguments_sha256.clone(),
                note: None,
                scope: None,
            };
            api.answer_approval(asked.id, &deny, &Operator::named("test")).unwrap();
        }
        call.await.unwrap();
    }
    // What each rule decided lately, and the commands prompted for most (candidate rules).
    let mut activity = api.rule_activity().unwrap();
    for _ in 0..200 {
        if activity.hits.iter().map(|h| h.week).sum::<u64>() == 5 && activity.candidates.len() == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        activity = api.rule_activity().unwrap();
    }
    let hits: Vec<(&str, u64, u64)> =
        activity.hits.iter().map(|h| (h.rule.as_str(), h.day, h.week)).collect();
    assert_eq!(hits, [("ask-curl", 2, 2), ("git-read", 2, 2), ("no-rm", 1, 1)], "{activity:?}");
    let candidates: Vec<(&str, u64, Option<Vec<String>>)> =
        activity.candidates.iter().map(|c| (c.command.as_str(), c.calls, c.words.clone())).collect();
    assert_eq!(candidates.len(), 3, "{candidates:?}");
    assert!(candidates.contains(&(
        "curl -I example.com",
        1,
        Some(vec!["curl".into(), "-I".into(), "example.com".into()])
    )));

    // A draft that allows curl: exactly the two curl calls change, both loosened.
    let draft = POLICY.replace(
        r#""pattern": ["curl"], "decision": "prompt""#,
        r#""pattern": ["curl"], "decision": "allow""#,
    );
    let never = AtomicBool::new(false);
    let mut changed = Vec::new();
    let mut last_progress = None;
    let outcome = api
        .replay_policy_draft(&file, &draft, None, &never, &mut |update| {
            match update {
                DraftReplayUpdate::Changes { changes } => changed.extend(changes),
                DraftReplayUpdate::Progress { last_id, total_id, .. } => {
                    last_progress = Some((last_id, total_id))
                }
                other => panic!("{other:?}"),
            }
            true
        })
        .unwrap();
    let mut ids: Vec<&str> = changed.iter().map(|c| c.call_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["c2", "c3"], "{changed:?}");
    assert!(changed.iter().all(|c| c.before == "prompt" && c.after == "allow"));
    assert_eq!(changed[0].before_by.as_deref(), Some(format!("rule ask-curl ({file})").as_str()));
    assert_eq!(outcome.loosened, 2);
    assert_eq!(outcome.summary.changed, 2);
    assert_eq!(outcome.summary.transitions.get("prompt -> allow"), Some(&2));
    assert_eq!(outcome.summary.kept.get("allow"), Some(&2), "{:?}", outcome.summary);
    assert_eq!(outcome.summary.kept.get("forbidden"), Some(&1), "{:?}", outcome.summary);
    assert_eq!(outcome.summary.kept.get("prompt"), Some(&1));
    assert_eq!(outcome.groups.len(), 1);
    assert_eq!((outcome.groups[0].calls, outcome.groups[0].loosened), (2, 2));
    let (last, total) = last_progress.unwrap();
    assert!(last >= total && total > 0, "{last} {total}");
    assert!(!outcome.stopped);

    // Both traces of one changed call.
    let traces = api.draft_call_traces(&file, &draft, None, "s1", "c2").unwrap();
    let (Some(CallVerdict::Evaluated(before)), Some(CallVerdict::Evaluated(after))) =
        (traces.before, traces.after)
    else {
        panic!()
    };
    assert_eq!((before.decision.as_str(), after.decision.as_str()), ("prompt", "allow"));
    assert_eq!(after.deciding_rule.unwrap().id, "ask-curl");
    let e = api.draft_call_traces(&file, &draft, None, "s1", "nope").unwrap_err();
    assert_eq!(e.code.as_str(), "call_not_found");

    // The draft equal to the policy in force changes nothing; a stop flag set ends it at once.
    let outcome = api.replay_policy_draft(&file, POLICY, None, &never, &mut |_| true).unwrap();
    assert_eq!(outcome.summary.changed, 0);
    let stop = AtomicBool::new(true);
    let outcome = api.replay_policy_draft(&file, &draft, None, &stop, &mut |_| true).unwrap();
    assert!(outcome.stopped);
    // Another ledger that is not there.
    let e = api
        .replay_policy_draft(&file, &draft, Some(&dir.join("none.db")), &never, &mut |_| true)
        .unwrap_err();
    assert_eq!(e.code.as_str(), "bad_argument");
    hub.close().await.unwrap();
}
