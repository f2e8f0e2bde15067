//! `portcullis serve` as a new user starts it, with real MCP agents against it: the official TypeScript
//! SDK client and the MCP Inspector CLI (from `tests/interop/node_modules`, installed by `.ci/run`).
//! Covers listing, allowed / denied / approved calls with their ledger rows, the token and Origin
//! guard, loopback-only binding, hot reload (broken and good policies) and a clean shutdown.
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::{
    http, interop_dir, ledger_calls, ledger_calls_when, node_modules, portcullis, serve, text_of,
};
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell", "read", "write", "edit"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "printing", "pattern": [["echo", "ls", "cat"]], "decision": "allow", "match": ["echo hi"] },
      { "id": "remove", "pattern": ["rm"], "decision": "forbidden", "justification": "deletes files",
        "match": ["rm -rf x"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 20 }
}
"#;

#[test]
fn an_sdk_agent_lists_calls_and_is_refused_with_reasons() {
    node_modules();
    let mut served = serve(POLICY);
    assert!(served.mcp_url.starts_with("http://127.0.0.1:"), "{}", served.mcp_url);
    let report = served.agent(json!([
        {"op": "list"},
        {"op": "call", "name": "shell", "arguments": {"command": "echo hello-from-agent"}},
        {"op": "call", "name": "shell", "arguments": {"command": "echo hi && rm -rf /"}},
        {"op": "call", "name": "write", "arguments": {"path": "../escape.txt", "content": "x"}},
        {"op": "call", "name": "search_tools", "arguments": {"query": "x"}},
        {"op": "call", "name": "shell", "arguments": {"command": 42}},
    ]));
    assert_eq!(report["server"]["name"], "portcullis");
    let tools = report["results"][0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["shell", "read", "write", "edit"]);
    let read = tools.iter().find(|t| t["name"] == "read").unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[0]["annotations"]["destructiveHint"], true);
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["command"]));

    let allowed = &report["results"][1]["result"];
    assert_eq!(allowed["isError"], false, "{allowed}");
    assert!(text_of(allowed).contains("hello-from-agent"));
    // Issue 52: agents hand their model the structured result when there is one: it holds the output
    // (not only its size) and the exit code.
    let structured = &allowed["structuredContent"];
    assert_eq!(structured["stdout"], "hello-from-agent\n", "{allowed}");
    assert_eq!(structured["stderr"], "", "{allowed}");
    assert_eq!(structured["exit_code"], 0, "{allowed}");
    let denied = &report["results"][2]["result"];
    assert_eq!(denied["isError"], true);
    assert!(
        text_of(denied).contains("execution_denied") && text_of(denied).contains("rule `remove`"),
        "{denied}"
    );
    // A refusal's structured result carries the readable reason the text has.
    let reason = denied["structuredContent"]["message"].as_str().unwrap_or_default();
    assert!(reason.contains("execution_denied") && reason.contains("rule `remove`"), "{denied}");
    let escape = &report["results"][3]["result"];
    assert_eq!(escape["isError"], true);
    assert!(text_of(escape).contains("outside every write root"), "{escape}");
    assert!(!served.path("escape.txt").exists());
    let hidden = &report["results"][4]["result"];
    assert_eq!(hidden["isError"], true);
    assert!(text_of(hidden).contains("tool_denied"), "a registered tool the grants hide: {hidden}");
    let invalid = &report["results"][5]["result"];
    assert!(text_of(invalid).contains("validation_failed"), "{invalid}");

    let out = served.stop();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Every call has its row, in one session named after the client.
    let calls = ledger_calls(&served);
    assert_eq!(calls.len(), 5, "{calls:#?}");
    let statuses: Vec<(&str, &str)> = calls
        .iter()
        .rev()
        .map(|c| (c["status"].as_str().unwrap(), c["decided_by"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("finished", "rule"),
            ("blocked", "rule"),
            ("blocked", "default"),
            ("blocked", "grants"),
            ("blocked", "validator")
        ]
    );
    assert!(calls.iter().all(|c| c["session_id"] == calls[0]["session_id"]));
    assert!(
        calls.iter().all(|c| c["owner"].as_str().unwrap().starts_with("interop-sdk-client")),
        "{calls:#?}"
    );
    // The hub's runtime file is gone after a clean stop, and the ledger is healthy.
    assert!(!served.path("config/hub.json").exists());
    let check =
        portcullis(served.dir.path()).args(["ledger", "check", "--db"]).arg(served.db()).output().unwrap();
    assert!(check.status.success());
}

