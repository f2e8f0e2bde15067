//! Recoverable effects (SEP-3182 idempotency keys) through `portcullis serve` and the official
//! TypeScript SDK client: a retried call never runs twice, a key reused with other arguments is a
//! conflict, a call the hub died in is refused as "outcome unknown" until an operator marks it, keys are
//! each agent's own, and a retry during a slow call waits for its answer.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, ledger_calls_when, node_modules, portcullis, serve, text_of};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell", "read"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "counting", "pattern": [["echo", "wc", "sleep", "cat"]], "decision": "allow", "match": ["echo hi"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 5 }
}
"#;

/// Appends a line to `file` in the project and prints how many lines it has: a second run answers
/// otherwise than the first.
fn counting(file: &str, word: &str) -> Value {
    json!({ "command": format!("echo {word} >> {file} && wc -l < {file}") })
}

/// The count a [`counting`] command printed (the shell tool's text adds its exit code after it).
fn count_in(result: &Value) -> String {
    crate::common::text_of(result).lines().next().unwrap_or_default().trim().to_owned()
}

fn lines(served: &Served, file: &str) -> usize {
    std::fs::read_to_string(served.project().join(file)).map(|t| t.lines().count()).unwrap_or(0)
}

fn call(arguments: Value, key: &str) -> Value {
    json!({ "op": "call", "name": "shell", "arguments": arguments, "idempotencyKey": key })
}

/// The ledger's calls with `reason` (waits until `n` of them are there; bounded).
fn calls_with_reason(served: &Served, reason: &str, n: usize) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let calls: Vec<Value> =
            ledger_calls_when(served, 1).into_iter().filter(|c| c["reason"] == reason).collect();
        if calls.len() >= n || started.elapsed() > Duration::from_secs(15) {
            return calls;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A command of the operator's table over HTTP with `token`: the status and the JSON answer.
fn command(served: &Served, token: &str, name: &str, args: Value) -> (u16, Value) {
    let url = format!("{}/commands/{name}", served.api);
    let (status, body) = crate::common::http(&url, "POST", Some(token), &[], Some(&args.to_string()));
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

#[test]
fn the_same_key_twice_runs_once_and_both_answers_are_equal() {
    node_modules();
    let served = serve(POLICY);
    let report = served.agent(json!([
        call(counting("count.txt", "once"), "key-1"),
        call(counting("count.txt", "once"), "key-1"),
        // The key in `_meta`, and the arguments in another key order: the same call.
        { "op": "call", "name": "shell", "arguments": counting("count.txt", "once"),
          "meta": { "idempotencyKey": "key-1" } },
        // Another key runs.
        call(counting("count.txt", "once"), "key-2"),
    ]));
    // The SDK (1.32.2) does not know the capability yet and drops it from what it keeps: read the
    // answer to `initialize` as sent.
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } } });
    let (status, body) = crate::common::http(
        &served.mcp_url,
        "POST",
        Some(&served.token),
        &[("Accept", "application/json, text/event-stream")],
        Some(&initialize.to_string()),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""tools":{"listChanged":true,"idempotency":{}}"#), "{body}");
    let results: Vec<&Value> = report["results"].as_array().unwrap().iter().map(|r| &r["result"]).collect();
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(count_in(results[0]).trim(), "1", "{}", results[0]);
    assert_eq!(results[1], results[0], "the retry's answer is the first call's");
    assert_eq!(results[2], results[0], "a key in _meta is the same key");
    assert_eq!(count_in(results[3]).trim(), "2", "another key is another call");
    assert_eq!(lines(&served, "count.txt"), 2, "the retried command ran once");

    let duplicates = calls_with_reason(&served, "duplicate_effect", 2);
    assert_eq!(duplicates.len(), 2, "each retry is a row of its own");
    let started: Vec<Value> =
        ledger_calls_when(&served, 4).into_iter().filter(|c| c["status"] == "finished").collect();
    assert_eq!(started.len(), 2, "two calls ran: {started:?}");
    // The duplicate's row names the original call.
    let original = started[0]["call_id"].as_str().unwrap().to_owned();
    let shown = portcullis(served.dir.path())
        .args(["ledger", "show", "--db"])
        .arg(served.db())
        .arg(duplicates[0]["call_id"].as_str().unwrap())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("duplicate_effect"), "{shown}");
    assert!(
        shown.contains(&original) || started.iter().any(|c| shown.contains(c["call_id"].as_str().unwrap())),
        "{shown}"
    );
}

