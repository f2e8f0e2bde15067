//! Issue 32, "one judgement": a live call (the harness's `ExecutionPolicy` seam of `LivePolicy`) and a
//! replay of the same call (`Replay`) decide alike, on a machine whose kernel confines commands and on
//! one where it cannot (the probe's answer faked at its seam, `SandboxSupport`), for a corpus under
//! `sandbox.mode: preferred` and `required`. Before, replay never applied the "sandbox required" deny.
// Fixture builders are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_harness::{
    ActionKind, CallContext, DecidedBy, ExecutionAction, ExecutionPolicy, PolicyDecision, PolicyRequest,
    SandboxSupport, ToolSpec,
};
use portcullis_policy::replay::{RecordedCall, Replay};
use portcullis_policy::{LivePolicy, Policy, PolicyLayer};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const CORPUS: &[&str] =
    &["ls -la", "echo hi > out.txt", "git status", "rm -rf build", "sudo ls", "curl https://example.com"];

fn policy(mode: &str, project: &Path) -> Policy {
    let text = format!(
        r#"{{
  "sandbox": {{ "mode": "{mode}" }},
  "commands": {{ "default": "prompt", "rules": [
    {{ "id": "reads", "pattern": [["ls", "echo", "git"]], "decision": "allow" }},
    {{ "id": "no-sudo", "pattern": ["sudo"], "decision": "forbidden" }}
  ] }},
  "paths": {{ "roots": [{{ "path": ".", "access": "write" }}] }}
}}"#
    );
    Policy::from_layers(vec![PolicyLayer::parse("p.json", &text, project.to_path_buf()).unwrap()]).unwrap()
}

fn action(command: &str, project: &Path) -> ExecutionAction {
    let mut action = ExecutionAction::new(ActionKind::Execute, "execute");
    action.command = Some(command.to_owned());
    action.cwd = Some(project.to_path_buf());
    action
}

fn word(decision: PolicyDecision) -> &'static str {
    match decision {
        PolicyDecision::Allow => "allow",
        PolicyDecision::Contain => "contain",
        PolicyDecision::Ask => "prompt",
        PolicyDecision::Deny => "forbidden",
    }
}

#[tokio::test]
async fn live_and_replay_decide_alike_with_and_without_walls() {
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    let machines = [
        ("confines", SandboxSupport { landlock_abi: Some(7), namespaces: true, unavailable: None }),
        ("cannot confine", SandboxSupport::unavailable("this kernel has no Landlock (faked)")),
    ];
    let spec = ToolSpec::new("shell", "the shell tool");
    let call = CallContext {
        session_id: Arc::from("s"),
        run_id: Arc::from("r"),
        call_id: Arc::from("c"),
        owner: Arc::from("agent"),
        cwd: Some(Arc::from(project.as_path())),
        mcp: None,
    };
    let mut required_refusals = 0;
    for mode in ["preferred", "required"] {
        for (machine, support) in &machines {
            let live = LivePolicy::new(policy(mode, &project), project.clone())
                .with_home(None)
                .with_sandbox_support(support.clone());
            let replayed = policy(mode, &project);
            let mut replay = Replay::new(&replayed, project.clone(), None, support.clone());
            for command in CORPUS {
                let action = action(command, &project);
                let arguments = json!({ "command": command });
                let request =
                    PolicyRequest { call: &call, tool: &spec, arguments: &arguments, action: &action };
                let live_says = word(live.evaluate(request).await.decision);
                let recorded = RecordedCall {
                    session_id: "s".into(),
                    call_id: "c".into(),
                    at: 0,
                    tool: "shell".into(),
                    arguments: Some(arguments.clone()),
                    action: Some(action.clone()),
                    cwd: Some(project.clone()),
                    project: Some(PathBuf::from(&project)),
                    ran: true,
                    blocked_reason: None,
                    decided_by: DecidedBy::DEFAULT,
                    policy_decision: None,
                };
                let (replay_says, _, _) = replay.decide(&recorded).unwrap();
                assert_eq!(replay_says, live_says, "{mode} on a machine that {machine}: `{command}`");
                if mode == "required" && *machine == "cannot confine" {
                    assert_eq!(
                        live_says, "forbidden",
                        "`{command}` runs unconfined under a required sandbox"
                    );
                    required_refusals += 1;
                }
            }
        }
    }
    assert_eq!(required_refusals, CORPUS.len());
}
