//! The `portcullis ledger` commands, run as a user runs them: through the binary, against ledgers built
//! here with the real SQLite writer. This file: `query` and `show`; `stats`, `export` and output streams
//! are in `ledger_cli_output.rs`, `check`, `migrate` and refusals in `ledger_cli_check.rs`.

// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::ledger_fixture;

use crate::ledger_fixture::*;
use portcullis_api::testing::LedgerWriter;
use serde_json::{Value, json};
use tempfile::TempDir;

// ---- query ----

#[test]
fn query_table_lists_every_call_newest_first() {
    let (_dir, path) = fixture();
    let out = ok(&["ledger", "query", "--db", db(&path)]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + ALL_CALLS.len(), "{out}");
    let header = lines[0];
    for column in ["TIME", "SESSION", "CALL", "TOOL", "STATUS", "REASON/ERROR", "DECIDED BY", "DURATION"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(!out.contains("next page"));
    // Rows in newest-first order.
    let call_column = header.find("CALL").unwrap();
    let listed: Vec<String> = lines[1..]
        .iter()
        .map(|l| {
            let session = l.split_whitespace().nth(1).unwrap();
            let call = l[call_column..].split_whitespace().next().unwrap();
            format!("{session}/{call}")
        })
        .collect();
    assert_eq!(listed, ALL_CALLS);
    // Aligned: every row's tool starts under TOOL.
    let tool_column = header.find("TOOL").unwrap();
    let read = lines.iter().find(|l| l.contains(" a-read-1 ")).unwrap();
    assert_eq!(read.find("read_file"), Some(tool_column));
    assert!(read.starts_with("2025-03-01T10:00:01.000000Z  sess-a"), "{read}");
    assert!(
        read.contains("finished") && read.contains("rule:allow-reads") && read.ends_with("1.00s"),
        "{read}"
    );
    let shell = lines.iter().find(|l| l.contains(" a-shell-1 ")).unwrap();
    assert!(shell.starts_with("2025-03-01T10:00:23.000000Z"), "{shell}");
    for part in ["shell", "error", "tool_error", "operator (alice: approved_once)", "3.00s"] {
        assert!(shell.contains(part), "{part} missing: {shell}");
    }
    let write = lines.iter().find(|l| l.contains(" a-write-1 ")).unwrap();
    for part in ["write_file", "blocked", "tool_denied", "grants:session"] {
        assert!(write.contains(part), "{part} missing: {write}");
    }
    assert!(write.trim_end().ends_with('-'), "blocked calls have no duration: {write}");
    let interrupted = lines[1];
    assert!(interrupted.contains("a-shell-2") && interrupted.contains("interrupted"), "{interrupted}");
    assert!(interrupted.contains("rule:allow-shell"), "{interrupted}");
}

#[test]
fn query_json_holds_every_field() {
    let (_dir, path) = fixture();
    let page = query_json(&path, &[]);
    assert_eq!(page["next"], Value::Null);
    let calls = page["calls"].as_array().unwrap();
    assert_eq!(calls.len(), ALL_CALLS.len());
    assert_eq!(calls[0]["call_id"], "a-shell-2");
    assert_eq!(calls[0]["status"], "interrupted");
    assert_eq!(calls[0]["error_code"], "interrupted");
    assert_eq!(calls[0]["decided_rule"], "allow-shell");

    let shell = call(&page, "sess-a", "a-shell-1");
    assert_eq!(shell["tool"], "shell");
    assert_eq!(shell["run_id"], "run-a1");
    assert_eq!(shell["owner"], "agent");
    assert_eq!(shell["status"], "error");
    assert_eq!(shell["error_code"], "tool_error");
    assert_eq!(shell["at"], T0 + 23 * SEC);
    assert_eq!(shell["time"], "2025-03-01T10:00:23.000000Z");
    assert_eq!(shell["started_at"], T0 + 20 * SEC);
    assert_eq!(shell["duration_us"], 3 * SEC);
    assert_eq!(shell["decided_by"], "operator");
    assert_eq!(shell["decided_operator"], "alice: approved_once");

    let write = call(&page, "sess-a", "a-write-1");
    assert_eq!(write["status"], "blocked");
    assert_eq!(write["reason"], "tool_denied");
    assert_eq!(write["decided_by"], "grants");
    assert_eq!(write["decided_rule"], "session");
    assert!(write.get("duration_us").is_none());

    let fetch = call(&page, "sess-b", "b-fetch-1");
    assert_eq!(fetch["reason"], "guardrail_blocked");
    assert_eq!(fetch["decided_by"], "guardrail");
    assert_eq!(fetch["decided_rule"], "no-tokens");
    assert_eq!(fetch["decided_source"], "secrets");

    let shared_b = call(&page, "sess-b", "shared-1");
    assert_eq!(shared_b["decided_by"], "validator");
    assert_eq!(shared_b["reason"], "invalid_arguments");
    assert_eq!(call(&page, "sess-a", "shared-1")["status"], "finished");
}

#[test]
fn each_filter_narrows() {
    let (_dir, path) = fixture();
    let q = |extra: &[&str]| query_ids(&path, extra);
    assert_eq!(q(&["--tool", "shell"]), ["sess-a/a-shell-2", "sess-a/a-shell-1"]);
    assert_eq!(
        q(&["--tool", "shell", "--tool", "write_file"]),
        ["sess-a/a-shell-2", "sess-b/b-write-1", "sess-a/a-shell-1", "sess-a/a-write-1"]
    );
    assert_eq!(
        q(&["--status", "blocked"]),
        ["sess-b/shared-1", "sess-b/b-fetch-1", "sess-a/a-fetch-1", "sess-a/a-write-1"]
    );
    assert_eq!(q(&["--status", "interrupted"]), ["sess-a/a-shell-2"]);
    assert_eq!(
        q(&["--status", "finished", "--status", "error"]),
        [
            "sess-b/b-read-2",
            "sess-b/b-write-1",
            "sess-b/b-read-1",
            "sess-a/shared-1",
            "sess-a/a-shell-1",
            "sess-a/a-read-1"
        ]
    );
    assert_eq!(
        q(&["--status", "error,interrupted"]),
        ["sess-a/a-shell-2", "sess-b/b-read-2", "sess-a/a-shell-1"]
    );
    // No writer holds a call open any more.
    assert!(q(&["--status", "running"]).is_empty());
    assert_eq!(q(&["--reason", "guardrail_blocked"]), ["sess-b/b-fetch-1"]);
    assert_eq!(
        q(&["--reason", "tool_denied", "--reason", "invalid_arguments"]),
        ["sess-b/shared-1", "sess-a/a-write-1"]
    );
    assert_eq!(q(&["--decided-by", "operator"]), ["sess-b/b-write-1", "sess-a/a-shell-1"]);
    assert_eq!(q(&["--decided-by", "default"]), ["sess-b/b-read-2", "sess-a/a-fetch-1"]);
    assert_eq!(q(&["--decided-by", "grants"]), ["sess-a/a-write-1"]);
    assert_eq!(
        q(&["--decided-by", "rule"]),
        ["sess-a/a-shell-2", "sess-b/b-read-1", "sess-a/shared-1", "sess-a/a-read-1"]
    );
    assert_eq!(
        q(&["--decided-by", "guardrail", "--decided-by", "validator"]),
        ["sess-b/shared-1", "sess-b/b-fetch-1"]
    );
    assert_eq!(q(&["--rule", "allow-reads"]), ["sess-b/b-read-1", "sess-a/shared-1", "sess-a/a-read-1"]);
    assert_eq!(q(&["--session", "sess-b"]), ALL_CALLS[1..6]);
    assert_eq!(
        q(&["--run", "run-a1"]),
        [
            "sess-a/a-shell-2",
            "sess-a/shared-1",
            "sess-a/a-fetch-1",
            "sess-a/a-shell-1",
            "sess-a/a-write-1",
            "sess-a/a-read-1"
        ]
    );
    assert_eq!(q(&["--since", "2025-03-01T10:01:00Z"]), ALL_CALLS[..6]);
    assert_eq!(q(&["--until", "2025-03-01T10:01:00Z"]), ALL_CALLS[6..]);
    assert_eq!(
        q(&["--since", "2025-03-01", "--until", "2025-03-01T10:00:25Z"]),
        ["sess-a/a-shell-1", "sess-a/a-write-1", "sess-a/a-read-1"]
    );
    // An age: only the call interrupted at close (just now) is younger than a day.
    assert_eq!(q(&["--since", "1d"]), ["sess-a/a-shell-2"]);
    assert_eq!(q(&["--session", "sess-a", "--status", "blocked"]), ["sess-a/a-fetch-1", "sess-a/a-write-1"]);
    assert!(q(&["--tool", "no_such_tool"]).is_empty());
    // An agent's name is taken whole (commas, quotes and newlines included).
    assert_eq!(q(&["--agent", ledger_fixture::OWNER_WITH_COMMAS]), ["sess-b/b-read-1"]);
    // The fixture's records were written without the policy's own decision.
    assert!(q(&["--policy-decision", "allow,prompt,forbidden"]).is_empty());
    let none = ok(&["ledger", "query", "--db", db(&path), "--tool", "no_such_tool"]);
    assert_eq!(none, "no calls match\n");
}

#[test]
fn search_finds_words_from_arguments_and_outputs() {
    let (_dir, path) = fixture();
    let q = |words: &str| query_ids(&path, &["--search", words]);
    assert_eq!(q("passwd"), ["sess-a/a-write-1"], "a word of the arguments of a blocked call");
    assert_eq!(q("hosts"), ["sess-a/a-read-1"], "a word of the arguments of a started call");
    assert_eq!(q("localhost"), ["sess-a/a-read-1"], "a word of an output");
    assert_eq!(q("cargo release"), ["sess-a/a-shell-1"], "every word must appear");
    assert_eq!(q("nope"), ["sess-b/b-read-2"]);
    assert!(q("cargo nonexistentword").is_empty());
    assert_eq!(q("passwd").len(), 1);
    assert_eq!(query_ids(&path, &["--search", "path", "--session", "sess-b"]).len(), 4);
}

#[test]
fn pages_walk_every_call_exactly_once() {
    let (_dir, path) = fixture();
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut extra = vec!["--limit", "2"];
        if let Some(b) = &before {
            extra.extend(["--before", b.as_str()]);
        }
        let page = query_json(&path, &extra);
        let calls = page["calls"].as_array().unwrap();
        assert!(calls.len() <= 2);
        pages += 1;
        seen.extend(
            calls
                .iter()
                .map(|c| format!("{}/{}", c["session_id"].as_str().unwrap(), c["call_id"].as_str().unwrap())),
        );
        match page["next"].as_str() {
            Some(next) => before = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 20, "pagination does not end");
    }
    assert_eq!(pages, 6);
    assert_eq!(seen, ALL_CALLS);

    // The table prints the same cursor.
    let first = query_json(&path, &["--limit", "2"]);
    let cursor = first["next"].as_str().unwrap();
    let table = ok(&["ledger", "query", "--db", db(&path), "--limit", "2"]);
    assert_eq!(table.lines().count(), 4);
    assert_eq!(table.lines().last().unwrap(), format!("next page: --before {cursor}"));

    // Search results page too.
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut extra = vec!["--limit", "3", "--search", "path"];
        if let Some(b) = &before {
            extra.extend(["--before", b.as_str()]);
        }
        let page = query_json(&path, &extra);
        seen.extend(
            page["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{}/{}", c["session_id"].as_str().unwrap(), c["call_id"].as_str().unwrap())),
        );
        match page["next"].as_str() {
            Some(next) => before = Some(next.to_owned()),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "a call listed twice: {seen:?}");
    assert_eq!(seen.len(), 7, "{seen:?}");
}

