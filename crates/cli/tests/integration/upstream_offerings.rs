//! Upstream servers' resources, prompts, sampling and elicitation behind `portcullis serve`, with real
//! peers: the reference "everything" server over stdio and Streamable HTTP, and the conformance upstream
//! with its request log. Reads and prompts are namespaced and judged like tool calls (grants, the
//! server's URI patterns and prompt decisions, the ledger); the server's sampling and elicitation reach
//! the agent whose call asked, as judged calls; a read the grants or the policy refuse never reaches
//! the server (its own log proves it).
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{everything_over_http, ledger_calls_when, node_modules, serve_with, wait_ready};
use serde_json::{Value, json};

fn request(method: &str, params: Value) -> Value {
    json!({ "op": "request", "method": method, "params": params })
}

#[test]
fn resources_prompts_sampling_elicitation_and_roots_of_the_everything_server_are_relayed_and_judged() {
    node_modules();
    let (_http_server, url) = everything_over_http();
    let policy = format!(
        r#"{{
  "grants": [ {{ "name": "agents", "allow": ["mcp:ev:resources/read", "mcp:ev:prompts/get", "mcp:ev:trigger-sampling-request",
      "mcp:ev:sampling/createMessage", "mcp:evh:resources/read", "mcp:evh:trigger-elicitation-request",
      "mcp:evh:elicitation/create", "mcp:evh:prompts/get", "mcp:evh:trigger-sampling-request",
      "mcp:evh:sampling/createMessage", "mcp:ev:trigger-elicitation-request", "mcp:ev:elicitation/create",
      "mcp:ev:get-roots-list", "mcp:ev:roots/list"] }} ],
  "servers": [
    {{ "id": "ev", "command": "node", "args": ["{{INTEROP}}/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
       "resources": {{ "demo://resource/static/document/architecture.md": "forbidden" }},
       "prompts": {{ "args-prompt": "forbidden" }} }},
    {{ "id": "evh", "url": "{url}" }}
  ]
}}"#
    );
    let served = serve_with(&policy, &[]);
    wait_ready(&served, &["ev", "evh"]);
    let report = served.client(json!({
        "url": served.mcp_url, "token": served.token,
        "answers": { "sampling": "the model's answer", "elicitation": { "name": "Ada", "color": "red" },
                     "roots": [{ "uri": "file:///work/shop", "name": "shop" }] },
        "steps": [
            request("resources/list", json!({})),
            request("resources/templates/list", json!({})),
            request("resources/read", json!({ "uri": "ev+demo://resource/static/document/features.md" })),
            request("resources/read", json!({ "uri": "ev+demo://resource/static/document/architecture.md" })),
            request("resources/read", json!({ "uri": "evh+demo://resource/dynamic/text/1" })),
            request("prompts/list", json!({})),
            request("prompts/get", json!({ "name": "ev__simple-prompt" })),
            request("prompts/get", json!({ "name": "ev__args-prompt", "arguments": { "city": "Paris" } })),
            { "op": "call", "name": "ev__trigger-sampling-request", "arguments": { "prompt": "say hi" } },
            { "op": "call", "name": "evh__trigger-elicitation-request", "arguments": {} },
            // The same over the other transport.
            request("prompts/get", json!({ "name": "evh__simple-prompt" })),
            { "op": "call", "name": "evh__trigger-sampling-request", "arguments": { "prompt": "say hi" } },
            { "op": "call", "name": "ev__trigger-elicitation-request", "arguments": {} },
            { "op": "call", "name": "ev__get-roots-list", "arguments": {} },
        ]
    }));
    let (report, code) = report;
    assert_eq!(code, 0, "{report}");
    let result = |i: usize| report["results"][i].clone();

    let listed = result(0);
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"ev+demo://resource/static/document/features.md"), "{uris:?}");
    assert!(uris.iter().any(|u| u.starts_with("evh+demo://")), "the HTTP server's resources too: {uris:?}");
    assert!(
        !uris.contains(&"ev+demo://resource/static/document/architecture.md"),
        "a resource the policy forbids is not listed: {uris:?}"
    );
    let templates = result(1)["result"]["resourceTemplates"].to_string();
    assert!(templates.contains("ev+demo://resource/dynamic/text/{"), "{templates}");

    let read = result(2);
    assert_eq!(
        read["result"]["contents"][0]["uri"], "ev+demo://resource/static/document/features.md",
        "{read}"
    );
    assert!(!read["result"]["contents"][0]["text"].as_str().unwrap().is_empty(), "{read}");
    let refused = result(3);
    assert_eq!(refused["code"], -32003, "a forbidden resource is refused: {refused}");
    assert!(refused["error"].as_str().unwrap().contains("server:ev/resource:"), "{refused}");
    assert!(result(4)["result"]["contents"][0]["text"].is_string(), "{}", result(4));

    let listed_prompts = result(5);
    let prompts: Vec<&str> = listed_prompts["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(prompts.contains(&"ev__simple-prompt") && !prompts.contains(&"ev__args-prompt"), "{prompts:?}");
    assert!(result(6)["result"]["messages"].as_array().is_some_and(|m| !m.is_empty()), "{}", result(6));
    // A prompt the policy forbids is not listed, and getting it by name is refused like a hidden tool.
    assert_eq!(result(7)["code"], -32003, "{}", result(7));
    assert!(result(7)["error"].as_str().unwrap().contains("server:ev/prompt:args-prompt"), "{}", result(7));

    let sampled = result(8)["result"].to_string();
    assert!(
        sampled.contains("the model's answer"),
        "the agent's sampling answer reached the server: {sampled}"
    );
    let elicited = result(9)["result"].to_string();
    assert!(elicited.contains("Ada"), "the agent's elicitation answer reached the server: {elicited}");
    assert!(result(10)["result"]["messages"].as_array().is_some_and(|m| !m.is_empty()), "{}", result(10));
    assert!(result(11)["result"].to_string().contains("the model's answer"), "{}", result(11));
    assert!(result(12)["result"].to_string().contains("Ada"), "{}", result(12));
    assert!(
        result(13)["result"].to_string().contains("file:///work/shop"),
        "the agent's roots: {}",
        result(13)
    );
    let asked: Vec<&str> =
        report["asked"].as_array().unwrap().iter().map(|a| a["method"].as_str().unwrap()).collect();
    // The server asks for the roots once, whenever it likes (before or after the calls); the rest come
    // in the order of the calls that caused them.
    let (roots, caused): (Vec<&str>, Vec<&str>) = asked.iter().partition(|m| **m == "roots/list");
    assert_eq!(roots, ["roots/list"], "{report}");
    assert_eq!(
        caused,
        ["sampling/createMessage", "elicitation/create", "sampling/createMessage", "elicitation/create"],
        "{report}"
    );

    // Every relayed request is a call in the ledger, with who decided; the sampling call sits beside
    // the tool call that caused it, in the same session.
    let calls = ledger_calls_when(&served, 18);
    let find = |tool: &str| calls.iter().filter(|c| c["tool"] == tool).cloned().collect::<Vec<Value>>();
    assert_eq!(find("mcp:ev:resources/read").len(), 2, "{calls:?}");
    assert!(
        find("mcp:ev:resources/read")
            .iter()
            .any(|c| c.to_string().contains("forbidden") || c["status"] == "blocked")
    );
    assert_eq!(find("mcp:evh:resources/read").len(), 1);
    let prompts_got = find("mcp:ev:prompts/get");
    assert_eq!(prompts_got.len(), 2, "{prompts_got:?}");
    assert!(
        prompts_got.iter().any(|c| c["status"] == "blocked"),
        "the forbidden one is recorded: {prompts_got:?}"
    );
    let sampling = find("mcp:ev:sampling/createMessage");
    let trigger = find("mcp:ev:trigger-sampling-request");
    assert_eq!((sampling.len(), trigger.len()), (1, 1), "{calls:?}");
    assert_eq!(sampling[0]["session_id"], trigger[0]["session_id"], "{sampling:?} {trigger:?}");
    assert!(sampling[0]["call_id"].as_str().unwrap().starts_with(trigger[0]["call_id"].as_str().unwrap()));
    assert_eq!(find("mcp:evh:elicitation/create").len(), 1);
    assert_eq!(find("mcp:evh:sampling/createMessage").len(), 1, "sampling over HTTP too");
    assert_eq!(find("mcp:ev:elicitation/create").len(), 1, "elicitation over stdio too");
    assert_eq!(find("mcp:evh:prompts/get").len(), 1, "prompts over HTTP too");
    assert_eq!(find("mcp:ev:roots/list").len(), 1, "the roots the server asked for during its call");
    for call in sampling.iter().chain(&find("mcp:evh:elicitation/create")) {
        assert!(!call["decided_by"].is_null(), "{call}");
    }
}

