//! `portcullis hook claude` as Claude Code runs it: a PreToolUse input on stdin, the hook answer on
//! stdout. Without a hub it judges with the project's policy and records in the ledger; with one it asks
//! the hub, whose operator answers (or not, within the wait); malformed input is denied.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::{answer_first_pending, http, ledger_calls_when, node_modules, portcullis, serve};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "claude", "allow": ["shell", "read", "write", "edit", "mcp:docs:search"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "listing", "pattern": [["ls", "echo", "git", "cd"]], "decision": "allow", "match": ["ls"] },
      { "id": "remove", "pattern": ["rm"], "decision": "forbidden", "match": ["rm x"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 30 }
}"#;

/// Runs the hook with this input; returns (decision, reason, exit code).
fn hook(base: &Path, args: &[&str], input: &str) -> (String, String, i32) {
    let (decision, reason, code, _) = hook_whole(base, args, input);
    (decision, reason, code)
}

/// [`hook`], with the whole answer Claude Code gets.
fn hook_whole(base: &Path, args: &[&str], input: &str) -> (String, String, i32, Value) {
    let mut child = portcullis(base)
        .args(["hook", "claude"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    // Issue 52: the hook's judge runs no commands; it never says this machine cannot confine them.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("cannot be confined"), "{said}");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    if v == json!({}) {
        // No decision: Claude Code's own permission flow decides.
        return ("pass".to_owned(), String::new(), out.status.code().unwrap(), v);
    }
    let o = &v["hookSpecificOutput"];
    assert_eq!(o["hookEventName"], "PreToolUse");
    (
        o["permissionDecision"].as_str().unwrap().to_owned(),
        o["permissionDecisionReason"].as_str().unwrap().to_owned(),
        out.status.code().unwrap(),
        v.clone(),
    )
}

/// Runs the command Claude Code would run for an allowed `Bash` call (the hook's `updatedInput`), in
/// `cwd` with bash, as Claude Code's shell does: its stdout, stderr and status.
pub fn run_as_claude_code(base: &Path, cwd: &Path, answer: &Value) -> (String, String, i32) {
    let command = answer["hookSpecificOutput"]["updatedInput"]["command"]
        .as_str()
        .unwrap_or_else(|| panic!("the hook did not replace the command: {answer}"));
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("{command}\n__status=$?; echo \"[folder $PWD]\"; exit $__status"))
        .current_dir(cwd)
        .env("HOME", base.join("home"))
        // Claude Code's shell does not know the hook's config folder: the command names it.
        .env_remove("PORTCULLIS_CONFIG_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn input(cwd: &Path, tool: &str, tool_input: Value) -> String {
    json!({
        "session_id": "claude-session-1",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
    })
    .to_string()
}

#[test]
fn without_a_hub_the_policy_decides_and_the_ledger_records() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), POLICY).unwrap();
    let db = base.join("hook.db");
    let db_arg = db.to_str().unwrap();
    let cases = [
        ("Bash", json!({"command": "git status && ls", "description": "status"}), "allow", "rule `listing`"),
        ("Bash", json!({"command": "ls; rm -rf ~"}), "deny", "rule `remove`"),
        ("Bash", json!({"command": "make deploy"}), "ask", "no rule matches"),
        // Claude Code runs it in its own shell, with its user's whole environment: an assignment there
        // reaches `git` if the variable was inherited (in the hub's sandbox it would be inert).
        ("Bash", json!({"command": "KUBECONFIG=/tmp/k; git status"}), "ask", "KUBECONFIG"),
        (
            "Write",
            json!({"file_path": base.join("outside.txt"), "content": "x"}),
            "deny",
            "outside every write root",
        ),
        (
            "Edit",
            json!({"file_path": proj.join("src/new.rs"), "old_string": "a", "new_string": "b"}),
            "allow",
            "allows",
        ),
        ("Read", json!({"file_path": proj.join(".env")}), "deny", ".env"),
        ("Grep", json!({"pattern": "x"}), "allow", "allows"),
        ("mcp__docs__search", json!({"q": "x"}), "ask", "no policy declares the server"),
        // Not governed by this policy (no grant names them, no declared server): Claude Code decides.
        ("mcp__other__tool", json!({}), "pass", ""),
        ("WebFetch", json!({"url": "https://example.com", "prompt": "x"}), "pass", ""),
    ];
    for (tool, tool_input, want, why) in &cases {
        let (decision, reason, code) =
            hook(&base, &["--db", db_arg], &input(&proj, tool, tool_input.clone()));
        assert_eq!(code, 0);
        assert_eq!(decision, *want, "{tool} {tool_input}: {reason}");
        assert!(reason.contains(why), "{tool} {tool_input}: {reason}");
        // Issue 52: a path rule's refusal says its words once, never as "the default (…)".
        assert!(!reason.contains("the default ("), "{tool} {tool_input}: {reason}");
    }
    let rows = portcullis(&base)
        .args(["ledger", "query", "--json", "--limit", "100", "--db", db_arg])
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&rows.stdout).unwrap();
    let calls = rows["calls"].as_array().unwrap();
    let decided = cases.iter().filter(|c| c.2 != "pass").count();
    assert_eq!(calls.len(), decided, "every decision is recorded: {rows}");
    assert!(
        calls
            .iter()
            .all(|c| c["session_id"] == "claude-claude-session-1" && c["owner"] == "claude-code hook")
    );
    // An `ask` is recorded as what happened: handed to Claude Code's own prompt (issue 10), and replaying
    // the ledger against the same policy changes nothing (it was, and is, a prompt).
    let asked: Vec<String> = calls
        .iter()
        .filter(|c| c["decided_by"] == "default")
        .map(|c| {
            let out = portcullis(&base)
                .args(["ledger", "show", "--json", "--db", db_arg, c["call_id"].as_str().unwrap()])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .filter(|t| t.contains("handed to the agent's own prompt"))
        .collect();
    assert_eq!(asked.len(), 3, "the three asks (make deploy, KUBECONFIG, mcp__docs__search): {asked:?}");
    let replay = portcullis(&base)
        .args(["policy", "replay", "--fail-on-change", "--db", db_arg, "--policy"])
        .arg(proj.join(".portcullis/policy.json"))
        .current_dir(&proj)
        .output()
        .unwrap();
    assert!(
        replay.status.success(),
        "{}{}",
        String::from_utf8_lossy(&replay.stdout),
        String::from_utf8_lossy(&replay.stderr)
    );
}

#[test]
fn malformed_input_is_denied_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let db = base.join("hook.db");
    for (text, why) in [
        ("not json", "not JSON"),
        (r#"{"cwd": "/tmp", "hook_event_name": "PreToolUse"}"#, "tool_name"),
        (r#"{"tool_name": "Bash", "cwd": "relative", "tool_input": {"command": "ls"}}"#, "absolute"),
        (r#"{"tool_name": "Bash", "cwd": "/tmp", "hook_event_name": "Stop"}"#, "PostToolUse"),
        (r#"{"tool_name": "Bash", "cwd": "/tmp", "tool_input": {}}"#, "Bash needs tool_input.command"),
    ] {
        let (decision, reason, code) = hook(&base, &["--db", db.to_str().unwrap()], text);
        assert_eq!(code, 0);
        assert_eq!(decision, if why.starts_with("Bash needs") { "ask" } else { "deny" }, "{text}: {reason}");
        assert!(reason.contains(why), "{text}: {reason}");
    }
}

#[test]
fn with_a_hub_the_operator_answers_and_the_hub_records() {
    node_modules();
    let served = serve(POLICY);
    let base = served.path("");
    let proj = served.project();
    // Allowed by a rule: no operator needed. Claude Code runs the ticket command in its place, and the
    // hub runs `ls` in its sandbox; the output, status and folder come back as from the command itself.
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    std::fs::write(proj.join("sub/listed.txt"), "x").unwrap();
    let (decision, reason, _, answer) = hook_whole(
        &base,
        &[],
        &input(&proj, "Bash", json!({"command": "cd sub && ls", "description": "list"})),
    );
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("runs in Portcullis's sandbox"), "{reason}");
    assert_eq!(answer["hookSpecificOutput"]["updatedInput"]["description"], "list", "{answer}");
    let (stdout, stderr, status) = run_as_claude_code(&base, &proj, &answer);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(stdout, format!("listed.txt\n[folder {}]\n", proj.join("sub").display()), "{stderr}");
    // The ticket ran once: the same command again runs nothing.
    let (_, stderr, status) = run_as_claude_code(&base, &proj, &answer);
    assert_ne!(status, 0);
    assert!(stderr.contains("unknown, used or expired"), "{stderr}");
    // A tool the policy does not govern gets no decision from the hub either.
    let (decision, _, _) = hook(&base, &[], &input(&proj, "TodoWrite", json!({"todos": []})));
    assert_eq!(decision, "pass");
    // A prompt goes to the hub's operator, who allows it.
    let approver = {
        let (api, token) = (served.api.clone(), served.operator_token.clone());
        std::thread::spawn(move || answer_first_pending(&api, &token, "once"))
    };
    let (decision, reason, _, answer) =
        hook_whole(&base, &[], &input(&proj, "Bash", json!({"command": "make deploy"})));
    let pending = approver.join().unwrap();
    assert_eq!(pending["action"]["command"], "make deploy");
    assert_eq!(pending["tool"], "shell");
    // Issue 52: the card's walls are the ones the command gets: the hub runs it in its sandbox.
    let sandbox = &pending["action"]["sandbox"];
    assert_eq!(sandbox["enforcement"]["state"], "confined", "{pending}");
    assert_eq!(sandbox["write"], json!([proj]), "{pending}");
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("operator api"), "{reason}");
    let (_, stderr, status) = run_as_claude_code(&base, &proj, &answer);
    assert_eq!(status, 2, "make's own status: {stderr}");
    assert!(stderr.contains("No rule to make target"), "{stderr}");
    // Nobody answers within --wait: denied, as a timeout that says whose wait ran out.
    let (decision, reason, _) =
        hook(&base, &["--wait", "1"], &input(&proj, "Bash", json!({"command": "make other"})));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("no answer within 1 s (the Claude Code hook's wait ran out)"), "{reason}");
    let (_, body) =
        http(&format!("{}/approvals", served.api), "GET", Some(&served.operator_token), &[], None);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["approvals"], json!([]));
    let calls = ledger_calls_when(&served, 3);
    let deciders: Vec<(&str, &str)> = calls
        .iter()
        .rev()
        .map(|c| (c["status"].as_str().unwrap(), c["decided_by"].as_str().unwrap()))
        .collect();
    assert_eq!(deciders, [("finished", "rule"), ("finished", "operator"), ("blocked", "approval_timeout")]);
    // The approvals table says how each prompt ended: answered by the API's operator, or timed out at
    // the hook's wait.
    let timeline = |call: &Value| -> Value {
        let out = portcullis(&base)
            .args(["ledger", "show", "--json", "--db"])
            .arg(served.db())
            .arg(call["call_id"].as_str().unwrap())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let answered = timeline(&calls[1]);
    assert_eq!(answered["approvals"][0]["outcome"], "approved_once", "{answered}");
    assert_eq!(answered["approvals"][0]["operator"], "api", "{answered}");
    // The hook's wait ended the card as a timeout that says so (issue 52: one deadline).
    let timed_out = timeline(&calls[0]);
    assert_eq!(timed_out["approvals"][0]["outcome"], "timed_out", "{timed_out}");
    assert_eq!(
        timed_out["approvals"][0]["note"], "no answer within 1 s (the Claude Code hook's wait ran out)",
        "{timed_out}"
    );
    // Replaying the same policy changes nothing: the call that timed out was a prompt, not `forbidden`.
    let replay = portcullis(&base)
        .args(["policy", "replay", "--fail-on-change", "--db"])
        .arg(served.db())
        .arg("--policy")
        .arg(served.policy_file())
        .current_dir(&proj)
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stdout));
}

