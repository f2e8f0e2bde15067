//! The policy in the harness pipeline with the real coding tools: denied and blocked calls never run,
//! prompts go to approvers (non-interactive denier, scripted operator: once, session, always), "always"
//! amends the policy file atomically, and records keep the evaluated action without secrets.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use portcullis_coding::{Workspace, register_coding_tools};
use portcullis_harness::{
    Approvals, BlockedReason, CallOutcome, DecidedBy, Dispatcher, MemoryLedger, OperatorOutcome, RecordKind,
    Redactor, RunContext, ToolCall, ToolCallResult, ToolRegistry,
};
use portcullis_policy::{
    ApprovalChoice, ApprovalPrompt, DenyingApprover, LivePolicy, OperatorApprover, Policy, Prompter,
    SessionGrants, append_amendment,
};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tempfile::TempDir;

const POLICY: &str = r#"{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "printing", "pattern": [["echo", "ls", "cat"]], "decision": "allow", "match": ["echo hi"] },
      { "id": "remove", "pattern": ["rm"], "decision": "forbidden", "justification": "deletes files",
        "match": ["rm -rf x"] },
      { "id": "git-push", "pattern": ["git", "push"], "decision": "prompt", "match": ["git push"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] }
}
"#;

struct Project {
    _dir: TempDir,
    root: PathBuf,
    outside: PathBuf,
    policy_file: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let root = base.join("proj");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join(".portcullis")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let policy_file = root.join(".portcullis/policy.json");
    std::fs::write(&policy_file, POLICY).unwrap();
    Project { _dir: dir, root, outside, policy_file }
}

struct Gate {
    dispatcher: Dispatcher,
    ledger: Arc<MemoryLedger>,
    live: Arc<LivePolicy>,
}

fn gate(p: &Project, approvals: Option<Arc<dyn Approvals>>, redactor: Option<Redactor>) -> Gate {
    let policy = Policy::load(std::slice::from_ref(&p.policy_file), &p.root).unwrap();
    gate_with(p, Arc::new(LivePolicy::new(policy, p.root.clone())), approvals, redactor)
}

fn gate_with(
    p: &Project,
    live: Arc<LivePolicy>,
    approvals: Option<Arc<dyn Approvals>>,
    redactor: Option<Redactor>,
) -> Gate {
    let workspace = Arc::new(Workspace::new(&p.root).unwrap());
    let mut registry = ToolRegistry::new();
    register_coding_tools(&mut registry, &workspace).unwrap();
    let ledger = Arc::new(MemoryLedger::new());
    let mut builder = Dispatcher::builder(registry).policy(live.clone()).ledger(ledger.clone());
    if let Some(a) = approvals {
        builder = builder.approvals(a);
    }
    if let Some(r) = redactor {
        builder = builder.redactor(r);
    }
    Gate { dispatcher: builder.build(), ledger, live }
}

impl Gate {
    async fn call(&self, session: &str, id: &str, tool: &str, args: Value) -> ToolCallResult {
        let run = RunContext::new(session.to_owned(), "run");
        self.dispatcher.dispatch(ToolCall::new(id.to_owned(), tool, args), &run).await
    }
}

fn blocked(result: &ToolCallResult) -> Option<BlockedReason> {
    result.blocked_reason()
}

fn text(result: &ToolCallResult) -> String {
    match &result.outcome {
        CallOutcome::Finished { output } => serde_json::to_string(&output.content).unwrap(),
        other => panic!("not finished: {other:?}"),
    }
}

/// A scripted operator: answers from a queue and counts how often it was asked.
struct ScriptedOperator {
    answers: Mutex<Vec<ApprovalChoice>>,
    asked: AtomicUsize,
    offered_always: Mutex<Vec<Result<usize, String>>>,
}

