//! The shell tool: exit codes, timeout and cancel killing the process tree, bounded output, cwd
//! containment and the environment allowlist.

// Test helpers outside #[test] fns (pid polling) may panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use portcullis_harness::CallErrorCode;

use crate::common::{code, fixture, fixture_with, output};
use portcullis_coding::Limits;
use portcullis_harness::{BlockedReason, RunContext};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// Whether a process is still running (a zombie counts as dead).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

async fn dead_soon(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn read_pid(path: &Path) -> i32 {
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no pid written to {}", path.display());
}

#[tokio::test]
async fn non_zero_exit_is_a_normal_result() {
    let fx = fixture();
    let result = fx.call("shell", json!({"command": "echo out; echo err >&2; exit 3"})).await;
    let out = output(&result);
    assert!(!out.is_error);
    let structured = out.structured.as_ref().unwrap();
    assert_eq!(structured["exit_code"], 3);
    assert_eq!(out.joined_text(), "out\n[stderr]\nerr\n[exit code: 3]");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let fx = fixture();
    let started = Instant::now();
    let result =
        fx.call("shell", json!({"command": "sleep 100 & echo $! > pid.txt; wait", "timeout_ms": 300})).await;
    assert_eq!(code(&result), CallErrorCode::Timeout);
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid = read_pid(&fx.root().join("pid.txt")).await;
    assert!(dead_soon(pid).await, "grandchild {pid} survived the timeout");
}

#[tokio::test]
async fn term_ignoring_children_are_killed_after_the_grace() {
    let limits = Limits { shell_kill_grace: Duration::from_millis(200), ..Limits::default() };
    let fx = fixture_with(limits, &[]);
    let command = "bash -c 'trap \"\" TERM; sleep 100' & echo $! > pid.txt; trap '' TERM; wait";
    let result = fx.call("shell", json!({"command": command, "timeout_ms": 300})).await;
    assert_eq!(code(&result), CallErrorCode::Timeout);
    let pid = read_pid(&fx.root().join("pid.txt")).await;
    assert!(dead_soon(pid).await, "TERM-ignoring child {pid} survived");
}

#[tokio::test]
async fn cancelling_the_run_kills_the_process_tree() {
    let fx = fixture();
    let run = RunContext::new("s", "r");
    let cancel = run.cancel.clone();
    let pid_file = fx.root().join("pid.txt");
    let call = fx.call_in(&run, "shell", json!({"command": "sleep 100 & echo $! > pid.txt; wait"}));
    let canceller = async {
        let pid = read_pid(&pid_file).await;
        cancel.cancel();
        pid
    };
    let (result, pid) = tokio::join!(call, canceller);
    assert!(result.error().is_some(), "{result:?}");
    assert!(dead_soon(pid).await, "grandchild {pid} survived the cancel");
}

#[tokio::test]
async fn background_jobs_do_not_outlive_the_command() {
    let fx = fixture();
    let result = fx.call("shell", json!({"command": "sleep 100 >/dev/null 2>&1 & echo $!"})).await;
    let pid: i32 = output(&result).joined_text().lines().next().unwrap().trim().parse().unwrap();
    assert!(dead_soon(pid).await, "background job {pid} survived");
}

#[tokio::test]
async fn output_is_bounded_with_head_and_tail_kept() {
    let limits = Limits { shell_output_bytes: 1000, ..Limits::default() };
    let fx = fixture_with(limits, &[]);
    let command = "printf START; head -c 5000 /dev/zero | tr '\\0' a; printf END";
    let result = fx.call("shell", json!({"command": command})).await;
    let out = output(&result);
    let text = out.joined_text();
    assert!(text.starts_with("START"), "{text}");
    assert!(text.contains("[... 4008 bytes omitted ...]"), "{text}");
    assert!(text.ends_with("END\n[exit code: 0]"), "{text}");
    let structured = out.structured.as_ref().unwrap();
    assert_eq!(structured["stdout_bytes"], 5008);
    assert_eq!(structured["stdout_omitted_bytes"], 4008);
}

#[tokio::test]
async fn cwd_must_be_inside_the_root() {
    let fx = fixture();
    std::fs::create_dir(fx.root().join("sub")).unwrap();
    let result = fx.call("shell", json!({"command": "pwd", "cwd": "sub"})).await;
    assert_eq!(output(&result).joined_text(), format!("{}\n[exit code: 0]", fx.root().join("sub").display()));
    let result = fx.call("shell", json!({"command": "pwd", "cwd": fx.outside().to_str().unwrap()})).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
    let result = fx.call("shell", json!({"command": "pwd", "cwd": ".."})).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
}

#[tokio::test]
async fn the_action_carries_command_and_canonical_cwd() {
    let fx = fixture();
    let tool = portcullis_coding::ShellTool::new(fx.workspace.clone());
    let action =
        portcullis_harness::Tool::describe_action(&tool, &json!({"command": "ls -la"}), &common::ctx())
            .unwrap();
    assert_eq!(action.kind, portcullis_harness::ActionKind::Execute);
    assert_eq!(action.command.as_deref(), Some("ls -la"));
    assert_eq!(action.cwd.as_deref(), Some(fx.root().as_path()));
    assert!(portcullis_harness::Tool::spec(&tool).exclusive);
}

/// Sets secrets in a child test process (the environment cannot be changed safely in this one) and
/// checks the shell there does not inherit them.
#[test]
fn secrets_in_the_parent_environment_are_not_inherited() {
    if std::env::var_os("PORTCULLIS_CODING_ENV_CHILD").is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "shell::secrets_in_the_parent_environment_are_not_inherited",
                "--test-threads=1",
            ])
            .env("PORTCULLIS_CODING_ENV_CHILD", "1")
            .env("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
            .env("GITHUB_TOKEN", "token-value")
            .env("PASSED_THROUGH", "kept-value")
            .env("LC_TESTING", "lc-value")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("1 passed"), "{stdout}");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let fx = fixture_with(Limits::default(), &["PASSED_THROUGH"]);
        let result = fx.call("shell", json!({"command": "env"})).await;
        let text = output(&result).joined_text();
        assert!(!text.contains("AWS_SECRET_ACCESS_KEY"), "{text}");
        assert!(!text.contains("GITHUB_TOKEN"), "{text}");
        assert!(!text.contains("PORTCULLIS_CODING_ENV_CHILD"), "{text}");
        assert!(text.contains("PASSED_THROUGH=kept-value"), "{text}");
        assert!(text.contains("LC_TESTING=lc-value"), "{text}");
        assert!(text.contains("PATH="), "{text}");
    });
}