#[test]
fn prompts_wait_for_an_approver_and_time_out_as_timeouts() {
    node_modules();
    let served = serve(&POLICY.replace("\"timeout_seconds\": 20", "\"timeout_seconds\": 3"));
    // A scripted approver answers through the operator API while the agent waits.
    let approver = {
        let api = served.api.clone();
        let token = served.operator_token.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut answered = Vec::new();
            while answered.len() < 2 && started.elapsed() < Duration::from_secs(20) {
                let (status, body) = http(&format!("{api}/approvals"), "GET", Some(&token), &[], None);
                assert_eq!(status, 200, "{body}");
                let v: Value = serde_json::from_str(&body).unwrap();
                for p in v["approvals"].as_array().unwrap() {
                    let id = p["id"].as_u64().unwrap();
                    let command = p["action"]["command"].as_str().unwrap().to_owned();
                    let answer = if command.contains("allowed") { "once" } else { "deny" };
                    let (status, body) = http(
                        &format!("{api}/approvals/{id}"),
                        "POST",
                        Some(&token),
                        &[],
                        Some(
                            &json!({"answer": answer, "arguments_sha256": p["arguments_sha256"]}).to_string(),
                        ),
                    );
                    assert_eq!(status, 200, "{body}");
                    // A second answer loses.
                    let (again, _) = http(
                        &format!("{api}/approvals/{id}"),
                        "POST",
                        Some(&token),
                        &[],
                        Some(
                            &json!({"answer": "once", "arguments_sha256": p["arguments_sha256"]}).to_string(),
                        ),
                    );
                    assert_eq!(again, 409);
                    answered.push(command);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            answered
        })
    };
    let report = served.agent(json!([
        {"op": "call", "name": "shell", "arguments": {"command": "touch allowed-file"}},
        {"op": "call", "name": "shell", "arguments": {"command": "touch refused-file"}},
    ]));
    let answered = approver.join().unwrap();
    assert_eq!(answered.len(), 2);
    assert_eq!(report["results"][0]["result"]["isError"], false, "{report}");
    assert!(served.project().join("allowed-file").exists());
    let refused = &report["results"][1]["result"];
    assert!(text_of(refused).contains("denied by the operator (api)"), "{refused}");
    assert!(!served.project().join("refused-file").exists());
    // Nobody answers this one: it is denied as a timeout, not as an operator's denial.
    let report =
        served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "touch unanswered"}}]));
    let timed_out = &report["results"][0]["result"];
    assert!(text_of(timed_out).contains("approval timeout"), "{timed_out}");
    assert!(!served.project().join("unanswered").exists());
    let calls = ledger_calls_when(&served, 3);
    let deciders: Vec<&str> = calls.iter().rev().map(|c| c["decided_by"].as_str().unwrap()).collect();
    assert_eq!(deciders, ["operator", "operator", "approval_timeout"]);
}