impl ScriptedOperator {
    fn new(answers: &[ApprovalChoice]) -> Arc<Self> {
        let mut answers = answers.to_vec();
        answers.reverse();
        Arc::new(ScriptedOperator {
            answers: Mutex::new(answers),
            asked: AtomicUsize::new(0),
            offered_always: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Prompter for ScriptedOperator {
    fn operator(&self) -> String {
        "scripted".into()
    }

    fn channel(&self) -> &'static str {
        "terminal"
    }

    async fn ask(&self, prompt: &ApprovalPrompt) -> Result<ApprovalChoice, String> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.offered_always
            .lock()
            .unwrap()
            .push(prompt.always.as_ref().map(|a| a.rules.len()).map_err(Clone::clone));
        self.answers.lock().unwrap().pop().ok_or_else(|| "no answer left".into())
    }
}

/// A gate whose approver asks `operator`, sharing one live policy with the dispatcher.
fn operator_gate(p: &Project, operator: &Arc<ScriptedOperator>) -> (Gate, Arc<SessionGrants>) {
    let grants = Arc::new(SessionGrants::new());
    let policy = Policy::load(std::slice::from_ref(&p.policy_file), &p.root).unwrap();
    let live = Arc::new(LivePolicy::new(policy, p.root.clone()));
    let approver = Arc::new(OperatorApprover::new(
        operator.clone(),
        grants.clone(),
        live.clone(),
        Some(portcullis_policy::approval::AlwaysTarget::loaded(p.policy_file.display().to_string())),
    ));
    (gate_with(p, live, Some(approver), None), grants)
}

#[tokio::test]
async fn an_allowed_prefix_never_carries_a_forbidden_command() {
    let p = project();
    let victim = p.outside.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let g = gate(&p, None, None);
    for command in [
        format!("echo hi && rm -rf {}", victim.display()),
        format!("echo hi; rm -rf {}", victim.display()),
        format!("echo hi\nrm -rf {}", victim.display()),
        format!("bash -c 'rm -rf {}'", victim.display()),
        format!("FOO=1 rm -rf {}", victim.display()),
        format!("echo $(rm -rf {})", victim.display()),
        format!("\\rm -rf {}", victim.display()),
        format!("/bin/rm -rf {}", victim.display()),
    ] {
        let result = g.call("s", "c", "shell", json!({ "command": command })).await;
        assert_eq!(blocked(&result), Some(BlockedReason::ExecutionDenied), "{command}");
        assert!(victim.exists(), "{command} ran");
        match &result.decided_by {
            DecidedBy::Rule { rule_id, source } => {
                assert_eq!(rule_id, "remove");
                assert!(source.ends_with("policy.json"));
            }
            other => panic!("{command}: decided by {other:?}"),
        }
    }
    // The blocked record keeps the refused action, for audits and replays.
    let records = g.ledger.records();
    let blocked_record = records.iter().find(|r| r.kind == RecordKind::Blocked).unwrap();
    let action = blocked_record.action.as_ref().expect("action recorded");
    assert!(action.command.as_deref().unwrap().contains("rm -rf"));
    assert_eq!(
        blocked_record.matched_rules.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["printing", "remove"]
    );
}

#[tokio::test]
async fn allowed_commands_run_and_paths_are_judged_canonically() {
    let p = project();
    let g = gate(&p, None, None);
    let ok = g.call("s", "1", "shell", json!({ "command": "echo hello" })).await;
    assert!(text(&ok).contains("hello"));
    // A new file in new nested folders inside the write root.
    let nested = g.call("s", "2", "write", json!({ "path": "a/b/c/new.txt", "content": "x" })).await;
    assert!(nested.is_finished(), "{nested:?}");
    assert!(p.root.join("a/b/c/new.txt").is_file());
    // Outside the root, through `..`, and through a symlink inside the root pointing out.
    std::os::unix::fs::symlink(&p.outside, p.root.join("link-out")).unwrap();
    for path in [
        p.outside.join("x.txt").display().to_string(),
        "../outside/y.txt".to_owned(),
        "link-out/z.txt".to_owned(),
    ] {
        let result = g.call("s", "3", "write", json!({ "path": path, "content": "x" })).await;
        assert_eq!(blocked(&result), Some(BlockedReason::ExecutionDenied), "{path}");
    }
    assert_eq!(std::fs::read_dir(&p.outside).unwrap().count(), 0, "nothing was written outside");
    // Denied paths inside the root.
    std::fs::write(p.root.join(".env"), "SECRET=1").unwrap();
    let env = g.call("s", "4", "read", json!({ "path": ".env" })).await;
    assert_eq!(blocked(&env), Some(BlockedReason::ExecutionDenied));
    let redirect = g.call("s", "5", "shell", json!({ "command": "echo k >> ~/.ssh/authorized_keys" })).await;
    assert_eq!(blocked(&redirect), Some(BlockedReason::ExecutionDenied));
}

#[tokio::test]
async fn prompts_without_an_operator_are_denied_and_never_run() {
    let p = project();
    let g = gate(&p, Some(Arc::new(DenyingApprover)), None);
    let result = g.call("s", "1", "shell", json!({ "command": "touch made" })).await;
    assert_eq!(blocked(&result), Some(BlockedReason::ExecutionDenied));
    assert!(!p.root.join("made").exists());
    match &result.decided_by {
        DecidedBy::Operator { outcome: OperatorOutcome::Denied, operator, .. } => {
            assert_eq!(operator.as_deref(), Some("non-interactive"));
        }
        other => panic!("{other:?}"),
    }
    // Reads outside every root prompt (and so are denied here).
    std::fs::write(p.outside.join("notes.txt"), "n").unwrap();
    let read = g.call("s", "2", "read", json!({ "path": p.outside.join("notes.txt") })).await;
    assert_eq!(blocked(&read), Some(BlockedReason::ExecutionDenied));
}

#[tokio::test]
async fn once_and_session_answers() {
    let p = project();
    let op = ScriptedOperator::new(&[ApprovalChoice::Once, ApprovalChoice::Session, ApprovalChoice::Deny]);
    let (g, grants) = operator_gate(&p, &op);
    let once = g.call("s1", "1", "shell", json!({ "command": "touch one" })).await;
    assert!(once.is_finished());
    assert!(p.root.join("one").exists());
    // The answer's receipt: the arguments shown, the call, who and through which channel, the policy.
    let DecidedBy::Operator { outcome: OperatorOutcome::ApprovedOnce, receipt: Some(receipt), .. } =
        &once.decided_by
    else {
        panic!("{:?}", once.decided_by)
    };
    assert!(receipt.is_intact() && receipt.covers(&json!({ "command": "touch one" })));
    assert_eq!((receipt.call_id.as_str(), receipt.operator.as_str()), ("1", "scripted"));
    assert_eq!(receipt.channel, "terminal");
    assert!(receipt.policy_version.as_deref().is_some_and(|v| !v.is_empty()), "{receipt:?}");
    // Session: the same action again in the same session is not asked again.
    let first = g.call("s1", "2", "shell", json!({ "command": "touch two" })).await;
    assert!(first.is_finished());
    let DecidedBy::Operator { receipt: Some(granting), .. } = &first.decided_by else {
        panic!("{:?}", first.decided_by)
    };
    assert_eq!(op.asked.load(Ordering::SeqCst), 2);
    let again = g.call("s1", "3", "shell", json!({ "command": "touch two" })).await;
    assert!(again.is_finished());
    // The grant names the receipt of the answer that gave it, in the call it decides and in its list.
    match &again.decided_by {
        DecidedBy::SessionGrant { receipt, .. } => assert_eq!(receipt.as_deref(), Some(granting.id.as_str())),
        other => panic!("{other:?}"),
    }
    assert_eq!(op.asked.load(Ordering::SeqCst), 2);
    // Another session, or another command, is asked again (and denied).
    let other = g.call("s2", "4", "shell", json!({ "command": "touch two" })).await;
    assert_eq!(blocked(&other), Some(BlockedReason::ExecutionDenied));
    assert_eq!(op.asked.load(Ordering::SeqCst), 3);
    // Session grants are listed and revocable.
    let listed = grants.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].receipt.as_deref(), Some(granting.id.as_str()));
    assert!(grants.revoke(&listed[0].id));
    assert!(!grants.revoke(&listed[0].id));
}

