//! Issue 10, what the audit trail tells a first-day user, through the binary: the policy's own decision
//! recorded apart from how the call ended, the rule behind a prompt in `ledger query`, replaying a draft
//! with relative roots, sessions of a killed hub marked cut, and refused connections in the ledger.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::{ledger_calls, node_modules, portcullis, serve};
use serde_json::{Value, json};

/// `portcullis <args> --db <served ledger>`: stdout, after checking it succeeded.
fn ledger_command(served: &common::Served, args: &[&str]) -> String {
    let out = portcullis(served.dir.path()).args(args).arg("--db").arg(served.db()).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A prompt nobody answered in time is recorded as the policy's `prompt` (and the rule that said it)
/// with its own outcome, `timed_out`; replaying the same policy changes nothing.
#[test]
fn a_prompt_that_timed_out_keeps_the_policys_decision_apart_from_its_outcome() {
    node_modules();
    let policy = r#"{
      "commands": {
        "default": "allow",
        "rules": [ { "id": "ask-before-touch", "pattern": ["touch"], "decision": "prompt", "match": ["touch x"] } ]
      },
      "approvals": { "timeout_seconds": 1 }
    }"#;
    let mut served = serve(policy);
    served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "touch timed-out"}}]));
    let stopped = served.stop();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    assert!(!served.project().join("timed-out").exists());

    let calls = ledger_calls(&served);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let call = &calls[0];
    assert_eq!(call["status"], "blocked", "{call}");
    assert_eq!(call["decided_by"], "approval_timeout", "{call}");
    assert_eq!(call["policy_decision"], "prompt", "{call}");
    assert_eq!(call["policy_rule"], "ask-before-touch", "{call}");

    let call_id = call["call_id"].as_str().unwrap();
    let timeline: Value =
        serde_json::from_str(&ledger_command(&served, &["ledger", "show", "--json", call_id])).unwrap();
    assert_eq!(timeline["approvals"][0]["outcome"], "timed_out", "{timeline}");
    let records = timeline["records"].as_array().unwrap();
    assert!(records.iter().all(|r| r["policy_decision"] == "prompt"), "{timeline}");
    let shown = ledger_command(&served, &["ledger", "show", call_id]);
    assert!(shown.contains("policy prompt (rule ask-before-touch)"), "{shown}");
    assert!(shown.contains("timed_out"), "{shown}");

    let replay = portcullis(served.dir.path())
        .args(["policy", "replay", "--fail-on-change", "--db"])
        .arg(served.db())
        .arg("--policy")
        .arg(served.policy_file())
        .current_dir(served.project())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{text}{}", String::from_utf8_lossy(&replay.stderr));
    assert!(text.contains("1 replayed, 0 would change"), "{text}");
}

/// `ledger query` (text) says which rule made the policy prompt or forbid, also when an operator or a
/// timeout settled the call.
#[test]
fn ledger_query_shows_the_rule_behind_a_prompt_or_a_refusal() {
    node_modules();
    let policy = r#"{
      "commands": {
        "default": "allow",
        "rules": [
          { "id": "ask-before-touch", "pattern": ["touch"], "decision": "prompt", "match": ["touch x"] },
          { "id": "never-rm", "pattern": ["rm"], "decision": "forbidden", "match": ["rm x"] }
        ]
      },
      "approvals": { "timeout_seconds": 1 }
    }"#;
    let mut served = serve(policy);
    served.agent(json!([
        {"op": "call", "name": "shell", "arguments": {"command": "touch asked"}},
        {"op": "call", "name": "shell", "arguments": {"command": "rm -f refused"}},
        {"op": "call", "name": "shell", "arguments": {"command": "echo allowed"}},
    ]));
    served.stop();
    let out = ledger_command(&served, &["ledger", "query"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("POLICY"), "{out}");
    let row = |needle: &str| {
        *lines.iter().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {out}"))
    };
    assert!(row("approval_timeout").contains("prompt (rule ask-before-touch)"), "{out}");
    assert!(row("rule:never-rm").contains("forbidden (rule never-rm)"), "{out}");
    assert!(row("finished").contains(" allow "), "{out}");
}

