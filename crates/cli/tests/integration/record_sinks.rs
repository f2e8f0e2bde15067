//! Records go further than the ledger through its tail: `portcullis serve --copy-records-to FILE`
//! appends every committed record to FILE as a JSON line, off the call's path, resuming after a
//! restart without repeating what it copied; the copy is the hub's as the ledger is, so an agent cannot
//! read it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{ledger_calls_when, node_modules, serve_with_args};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell"] } ],
  "commands": { "default": "forbidden",
    "rules": [ { "id": "reading", "pattern": [["echo", "cat"]], "decision": "allow", "match": ["echo hi"] } ] }
}
"#;

/// The copy's lines once one holds `needle` (or after 10 s).
fn copied(file: &std::path::Path, needle: &str) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let lines: Vec<Value> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.iter().any(|l| l.to_string().contains(needle)) || started.elapsed() > Duration::from_secs(10)
        {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn every_record_is_copied_once_across_a_restart_and_agents_cannot_read_the_copy() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let copy = std::fs::canonicalize(dir.path()).unwrap().join("records.jsonl");
    let copy_arg = copy.display().to_string();
    let mut served = serve_with_args(POLICY, &[], &["--copy-records-to", &copy_arg]);
    served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo first"}}]));
    let lines = copied(&copy, "echo first");
    assert!(lines.iter().any(|l| l.to_string().contains("echo first")), "{lines:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600);

    // The agent asks for the copy: a protected place of the hub, whatever the rules allow.
    let report = served
        .agent(json!([{"op": "call", "name": "shell", "arguments": {"command": format!("cat {copy_arg}")}}]));
    assert!(!report.to_string().contains("echo first"), "the agent read the copy: {report}");
    assert!(report.to_string().contains("a copy of the hub's ledger"), "{report}");

    served.stop();
    served.restart();
    served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo second"}}]));
    let calls = ledger_calls_when(&served, 3);
    let lines = copied(&copy, "echo second");
    let ids: Vec<i64> = lines.iter().map(|l| l["id"].as_i64().unwrap()).collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "a record copied twice: {ids:?}");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "out of order: {ids:?}");
    assert!(lines.iter().any(|l| l.to_string().contains("echo second")), "{lines:?}");
    assert!(calls.len() >= 3, "{calls:?}");
}