#[test]
fn an_agents_embedded_hub_answers_the_hook_and_keeps_its_rows() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), POLICY).unwrap();
    let db = base.join("embedded.db");
    // An agent spawned `portcullis mcp` with no hub running: its embedded hub holds the ledger.
    let scenario = json!({
        "command": env!("CARGO_BIN_EXE_portcullis"),
        "args": ["mcp", "--project", proj, "--db", db],
        "env": { "PORTCULLIS_CONFIG_DIR": base.join("config"), "HOME": base.join("home") },
        "steps": [ {"op": "call", "name": "shell", "arguments": {"command": "echo agent"}}, {"op": "wait", "ms": 4000} ]
    });
    let agent = std::process::Command::new("node")
        .arg(common::interop_dir().join("client.mjs"))
        .arg(scenario.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !base.join("config/hub.json").exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "the embedded hub was not published");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The hook of the same user finds it, instead of failing on the locked ledger.
    let (decision, reason, _) = hook(&base, &[], &input(&proj, "Bash", json!({"command": "ls"})));
    assert_eq!(decision, "allow", "{reason}");
    let (decision, reason, _) = hook(&base, &[], &input(&proj, "Bash", json!({"command": "make deploy"})));
    assert_eq!(decision, "ask", "nobody can answer an embedded hub's prompts: {reason}");
    let out = agent.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(!base.join("config/hub.json").exists(), "the runtime file goes with the embedded hub");
    let rows = portcullis(&base).args(["ledger", "query", "--json", "--db"]).arg(&db).output().unwrap();
    let rows: Value = serde_json::from_slice(&rows.stdout).unwrap();
    let owners: Vec<&str> =
        rows["calls"].as_array().unwrap().iter().map(|c| c["owner"].as_str().unwrap()).collect();
    assert_eq!(owners.iter().filter(|o| **o == "claude-code hook").count(), 2, "{rows}");
    assert_eq!(owners.len(), 3, "{rows}");
}