#[test]
fn the_same_key_with_other_arguments_is_refused_as_a_conflict() {
    node_modules();
    let served = serve(POLICY);
    let report = served.agent(json!([
        call(counting("c.txt", "first"), "deploy-7"),
        call(counting("c.txt", "second"), "deploy-7"),
    ]));
    let refused = &report["results"][1]["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text_of(refused).contains("effect_conflict"), "{refused}");
    assert!(text_of(refused).contains("other arguments"), "{refused}");
    assert_eq!(lines(&served, "c.txt"), 1);
    assert_eq!(calls_with_reason(&served, "effect_conflict", 1).len(), 1);

    // Keys and answers survive a restart, through the ledger.
    let first = report["results"][0]["result"].clone();
    let mut served = served;
    let _ = served.stop();
    served.restart();
    let report = served.agent(json!([
        call(counting("c.txt", "first"), "deploy-7"),
        call(counting("c.txt", "second"), "deploy-7"),
    ]));
    assert_eq!(report["results"][0]["result"], first, "the answer kept in the ledger");
    assert!(text_of(&report["results"][1]["result"]).contains("effect_conflict"));
    assert_eq!(lines(&served, "c.txt"), 1);
}

#[test]
fn a_call_the_hub_died_in_is_refused_as_outcome_unknown_until_the_operator_marks_it_retryable() {
    node_modules();
    let mut served = serve(POLICY);
    // A keyed call answered before the kill: its answer survives it (its end was durable first).
    let answered = served.agent(json!([call(counting("a.txt", "x"), "answered-1")]));
    let slow = json!({ "command": "sleep 3 && echo ran >> k.txt && wc -l < k.txt" });
    let agent = crate::common::agent_in_background(
        &json!({ "mcp_url": served.mcp_url }),
        &served.token,
        json!([call(slow.clone(), "migrate-1")]),
    );
    // Killed between `started` (durable before a shell command runs) and the call's end.
    let started = Instant::now();
    while !ledger_running(&served) {
        assert!(started.elapsed() < Duration::from_secs(15), "the call never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    served.kill();
    // Not joined: the client may wait out its own timeout for the answer that never comes.
    drop(agent);
    served.restart();

    let again = served.agent(json!([call(counting("a.txt", "x"), "answered-1")]));
    assert_eq!(again["results"][0]["result"], answered["results"][0]["result"], "answered before the kill");
    assert_eq!(lines(&served, "a.txt"), 1);

    let report = served.agent(json!([call(slow.clone(), "migrate-1")]));
    let refused = &report["results"][0]["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text_of(refused).contains("outcome_unknown"), "{refused}");
    assert_eq!(lines(&served, "k.txt"), 0, "never run again by itself");

    // A keyed call that names a secret: the effect's line for the operator never holds it.
    let secret = served.token.trim().to_owned();
    served.agent(json!([call(json!({ "command": format!("echo {secret}") }), "with-secret")]));

    // The operator sees it, and marks it; an agent cannot.
    let (status, effects) = command(&served, &served.operator_token, "effects", json!({ "limit": 50 }));
    let listed = effects.to_string();
    assert!(listed.contains("with-secret") && !listed.contains(&secret), "{listed}");
    assert_eq!(status, 200, "{effects}");
    assert_eq!(effects[0]["state"], "unknown", "{effects}");
    assert_eq!(effects[0]["key"], "migrate-1");
    assert_eq!(effects[0]["agent"], "default");
    assert_eq!(effects[0]["summary"], "sleep 3 && echo ran >> k.txt && wc -l < k.txt", "{effects}");
    let mark = json!({ "agent": "default", "key": "migrate-1", "outcome": "retryable", "note": "the migration never began" });
    let (status, _) = command(&served, &served.token, "mark_effect", mark.clone());
    assert_eq!(status, 403, "the agent's token cannot mark");
    let (status, marked) = command(&served, &served.operator_token, "mark_effect", mark.clone());
    assert_eq!(status, 200, "{marked}");
    assert_eq!(marked, effects[0]["call_id"]);
    let (status, again) = command(&served, &served.operator_token, "mark_effect", mark);
    assert_eq!(status, 404, "the key is free now: {again}");

    let report = served.agent(json!([call(slow, "migrate-1")]));
    let ran = &report["results"][0]["result"];
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(count_in(ran).trim(), "1");
    assert_eq!(lines(&served, "k.txt"), 1);
    assert_eq!(calls_with_reason(&served, "outcome_unknown", 1).len(), 1);
    let interrupted: Vec<Value> =
        ledger_calls_when(&served, 1).into_iter().filter(|c| c["status"] == "interrupted").collect();
    assert_eq!(interrupted.len(), 1, "the killed call's row says interrupted");
}

/// Whether the ledger holds a running call (started, not ended).
fn ledger_running(served: &Served) -> bool {
    let out = portcullis(served.dir.path())
        .args(["ledger", "query", "--json", "--status", "running", "--db"])
        .arg(served.db())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v["calls"].as_array().is_some_and(|c| !c.is_empty())
}

#[test]
fn keys_are_each_agents_own() {
    node_modules();
    let mut served = serve(POLICY);
    for name in ["alice", "bob"] {
        let out = portcullis(served.dir.path()).args(["operator", "add-agent", name]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let refused = portcullis(served.dir.path()).args(["operator", "add-agent", "default"]).output().unwrap();
    assert!(!refused.status.success(), "the gateway token's identity is not a name to take");
    let _ = served.stop();
    served.restart();
    let token = |name: &str| std::fs::read_to_string(served.path(&format!("config/agents/{name}"))).unwrap();
    let as_agent = |token: String, steps: Value| {
        let (report, code) = served.client(json!({ "url": served.mcp_url, "token": token, "steps": steps }));
        assert_eq!(code, 0, "{report}");
        report
    };
    let alice = as_agent(token("alice"), json!([call(counting("a.txt", "x"), "shared-key")]));
    // Bob's key of the same name is his own: his call runs, and he never gets Alice's answer.
    let bob = as_agent(token("bob"), json!([call(counting("a.txt", "x"), "shared-key")]));
    assert_eq!(count_in(&alice["results"][0]["result"]).trim(), "1");
    assert_eq!(count_in(&bob["results"][0]["result"]).trim(), "2");
    // Nor a conflict with Alice's arguments; and Alice's retry still gets her own answer.
    let bob = as_agent(token("bob"), json!([call(counting("a.txt", "y"), "other-key")]));
    assert_eq!(count_in(&bob["results"][0]["result"]).trim(), "3");
    let alice_again = as_agent(token("alice"), json!([call(counting("a.txt", "x"), "shared-key")]));
    assert_eq!(alice_again["results"][0]["result"], alice["results"][0]["result"]);
    assert_eq!(lines(&served, "a.txt"), 3);
    // The gateway token is an agent of its own, `default`.
    let default = served.agent(json!([call(counting("a.txt", "x"), "shared-key")]));
    assert_eq!(count_in(&default["results"][0]["result"]).trim(), "4");
}

#[test]
fn a_retry_during_a_slow_call_waits_and_gets_the_same_result() {
    node_modules();
    let served = serve(POLICY);
    let slow = json!({ "command": "sleep 2 && echo slow >> s.txt && wc -l < s.txt" });
    let report = served.agent(json!([{
        "op": "parallel",
        "staggerMs": 500,
        "calls": [call(slow.clone(), "slow-1"), call(slow, "slow-1")],
    }]));
    let both = report["results"][0]["results"].as_array().unwrap();
    assert_eq!(both[0]["result"]["isError"], false, "{}", both[0]);
    assert_eq!(count_in(&both[0]["result"]).trim(), "1");
    assert_eq!(both[1]["result"], both[0]["result"], "the retry waited for the first answer");
    assert_eq!(lines(&served, "s.txt"), 1);
    assert_eq!(calls_with_reason(&served, "duplicate_effect", 1).len(), 1);
}

#[test]
fn a_malformed_key_is_an_invalid_params_error() {
    node_modules();
    let served = serve(POLICY);
    let (report, code) = served.client(json!({
        "url": served.mcp_url,
        "token": served.token,
        "steps": [{ "op": "parallel", "calls": [call(counting("m.txt", "x"), "")] }],
    }));
    assert_eq!(code, 0, "{report}");
    // Answered by the gateway's JSON-RPC screen before any call is made (as every malformed request).
    let refused = &report["results"][0]["results"][0];
    let error = refused["error"].as_str().unwrap();
    assert!(error.contains("-32602") && error.contains("idempotencyKey must not be empty"), "{refused}");
    assert_eq!(lines(&served, "m.txt"), 0);
}

#[test]
fn a_manifest_tool_declares_its_key_over_its_arguments() {
    node_modules();
    // The tool's process is `sh -c …`: the policy judges `sh` and the commands inside.
    let policy = POLICY
        .replace(r#""allow": ["shell", "read"]"#, r#""allow": ["shell", "read", "count_deploys"]"#)
        .replace(r#"[["echo", "wc", "sleep", "cat"]]"#, r#"[["echo", "wc", "sleep", "cat", "sh"]]"#);
    let mut served = serve(&policy);
    let tools = served.project().join(".portcullis/tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("count_deploys.json"),
        json!({
            "name": "count_deploys",
            "description": "Deploys a target (counts the deploys)",
            "parameters": { "type": "object", "properties": { "target": { "type": "string" }, "note": { "type": "string" } } },
            "idempotency_key": ["target"],
            "kind": "process",
            "command": "sh",
            "args": ["-c", "echo deployed >> deploys.txt && wc -l < deploys.txt"],
            "output": "text",
        })
        .to_string(),
    )
    .unwrap();
    let _ = served.stop();
    served.restart();
    let deploy = |arguments: Value| json!({ "op": "call", "name": "count_deploys", "arguments": arguments });
    let report = served.agent(json!([
        deploy(json!({ "target": "web" })),
        deploy(json!({ "target": "web" })),
        deploy(json!({ "target": "web", "note": "again" })),
        deploy(json!({ "target": "db" })),
    ]));
    let results: Vec<&Value> = report["results"].as_array().unwrap().iter().map(|r| &r["result"]).collect();
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(count_in(results[0]), "1");
    assert_eq!(results[1], results[0], "the same target: a retry, answered");
    assert!(text_of(results[2]).contains("effect_conflict"), "{}", results[2]);
    assert_eq!(count_in(results[3]), "2", "another target is another effect");
    assert_eq!(lines(&served, "deploys.txt"), 2);
    // The listing reads the ledger's index, which the indexer brings up to the journal a moment later.
    let listed = |wanted: &[&str]| {
        let (_, effects) = command(&served, &served.operator_token, "effects", json!({ "limit": 10 }));
        let keys: Vec<String> =
            effects.as_array().unwrap().iter().filter_map(|e| e["key"].as_str().map(str::to_owned)).collect();
        (wanted.iter().all(|w| keys.iter().any(|k| k == w)), keys)
    };
    let wanted = [r#"count_deploys("web")"#, r#"count_deploys("db")"#];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut seen = listed(&wanted);
    while !seen.0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        seen = listed(&wanted);
    }
    assert!(seen.0, "{:?}", seen.1);
}

#[test]
fn over_stdio_the_key_travels_in_meta_through_the_relay() {
    node_modules();
    let served = serve(POLICY);
    let base = served.path("");
    let step = json!({ "op": "call", "name": "shell", "arguments": counting("r.txt", "x"), "meta": { "idempotencyKey": "via-stdio" } });
    let (report, code) = served.client(json!({
        "command": env!("CARGO_BIN_EXE_portcullis"),
        "args": ["mcp", "--project", served.project()],
        "env": { "HOME": base.join("home"), "PORTCULLIS_CONFIG_DIR": base.join("config"), "RUST_LOG": "warn" },
        "steps": [step.clone(), step],
    }));
    assert_eq!(code, 0, "{report}");
    assert_eq!(count_in(&report["results"][0]["result"]), "1", "{report}");
    assert_eq!(report["results"][1]["result"], report["results"][0]["result"]);
    assert_eq!(lines(&served, "r.txt"), 1, "the relay to the running hub ran it once");
    assert_eq!(calls_with_reason(&served, "duplicate_effect", 1).len(), 1);
}

#[test]
fn reserved_agent_names_are_refused_by_add_agent_and_at_the_hubs_start() {
    use std::os::unix::fs::PermissionsExt as _;
    let mut served = serve(POLICY);
    // `local` is the key namespace of calls that carry no agent; `default` the gateway token's.
    for name in ["local", "default"] {
        let out = portcullis(served.dir.path()).args(["operator", "add-agent", name]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: {stderr}");
        assert!(stderr.contains("the hub uses it itself"), "{name}: {stderr}");
        assert!(!served.path(&format!("config/agents/{name}")).exists(), "{name}: no token file made");
    }
    let out = portcullis(served.dir.path()).args(["operator", "add-agent", "alice"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A hand-made token file named `local` is refused, with a warning, when the hub starts.
    let planted = served.path("config/agents/local");
    std::fs::write(&planted, "1".repeat(64)).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o600)).unwrap();
    let _ = served.stop();
    served.restart();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let status = |token: &str| {
        let accept = [("Accept", "application/json, text/event-stream")];
        crate::common::http(&served.mcp_url, "POST", Some(token), &accept, Some(&initialize)).0
    };
    let alice = std::fs::read_to_string(served.path("config/agents/alice")).unwrap();
    assert_ne!(status(alice.trim()), 401, "a good name beside it is admitted");
    assert_eq!(status(&"1".repeat(64)), 401, "the planted `local` token is no agent");
    let stopped = served.stop();
    let log = String::from_utf8_lossy(&stopped.stderr);
    assert!(log.contains("reserved") && log.contains("local"), "the hub warned about the file: {log}");
}