#[test]
fn a_running_call_is_listed_while_its_writer_is_open() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("live.db");
    let rt = runtime();
    let ledger = LedgerWriter::open(&path).unwrap();
    let live = Call::new("sess-live", "live-1", "shell", rule("allow-shell"));
    rt.block_on(async {
        ledger.record(live.started(0, json!({"command": "make"}))).await.unwrap();
        ledger.flush().await.unwrap();
    });
    let page = query_json(&path, &["--status", "running"]);
    assert_eq!(page["calls"].as_array().unwrap().len(), 1);
    assert_eq!(page["calls"][0]["call_id"], "live-1");
    assert_eq!(page["calls"][0]["status"], "running");
    // A second writer is refused while this one holds the file.
    fails(&["ledger", "migrate", "--db", db(&path)], "ledger_locked");
    rt.block_on(ledger.close()).unwrap();
    assert_eq!(query_ids(&path, &["--status", "interrupted"]), ["sess-live/live-1"]);
}

// ---- show ----

#[test]
fn show_prints_a_calls_records_in_order() {
    let (_dir, path) = fixture();
    let out = ok(&["ledger", "show", "--db", db(&path), "a-read-1"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "call a-read-1  tool read_file  session sess-a  run run-a1  owner agent  status finished"
    );
    assert!(lines[1].contains("TIME") && lines[1].contains("KIND") && lines[1].contains("DETAILS"));
    assert_eq!(lines.len(), 5, "{out}");
    assert!(lines[2].starts_with("  2025-03-01T10:00:00.000000Z  started"), "{}", lines[2]);
    assert!(lines[2].contains("rule:allow-reads from policy.toml"));
    assert!(lines[2].contains(r#"args {"path":"/etc/hosts"}"#), "{}", lines[2]);
    assert!(lines[3].starts_with("  2025-03-01T10:00:00.500000Z  progress"), "{}", lines[3]);
    assert!(lines[3].contains(r#"progress {"bytes":512}"#));
    assert!(lines[4].starts_with("  2025-03-01T10:00:01.000000Z  finished"), "{}", lines[4]);
    assert!(
        lines[4].contains(r#"output "127.0.0.1 localhost""#) && lines[4].contains("took 1.00s"),
        "{}",
        lines[4]
    );
}

#[test]
fn show_an_interrupted_call() {
    let (_dir, path) = fixture();
    let out = ok(&["ledger", "show", "--db", db(&path), "a-shell-2"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with("status interrupted"), "{}", lines[0]);
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[2].contains("started") && lines[2].contains(r#"args {"command":"sleep 1000"}"#));
    assert!(lines[3].contains("interrupted"), "{}", lines[3]);
    assert!(
        lines[3].contains("error interrupted: outcome unknown: the process writing this ledger stopped"),
        "{}",
        lines[3]
    );

    let timeline: Value =
        serde_json::from_str(&ok(&["ledger", "show", "--db", db(&path), "a-shell-2", "--json"])).unwrap();
    let kinds: Vec<&str> =
        timeline["records"].as_array().unwrap().iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["started", "interrupted"]);
    assert_eq!(timeline["records"][1]["started_at"], T0 + 40 * SEC);
}

#[test]
fn show_approvals_errors_and_sessions() {
    let (_dir, path) = fixture();
    let out = ok(&["ledger", "show", "--db", db(&path), "a-shell-1"]);
    assert!(out.contains("operator (alice: approved_once)"), "{out}");
    assert!(out.contains("error tool_error: exit status 101; took 3.00s"), "{out}");
    assert!(out.contains("  approvals:\n    requested 2025-03-01T10:00:15.000000Z, approved_once by alice at 2025-03-01T10:00:19.000000Z; note \"looks fine\"\n"), "{out}");
    let timeline: Value =
        serde_json::from_str(&ok(&["ledger", "show", "--db", db(&path), "a-shell-1", "--json"])).unwrap();
    assert_eq!(timeline["records"].as_array().unwrap().len(), 2);
    assert_eq!(timeline["approvals"][0]["outcome"], "approved_once");
    assert_eq!(timeline["approvals"][0]["operator"], "alice");

    // A call id in two sessions: both, or the one asked for.
    let both = ok(&["ledger", "show", "--db", db(&path), "shared-1"]);
    assert_eq!(both.lines().filter(|l| l.starts_with("call shared-1")).count(), 2, "{both}");
    assert!(both.contains("validator:json-schema") && both.contains("reason invalid_arguments"));
    let one = ok(&["ledger", "show", "--db", db(&path), "shared-1", "--session", "sess-b", "--json"]);
    let timeline: Value = serde_json::from_str(&one).unwrap();
    let records = timeline["records"].as_array().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["kind"], "blocked");
    assert_eq!(records[0]["reason"], "invalid_arguments");

    let stderr = fails(&["ledger", "show", "--db", db(&path), "no-such-call"], "call_not_found");
    assert!(stderr.contains("no-such-call"));
    fails(&["ledger", "show", "--db", db(&path), "a-read-1", "--session", "sess-b"], "call_not_found");
}
