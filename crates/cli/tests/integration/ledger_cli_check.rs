//! The `portcullis ledger` commands that look after a ledger file: `check` and `migrate`, and the
//! refusals (files that are not ledgers, newer schemas, bad options).

// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::ledger_fixture::*;
use serde_json::{Value, json};
use tempfile::TempDir;

// ---- check and migrate ----

#[test]
fn check_a_healthy_ledger() {
    let (_dir, path) = fixture();
    let out = run(&["ledger", "check", "--db", db(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let report = text(&out.stdout);
    assert!(report.contains("integrity: ok\n"), "{report}");
    let version = portcullis_api::ledger::SCHEMA_VERSION;
    assert!(report.contains(&format!("schema version: {version} (this build: {version})")), "{report}");
    assert!(report.lines().any(|l| l.starts_with("records:") && l.ends_with(" 19")), "{report}");
    assert!(report.ends_with("healthy\n"), "{report}");

    let report: Value = serde_json::from_str(&ok(&["ledger", "check", "--db", db(&path), "--json"])).unwrap();
    assert_eq!(
        report,
        json!({
            "healthy": true,
            "integrity_ok": true,
            "integrity_messages": [],
            "schema_version": version,
            "supported_version": version,
            "records": 19,
            "calls": 11,
            "sessions": 2,
            "approvals": 1,
            "open_calls": 0,
            "unclosed_writers": 0,
            "unreadable_bodies": 0
        })
    );
}

#[test]
fn check_an_unhealthy_ledger_exits_1() {
    let (_dir, path) = fixture();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE records SET body = 'not json' WHERE kind = 'progress'", []).unwrap();
    }
    let out = run(&["ledger", "check", "--db", db(&path), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(report["healthy"], false);
    assert_eq!(report["unreadable_bodies"], 1);
    let out = run(&["ledger", "check", "--db", db(&path)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).ends_with("NOT healthy\n"));
}

#[test]
fn migrate_brings_an_older_schema_forward() {
    let (_dir, path) = fixture();
    // The fixture's writer left its two sessions open: the first writer after it ends them as cut.
    assert_eq!(
        ok(&["ledger", "migrate", "--db", db(&path)]),
        format!(
            "{}: schema version {}\nmarked 2 sessions still open (their writer stopped without ending them) as cut\n",
            path.display(),
            portcullis_api::ledger::SCHEMA_VERSION
        )
    );
    // Take the file back to schema 1 (no approvals, no search index, no policy decision columns, no
    // session end reasons, no refusals, no call rollups, no journal point, no tool pins, no ledger id or
    // change clock, no hash chain, no side chain, no call marks).
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TRIGGER sessions_inserted; DROP TRIGGER sessions_updated; DROP TRIGGER approvals_inserted;
             DROP TRIGGER approvals_updated; DROP TRIGGER refusals_inserted; DROP TRIGGER refusals_updated;
             DROP INDEX sessions_changed; ALTER TABLE sessions DROP COLUMN changed;
             DROP TABLE ledger_identity; DROP TABLE change_clock;
             DROP TABLE approvals; DROP TABLE records_fts; DROP TABLE refusals;
             DROP TABLE call_keys; DROP TABLE call_hours; DROP TABLE call_days; DROP TABLE journal_state;
             DROP TABLE tool_pins; DROP TABLE tool_pin_events; DROP TABLE effects; DROP TABLE effect_marks;
             DROP TABLE chain_state; DROP TABLE chain_checkpoints; ALTER TABLE records DROP COLUMN chain;
             DROP TABLE side_chain; DROP TABLE side_chain_state; DROP TABLE side_checkpoints;
             DROP TABLE chain_marks;
             DROP INDEX calls_changes; DROP INDEX calls_contained; ALTER TABLE records DROP COLUMN changes;
             ALTER TABLE records DROP COLUMN contained;
             ALTER TABLE records DROP COLUMN policy_decision;
             ALTER TABLE records DROP COLUMN policy_rule; ALTER TABLE sessions DROP COLUMN end_reason;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let stderr = fails(&["ledger", "query", "--db", db(&path)], "ledger_schema_older");
    assert!(stderr.contains("migrate"), "{stderr}");
    assert_eq!(
        ok(&["ledger", "migrate", "--db", db(&path)]),
        format!("{}: schema version {}\n", path.display(), portcullis_api::ledger::SCHEMA_VERSION)
    );
    assert_eq!(query_ids(&path, &[]), ALL_CALLS);
    // The search index was rebuilt from the records.
    assert_eq!(query_ids(&path, &["--search", "localhost"]), ["sess-a/a-read-1"]);
    assert_eq!(query_ids(&path, &["--search", "passwd"]), ["sess-a/a-write-1"]);
    // A missing file is not created.
    let missing = path.with_file_name("missing.db");
    fails(&["ledger", "migrate", "--db", db(&missing)], "ledger_missing");
    assert!(!missing.exists());
}

// ---- errors ----

#[test]
fn files_that_are_not_ledgers_are_refused() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("missing.db");
    for command in ["query", "stats", "check"] {
        fails(&["ledger", command, "--db", db(&missing)], "ledger_missing");
    }
    fails(&["ledger", "show", "--db", db(&missing), "x"], "ledger_missing");
    fails(&["ledger", "export", "--db", db(&missing), "--format", "csv"], "ledger_missing");
    assert!(!missing.exists());

    let plain = dir.path().join("notes.txt");
    std::fs::write(&plain, "this is a plain text file, not a database\n".repeat(100)).unwrap();
    let stderr = fails(&["ledger", "query", "--db", db(&plain)], "not_a_ledger");
    assert!(stderr.contains("not an SQLite database"), "{stderr}");
    fails(&["ledger", "check", "--db", db(&plain)], "not_a_ledger");

    let other = dir.path().join("other.sqlite");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('hi');",
        )
        .unwrap();
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let before = std::fs::read(&other).unwrap();
    let stderr = fails(&["ledger", "query", "--db", db(&other)], "not_a_ledger");
    assert!(stderr.contains("another application"), "{stderr}");
    fails(&["ledger", "migrate", "--db", db(&other)], "not_a_ledger");
    assert_eq!(std::fs::read(&other).unwrap(), before, "a foreign database is never altered");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&other).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "nor are its permissions");
    }
}