#[test]
fn a_read_the_grants_or_the_policy_refuse_never_reaches_the_server() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").is_dir(),
        "run `npm ci --prefix tests/conformance`"
    );
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("upstream.jsonl");
    let policy = format!(
        r#"{{
  "grants": [ {{ "name": "agents", "allow": ["mcp:open:resources/read", "mcp:shut:prompts/get"] }} ],
  "servers": [
    {{ "id": "open", "command": "node", "args": ["{up}", "--stdio"], "env": {{ "CONFORMANCE_UPSTREAM_LOG": "{log}" }},
       "resources": {{ "test://static-binary": "forbidden" }} }},
    {{ "id": "shut", "command": "node", "args": ["{up}", "--stdio"], "env": {{ "CONFORMANCE_UPSTREAM_LOG": "{log}" }} }}
  ]
}}"#,
        up = dir.join("upstream-server.mjs").canonicalize().unwrap().display(),
        log = log.display()
    );
    let served = serve_with(&policy, &[]);
    wait_ready(&served, &["open", "shut"]);
    let report = served.agent(json!([
        request("resources/read", json!({ "uri": "open+test://static-text" })),
        request("resources/read", json!({ "uri": "open+test://static-binary" })),
        request("resources/read", json!({ "uri": "shut+test://static-text" })),
    ]));
    let result = |i: usize| report["results"][i].clone();
    assert!(result(0)["result"]["contents"][0]["text"].is_string(), "{}", result(0));
    assert_eq!(result(1)["code"], -32003, "forbidden by the policy: {}", result(1));
    // `shut`'s reads are outside the grants: refused by name, like a hidden tool.
    assert_eq!(result(2)["code"], -32003, "{}", result(2));
    assert!(result(2)["error"].as_str().unwrap().contains("tool_denied"), "{}", result(2));

    let calls = ledger_calls_when(&served, 3);
    assert!(
        calls.iter().any(|c| c["tool"] == "mcp:shut:resources/read" && c["status"] == "blocked"),
        "{calls:?}"
    );
    assert!(
        calls.iter().any(|c| c["tool"] == "mcp:open:resources/read" && c["status"] == "blocked"),
        "{calls:?}"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let reads: Vec<Value> = logged
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["method"] == "resources/read")
        .collect();
    assert_eq!(reads.len(), 1, "only the allowed read reached a server: {reads:?}");
    assert_eq!(reads[0]["uri"], "test://static-text", "{reads:?}");
}