/// A draft kept outside the project (`--policy ../drafts/draft.json`) with relative roots is replayed as
/// it would judge once put in the project: its `"."` is each call's project, not the draft's folder.
#[test]
fn a_drafts_relative_roots_are_anchored_at_each_calls_project() {
    node_modules();
    let policy = r#"{
      "commands": { "default": "allow" },
      "paths": { "roots": [ { "path": ".", "access": "write" } ] }
    }"#;
    let mut served = serve(policy);
    std::fs::write(served.project().join("notes.txt"), "inside the project\n").unwrap();
    let notes = served.project().join("notes.txt").display().to_string();
    let report = served.agent(json!([{"op": "call", "name": "read", "arguments": {"path": notes}}]));
    assert!(report.to_string().contains("inside the project"), "{report}");
    served.stop();
    let drafts = served.path("drafts");
    std::fs::create_dir_all(&drafts).unwrap();
    std::fs::write(drafts.join("draft.json"), policy).unwrap();
    let replay = portcullis(served.dir.path())
        .args(["policy", "replay", "--fail-on-change", "--policy", "draft.json", "--db"])
        .arg(served.db())
        .current_dir(&drafts)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{text}{}", String::from_utf8_lossy(&replay.stderr));
    assert!(text.contains("1 replayed, 0 would change"), "{text}");
}

/// The sessions of a `portcullis serve` list, as JSON, once `ready` says they are all there.
fn sessions_when(served: &common::Served, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let started = std::time::Instant::now();
    loop {
        let listed: Value =
            serde_json::from_str(&ledger_command(served, &["ledger", "sessions", "--json"])).unwrap();
        let sessions = listed["sessions"].as_array().unwrap().clone();
        if ready(&sessions) || started.elapsed() > std::time::Duration::from_secs(15) {
            return sessions;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn initialize(served: &common::Served, client: &str) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}});
    let accept = [("Accept", "application/json, text/event-stream")];
    let (status, body) =
        common::http(&served.mcp_url, "POST", Some(&served.token), &accept, Some(&init.to_string()));
    assert_eq!(status, 200, "{body}");
}

