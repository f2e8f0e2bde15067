//! MCP 2026-07-28 toward upstream servers, with real peers: servers on the official v2 TypeScript SDK
//! (`tests/interop/v2-server.mjs`), one serving both revisions and one refusing 2025 openings. The hub
//! opens 2026-07-28 first and falls back, so both list their tools and answer calls; a tool that asks
//! for input through a Multi Round-Trip Request (SEP-2322) has its question relayed to the agent of
//! the call as a judged call of `mcp:<server>:elicitation/create` (allowed, or forbidden by the
//! policy), and its answer goes back with the server's `requestState` untouched.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{ledger_calls_when, ledger_show, node_modules, serve_with, wait_ready};
use serde_json::{Value, json};

#[test]
fn a_2026_only_server_works_and_its_input_rounds_reach_the_agent_judged() {
    node_modules();
    let policy = r#"{
  "grants": [ { "name": "agents", "allow": ["mcp:only26:echo", "mcp:only26:era", "mcp:only26:deploy",
      "mcp:only26:elicitation/create", "mcp:dual:deploy", "mcp:dual:era", "mcp:dual:elicitation/create"] } ],
  "servers": [
    { "id": "only26", "command": "node", "args": ["{INTEROP}/v2-server.mjs", "--only-2026"] },
    { "id": "dual", "command": "node", "args": ["{INTEROP}/v2-server.mjs"], "elicitation": "forbidden" }
  ]
}"#;
    let served = serve_with(policy, &[]);
    wait_ready(&served, &["only26", "dual"]);
    wait_listed(&served, "only26__era");
    wait_listed(&served, "dual__deploy");
    let (report, code) = served.client(json!({
        "url": served.mcp_url, "token": served.token,
        "answers": { "elicitation": { "who": "Ada" } },
        "steps": [
            { "op": "list" },
            { "op": "call", "name": "only26__era", "arguments": {} },
            { "op": "call", "name": "only26__echo", "arguments": { "text": "hello" } },
            { "op": "call", "name": "only26__deploy", "arguments": { "env": "prod" } },
            { "op": "call", "name": "dual__era", "arguments": {} },
            { "op": "call", "name": "dual__deploy", "arguments": { "env": "staging" } },
        ]
    }));
    assert_eq!(code, 0, "{report}");
    let result = |i: usize| report["results"][i].to_string();
    let listed = result(0);
    for tool in ["only26__echo", "only26__deploy", "dual__deploy"] {
        assert!(listed.contains(tool), "{tool} is listed: {listed}");
    }
    assert!(result(1).contains("protocol 2026-07-28"), "the hub spoke 2026-07-28 to it: {}", result(1));
    assert!(result(2).contains("v2 echo: hello"), "{}", result(2));
    assert!(
        result(3).contains("deployed to prod (confirmed by Ada)"),
        "the agent's answer went back with the server's state: {}",
        result(3)
    );
    assert!(
        result(4).contains("protocol 2026-07-28"),
        "a server of both revisions: 2026 first: {}",
        result(4)
    );
    let refused = result(5);
    assert!(
        !refused.contains("deployed to staging") && refused.contains("not answered"),
        "a question the policy forbids is never put to the agent, and the call fails: {refused}"
    );
    let asked: Vec<String> = report["asked"].as_array().unwrap().iter().map(|a| a.to_string()).collect();
    assert_eq!(asked.len(), 1, "only the allowed question reached the agent: {asked:?}");
    assert!(asked[0].contains("Deploy to prod?"), "{asked:?}");

    // Each question is a call in the ledger, beside the call that caused it, with who decided.
    let calls = ledger_calls_when(&served, 7);
    let find = |tool: &str| calls.iter().filter(|c| c["tool"] == tool).cloned().collect::<Vec<Value>>();
    let question = find("mcp:only26:elicitation/create");
    let deploy = find("mcp:only26:deploy");
    assert_eq!((question.len(), deploy.len()), (1, 1), "{calls:?}");
    assert_eq!(question[0]["status"], "finished", "{question:?}");
    assert!(question[0]["call_id"].as_str().unwrap().starts_with(deploy[0]["call_id"].as_str().unwrap()));
    let forbidden = find("mcp:dual:elicitation/create");
    assert_eq!(forbidden.len(), 1, "{calls:?}");
    assert_eq!(forbidden[0]["status"], "blocked", "{forbidden:?}");
    let shown = ledger_show(&served, question[0]["call_id"].as_str().unwrap());
    assert!(
        shown.contains("Deploy to prod?") && shown.contains("Ada"),
        "the question and the answer: {shown}"
    );
}