/// Issue 9: the hook no longer answers allow for Claude Code writing its own policy or a git hook, and
/// refuses reads of the hub's credentials.
#[test]
fn the_hook_guards_policy_files_git_hooks_and_the_hubs_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), POLICY).unwrap();
    let config = base.join("config");
    let db = base.join("hook.db");
    let db_arg = db.to_str().unwrap();
    let open = r#"{"commands": {"default": "allow"}}"#;
    let cases = [
        (
            "Write",
            json!({"file_path": proj.join(".portcullis/policy.json"), "content": open}),
            "ask",
            "explicit approval",
        ),
        (
            "Edit",
            json!({"file_path": proj.join(".portcullis/policy.json"), "old_string": "prompt", "new_string": "allow"}),
            "ask",
            "policy",
        ),
        ("Bash", json!({"command": "echo '{}' > .portcullis/policy.json"}), "ask", "policy"),
        // The word after the redirection target is git's argument (it names the policy), not the target.
        ("Bash", json!({"command": "git status >/dev/null /../.portcullis/policy.json"}), "ask", "policy"),
        (
            "Write",
            json!({"file_path": proj.join(".git/hooks/pre-commit"), "content": "#!/bin/sh\n"}),
            "ask",
            "git",
        ),
        ("Read", json!({"file_path": config.join("token")}), "deny", "never read or written"),
        ("Bash", json!({"command": format!("ls {}", config.display())}), "deny", "never read or written"),
    ];
    for (tool, tool_input, decision, why) in cases {
        let (got, reason, code) = hook(&base, &["--db", db_arg], &input(&proj, tool, tool_input.clone()));
        assert_eq!(code, 0);
        assert_eq!(got, decision, "{tool} {tool_input}: {reason}");
        assert!(reason.contains(why), "{tool} {tool_input}: {reason}");
    }
    assert!(std::fs::read_to_string(proj.join(".portcullis/policy.json")).unwrap() == POLICY);
}

