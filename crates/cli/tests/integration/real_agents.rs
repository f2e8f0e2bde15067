//! Issue 52: the agents this project exists for, end to end. The real Claude Code and Codex binaries
//! (pinned in `tests/agents/package.json`) run against a scripted stand-in for their model APIs, set up
//! with `portcullis setup`, against `portcullis serve`. Each test reads what the agent handed its model
//! next: a command's output (a marker only the output can hold), a refusal's reason, and for Claude
//! Code's own `Bash` the hub's sandbox and the project's own policy.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, answer_first_pending, ledger_calls_when, ledger_show, portcullis, serve};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

/// Prints and reads run; `./escape.sh` (the project's own script) is allowed by name, so what it does
/// beyond the judge's sight meets the kernel's walls; anything else asks the operator.
const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell", "read", "write", "edit"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "prints", "pattern": [["echo", "ls", "cat", "pwd", "printf"]], "decision": "allow", "match": ["echo hi"] },
      { "id": "project-script", "pattern": ["escape.sh"], "decision": "allow", "match": ["./escape.sh"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 60 }
}"#;

/// The second project's own policy: the same prints, but `echo` is forbidden there.
const OTHER_POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell", "read", "write", "edit"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "no-echo-here", "pattern": ["echo"], "decision": "forbidden", "match": ["echo hi"] },
      { "id": "prints", "pattern": [["ls", "cat", "pwd"]], "decision": "allow", "match": ["ls"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] }
}"#;

fn agents_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents").canonicalize().unwrap();
    assert!(
        dir.join("node_modules/@anthropic-ai/claude-code").is_dir()
            && dir.join("node_modules/@openai/codex").is_dir(),
        "the real agents are not installed: run `npm ci --prefix tests/agents` (.ci/run does)"
    );
    dir
}

fn bin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_portcullis")).parent().unwrap().to_owned()
}

/// A served hub with `agent` set up the README's way (`portcullis setup <agent> --user --yes`).
fn hub_for(agent: &str) -> Served {
    agents_dir();
    let served = serve(POLICY);
    let base = served.path("");
    let out = portcullis(&base)
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
        .args(["setup", agent, "--user", "--yes"])
        .current_dir(served.project())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "setup {agent}: {}", String::from_utf8_lossy(&out.stderr));
    let doctor = portcullis(&base)
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
        .args(["doctor", agent])
        .current_dir(served.project())
        .output()
        .unwrap();
    assert!(
        doctor.status.success(),
        "doctor {agent} after setup:\n{}{}",
        String::from_utf8_lossy(&doctor.stdout),
        String::from_utf8_lossy(&doctor.stderr)
    );
    served
}