#[test]
fn a_newer_schema_is_refused_and_left_unchanged() {
    let (_dir, path) = fixture();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA user_version = 99;").unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let stderr = fails(&["ledger", "query", "--db", db(&path)], "ledger_schema_newer");
    assert!(stderr.contains("99"), "{stderr}");
    fails(&["ledger", "check", "--db", db(&path)], "ledger_schema_newer");
    fails(&["ledger", "export", "--db", db(&path), "--format", "jsonl"], "ledger_schema_newer");
    fails(&["ledger", "migrate", "--db", db(&path)], "ledger_schema_newer");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn bad_options_are_one_line_errors() {
    let (_dir, path) = fixture();
    let q = |extra: &[&str], code: &str| {
        let mut args = vec!["ledger", "query", "--db", db(&path)];
        args.extend_from_slice(extra);
        fails(&args, code)
    };
    let stderr = q(&["--status", "done"], "bad_filter");
    assert!(stderr.contains("\"done\""), "{stderr}");
    q(&["--reason", "because"], "bad_filter");
    q(&["--decided-by", "nobody"], "bad_filter");
    q(&["--policy-decision", "maybe"], "bad_filter");
    let stderr = q(&["--since", "yesterday"], "bad_time");
    assert!(stderr.contains("--since"), "{stderr}");
    q(&["--until", "2026-13-01"], "bad_time");
    q(&["--since", "2025-03-02", "--until", "2025-03-01"], "bad_filter");
    let stderr = q(&["--before", "not-a-cursor"], "bad_filter");
    assert!(stderr.contains("cursor"), "{stderr}");
    q(&["--before", "12"], "bad_filter");
    q(&["--search", "!!!"], "bad_filter");
    // The same filters apply to stats and export.
    fails(&["ledger", "stats", "--db", db(&path), "--status", "done"], "bad_filter");
    fails(&["ledger", "export", "--db", db(&path), "--format", "csv", "--since", "soon"], "bad_time");
    // Usage errors are clap's (exit 2).
    for args in [
        &["ledger", "query", "--db", db(&path), "--limit", "0"][..],
        &["ledger", "query", "--db", db(&path), "--limit", "1001"][..],
        &["ledger", "frobnicate"][..],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).starts_with("error: "), "{args:?}");
    }
}