/// Issue 10: with the README's `"matcher": "*"` and the shipped default policy, Claude Code's own tools
/// that the policy does not govern get no decision (they were denied: "Tool todowrite is not granted"),
/// while shell, file and declared tools are still judged.
#[test]
fn tools_the_policy_does_not_govern_are_left_to_claude_code() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let db = base.join("hook.db");
    let db_arg = db.to_str().unwrap();
    let cases = [
        ("TodoWrite", json!({"todos": []}), "pass"),
        ("Task", json!({"description": "x", "prompt": "y"}), "pass"),
        ("ExitPlanMode", json!({"plan": "p"}), "pass"),
        ("BashOutput", json!({"bash_id": "1"}), "pass"),
        ("KillShell", json!({"shell_id": "1"}), "pass"),
        ("SlashCommand", json!({"command": "/help"}), "pass"),
        ("WebFetch", json!({"url": "https://example.com", "prompt": "x"}), "pass"),
        ("WebSearch", json!({"query": "x"}), "pass"),
        ("mcp__github__create_issue", json!({"title": "x"}), "pass"),
        ("Bash", json!({"command": "git status"}), "allow"),
        ("Bash", json!({"command": "rm -rf build"}), "ask"),
        ("Read", json!({"file_path": proj.join("README.md")}), "allow"),
        ("Write", json!({"file_path": base.join("elsewhere.txt"), "content": "x"}), "deny"),
    ];
    for (tool, tool_input, want) in &cases {
        let (decision, reason, code) =
            hook(&base, &["--db", db_arg], &input(&proj, tool, tool_input.clone()));
        assert_eq!(code, 0);
        assert_eq!(decision, *want, "{tool} {tool_input}: {reason}");
    }
}