/// A hub killed with SIGKILL leaves its sessions open; the next hub on the same ledger ends them as
/// `cut` (at their last activity), and only them: its own sessions stay open while it runs.
#[test]
fn sessions_of_a_killed_hub_are_cut_at_the_next_start() {
    let mut served = serve(r#"{ "commands": { "default": "allow" } }"#);
    initialize(&served, "before-the-kill");
    let open = sessions_when(&served, |s| s.iter().any(|s| s["client_name"] == "before-the-kill"));
    assert!(
        open.iter().any(|s| s["client_name"] == "before-the-kill" && s["ended_at"].is_null()),
        "{open:?}"
    );
    served.kill();
    served.restart();
    initialize(&served, "after-the-restart");
    let sessions = sessions_when(&served, |s| s.iter().any(|s| s["client_name"] == "after-the-restart"));
    let by_client = |name: &str| sessions.iter().find(|s| s["client_name"] == name).unwrap().clone();
    let cut = by_client("before-the-kill");
    assert_eq!(cut["end_reason"], "cut", "{sessions:?}");
    assert!(cut["ended_at"].as_i64().unwrap() >= cut["started_at"].as_i64().unwrap(), "{cut}");
    let live = by_client("after-the-restart");
    assert!(live["ended_at"].is_null() && live.get("end_reason").is_none(), "a live session was cut: {live}");

    let table = ledger_command(&served, &["ledger", "sessions"]);
    let line = table.lines().find(|l| l.contains("before-the-kill")).unwrap();
    assert!(line.ends_with("cut"), "{table}");
    let stats = ledger_command(&served, &["ledger", "stats"]);
    assert!(stats.contains("sessions: 2 (1 open, 0 closed, 1 cut)"), "{stats}");
    served.stop();
    let sessions = sessions_when(&served, |_| true);
    let ended: Vec<(String, String)> = sessions
        .iter()
        .map(|s| {
            (s["client_name"].as_str().unwrap().to_owned(), s["end_reason"].as_str().unwrap().to_owned())
        })
        .collect();
    assert!(ended.contains(&("after-the-restart".into(), "closed".into())), "{ended:?}");
    assert!(ended.contains(&("before-the-kill".into(), "cut".into())), "{ended:?}");
}

/// Requests the gateway refuses (a wrong token, a foreign Origin) are rows of the ledger, listed by
/// `ledger refusals` and counted by `ledger stats`; the token presented is nowhere in the ledger's files.
#[test]
fn refused_requests_are_recorded_without_the_token_presented() {
    let mut served = serve(r#"{ "commands": { "default": "allow" } }"#);
    let presented = "not-the-token-5c1e9a7b3d";
    let agent = [("User-Agent", "probe-agent/1.0")];
    for _ in 0..3 {
        let (status, _) =
            common::http(&format!("{}/health", served.api), "GET", Some(presented), &agent, None);
        assert_eq!(status, 401);
    }
    let foreign = [("Origin", "http://evil.example"), ("User-Agent", "probe-browser/2.0")];
    let (status, _) =
        common::http(&format!("{}/health", served.api), "GET", Some(&served.token), &foreign, None);
    assert_eq!(status, 403);

    let started = std::time::Instant::now();
    let refusals = loop {
        let listed: Value =
            serde_json::from_str(&ledger_command(&served, &["ledger", "refusals", "--json"])).unwrap();
        let rows = listed["refusals"].as_array().unwrap().clone();
        let counted: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
        if counted >= 4 || started.elapsed() > std::time::Duration::from_secs(15) {
            break rows;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let row =
        |code: &str| refusals.iter().find(|r| r["code"] == code).unwrap_or_else(|| panic!("{refusals:?}"));
    let wrong_token = row("unauthorized");
    assert_eq!(wrong_token["count"], 3, "{refusals:?}");
    assert_eq!(wrong_token["status"], 401);
    assert_eq!(wrong_token["method"], "GET");
    assert_eq!(wrong_token["path"], "/v1/health");
    assert_eq!(wrong_token["peer"], "127.0.0.1");
    assert_eq!(wrong_token["user_agent"], "probe-agent/1.0");
    assert!(wrong_token["host"].as_str().unwrap().starts_with("127.0.0.1:"), "{wrong_token}");
    let foreign_origin = row("origin_not_allowed");
    assert_eq!(foreign_origin["origin"], "http://evil.example");
    assert_eq!(foreign_origin["status"], 403);

    let table = ledger_command(&served, &["ledger", "refusals"]);
    assert!(table.contains("unauthorized") && table.contains("GET /v1/health"), "{table}");
    assert!(table.contains("origin_not_allowed") && table.contains("http://evil.example"), "{table}");
    let stats = ledger_command(&served, &["ledger", "stats"]);
    assert!(stats.contains("refused requests: 4 (unauthorized 3, origin_not_allowed 1)"), "{stats}");

    served.stop();
    let mut bytes = Vec::new();
    for suffix in ["", "-wal", "-shm", ".journal"] {
        if let Ok(b) = std::fs::read(format!("{}{suffix}", served.db().display())) {
            bytes.extend(b);
        }
    }
    assert!(!bytes.is_empty());
    for secret in [presented, served.token.as_str()] {
        let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
        assert!(!found, "a token presented is in the ledger's files");
    }
}

/// A call's records keep every file its command reads or writes with the policy's verdict on each, and
/// `ledger show` lists them (issue 13): an auditor sees what `cat` read and what `sort -o` wrote.
#[test]
fn ledger_show_lists_every_file_a_command_touched_with_its_verdict() {
    node_modules();
    let policy = r#"{ "commands": { "default": "allow", "rules": [] } }"#;
    let mut served = serve(policy);
    std::fs::write(served.project().join("notes.txt"), "b\na\n").unwrap();
    served.agent(json!([
        {"op": "call", "name": "shell", "arguments": {"command": "cat notes.txt && sort -o sorted.txt notes.txt"}},
    ]));
    served.stop();
    assert_eq!(std::fs::read_to_string(served.project().join("sorted.txt")).unwrap(), "a\nb\n");
    let calls = ledger_calls(&served);
    let call_id = calls[0]["call_id"].as_str().unwrap();
    let project = served.project().canonicalize().unwrap();
    let shown = ledger_command(&served, &["ledger", "show", call_id]);
    assert!(shown.contains("  files:"), "{shown}");
    let read = format!("read  {}/notes.txt via cat operand: allow", project.display());
    let written = format!("write {}/sorted.txt via sort -o: allow", project.display());
    assert!(shown.contains(&read), "{shown}");
    assert!(shown.contains(&written), "{shown}");
    let timeline: Value =
        serde_json::from_str(&ledger_command(&served, &["ledger", "show", "--json", call_id])).unwrap();
    let files = timeline["records"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["files"].as_array().filter(|f| !f.is_empty()))
        .unwrap_or_else(|| panic!("no record lists files: {timeline}"));
    assert!(files.iter().any(|f| f["access"] == "write" && f["via"] == "sort -o"), "{files:?}");
}