/// Runs the agent once in `cwd` on `script`; the driver's JSON (what the model received included).
fn run_agent(served: &Served, agent: &str, cwd: &Path, script: Value) -> Value {
    let base = served.path("");
    let file = base.join(format!("script-{}.json", Instant::now().elapsed().as_nanos()));
    std::fs::write(&file, script.to_string()).unwrap();
    let out = std::process::Command::new("node")
        .arg(agents_dir().join("run-agent.mjs"))
        .args(["--agent", agent, "--timeout", "90", "--prompt", "go on"])
        .arg("--home")
        .arg(base.join("home"))
        .arg("--cwd")
        .arg(cwd)
        .arg("--script")
        .arg(&file)
        .arg("--env")
        .arg(format!("PATH={}:/usr/local/bin:/usr/bin:/bin", bin_dir().display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "run-agent: {e}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(result["timed_out"], false, "{agent} timed out: {result}");
    result
}

/// The tool results the model received, each as text.
fn results(run: &Value) -> Vec<String> {
    run["tool_results"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool results: {run}"))
        .iter()
        .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned))
        .collect()
}

/// Answers the first pending approval (`once` or `deny`) through the operator API, in the background.
fn answer_when_asked(served: &Served, answer: &'static str) -> std::thread::JoinHandle<Value> {
    let (api, token) = (served.api.clone(), served.operator_token.clone());
    std::thread::spawn(move || answer_first_pending(&api, &token, answer))
}

/// The three things both agents must get through the gateway: a command's output, the operator's
/// refusal of a prompted command, and a secret's refusal, each with what the model needs to read.
fn gateway_calls_reach_the_model(agent: &str) {
    let served = hub_for(agent);
    let proj = served.project();
    std::fs::write(proj.join(".env"), "API_KEY=do-not-show").unwrap();
    let approver = answer_when_asked(&served, "deny");
    let run = run_agent(
        &served,
        agent,
        &proj,
        json!([
            // The output holds 42xyz; the command does not.
            { "tool": "__shell", "input": { "command": "printf '%s%s\\n' 42 xyz" } },
            { "tool": "__shell", "input": { "command": "make deploy" } },
            { "tool": "__read", "input": { "path": ".env" } },
            { "text": "done" }
        ]),
    );
    let pending = approver.join().unwrap();
    assert_eq!(pending["action"]["command"], "make deploy");
    let got = results(&run);
    assert_eq!(got.len(), 3, "{run}");
    assert!(got[0].contains("42xyz"), "{agent}'s model did not get the output: {}", got[0]);
    assert!(got[1].contains("operator") && got[1].contains("denied"), "{agent}: {}", got[1]);
    assert!(got[2].contains(".env") && !got[2].contains("do-not-show"), "{agent}: {}", got[2]);
    assert!(
        got[2].contains("denied") || got[2].contains("refused") || got[2].contains("never"),
        "{agent}: {}",
        got[2]
    );
    let calls = ledger_calls_when(&served, 3);
    assert_eq!(calls.len(), 3, "{calls:?}");
}

#[test]
fn claude_codes_model_gets_the_output_and_the_refusals() {
    gateway_calls_reach_the_model("claude");
}

#[test]
fn codexs_model_gets_the_output_and_the_refusals() {
    gateway_calls_reach_the_model("codex");
}

/// Claude Code's own `Bash` runs in the hub's sandbox: the output reaches the model, a write beyond the
/// roots fails with the wall named, and the ledger holds the output.
#[test]
fn claude_codes_own_bash_runs_in_the_hubs_sandbox() {
    let served = hub_for("claude");
    let proj = served.project();
    let outside = served.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let loot = outside.join("loot.txt");
    // The project's own script, allowed by name: the judge cannot see what it writes.
    std::fs::write(
        proj.join("escape.sh"),
        format!("#!/bin/sh\necho \"ran-$((6*7))\"\necho pwned > '{}'\necho \"status $?\"\n", loot.display()),
    )
    .unwrap();
    std::fs::set_permissions(proj.join("escape.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    std::fs::write(proj.join("notes.txt"), "notes-for-the-model").unwrap();
    let run = run_agent(
        &served,
        "claude",
        &proj,
        json!([
            { "tool": "^Bash$", "input": { "command": "./escape.sh", "description": "run the script" } },
            { "tool": "^Read$", "input": { "file_path": proj.join("notes.txt") } },
            { "tool": "__shell", "input": { "command": "printf 'via-%s\\n' mcp" } },
            { "text": "done" }
        ]),
    );
    let got = results(&run);
    assert_eq!(got.len(), 3, "{run}");
    assert!(got[0].contains("ran-42"), "the model did not get the output: {}", got[0]);
    assert!(!loot.exists(), "the write beyond the roots reached the disk");
    assert!(got[0].contains("sandbox refused"), "the wall is not named: {}", got[0]);
    assert!(got[0].contains(&loot.display().to_string()), "the refused path is not named: {}", got[0]);
    assert!(got[1].contains("notes-for-the-model"), "{}", got[1]);
    assert!(got[2].contains("via-mcp"), "{}", got[2]);
    let calls = ledger_calls_when(&served, 3);
    let by_tool =
        |tool: &str| calls.iter().find(|c| c["tool"] == tool).unwrap_or_else(|| panic!("{tool}: {calls:?}"));
    // Claude Code's own Bash, run by the hub: the row holds the output.
    let bash = calls.iter().find(|c| c["owner"] == "claude-code hook" && c["tool"] == "shell").unwrap();
    assert_eq!(bash["status"], "finished", "{calls:?}");
    let shown = ledger_show(&served, bash["call_id"].as_str().unwrap());
    assert!(shown.contains("ran-42"), "the ledger lacks the output: {shown}");
    // Claude Code's own Read: its PostToolUse report ends the row with what Claude Code got.
    let read = by_tool("read");
    assert_eq!(read["status"], "finished", "{calls:?}");
    let shown = ledger_show(&served, read["call_id"].as_str().unwrap());
    assert!(
        shown.contains("Claude Code ran it and reported") && shown.contains("notes-for-the-model"),
        "{shown}"
    );
    // One Claude Code session is one ledger session: the hook's rows and the relay's MCP row.
    let sessions: std::collections::BTreeSet<&str> =
        calls.iter().map(|c| c["session_id"].as_str().unwrap()).collect();
    assert_eq!(sessions.len(), 1, "{calls:?}");
    assert!(sessions.iter().all(|s| s.starts_with("claude-")), "{sessions:?}");
}

/// One hub, two Claude Code sessions in two projects: each call is judged by its own project's policy.
#[test]
fn two_claude_code_sessions_are_judged_by_their_own_projects() {
    let served = hub_for("claude");
    let proj = served.project();
    let other = served.path("other");
    std::fs::create_dir_all(other.join(".portcullis")).unwrap();
    std::fs::write(other.join(".portcullis/policy.json"), OTHER_POLICY).unwrap();
    let script = json!([
        { "tool": "^Bash$", "input": { "command": "echo hi; printf 'hi-%s\\n' 2" } },
        { "text": "done" }
    ]);
    let here = results(&run_agent(&served, "claude", &proj, script.clone()));
    assert!(here[0].contains("hi-2"), "the hub's project allows echo: {}", here[0]);
    let there = results(&run_agent(&served, "claude", &other, script));
    assert!(!there[0].contains("hi-2"), "the other project forbids echo: {}", there[0]);
    assert!(there[0].contains("no-echo-here"), "the refusal names the other project's rule: {}", there[0]);
    assert!(there[0].contains(&other.display().to_string()), "the refusal names the project: {}", there[0]);
    let calls = ledger_calls_when(&served, 2);
    let statuses: Vec<&str> = calls.iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["blocked", "finished"], "{calls:?}");
    // Each session's row names the project it worked in (the sessions list and Live show it).
    let out = portcullis(&served.path(""))
        .args(["ledger", "sessions", "--json", "--db"])
        .arg(served.db())
        .output()
        .unwrap();
    let sessions: Value = serde_json::from_slice(&out.stdout).unwrap();
    let folders: std::collections::BTreeSet<String> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"].as_str().is_some_and(|id| id.starts_with("claude-")))
        .filter_map(|s| s["cwd"].as_str().map(str::to_owned))
        .collect();
    let want: std::collections::BTreeSet<String> =
        [proj.display().to_string(), other.display().to_string()].into_iter().collect();
    assert_eq!(folders, want, "{sessions}");
}