#[test]
fn the_guard_refuses_missing_and_wrong_tokens_and_foreign_origins() {
    node_modules();
    let served = serve(POLICY);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let accept = ("Accept", "application/json, text/event-stream");
    let (status, _) = http(&served.mcp_url, "POST", None, &[accept], Some(&init));
    assert_eq!(status, 401);
    let (status, _) =
        http(&served.mcp_url, "POST", Some("not-the-token-at-all-0000000000000000"), &[accept], Some(&init));
    assert_eq!(status, 401);
    let (status, _) = http(
        &served.mcp_url,
        "POST",
        Some(&served.token),
        &[accept, ("Origin", "http://evil.example")],
        Some(&init),
    );
    assert_eq!(status, 403);
    let (status, _) = http(&format!("{}/approvals", served.api), "GET", None, &[], None);
    assert_eq!(status, 401);
    let (status, _) =
        http(&format!("{}/approvals", served.api), "GET", Some(&served.operator_token), &[], None);
    assert_eq!(status, 200);
    // The token is accepted, with no Origin (non-browser clients) or the hub's own.
    let (status, body) = http(&format!("{}/health", served.api), "GET", Some(&served.token), &[], None);
    assert_eq!(status, 200, "{body}");
    let own = served.mcp_url.trim_end_matches("/mcp").to_owned();
    let (status, _) =
        http(&served.mcp_url, "POST", Some(&served.token), &[accept, ("Origin", &own)], Some(&init));
    assert_eq!(status, 200);
    // The SDK client without the token gets a 401 error, not tools.
    let (report, code) = served.client(json!({"url": served.mcp_url, "steps": [{"op": "list"}]}));
    assert_eq!(code, 3);
    assert_eq!(report["code"], 401, "{report}");
    // The token file is owner-only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(served.path("config/token")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A non-loopback address is refused unless asked for.
    let out = portcullis(served.dir.path())
        .args(["serve", "--listen", "0.0.0.0", "--port", "0", "--approver", "none", "--db"])
        .arg(served.path("other.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));
}

#[test]
fn policy_changes_reload_and_broken_ones_are_rejected() {
    node_modules();
    let mut served = serve(POLICY);
    let before = served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo one"}}]));
    assert_eq!(before["results"][0]["result"]["isError"], false);
    // A broken policy: the previous one stays in force.
    std::fs::write(served.policy_file(), "{ \"commands\": { \"rules\": [ ").unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let still = served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo two"}}]));
    assert_eq!(still["results"][0]["result"]["isError"], false, "{still}");
    // A good change: `echo` is forbidden now and `read` is no longer granted; a connected agent is told.
    let stricter = POLICY
        .replace(
            r#""pattern": [["echo", "ls", "cat"]], "decision": "allow""#,
            r#""pattern": [["echo", "ls", "cat"]], "decision": "forbidden""#,
        )
        .replace(r#""allow": ["shell", "read", "write", "edit"]"#, r#""allow": ["shell", "write", "edit"]"#);
    let writer = {
        let file = served.policy_file();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            std::fs::write(file, stricter).unwrap();
        })
    };
    let report = served.agent(json!([
        {"op": "list"},
        {"op": "wait", "ms": 6000},
        {"op": "list"},
        {"op": "call", "name": "shell", "arguments": {"command": "echo three"}},
    ]));
    writer.join().unwrap();
    assert!(report["listChanged"].as_u64().is_some_and(|n| n >= 1), "{report}");
    let names = |i: usize| -> Vec<String> {
        report["results"][i]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(names(0).contains(&"read".to_owned()));
    // (`wait` steps give no result.)
    assert!(!names(1).contains(&"read".to_owned()), "{:?}", names(1));
    let after = &report["results"][2]["result"];
    assert_eq!(after["isError"], true, "{after}");
    assert!(text_of(after).contains("rule `printing`"));
    let out = served.stop();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("policy change rejected"), "{stderr}");
    assert!(stderr.contains("policy.json:1:"), "the error names file, line and column: {stderr}");
}

#[test]
fn the_inspector_cli_lists_and_calls_through_the_gateway() {
    let modules = node_modules();
    let served = serve(POLICY);
    let inspector = modules.join("@modelcontextprotocol/inspector");
    assert!(inspector.is_dir());
    let run = |extra: &[&str]| -> (Value, i32) {
        let out = Command::new("npx")
            .args([
                "--no-install",
                "@modelcontextprotocol/inspector",
                "--cli",
                "--format",
                "json",
                "--stored-auth-only",
            ])
            .arg(&served.mcp_url)
            .args(["--header", &format!("Authorization: Bearer {}", served.token)])
            .args(extra)
            .current_dir(interop_dir())
            .env("HOME", served.path("home"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let v = serde_json::from_str(text.trim())
            .unwrap_or_else(|_| json!({"raw": text, "stderr": String::from_utf8_lossy(&out.stderr)}));
        (v, out.status.code().unwrap_or(-1))
    };
    let (listed, code) = run(&["--method", "tools/list"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 4, "{listed}");
    let (called, code) =
        run(&["--method", "tools/call", "--tool-name", "shell", "--tool-arg", "command=echo from-inspector"]);
    assert_eq!(code, 0, "{called}");
    assert!(called.to_string().contains("from-inspector"), "{called}");
    let (denied, _) =
        run(&["--method", "tools/call", "--tool-name", "shell", "--tool-arg", "command=rm -rf x"]);
    assert!(denied.to_string().contains("rule `remove`"), "{denied}");
    let calls = ledger_calls_when(&served, 2);
    assert!(calls.iter().any(|c| c["owner"].as_str().unwrap().starts_with("inspector-cli")), "{calls:#?}");
}

#[test]
fn portcullis_mcp_relays_to_the_running_hub() {
    node_modules();
    let served = serve(POLICY);
    let (report, code) = served.client(json!({
        "clientName": "stdio-only-agent",
        "command": env!("CARGO_BIN_EXE_portcullis"),
        "args": ["mcp"],
        "env": { "PORTCULLIS_CONFIG_DIR": served.path("config"), "HOME": served.path("home") },
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "shell", "arguments": {"command": "echo through-the-relay"}},
            {"op": "call", "name": "shell", "arguments": {"command": "rm -rf ."}},
        ]
    }));
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["results"][0]["tools"].as_array().unwrap().len(), 4);
    assert!(text_of(&report["results"][1]["result"]).contains("through-the-relay"));
    assert!(text_of(&report["results"][2]["result"]).contains("rule `remove`"));
    // The hub's ledger has the calls, under the agent's own name.
    let calls = ledger_calls_when(&served, 2);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert!(calls.iter().all(|c| c["owner"].as_str().unwrap().starts_with("stdio-only-agent")), "{calls:#?}");
    // The Inspector CLI, spawning `portcullis mcp` as its stdio server.
    let out = Command::new("npx")
        .args(["--no-install", "@modelcontextprotocol/inspector", "--cli", "--format", "json"])
        .arg(env!("CARGO_BIN_EXE_portcullis"))
        .args([
            "mcp",
            "--method",
            "tools/call",
            "--tool-name",
            "shell",
            "--tool-arg",
            "command=echo inspector-stdio",
        ])
        .current_dir(interop_dir())
        .env("PORTCULLIS_CONFIG_DIR", served.path("config"))
        .env("HOME", served.path("home"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("inspector-stdio"), "{stdout}");
}

#[test]
fn portcullis_mcp_runs_an_embedded_hub_when_none_runs() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(base.join("proj/.portcullis")).unwrap();
    std::fs::write(base.join("proj/.portcullis/policy.json"), POLICY).unwrap();
    let db = base.join("embedded.db");
    let scenario = json!({
        "clientName": "embedded-agent",
        "command": env!("CARGO_BIN_EXE_portcullis"),
        "args": ["mcp", "--project", base.join("proj"), "--db", db],
        "env": { "PORTCULLIS_CONFIG_DIR": base.join("config"), "HOME": base.join("home") },
        "steps": [
            {"op": "call", "name": "shell", "arguments": {"command": "echo embedded"}},
            {"op": "call", "name": "shell", "arguments": {"command": "touch needs-approval"}},
        ]
    });
    let out = Command::new("node")
        .arg(interop_dir().join("client.mjs"))
        .arg(scenario.to_string())
        .current_dir(interop_dir())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no hub is running: serving an embedded headless hub"), "{stderr}");
    assert!(text_of(&report["results"][0]["result"]).contains("embedded"), "{report}");
    // Nobody can answer a prompt here: denied at once, not after the approval timeout.
    let denied = &report["results"][1]["result"];
    assert!(text_of(denied).contains("no operator is attached to this hub"), "{denied}");
    assert!(!base.join("proj/needs-approval").exists());
    let rows = portcullis(&base).args(["ledger", "query", "--json", "--db"]).arg(&db).output().unwrap();
    let rows: Value = serde_json::from_slice(&rows.stdout).unwrap();
    assert_eq!(rows["calls"].as_array().unwrap().len(), 2, "{rows}");
}

#[test]
fn serve_asks_pending_approvals_on_its_terminal() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(base.join("proj/.portcullis")).unwrap();
    std::fs::write(base.join("proj/.portcullis/policy.json"), POLICY).unwrap();
    // `portcullis serve` on a pseudo-terminal, as an operator runs it.
    let (mut child, info) = common::serve_on_terminal(&base, &[], &[]);
    let token = std::fs::read_to_string(base.join("config/token")).unwrap();
    let operator_token = std::fs::read_to_string(base.join("config/operator-token")).unwrap();
    let api = info["api_url"].as_str().unwrap().to_owned();
    let agent = {
        let url = info["mcp_url"].as_str().unwrap().to_owned();
        let token = token.clone();
        std::thread::spawn(move || {
            let scenario = json!({"url": url, "token": token, "steps": [
                {"op": "call", "name": "shell", "arguments": {"command": "touch answered-by-the-api"}},
                {"op": "call", "name": "shell", "arguments": {"command": "touch approved-on-terminal"}}
            ]});
            Command::new("node")
                .arg(interop_dir().join("client.mjs"))
                .arg(scenario.to_string())
                .output()
                .unwrap()
        })
    };
    let wait_pending = |id: u64| {
        let started = Instant::now();
        loop {
            let (_, body) = http(&format!("{api}/approvals"), "GET", Some(&operator_token), &[], None);
            let v: Value = serde_json::from_str(&body).unwrap();
            if let Some(p) = v["approvals"].as_array().unwrap().iter().find(|p| p["id"] == id) {
                return p.clone();
            }
            assert!(started.elapsed() < Duration::from_secs(20), "approval #{id} never came");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The first prompt is answered through the API while the terminal shows it.
    let first = wait_pending(1);
    std::thread::sleep(Duration::from_millis(300));
    let body = json!({"answer": "deny", "arguments_sha256": first["arguments_sha256"]}).to_string();
    let (status, _) = http(&format!("{api}/approvals/1"), "POST", Some(&operator_token), &[], Some(&body));
    assert_eq!(status, 200);
    // The second one the operator answers on the terminal by typing `o`.
    wait_pending(2);
    std::thread::sleep(Duration::from_millis(300));
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write as _;
    stdin.write_all(b"o\n").unwrap();
    let out = agent.join().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["results"][0]["result"]["isError"], true, "{report}");
    assert_eq!(report["results"][1]["result"]["isError"], false, "{report}");
    assert!(!base.join("proj/answered-by-the-api").exists());
    assert!(base.join("proj/approved-on-terminal").exists());
    let pid = info["pid"].as_u64().unwrap().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    drop(stdin);
    let shown = child.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&shown.stdout);
    assert!(screen.contains("approval #1 was answered elsewhere: deny by api"), "{screen}");
    assert!(
        screen.contains("approval #2 needed for `shell`") && screen.contains("touch approved-on-terminal"),
        "{screen}"
    );
}