#[tokio::test]
async fn always_appends_a_rule_that_decides_from_then_on() {
    let p = project();
    let before = std::fs::read_to_string(&p.policy_file).unwrap();
    let op = ScriptedOperator::new(&[ApprovalChoice::Always]);
    let (g, _) = operator_gate(&p, &op);
    let result = g.call("s", "1", "shell", json!({ "command": "echo a && mkdir -p build/out" })).await;
    assert!(result.is_finished(), "{result:?}");
    let (written, receipt) = match &result.decided_by {
        DecidedBy::Operator {
            outcome: OperatorOutcome::ApprovedAlways,
            rule_written: Some(rule),
            receipt: Some(receipt),
            ..
        } => (rule.clone(), receipt.clone()),
        other => panic!("{other:?}"),
    };
    // Only the sub-command no allow rule covered got a rule.
    assert_eq!(*op.offered_always.lock().unwrap(), vec![Ok(1)]);
    let after = std::fs::read_to_string(&p.policy_file).unwrap();
    assert!(after.starts_with(&before[..before.find("\n    ]").unwrap()]), "the layout is kept:\n{after}");
    assert!(after.contains(&written.id));
    // The rule names the receipt of the answer that created it.
    assert!(after.contains(&format!("receipt {}", receipt.id)), "{after}");
    // The file loads on its own (examples included) and the rule now decides.
    let reloaded = Policy::load(std::slice::from_ref(&p.policy_file), &p.root).unwrap();
    let eval = reloaded.evaluate_command("mkdir -p build/out", &portcullis_policy::EvalContext::new(&p.root));
    assert_eq!(eval.decision.as_str(), "allow");
    let next = g.call("s", "2", "shell", json!({ "command": "mkdir -p build/out" })).await;
    assert!(next.is_finished());
    assert_eq!(
        next.decided_by,
        DecidedBy::Rule { rule_id: written.id.clone(), source: written.source.clone() }
    );
    assert_eq!(op.asked.load(Ordering::SeqCst), 1, "not asked again");
    // No temporary files are left beside the policy.
    let names: Vec<String> = std::fs::read_dir(p.root.join(".portcullis"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["policy.json"]);
}

#[tokio::test]
async fn always_is_not_offered_where_a_rule_or_an_opaque_construct_asks() {
    let p = project();
    let op = ScriptedOperator::new(&[ApprovalChoice::Always, ApprovalChoice::Always]);
    let (g, _) = operator_gate(&p, &op);
    let before = std::fs::read_to_string(&p.policy_file).unwrap();
    // `git push` is prompted by a rule: an allow rule could not override it.
    let push = g.call("s", "1", "shell", json!({ "command": "git push --dry-run" })).await;
    // Answered "always" anyway: allowed once, nothing written.
    assert!(matches!(push.decided_by, DecidedBy::Operator { outcome: OperatorOutcome::ApprovedOnce, .. }));
    // `eval` cannot be vouched for by any rule.
    let eval = g.call("s", "2", "shell", json!({ "command": "eval echo hi" })).await;
    assert!(matches!(eval.decided_by, DecidedBy::Operator { outcome: OperatorOutcome::ApprovedOnce, .. }));
    let offered = op.offered_always.lock().unwrap().clone();
    assert!(offered[0].as_ref().unwrap_err().contains("git-push"), "{offered:?}");
    assert!(offered[1].is_err(), "{offered:?}");
    assert_eq!(std::fs::read_to_string(&p.policy_file).unwrap(), before);
}

#[tokio::test]
async fn append_refuses_a_file_changed_since_it_was_loaded() {
    let p = project();
    let policy = Policy::load(std::slice::from_ref(&p.policy_file), &p.root).unwrap();
    let action = portcullis_harness::ExecutionAction::new(portcullis_harness::ActionKind::Execute, "exec")
        .with_command("touch x")
        .with_cwd(p.root.clone());
    let ctx = portcullis_policy::EvalContext::new(&p.root);
    let source = p.policy_file.display().to_string();
    let amendment = policy.always_amendment(&action, &ctx, &source, "t").unwrap();
    std::fs::write(&p.policy_file, POLICY.replace("\"default\": \"prompt\"", "\"default\": \"forbidden\""))
        .unwrap();
    let err = append_amendment(&policy, &source, &amendment).err().unwrap();
    assert!(err.to_string().contains("changed since it was loaded"), "{err}");
    assert!(std::fs::read_to_string(&p.policy_file).unwrap().contains("\"default\": \"forbidden\""));
}

#[tokio::test]
async fn records_never_hold_a_secret_from_the_command() {
    let p = project();
    let secret = "sk-live-0123456789abcdefTOPSECRET";
    let g = gate(&p, None, Some(Redactor::builder().secret(secret).build()));
    let ran = g.call("s", "1", "shell", json!({ "command": format!("echo {secret}") })).await;
    assert!(ran.is_finished());
    let denied = g.call("s", "2", "shell", json!({ "command": format!("rm -rf {secret}") })).await;
    assert_eq!(blocked(&denied), Some(BlockedReason::ExecutionDenied));
    let all = serde_json::to_string(&g.ledger.records()).unwrap();
    assert!(!all.contains(secret), "{all}");
    assert!(
        g.ledger.records().iter().any(|r| r.action.as_ref().is_some_and(|a| a
            .command
            .as_deref()
            .unwrap()
            .contains("[REDACTED]")))
    );
}

#[tokio::test]
async fn a_replaced_policy_decides_the_next_call() {
    let p = project();
    let g = gate(&p, None, None);
    let first = g.call("s", "1", "shell", json!({ "command": "echo x" })).await;
    assert!(first.is_finished());
    let stricter = POLICY.replace(
        r#""pattern": [["echo", "ls", "cat"]], "decision": "allow""#,
        r#""pattern": [["echo", "ls", "cat"]], "decision": "forbidden""#,
    );
    std::fs::write(&p.policy_file, stricter).unwrap();
    g.live.replace(Policy::load(std::slice::from_ref(&p.policy_file), &p.root).unwrap());
    let second = g.call("s", "2", "shell", json!({ "command": "echo x" })).await;
    assert_eq!(blocked(&second), Some(BlockedReason::ExecutionDenied));
}

/// Issue 9, finding 6: the write tool leaves no execute bit unless asked, and asking is a prompt.
#[tokio::test]
async fn an_executable_write_is_a_prompt_and_a_plain_one_leaves_no_execute_bit() {
    use std::os::unix::fs::PermissionsExt;
    let p = project();
    let g = gate(&p, Some(Arc::new(DenyingApprover)), None);
    let asked = g
        .call("s", "1", "write", json!({ "path": "run.sh", "content": "#!/bin/sh\n", "executable": true }))
        .await;
    assert_eq!(blocked(&asked), Some(BlockedReason::ExecutionDenied), "{}", text(&asked));
    assert!(!p.root.join("run.sh").exists());
    let script = p.root.join("hook.sh");
    std::fs::write(&script, "old").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let plain =
        g.call("s", "2", "write", json!({ "path": "hook.sh", "content": "#!/bin/sh\nexit 1\n" })).await;
    assert_eq!(blocked(&plain), None, "{}", text(&plain));
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o111, 0);
}