/// One hub, three agents: the v2 client pinned to 2026-07-28 (stateless), the v2 client in `auto`
/// mode, and the v1 client (2025-11-25 sessions). Each lists the tools and calls the built-in shell
/// tool and an upstream tool, and each is recorded as its own agent.
#[test]
fn clients_of_both_revisions_share_one_hub_each_recorded_as_itself() {
    node_modules();
    let policy = r#"{
  "grants": [ { "name": "agents", "allow": ["shell", "mcp:only26:echo"] } ],
  "commands": { "default": "prompt", "rules": [ { "id": "printing", "pattern": ["echo"], "decision": "allow" } ] },
  "servers": [ { "id": "only26", "command": "node", "args": ["{INTEROP}/v2-server.mjs", "--only-2026"] } ]
}"#;
    let served = serve_with(policy, &[]);
    wait_ready(&served, &["only26"]);
    wait_listed(&served, "only26__echo");
    let steps = |who: &str| {
        json!([
            { "op": "list" },
            { "op": "call", "name": "shell", "arguments": { "command": format!("echo shell-of-{who}") } },
            { "op": "call", "name": "only26__echo", "arguments": { "text": format!("upstream-of-{who}") } },
        ])
    };
    let mut versions = Vec::new();
    for (who, mode) in [("v2-pinned", "2026-07-28"), ("v2-auto", "auto")] {
        let (report, code) = served.client_v2(json!({
            "url": served.mcp_url, "token": served.token, "clientName": who, "mode": mode, "steps": steps(who)
        }));
        assert_eq!(code, 0, "{who}: {report}");
        let text = report["results"].to_string();
        assert!(text.contains("\"shell\"") && text.contains("only26__echo"), "{who} lists both: {text}");
        assert!(text.contains(&format!("shell-of-{who}")), "{who}: {text}");
        assert!(text.contains(&format!("v2 echo: upstream-of-{who}")), "{who}: {text}");
        versions.push(report["protocolVersion"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(versions, ["2026-07-28", "2026-07-28"], "auto mode settles on 2026-07-28 with this hub");
    let (report, code) = served.client(json!({
        "url": served.mcp_url, "token": served.token, "clientName": "v1-session", "steps": steps("v1-session")
    }));
    assert_eq!(code, 0, "{report}");
    assert!(report["results"].to_string().contains("v2 echo: upstream-of-v1-session"), "{report}");

    let calls = ledger_calls_when(&served, 6);
    for who in ["v2-pinned", "v2-auto", "v1-session"] {
        let theirs: Vec<&Value> =
            calls.iter().filter(|c| c.to_string().contains(&format!("-of-{who}"))).collect();
        assert_eq!(theirs.len(), 2, "{who}: {calls:?}");
        assert_eq!(
            theirs[0]["session_id"], theirs[1]["session_id"],
            "{who}'s calls share its session: {theirs:?}"
        );
        assert!(
            theirs[0]["owner"].as_str().unwrap_or_default().contains(who),
            "recorded as {who}: {theirs:?}"
        );
    }
    let stateless = calls.iter().find(|c| c.to_string().contains("-of-v2-pinned")).unwrap();
    assert!(stateless["owner"].to_string().contains("stateless"), "a stateless client says so: {stateless}");
    let session = calls.iter().find(|c| c.to_string().contains("-of-v1-session")).unwrap();
    assert!(!session["owner"].to_string().contains("stateless"), "{session}");
    let sessions: std::collections::BTreeSet<String> =
        calls.iter().map(|c| c["session_id"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(sessions.len(), 3, "a session each: {sessions:?}");
}

/// A 2026-07-28 agent has no server-to-client requests: the upstream's question reaches it as the
/// answer to its `tools/call` (an `InputRequiredResult` with the hub's own `requestState`), its SDK
/// answers and retries, and the same call goes on; the question is judged and recorded as for a 2025
/// agent. A 2025 agent on the same hub gets the question as a server-to-client request.
#[test]
fn a_2026_agent_answers_an_upstream_question_in_rounds() {
    node_modules();
    let policy = r#"{
  "grants": [ { "name": "agents", "allow": ["mcp:only26:deploy", "mcp:only26:elicitation/create"] } ],
  "servers": [ { "id": "only26", "command": "node", "args": ["{INTEROP}/v2-server.mjs", "--only-2026"] } ]
}"#;
    let served = serve_with(policy, &[]);
    wait_ready(&served, &["only26"]);
    wait_listed(&served, "only26__deploy");
    let (report, code) = served.client_v2(json!({
        "url": served.mcp_url, "token": served.token, "clientName": "v2-rounds", "mode": "2026-07-28",
        "answers": { "elicitation": { "who": "Grace" } },
        "steps": [ { "op": "call", "name": "only26__deploy", "arguments": { "env": "prod" } } ]
    }));
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    let text = report["results"].to_string();
    assert!(text.contains("deployed to prod (confirmed by Grace)"), "{text}");
    let asked = report["asked"].to_string();
    assert!(asked.contains("Deploy to prod?"), "the agent was asked the server's question: {asked}");

    let (report, code) = served.client(json!({
        "url": served.mcp_url, "token": served.token, "clientName": "v1-rounds",
        "answers": { "elicitation": { "who": "Linus" } },
        "steps": [ { "op": "call", "name": "only26__deploy", "arguments": { "env": "dev" } } ]
    }));
    assert_eq!(code, 0, "{report}");
    assert!(report["results"].to_string().contains("deployed to dev (confirmed by Linus)"), "{report}");

    let calls = ledger_calls_when(&served, 4);
    let find = |tool: &str| calls.iter().filter(|c| c["tool"] == tool).cloned().collect::<Vec<Value>>();
    let deploys = find("mcp:only26:deploy");
    let questions = find("mcp:only26:elicitation/create");
    assert_eq!((deploys.len(), questions.len()), (2, 2), "one call each, not one per round: {calls:?}");
    for question in &questions {
        assert_eq!(question["status"], "finished", "{question}");
        let parent = deploys.iter().find(|d| d["session_id"] == question["session_id"]).unwrap();
        assert!(question["call_id"].as_str().unwrap().starts_with(parent["call_id"].as_str().unwrap()));
    }
    let shown: String =
        questions.iter().map(|q| ledger_show(&served, q["call_id"].as_str().unwrap())).collect();
    assert!(shown.contains("Grace") && shown.contains("Linus"), "both answers are recorded: {shown}");
}

/// POSTs `body` to the hub's `/mcp` with the agents' token and `headers`: the HTTP status and the
/// JSON-RPC message it answered (null when none).
fn post_raw(served: &crate::common::Served, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    use std::io::{Read, Write};
    let body = body.to_string();
    let rest = served.mcp_url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Authorization: Bearer {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        served.token,
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let message = raw
        .match_indices("{\"jsonrpc\"")
        .filter_map(|(at, _)| serde_json::from_str::<Value>(raw[at..].split(['\r', '\n']).next()?).ok())
        .last()
        .unwrap_or(Value::Null);
    (status, message)
}

/// Waits until agents are offered `tool`: a server's health says ready a moment before the hub's
/// registry holds its tools (agents hear `list_changed` then).
fn wait_listed(served: &crate::common::Served, tool: &str) {
    let started = std::time::Instant::now();
    loop {
        let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
        let (_, listed) = post_raw(served, &headers, &with_meta(0, "tools/list", json!({}), "2026-07-28"));
        if listed["result"]["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == tool)) {
            return;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{tool} never listed: {listed}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A request of `version`'s per-request shape: `params` with its `_meta` (declaring elicitation).
fn with_meta(id: u64, method: &str, params: Value, version: &str) -> Value {
    declaring(id, method, params, version, json!({ "elicitation": {} }))
}

/// [`with_meta`] declaring `capabilities`.
fn declaring(id: u64, method: &str, mut params: Value, version: &str, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "raw-agent", "version": "1.0" },
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// POSTs one 2026-07-28 request (`method`, about `name`) as client `raw-agent` declaring elicitation;
/// the JSON-RPC message it answered.
fn post_2026(served: &crate::common::Served, id: u64, method: &str, name: &str, params: Value) -> Value {
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method), ("Mcp-Name", name)];
    let (_, message) = post_raw(served, &headers, &with_meta(id, method, params, "2026-07-28"));
    assert!(!message.is_null(), "no JSON-RPC answer");
    message
}

/// The hub's `requestState` is bound to its call: an altered one, one replayed for another call, and
/// one used already are refused; the call waits on for its own retry, which resumes it.
#[test]
fn a_request_state_altered_replayed_or_moved_to_another_call_is_refused() {
    node_modules();
    let policy = r#"{
  "grants": [ { "name": "agents", "allow": ["mcp:only26:deploy", "mcp:only26:elicitation/create"] } ],
  "servers": [ { "id": "only26", "command": "node", "args": ["{INTEROP}/v2-server.mjs", "--only-2026"] } ]
}"#;
    let served = serve_with(policy, &[]);
    wait_ready(&served, &["only26"]);
    wait_listed(&served, "only26__deploy");
    let call = |id: u64, env: &str, extra: Value| {
        let mut params = json!({ "name": "only26__deploy", "arguments": { "env": env } });
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        post_2026(&served, id, "tools/call", "only26__deploy", params)
    };
    let asked = call(1, "prod", json!({}));
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let token = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let (key, question) = asked["result"]["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert!(question.to_string().contains("Deploy to prod?"), "{question}");
    let answer = json!({ key.clone(): { "action": "accept", "content": { "who": "Eve" } } });

    let altered = call(2, "prod", json!({ "requestState": format!("{token}0"), "inputResponses": answer }));
    assert_eq!(altered["error"]["code"], -32602, "{altered}");
    let moved = call(3, "dev", json!({ "requestState": token, "inputResponses": answer }));
    assert_eq!(moved["error"]["code"], -32602, "{moved}");
    assert!(moved["error"]["message"].as_str().unwrap().contains("another call"), "{moved}");
    let resumed = call(4, "prod", json!({ "requestState": token, "inputResponses": answer }));
    assert!(resumed.to_string().contains("deployed to prod (confirmed by Eve)"), "{resumed}");
    let replayed = call(5, "prod", json!({ "requestState": token, "inputResponses": answer }));
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");

    let calls = ledger_calls_when(&served, 2);
    assert_eq!(calls.iter().filter(|c| c["tool"] == "mcp:only26:deploy").count(), 1, "{calls:?}");
}

/// Where the policy says an upstream's question is asked of the operator first, a 2026 agent's call
/// waits for the operator; the question reaches the agent only once they allow it, and the ledger says
/// the operator decided.
#[test]
fn a_question_the_policy_prompts_for_waits_for_the_operator() {
    node_modules();
    let policy = r#"{
  "grants": [ { "name": "agents", "allow": ["mcp:only26:deploy", "mcp:only26:elicitation/create"] } ],
  "servers": [ { "id": "only26", "command": "node", "args": ["{INTEROP}/v2-server.mjs", "--only-2026"],
                 "elicitation": "prompt" } ],
  "approvals": { "timeout_seconds": 30 }
}"#;
    let served = serve_with(policy, &[]);
    wait_ready(&served, &["only26"]);
    wait_listed(&served, "only26__deploy");
    let (report, code) = std::thread::scope(|scope| {
        let agent = scope.spawn(|| {
            served.client_v2(json!({
                "url": served.mcp_url, "token": served.token, "clientName": "v2-asks", "mode": "2026-07-28",
                "answers": { "elicitation": { "who": "Barbara" } },
                "steps": [ { "op": "call", "name": "only26__deploy", "arguments": { "env": "prod" } } ]
            }))
        });
        let asked = crate::common::answer_first_pending(&served.api, &served.operator_token, "once");
        assert!(
            asked.to_string().contains("elicitation/create"),
            "the operator is asked about the question: {asked}"
        );
        agent.join().unwrap()
    });
    assert_eq!(code, 0, "{report}");
    assert!(report["results"].to_string().contains("deployed to prod (confirmed by Barbara)"), "{report}");
    let calls = ledger_calls_when(&served, 2);
    let question = calls.iter().find(|c| c["tool"] == "mcp:only26:elicitation/create").unwrap();
    assert_eq!(question["status"], "finished", "{question}");
    assert!(question["decided_by"].to_string().contains("operator"), "{question}");
}

/// A client turned away for its protocol version or for routing headers that contradict its body is a
/// row in `ledger refusals`, named for why, not only a log line.
#[test]
fn clients_refused_for_their_version_or_headers_are_recorded_as_refusals() {
    let served = serve_with(r#"{ "grants": [ { "name": "agents", "allow": ["shell"] } ] }"#, &[]);
    let future = [("MCP-Protocol-Version", "2099-01-01"), ("Mcp-Method", "tools/list")];
    let (status, answer) = post_raw(&served, &future, &with_meta(1, "tools/list", json!({}), "2099-01-01"));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    let contradicting = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
    let body = with_meta(2, "tools/call", json!({ "name": "shell", "arguments": {} }), "2026-07-28");
    let (status, answer) = post_raw(&served, &contradicting, &body);
    assert_eq!(status, 400, "{answer}");
    let started = std::time::Instant::now();
    let rows = loop {
        let out = crate::common::portcullis(served.dir.path())
            .args(["ledger", "refusals", "--json", "--db"])
            .arg(served.db())
            .output()
            .unwrap();
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let rows = listed["refusals"].as_array().cloned().unwrap_or_default();
        if rows.len() >= 2 || started.elapsed() > std::time::Duration::from_secs(15) {
            break rows;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let codes: Vec<&str> = rows.iter().filter_map(|r| r["code"].as_str()).collect();
    assert!(codes.contains(&"protocol_version_refused"), "{rows:?}");
    assert!(codes.contains(&"routing_headers_refused"), "{rows:?}");
    assert!(rows.iter().all(|r| r["path"] == "/mcp" && r["status"] == 400), "{rows:?}");
}

/// A 2025 server that ends at any request before `initialize` (the 2026 probe kills it) is started again
/// and opened with `initialize` alone: its tools appear and work.
#[test]
fn a_server_the_2026_probe_ends_is_started_again_for_2025() {
    let policy = r#"{
  "grants": [ { "name": "agents", "allow": ["mcp:strict:echo"] } ],
  "servers": [ { "id": "strict", "command": "node", "args": ["{INTEROP}/strict-legacy-server.mjs"] } ]
}"#;
    let served = serve_with(policy, &[]);
    wait_ready(&served, &["strict"]);
    wait_listed(&served, "strict__echo");
    let answer = post_2026(
        &served,
        1,
        "tools/call",
        "strict__echo",
        json!({ "name": "strict__echo", "arguments": { "text": "hi" } }),
    );
    assert!(answer.to_string().contains("strict echo: hi"), "{answer}");
}

/// An answer a 2026 agent sends with a fresh call, before anything was asked, never reaches the server
/// before its question was judged: where the policy forbids the server's questions the call does not
/// run on it; where it allows them, the question is recorded and answered with it in one request. And
/// the agent's own capabilities go upstream with its request: an agent that declares no elicitation gets
/// the server's -32021 (HTTP 400), not a question it cannot answer.
#[test]
fn an_answer_sent_before_its_question_is_used_only_once_the_question_was_judged() {
    node_modules();
    let policy = |elicitation: &str| {
        format!(
            r#"{{
  "grants": [ {{ "name": "agents", "allow": ["mcp:only26:deploy", "mcp:only26:elicitation/create"] }} ],
  "servers": [ {{ "id": "only26", "command": "node", "args": ["{{INTEROP}}/v2-server.mjs", "--only-2026"],
                 "elicitation": "{elicitation}" }} ]
}}"#
        )
    };
    let early = json!({ "confirm": { "action": "accept", "content": { "who": "Mallory" } } });
    let call = |served: &crate::common::Served, id: u64| {
        let params =
            json!({ "name": "only26__deploy", "arguments": { "env": "prod" }, "inputResponses": early });
        post_2026(served, id, "tools/call", "only26__deploy", params)
    };

    let served = serve_with(&policy("forbidden"), &[]);
    wait_ready(&served, &["only26"]);
    wait_listed(&served, "only26__deploy");
    let refused = call(&served, 1);
    assert!(!refused.to_string().contains("deployed to prod"), "the early answer went through: {refused}");
    let calls = ledger_calls_when(&served, 2);
    let question = calls.iter().find(|c| c["tool"] == "mcp:only26:elicitation/create").unwrap();
    assert_eq!(question["status"], "blocked", "the question was judged (forbidden): {question}");
    drop(served);

    let served = serve_with(&policy("allow"), &[]);
    wait_ready(&served, &["only26"]);
    wait_listed(&served, "only26__deploy");
    let done = call(&served, 1);
    assert_eq!(done["result"]["resultType"], "complete", "answered without a round trip: {done}");
    assert!(done.to_string().contains("deployed to prod (confirmed by Mallory)"), "{done}");
    let calls = ledger_calls_when(&served, 2);
    let question = calls.iter().find(|c| c["tool"] == "mcp:only26:elicitation/create").unwrap();
    assert_eq!(question["status"], "finished", "{question}");
    assert!(ledger_show(&served, question["call_id"].as_str().unwrap()).contains("Mallory"));

    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "only26__deploy"),
    ];
    let params = json!({ "name": "only26__deploy", "arguments": { "env": "dev" } });
    let (status, missing) =
        post_raw(&served, &headers, &declaring(2, "tools/call", params, "2026-07-28", json!({})));
    assert_eq!((status, &missing["error"]["code"]), (400, &json!(-32021)), "{missing}");
    assert!(missing["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(), "{missing}");
}
