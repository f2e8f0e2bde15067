//! The `portcullis ledger` commands that report: `stats` (JSON and text), `export` (JSONL, CSV, to a
//! file), and how output behaves (debug logs on stderr only, a reader closing early).

// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::ledger_fixture::*;
use portcullis_api::ledger::CSV_HEADER;
use portcullis_api::testing::{DecidedBy, LedgerWriter};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tempfile::TempDir;

// ---- stats ----

fn counts(list: &Value) -> Vec<(String, u64)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| (c["key"].as_str().unwrap().to_owned(), c["count"].as_u64().unwrap()))
        .collect()
}

fn pairs(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

#[test]
fn stats_json_counts_and_durations() {
    let (_dir, path) = fixture();
    let stats: Value = serde_json::from_str(&ok(&["ledger", "stats", "--db", db(&path), "--json"])).unwrap();
    assert_eq!(stats["total"], 11);
    assert_eq!(
        counts(&stats["by_tool"]),
        pairs(&[("read_file", 5), ("fetch_url", 2), ("shell", 2), ("write_file", 2)])
    );
    assert_eq!(
        counts(&stats["by_status"]),
        pairs(&[("blocked", 4), ("finished", 4), ("error", 2), ("interrupted", 1)])
    );
    assert_eq!(
        counts(&stats["by_reason"]),
        pairs(&[
            ("guardrail_blocked", 1),
            ("invalid_arguments", 1),
            ("permission_denied", 1),
            ("tool_denied", 1)
        ])
    );
    assert_eq!(
        counts(&stats["by_decided_by"]),
        pairs(&[
            ("rule", 4),
            ("default", 2),
            ("operator", 2),
            ("grants", 1),
            ("guardrail", 1),
            ("validator", 1)
        ])
    );
    let durations = stats["durations"].as_array().unwrap();
    assert_eq!(durations.len(), 3);
    assert_eq!(
        durations[0],
        json!({"tool": "read_file", "count": 4, "p50_us": 500_000, "p95_us": 1_000_000, "max_us": 1_000_000})
    );
    assert_eq!(
        durations[1],
        json!({"tool": "shell", "count": 1, "p50_us": 3_000_000, "p95_us": 3_000_000, "max_us": 3_000_000})
    );
    assert_eq!(
        durations[2],
        json!({"tool": "write_file", "count": 1, "p50_us": 50_000, "p95_us": 50_000, "max_us": 50_000})
    );

    // Filters apply, and the bucket width sets the histogram.
    let stats: Value = serde_json::from_str(&ok(&[
        "ledger",
        "stats",
        "--db",
        db(&path),
        "--json",
        "--until",
        "2025-03-02",
        "--bucket",
        "1m",
    ]))
    .unwrap();
    assert_eq!(stats["total"], 10);
    assert_eq!(stats["bucket_us"], 60 * SEC);
    assert_eq!(
        stats["buckets"],
        // Each bucket by outcome too (they add up to its count), and the calls the policy prompted for.
        json!([
            {"start": T0, "count": 5, "finished": 2, "error": 1, "blocked": 2, "interrupted": 0, "prompted": 0},
            {"start": T0 + 60 * SEC, "count": 2, "finished": 2, "error": 0, "blocked": 0, "interrupted": 0, "prompted": 0},
            {"start": T0 + 120 * SEC, "count": 3, "finished": 0, "error": 1, "blocked": 2, "interrupted": 0, "prompted": 0}
        ])
    );
    let b: Value =
        serde_json::from_str(&ok(&["ledger", "stats", "--db", db(&path), "--json", "--session", "sess-b"]))
            .unwrap();
    assert_eq!(b["total"], 5);
    assert_eq!(counts(&b["by_tool"]), pairs(&[("read_file", 3), ("fetch_url", 1), ("write_file", 1)]));
}

#[test]
fn stats_text_has_tables_and_a_histogram() {
    let (_dir, path) = fixture();
    let out = ok(&["ledger", "stats", "--db", db(&path), "--until", "2025-03-02", "--bucket", "1m"]);
    assert!(out.starts_with("calls: 10\n"), "{out}");
    for part in [
        "by tool:",
        "by status:",
        "by reason:",
        "by decided by:",
        "durations (calls that ran):",
        "calls per 1m:",
    ] {
        assert!(out.contains(part), "{part} missing:\n{out}");
    }
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(rows.contains(&vec!["read_file", "5"]), "{out}");
    assert!(rows.contains(&vec!["tool_denied", "1"]), "{out}");
    assert!(rows.contains(&vec!["read_file", "4", "500.0ms", "1.00s", "1.00s"]), "{out}");
    assert!(rows.contains(&vec!["shell", "1", "3.00s", "3.00s", "3.00s"]), "{out}");
    let hist: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("calls per")).skip(1).collect();
    assert_eq!(hist.len(), 3, "{out}");
    assert!(hist[0].starts_with("  2025-03-01T10:00:00.000000Z  5  ") && hist[0].ends_with(&"#".repeat(40)));
    assert!(
        hist[1].starts_with("  2025-03-01T10:01:00.000000Z  2  ")
            && hist[1].ends_with(&format!(" {}", "#".repeat(16)))
    );
    assert!(
        hist[2].starts_with("  2025-03-01T10:02:00.000000Z  3  ")
            && hist[2].ends_with(&format!(" {}", "#".repeat(24)))
    );
    fails(&["ledger", "stats", "--db", db(&path), "--bucket", "0h"], "bad_argument");
    fails(&["ledger", "stats", "--db", db(&path), "--bucket", "soon"], "bad_argument");
}

