//! The operator API's view of connections: the agent sessions open now, the upstream servers, and the
//! hub at a glance. No window, no socket.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::OperatorApi;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_come_and_go_and_the_status_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    assert!(api.sessions().is_empty());
    let first = hub.open_session("claude-code", "2.1").await;
    let second = hub.open_session("cursor\u{1b}[31m", "1").await;
    let sessions = api.sessions();
    assert_eq!(sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [first.as_str(), second.as_str()]);
    assert_eq!((sessions[0].client.as_str(), sessions[0].version.as_str()), ("claude-code", "2.1"));
    assert_eq!((sessions[0].transport.as_str(), sessions[0].calls), ("in-process", 0));
    let cancel = tokio_util::sync::CancellationToken::new();
    hub.call(&first, "c1", "no-such-tool", json!({}), "t", cancel.clone()).await;
    hub.call(&first, "c2", "no-such-tool", json!({}), "t", cancel).await;
    assert_eq!(api.sessions()[0].calls, 2, "blocked calls count too");
    // Agent text stays as sent: front ends escape it where a person reads it.
    assert_eq!(sessions[1].client, "cursor\u{1b}[31m");
    let status = api.status();
    assert_eq!(status.sessions, 2);
    assert_eq!(status.project, dir.join("proj").display().to_string());
    assert!(status.policies.iter().any(|p| p.ends_with("proj/.portcullis/policy.json")), "{status:?}");
    assert!(status.tools.iter().any(|t| t == "shell"), "{status:?}");
    assert_eq!(status.pending_approvals, 0);
    assert!(status.servers.is_empty() && api.servers().is_empty());
    hub.close_session(first).await;
    assert_eq!(api.sessions().len(), 1);
    hub.close().await.unwrap();
    assert!(api.sessions().is_empty(), "sessions left open by their clients end with the hub");
}

use portcullis_api::ErrorCode;
use portcullis_api::types::{UpstreamServer, UpstreamState};
use portcullis_hub::Hub;
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The reference "everything" server from the interop peers (`npm install --prefix tests/interop`).
fn everything() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/node_modules");
    let server = dir.join("@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        server.is_file(),
        "the interop peers are not installed: run `npm install --prefix tests/interop`"
    );
    server.canonicalize().unwrap()
}

/// A policy declaring one stdio server `id` that runs `script` with `sh -c`.
fn one_server(id: &str, script: &str) -> String {
    json!({ "servers": [ { "id": id, "command": "sh", "args": ["-c", script] } ] }).to_string()
}

