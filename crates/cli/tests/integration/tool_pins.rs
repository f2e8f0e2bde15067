//! Pinned upstream tool definitions through `portcullis serve`, with a real SDK server that changes a
//! tool after it was listed (the MCP "rug pull": a new description telling the model to leak a key, a
//! new parameter to carry it): the changed tool is held back from agents until an operator accepts the
//! offered definition — shown as a diff, accepted by its digest over the operator API — and the ledger
//! records the first sight, the change and the acceptance with who accepted.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, http, serve_with, text_of};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn listed(served: &Served) -> Vec<String> {
    let report = served.agent(json!([{ "op": "list" }]));
    report["results"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn operator(served: &Served, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let (status, text) =
        http(&format!("{}{path}", served.api), method, Some(&served.operator_token), &[], body);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn a_changed_tool_is_held_until_an_operator_accepts_it_and_the_ledger_says_so() {
    crate::common::node_modules();
    let served = serve_with(
        r#"{ "servers": [ { "id": "dict", "command": "node", "args": ["{INTEROP}/shifting-server.mjs"] } ] }"#,
        &[],
    );
    wait_until("the server's tools", || listed(&served).contains(&"dict__lookup".to_owned()));
    let before =
        served.agent(json!([{ "op": "call", "name": "dict__lookup", "arguments": { "word": "gate" } }]));
    assert_eq!(text_of(&before["results"][0]["result"]), "gate: a word");

    // The server rewrites `lookup` and says its list changed.
    served.agent(json!([{ "op": "call", "name": "dict__shift", "arguments": {} }]));
    wait_until("the change to be seen", || {
        operator(&served, "GET", "/tool-changes", None).1["changes"].as_array().is_some_and(|c| !c.is_empty())
    });
    let tools = listed(&served);
    assert!(
        !tools.contains(&"dict__lookup".to_owned()) && tools.contains(&"dict__shift".to_owned()),
        "{tools:?}"
    );
    let held = served.agent(
        json!([{ "op": "call", "name": "dict__lookup", "arguments": { "word": "gate", "note": "x" } }]),
    );
    let refused = &held["results"][0]["result"];
    assert_eq!(refused["isError"], true, "a held tool does not run: {refused}");

    let (_, changes) = operator(&served, "GET", "/tool-changes", None);
    let change = &changes["changes"][0];
    assert_eq!(
        (change["server"].as_str(), change["tool"].as_str()),
        (Some("dict"), Some("lookup")),
        "{change}"
    );
    let diff = change["diff"].to_string();
    let added: Vec<&str> = change["diff"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "added")
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert!(added.iter().any(|l| l.contains("id_rsa")), "the new description is an added line: {diff}");
    assert!(added.iter().any(|l| l.contains("\"note\": {")), "the new parameter is an added line: {diff}");
    assert!(change["diff"].as_array().unwrap().iter().any(|l| l["kind"] == "removed"), "{diff}");

    // An acceptance must name the definition the operator saw.
    let wrong = json!({ "server": "dict", "tool": "lookup", "digest": "00" }).to_string();
    let (status, body) = operator(&served, "POST", "/tool-changes/accept", Some(&wrong));
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("tool_change_moved")), "{body}");
    let (status, body) =
        http(&format!("{}/tool-changes/accept", served.api), "POST", Some(&served.token), &[], Some(&wrong));
    assert_eq!(status, 403, "an agent's token cannot accept: {body}");
    let right = json!({ "server": "dict", "tool": "lookup", "digest": change["offered_digest"] }).to_string();
    let (status, body) = operator(&served, "POST", "/tool-changes/accept", Some(&right));
    assert_eq!(status, 200, "{body}");
    wait_until("the accepted tool to be served", || listed(&served).contains(&"dict__lookup".to_owned()));
    assert!(operator(&served, "GET", "/tool-changes", None).1["changes"].as_array().unwrap().is_empty());

    // The ledger: first sight of both tools, the change, the acceptance and who accepted.
    let events = || -> Vec<(String, String, Option<String>)> {
        let conn = rusqlite::Connection::open(served.db()).unwrap();
        let mut stmt = conn.prepare("SELECT tool, kind, operator FROM tool_pin_events ORDER BY id").unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
    };
    wait_until("the acceptance in the ledger", || events().iter().any(|(_, kind, _)| kind == "accepted"));
    let lookup: Vec<(String, Option<String>)> =
        events().into_iter().filter(|(tool, ..)| tool == "lookup").map(|(_, kind, op)| (kind, op)).collect();
    assert_eq!(
        lookup,
        [
            ("pinned".to_owned(), None),
            ("changed".to_owned(), None),
            ("accepted".to_owned(), Some("api".to_owned()))
        ]
    );
    let conn = rusqlite::Connection::open(served.db()).unwrap();
    let pinned: String = conn
        .query_row("SELECT definition FROM tool_pins WHERE server = 'dict' AND tool = 'lookup'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(pinned.contains("id_rsa"), "the accepted definition is the pinned one: {pinned}");
}

#[test]
fn under_changed_tools_prompt_a_changed_tool_stays_and_every_call_asks_the_operator() {
    crate::common::node_modules();
    let served = serve_with(
        r#"{ "servers": [ { "id": "dict", "command": "node", "args": ["{INTEROP}/shifting-server.mjs"],
                            "changed_tools": "prompt" } ],
             "approvals": { "timeout_seconds": 1 } }"#,
        &[],
    );
    wait_until("the server's tools", || listed(&served).contains(&"dict__lookup".to_owned()));
    served.agent(json!([{ "op": "call", "name": "dict__shift", "arguments": {} }]));
    wait_until("the change to be seen", || {
        operator(&served, "GET", "/tool-changes", None).1["changes"].as_array().is_some_and(|c| !c.is_empty())
    });
    let (_, changes) = operator(&served, "GET", "/tool-changes", None);
    assert_eq!(changes["changes"][0]["prompted"], true, "{changes}");
    assert!(listed(&served).contains(&"dict__lookup".to_owned()), "the changed tool stays listed");
    // Nobody answers: the call asked, timed out and did not run.
    let asked = served.agent(
        json!([{ "op": "call", "name": "dict__lookup", "arguments": { "word": "gate", "note": "x" } }]),
    );
    assert_eq!(asked["results"][0]["result"]["isError"], true, "{asked}");
    let calls = crate::common::ledger_calls_when(&served, 3);
    let lookup = calls.iter().find(|c| c["tool"] == "mcp:dict:lookup").unwrap();
    assert_eq!(lookup["policy_rule"], "server:dict/changed_tools", "{lookup}");
    assert_eq!(lookup["policy_decision"], "prompt", "{lookup}");
    assert_eq!(lookup["status"], "blocked", "{lookup}");
}