// ---- export ----

#[test]
fn export_jsonl_streams_the_records_of_the_filtered_calls() {
    let (_dir, path) = fixture();
    let out = run(&["ledger", "export", "--db", db(&path), "--format", "jsonl"]);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "no progress bar when stderr is not a terminal: {}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), ALL_RECORDS);
    let read: Vec<&str> =
        lines.iter().filter(|r| r["call_id"] == "a-read-1").map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(read, ["started", "progress", "finished"]);
    assert_eq!(lines[0]["arguments"], json!({"path": "/etc/hosts"}));

    let b = ok(&["ledger", "export", "--db", db(&path), "--format", "jsonl", "--session", "sess-b"]);
    let b: Vec<Value> = b.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(b.len(), 8);
    assert!(b.iter().all(|r| r["session_id"] == "sess-b"));

    let reads = ok(&["ledger", "export", "--db", db(&path), "--format", "jsonl", "--tool", "read_file"]);
    assert_eq!(reads.lines().count(), 10);
    let blocked = ok(&["ledger", "export", "--db", db(&path), "--format", "jsonl", "--status", "blocked"]);
    assert_eq!(blocked.lines().count(), 4);
    let found = ok(&["ledger", "export", "--db", db(&path), "--format", "jsonl", "--search", "localhost"]);
    assert_eq!(found.lines().count(), 3);
    let none = ok(&["ledger", "export", "--db", db(&path), "--format", "jsonl", "--tool", "nothing"]);
    assert!(none.is_empty());
}

#[test]
fn export_csv_quotes_fields() {
    let (_dir, path) = fixture();
    let out = ok(&["ledger", "export", "--db", db(&path), "--format", "csv"]);
    assert!(
        out.contains("\"ci bot, \"\"nightly\"\"\nrunner\""),
        "the owner field is quoted as RFC 4180 says"
    );
    let rows = parse_csv(&out);
    let header = &rows[0];
    assert_eq!(header.join(","), CSV_HEADER);
    assert_eq!(rows.len(), 1 + ALL_RECORDS);
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    for row in &rows[1..] {
        assert_eq!(row.len(), header.len(), "{row:?}");
        let body: Value = serde_json::from_str(&row[column("body")]).unwrap();
        assert!(body.get("decided_by").is_some());
    }
    let b_read: Vec<&Vec<String>> = rows[1..].iter().filter(|r| r[column("call_id")] == "b-read-1").collect();
    assert_eq!(b_read.len(), 2);
    for row in &b_read {
        assert_eq!(row[column("owner")], OWNER_WITH_COMMAS);
    }
    let finished = b_read.iter().find(|r| r[column("kind")] == "finished").unwrap();
    assert_eq!(finished[column("at")], "2025-03-01T10:01:40.200000Z");
    assert_eq!(finished[column("duration_us")], "200000");
    assert_eq!(finished[column("decided_by")], "rule");
    assert_eq!(finished[column("decided_rule")], "allow-reads");
    let body: Value = serde_json::from_str(&finished[column("body")]).unwrap();
    assert_eq!(body["output"]["content"][0]["text"], "he said \"hi\", then left");
    let blocked = rows[1..].iter().find(|r| r[column("call_id")] == "a-write-1").unwrap();
    assert_eq!(blocked[column("reason")], "tool_denied");
    assert_eq!(blocked[column("error_code")], "tool_denied");
}

