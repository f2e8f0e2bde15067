//! Approvals are receipts, through `portcullis serve`'s HTTP operator API with a real agent: an answer
//! names the SHA-256 of the arguments its operator was shown (the canonical JSON of the call's
//! arguments, as the approval lists it); an answer naming other arguments — or none — approves nothing,
//! even with the right approval id, and the call keeps waiting, never run. The accepted answer's receipt
//! (arguments, policy version, operator and channel, time) comes back to the operator and is kept in the
//! body of every record of the call and in its approval's row.
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::{Served, agent_in_background, http, node_modules, portcullis, serve, text_of};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The SHA-256 (hex) of `text`, by `sha256sum`: a digest computed outside Portcullis.
fn sha256(text: &str) -> String {
    let mut child = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
}

/// `POST /v1/approvals/{id}` with `body`: the status and the answer as JSON.
fn answer(served: &Served, id: &Value, body: Value) -> (u16, Value) {
    let url = format!("{}/approvals/{id}", served.api);
    let (status, text) = http(&url, "POST", Some(&served.operator_token), &[], Some(&body.to_string()));
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
}

/// `portcullis ledger show --json` of a call once its records and its approval's row are in the ledger.
fn ledger_show_json(served: &Served, call_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let out = portcullis(served.dir.path())
            .args(["ledger", "show", "--json", "--db"])
            .arg(served.db())
            .arg(call_id)
            .output()
            .unwrap();
        if out.status.success() {
            let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
            let records = shown["records"].as_array().map_or(0, Vec::len);
            let approvals = shown["approvals"].as_array().map_or(0, Vec::len);
            if records >= 2 && approvals >= 1 && shown.to_string().contains("finished") {
                return shown;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{}", String::from_utf8_lossy(&out.stderr));
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_answer_for_other_arguments_approves_nothing_even_with_the_right_approval_id() {
    node_modules();
    let served = serve(r#"{ "commands": { "default": "prompt" }, "approvals": { "timeout_seconds": 60 } }"#);
    let info = json!({ "mcp_url": served.mcp_url });
    let agent = agent_in_background(
        &info,
        &served.token,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "touch approved-by-receipt"}}]),
    );
    let asked = common::first_pending(&served);
    let id = asked["id"].clone();
    // The approval lists the digest of the canonical JSON of the arguments it shows, and the version of
    // the policy that asked.
    let digest = asked["arguments_sha256"].as_str().unwrap().to_owned();
    assert_eq!(digest, sha256(r#"{"command":"touch approved-by-receipt"}"#), "{asked}");
    assert!(asked["policy_version"].as_str().is_some_and(|v| !v.is_empty()), "{asked}");

    // The right id, the digest of other arguments: refused with its code, over the REST route and the
    // command table alike, whatever the answer.
    let forged = sha256(r#"{"command":"touch forged"}"#);
    for choice in ["once", "session", "always", "deny"] {
        let (status, refused) = answer(&served, &id, json!({"answer": choice, "arguments_sha256": forged}));
        assert_eq!(status, 409, "{refused}");
        assert_eq!(refused["error"]["code"], "receipt_mismatch", "{refused}");
        assert_eq!(refused["error"]["details"]["id"], id, "{refused}");
        assert_eq!(refused["error"]["details"]["given"], forged.as_str(), "{refused}");
    }
    let table = format!("{}/commands/answer_approval", served.api);
    let body = json!({"id": id, "answer": {"answer": "once", "arguments_sha256": forged}}).to_string();
    let (status, text) = http(&table, "POST", Some(&served.operator_token), &[], Some(&body));
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("receipt_mismatch"), "{text}");
    // No digest at all: a bad request that says what is missing.
    let (status, refused) = answer(&served, &id, json!({"answer": "once"}));
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "bad_request", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("arguments_sha256"), "{refused}");
    // Still waiting; nothing ran.
    std::thread::sleep(Duration::from_millis(300));
    let waiting = common::pending(&served);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["id"], id);
    assert!(!served.project().join("approved-by-receipt").exists());

    // The digest shown: approved; the answer's receipt comes back.
    let before_answer = now_micros();
    let (status, answered) = answer(&served, &id, json!({"answer": "once", "arguments_sha256": digest}));
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["answered"], id);
    let receipt = answered["receipt"].clone();
    assert_eq!(receipt["approval_id"], id.to_string(), "{receipt}");
    assert_eq!(receipt["call_id"], asked["call_id"], "{receipt}");
    assert_eq!(receipt["tool"], "shell");
    assert_eq!(receipt["arguments_sha256"], digest.as_str());
    assert_eq!(receipt["policy_version"], asked["policy_version"]);
    assert_eq!((receipt["operator"].as_str(), receipt["channel"].as_str()), (Some("api"), Some("api")));
    assert_eq!(receipt["outcome"], "approved_once");
    assert!(receipt["at"].as_i64().unwrap() >= before_answer, "{receipt}");
    assert_eq!(receipt["id"].as_str().unwrap().len(), 64, "{receipt}");
    let out = agent.join().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["results"][0]["result"]["isError"], false, "{report}");
    assert!(!text_of(&report["results"][0]["result"]).contains("denied"), "{report}");
    assert!(served.project().join("approved-by-receipt").exists());
    // Spent: the same answer again finds nothing to approve.
    let (status, again) = answer(&served, &id, json!({"answer": "once", "arguments_sha256": digest}));
    assert_eq!((status, again["error"]["code"].as_str()), (409, Some("approval_answered")), "{again}");

    // Every record of the call carries the receipt in its body; so does the approval's row.
    let shown = ledger_show_json(&served, asked["call_id"].as_str().unwrap());
    let records = shown["records"].as_array().unwrap();
    for record in records {
        assert_eq!(record["decided_by"]["receipt"], receipt, "{record}");
    }
    assert_eq!(shown["approvals"][0]["receipt"], receipt, "{shown}");
}

/// Now, in µs since the epoch (the ledger's clock).
fn now_micros() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(since.as_micros()).unwrap()
}