/// Polls the operator API until `server` satisfies `wanted`.
async fn wait_for(
    api: &OperatorApi,
    id: &str,
    what: &str,
    wanted: impl Fn(&UpstreamServer) -> bool,
) -> UpstreamServer {
    let started = Instant::now();
    loop {
        let server = api.server(id).unwrap();
        if wanted(&server) {
            return server;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{id} never {what}: {server:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the registry (rebuilt a moment after a server's tools change) has `tool`.
async fn wait_for_tool(hub: &Hub, tool: &str) {
    let started = Instant::now();
    while !hub.visible_tools().iter().any(|t| t.name == tool) {
        assert!(started.elapsed() < Duration::from_secs(10), "{tool} never registered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn ready(s: &UpstreamServer) -> bool {
    matches!(s.state, UpstreamState::Ready { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_shows_its_stderr_and_comes_back_ready_after_a_restart() {
    let (_tmp, dir) = common::folder();
    // Its stderr: a line of its own (with a terminal escape, kept as written), then the server's.
    let script = format!(
        "echo \"hello from $$\" >&2; printf 'red \\033[31m\\n' >&2; exec node {} stdio",
        everything().display()
    );
    let hub = common::hub(&dir, &one_server("ev", &script)).await;
    let api = OperatorApi::new(hub.clone());
    let first =
        wait_for(&api, "ev", "became ready with its stderr", |s| ready(s) && s.stderr_tail.len() >= 3).await;
    assert_eq!(first.restarts, 0);
    assert!(first.tools > 0 && first.last_error.is_none(), "{first:?}");
    assert!(first.stderr_tail[0].starts_with("hello from "), "{first:?}");
    assert_eq!(first.stderr_tail[1], "red \u{1b}[31m");
    assert!(first.stderr_tail.iter().any(|l| l.contains("Starting")), "the server's own stderr: {first:?}");
    assert_eq!(api.servers(), [api.server("ev").unwrap()]);
    // The transport shape: the state beside the id, snake_case, and back again.
    let value = serde_json::to_value(&first).unwrap();
    assert_eq!(value["id"], "ev");
    assert_eq!(value["state"], "ready");
    assert_eq!(value["restarts"], 0);
    assert!(value["stderr_tail"].is_array() && value["last_error"].is_null(), "{value}");
    assert_eq!(serde_json::from_value::<UpstreamServer>(value).unwrap(), first);

    wait_for_tool(&hub, "mcp:ev:echo").await;
    api.restart_server("ev").unwrap();
    let again =
        wait_for(&api, "ev", "came back", |s| ready(s) && s.restarts == 1 && s.stderr_tail.len() >= 6).await;
    assert!(again.since > first.since, "{again:?}");
    let hellos: Vec<&String> = again.stderr_tail.iter().filter(|l| l.starts_with("hello from ")).collect();
    assert_eq!(hellos.len(), 2, "the tail spans the restart: {again:?}");
    assert_ne!(hellos[0], hellos[1], "a new process");
    assert!(again.last_error.is_none(), "an operator's restart is not an error: {again:?}");
    // Ready means callable: the tools in the registry reach the new connection, rebuilt or not.
    let session = hub.open_session("t", "1").await;
    let echoed = hub
        .call(&session, "c1", "mcp:ev:echo", json!({"message": "back"}), "t", CancellationToken::new())
        .await;
    assert!(matches!(echoed.outcome, portcullis_harness::CallOutcome::Finished { .. }), "{echoed:?}");
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_fails_as_unavailable_when_its_server_is_restarted() {
    let (_tmp, dir) = common::folder();
    let hub =
        common::hub(&dir, &one_server("ev", &format!("exec node {} stdio", everything().display()))).await;
    let api = OperatorApi::new(hub.clone());
    wait_for(&api, "ev", "became ready", ready).await;
    wait_for_tool(&hub, "mcp:ev:trigger-long-running-operation").await;
    let session = hub.open_session("t", "1").await;
    let long = {
        let hub = hub.clone();
        tokio::spawn(async move {
            let arguments = json!({"duration": 30, "steps": 30});
            let started = Instant::now();
            let result = hub
                .call(
                    &session,
                    "c1",
                    "mcp:ev:trigger-long-running-operation",
                    arguments,
                    "t",
                    CancellationToken::new(),
                )
                .await;
            (result, started.elapsed())
        })
    };
    // Restarted once the call has reached the server (its progress is in the ledger's way; wait a bit).
    tokio::time::sleep(Duration::from_secs(2)).await;
    api.restart_server("ev").unwrap();
    let (result, took) = tokio::time::timeout(Duration::from_secs(15), long).await.unwrap().unwrap();
    match &result.outcome {
        portcullis_harness::CallOutcome::Error { error } => {
            {
                // It reached the server and the connection closed under it (not "not connected").
                assert_eq!(error.code, portcullis_harness::CallErrorCode::UpstreamUnavailable, "{result:?}");
                assert!(error.message.contains("went away"), "{result:?}");
            }
        }
        other => panic!("expected upstream_unavailable: {other:?}"),
    }
    assert!(took < Duration::from_secs(15), "{took:?}");
    let back = wait_for(&api, "ev", "came back", |s| ready(s) && s.restarts == 1).await;
    assert!(back.last_error.is_none(), "{back:?}");
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_cuts_a_connection_attempt_or_a_backoff_short() {
    let (_tmp, dir) = common::folder();
    let pids = dir.join("pids");
    // `slow` answers nothing for a minute; `dead` exits at once, so it waits out a growing backoff.
    let policy = json!({ "servers": [
        { "id": "slow", "command": "sh", "args": ["-c", format!("echo $$ >> {}; exec sleep 60", pids.display())] },
        { "id": "dead", "command": "sh", "args": ["-c", "echo 'cannot start: no config' >&2; exit 3"] },
    ] })
    .to_string();
    let hub: Hub = common::hub(&dir, &policy).await;
    let api = OperatorApi::new(hub.clone());
    let pid_of_first = {
        let started = Instant::now();
        loop {
            if let Some(pid) = std::fs::read_to_string(&pids).unwrap_or_default().lines().next() {
                break pid.to_owned();
            }
            assert!(started.elapsed() < Duration::from_secs(30), "slow never started");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    assert!(matches!(api.server("slow").unwrap().state, UpstreamState::Connecting));
    api.restart_server("slow").unwrap();
    let again = wait_for(&api, "slow", "restarted", |s| s.restarts == 1).await;
    assert!(matches!(again.state, UpstreamState::Connecting), "{again:?}");
    // The abandoned attempt's process is gone (its process group was killed with it).
    let started = Instant::now();
    while std::fs::read_to_string(format!("/proc/{pid_of_first}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the first attempt's process {pid_of_first} lives on"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // `dead` fails, with its error and stderr; once its backoff is 4 s, a restart does not wait it out.
    let failing = wait_for(
        &api,
        "dead",
        "waited 4 s",
        |s| matches!(s.state, UpstreamState::Failed { retry_in_ms, .. } if retry_in_ms >= 4000),
    )
    .await;
    let error = failing.last_error.clone().unwrap();
    assert!(failing.stderr_tail.iter().all(|l| l == "cannot start: no config"), "{failing:?}");
    assert!(!failing.stderr_tail.is_empty() && error.message.contains("initialize"), "{failing:?}");
    let asked = Instant::now();
    api.restart_server("dead").unwrap();
    wait_for(&api, "dead", "restarted", |s| s.restarts > failing.restarts).await;
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "the restart waited out the backoff: {:?}",
        asked.elapsed()
    );
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_unstartable_servers_are_refused_with_their_codes() {
    let (_tmp, dir) = common::folder();
    let policy = json!({ "servers": [
        { "id": "needs-env", "url": "http://127.0.0.1:9/mcp",
          "headers_from_env": { "Authorization": "PORTCULLIS_TEST_UNSET_VARIABLE" } },
    ] })
    .to_string();
    let hub = common::hub(&dir, &policy).await;
    let api = OperatorApi::new(hub.clone());
    let e = api.restart_server("nope").unwrap_err();
    assert_eq!((e.code, e.code.http_status()), (ErrorCode::ServerUnknown, 404));
    assert_eq!(e.details, json!({"id": "nope"}));
    assert_eq!(api.server("nope").unwrap_err().code, ErrorCode::ServerUnknown);
    // Declared but not specifiable: it is listed as failed, and restarting it cannot help.
    let broken = api.server("needs-env").unwrap();
    assert!(matches!(broken.state, UpstreamState::Failed { failures: 0, .. }), "{broken:?}");
    assert!(broken.last_error.unwrap().message.contains("PORTCULLIS_TEST_UNSET_VARIABLE"));
    let e = api.restart_server("needs-env").unwrap_err();
    assert_eq!(e.code, ErrorCode::BadArgument, "{e:?}");
    hub.close().await.unwrap();
}