#[test]
fn export_to_a_file_reports_on_stderr() {
    let (dir, path) = fixture();
    let target = dir.path().join("out.jsonl");
    let out = run(&["ledger", "export", "--db", db(&path), "--format", "jsonl", "--out", db(&target)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert_eq!(text(&out.stderr), format!("exported {ALL_RECORDS} records to {}\n", target.display()));
    let written = std::fs::read_to_string(&target).unwrap();
    assert_eq!(written.lines().count(), ALL_RECORDS);
    assert!(written.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let csv = dir.path().join("out.csv");
    let out = run(&[
        "ledger",
        "export",
        "--db",
        db(&path),
        "--format",
        "csv",
        "--status",
        "error",
        "--out",
        db(&csv),
    ]);
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), format!("exported 4 records to {}\n", csv.display()));
    assert_eq!(parse_csv(&std::fs::read_to_string(&csv).unwrap()).len(), 5);

    // Never over the ledger itself.
    let before = std::fs::read(&path).unwrap();
    fails(&["ledger", "export", "--db", db(&path), "--format", "csv", "--out", db(&path)], "bad_argument");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    fails(&["ledger", "export", "--db", db(&path), "--format", "xml"], "bad_filter");
    let missing_dir = dir.path().join("no/such/dir/out.csv");
    fails(
        &["ledger", "export", "--db", db(&path), "--format", "csv", "--out", db(&missing_dir)],
        "output_failed",
    );
}

// ---- logs and pipes ----

#[test]
fn debug_logs_go_to_stderr_only() {
    let (_dir, path) = fixture();
    let out = portcullis()
        .args(["ledger", "query", "--db", db(&path), "--json"])
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    assert!(out.status.success());
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["calls"].as_array().unwrap().len(), ALL_CALLS.len());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("DEBUG") && stderr.contains("opening ledger"), "{stderr}");
    // And nothing on stderr by default.
    let out = run(&["ledger", "query", "--db", db(&path), "--json"]);
    assert!(out.stderr.is_empty());
}

/// A ledger big enough that its export overflows a pipe's buffer.
fn big_fixture(dir: &Path) -> PathBuf {
    let path = dir.join("big.db");
    runtime().block_on(async {
        let ledger = LedgerWriter::open(&path).unwrap();
        let padding = "x".repeat(300);
        for i in 0..2000 {
            let c = Call::new("sess-big", &format!("big-{i}"), "echo", DecidedBy::DEFAULT);
            ledger.record(c.started(i * SEC, json!({"text": padding, "i": i}))).await.unwrap();
            ledger.record(c.finished(i * SEC + 10, i * SEC, &padding)).await.unwrap();
        }
        ledger.close().await.unwrap();
    });
    path
}

/// Reads one line of stdout, closes the pipe, and expects a quiet exit 0.
fn read_one_line_then_close(args: &[&str]) {
    let mut child = portcullis().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(!line.is_empty());
    drop(reader);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(stderr.is_empty(), "{args:?}: {stderr}");
    assert_eq!(out.status.code(), Some(0), "{args:?}");
}

#[test]
fn a_reader_closing_early_stops_output_quietly() {
    let dir = TempDir::new().unwrap();
    let path = big_fixture(dir.path());
    read_one_line_then_close(&["ledger", "export", "--db", db(&path), "--format", "jsonl"]);
    read_one_line_then_close(&["ledger", "export", "--db", db(&path), "--format", "csv"]);
    read_one_line_then_close(&["ledger", "query", "--db", db(&path), "--limit", "1000"]);
    read_one_line_then_close(&["ledger", "query", "--db", db(&path), "--limit", "1000", "--json"]);
}
