//! The `portcullis ledger` commands, run as a user runs them: through the binary, against ledgers built
//! here with the real SQLite writer.
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_harness::{
    BlockedReason, CallContext, CallError, DecidedBy, Ledger, OperatorOutcome, RecordKind, Timestamp,
    ToolCallRecord, ToolOutput,
};
use portcullis_ledger::export::CSV_HEADER;
use portcullis_ledger::{ApprovalOutcome, ApprovalRecord, SessionInfo, SqliteLedger};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use tempfile::TempDir;

/// 2025-03-01T10:00:00Z.
const T0: i64 = 1_740_823_200_000_000;
const SEC: i64 = 1_000_000;
const OWNER_WITH_COMMAS: &str = "ci bot, \"nightly\"\nrunner";

/// Every call of the fixture, newest first (`a-shell-2` was interrupted when the writer closed, now).
const ALL_CALLS: [&str; 11] = [
    "sess-a/a-shell-2",
    "sess-b/shared-1",
    "sess-b/b-read-2",
    "sess-b/b-fetch-1",
    "sess-b/b-write-1",
    "sess-b/b-read-1",
    "sess-a/shared-1",
    "sess-a/a-fetch-1",
    "sess-a/a-shell-1",
    "sess-a/a-write-1",
    "sess-a/a-read-1",
];
const ALL_RECORDS: usize = 19;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn context(session: &str, run: &str, call: &str, owner: &str) -> Arc<CallContext> {
    Arc::new(CallContext {
        session_id: session.into(),
        run_id: run.into(),
        call_id: call.into(),
        owner: owner.into(),
        cwd: None,
    })
}

/// Builds records of one call.
struct Call {
    ctx: Arc<CallContext>,
    tool: &'static str,
    decided: DecidedBy,
}

impl Call {
    fn new(session: &str, call: &str, tool: &'static str, decided: DecidedBy) -> Self {
        let run = if session == "sess-a" { "run-a1" } else { "run-b1" };
        Call { ctx: context(session, run, call, "agent"), tool, decided }
    }

    fn owner(mut self, owner: &str) -> Self {
        let c = &*self.ctx;
        self.ctx = context(&c.session_id, &c.run_id, &c.call_id, owner);
        self
    }

    fn record(&self, kind: RecordKind, at: i64) -> ToolCallRecord {
        ToolCallRecord {
            at: Timestamp(T0 + at),
            ..ToolCallRecord::new(kind, self.ctx.clone(), self.tool.into(), self.decided.clone())
        }
    }

    fn started(&self, at: i64, arguments: Value) -> ToolCallRecord {
        ToolCallRecord { arguments: Some(Arc::new(arguments)), ..self.record(RecordKind::Started, at) }
    }

    fn progress(&self, at: i64, started: i64, progress: Value) -> ToolCallRecord {
        ToolCallRecord {
            progress: Some(progress),
            started_at: Some(Timestamp(T0 + started)),
            ..self.record(RecordKind::Progress, at)
        }
    }

    fn finished(&self, at: i64, started: i64, text: &str) -> ToolCallRecord {
        ToolCallRecord {
            output: Some(Arc::new(ToolOutput::text(text))),
            started_at: Some(Timestamp(T0 + started)),
            ..self.record(RecordKind::Finished, at)
        }
    }

    fn error(&self, at: i64, started: i64, code: &str, message: &str) -> ToolCallRecord {
        ToolCallRecord {
            error: Some(CallError::new(code, message)),
            started_at: Some(Timestamp(T0 + started)),
            ..self.record(RecordKind::Error, at)
        }
    }

    fn blocked(&self, at: i64, arguments: Value, reason: BlockedReason, message: &str) -> ToolCallRecord {
        ToolCallRecord {
            arguments: Some(Arc::new(arguments)),
            blocked_reason: Some(reason),
            error: Some(CallError::new(reason.as_str(), message)),
            ..self.record(RecordKind::Blocked, at)
        }
    }
}

fn rule(id: &str) -> DecidedBy {
    DecidedBy::Rule { rule_id: id.into(), source: "policy.toml".into() }
}

fn operator(outcome: OperatorOutcome, who: &str) -> DecidedBy {
    DecidedBy::Operator { outcome, operator: Some(who.into()), rule_written: None }
}

/// Two sessions, four tools, every record kind and six kinds of decider; 11 calls, 19 records.
fn fixture_records() -> Vec<ToolCallRecord> {
    let a_read = Call::new("sess-a", "a-read-1", "read_file", rule("allow-reads"));
    let a_write =
        Call::new("sess-a", "a-write-1", "write_file", DecidedBy::Grants { scope: "session".into() });
    let a_shell = Call::new("sess-a", "a-shell-1", "shell", operator(OperatorOutcome::ApprovedOnce, "alice"));
    let a_fetch = Call::new("sess-a", "a-fetch-1", "fetch_url", DecidedBy::DEFAULT);
    let a_shell2 = Call::new("sess-a", "a-shell-2", "shell", rule("allow-shell"));
    let a_shared = Call::new("sess-a", "shared-1", "read_file", rule("allow-reads"));
    let b_read = Call::new("sess-b", "b-read-1", "read_file", rule("allow-reads")).owner(OWNER_WITH_COMMAS);
    let b_write =
        Call::new("sess-b", "b-write-1", "write_file", operator(OperatorOutcome::ApprovedForSession, "bob"));
    let b_fetch = Call::new(
        "sess-b",
        "b-fetch-1",
        "fetch_url",
        DecidedBy::Guardrail { pack: "secrets".into(), rule: "no-tokens".into() },
    );
    let b_read2 = Call::new(
        "sess-b",
        "b-read-2",
        "read_file",
        DecidedBy::Default { detail: Some("no rule matched".into()) },
    );
    let b_shared = Call::new(
        "sess-b",
        "shared-1",
        "read_file",
        DecidedBy::Validator { validator: "json-schema".into() },
    );
    vec![
        a_read.started(0, json!({"path": "/etc/hosts"})),
        a_read.progress(SEC / 2, 0, json!({"bytes": 512})),
        a_read.finished(SEC, 0, "127.0.0.1 localhost"),
        a_write.blocked(
            10 * SEC,
            json!({"path": "/etc/passwd", "content": "x"}),
            BlockedReason::ToolDenied,
            "write_file is not granted",
        ),
        a_shell.started(20 * SEC, json!({"command": "cargo build --release"})),
        a_shell.error(23 * SEC, 20 * SEC, "tool_error", "exit status 101"),
        a_fetch.blocked(
            30 * SEC,
            json!({"url": "https://example.com"}),
            BlockedReason::PermissionDenied,
            "no network",
        ),
        a_shell2.started(40 * SEC, json!({"command": "sleep 1000"})),
        a_shared.started(50 * SEC, json!({"path": "README.md"})),
        a_shared.finished(51 * SEC, 50 * SEC, "# Portcullis"),
        b_read.started(100 * SEC, json!({"path": "notes.txt"})),
        b_read.finished(100 * SEC + 200_000, 100 * SEC, "he said \"hi\", then left"),
        b_write.started(110 * SEC, json!({"path": "out.txt", "content": "hello world!"})),
        b_write.finished(110 * SEC + 50_000, 110 * SEC, "wrote 12 bytes"),
        b_fetch.blocked(
            120 * SEC,
            json!({"url": "https://tokens.example"}),
            BlockedReason::GuardrailBlocked,
            "secret-looking token",
        ),
        b_read2.started(130 * SEC, json!({"path": "/nope"})),
        b_read2.error(130 * SEC + 500_000, 130 * SEC, "tool_error", "file not found: /nope"),
        b_shared.blocked(
            140 * SEC,
            json!({"path": 42}),
            BlockedReason::InvalidArguments,
            "path must be a string",
        ),
    ]
}

fn session(id: &str) -> SessionInfo {
    SessionInfo {
        id: id.into(),
        client_name: Some("test-agent".into()),
        client_version: Some("1.0".into()),
        cwd: None,
        policy_hash: None,
        started_at: Timestamp(T0),
        ended_at: None,
    }
}

/// Writes the fixture ledger; `a-shell-2` is still running at close and so becomes `interrupted`.
fn write_fixture(path: &Path) {
    runtime().block_on(async {
        let ledger = SqliteLedger::open(path).unwrap();
        ledger.begin_session(session("sess-a")).await.unwrap();
        ledger.begin_session(session("sess-b")).await.unwrap();
        for record in fixture_records() {
            ledger.record(record).await.unwrap();
        }
        ledger
            .record_approval(ApprovalRecord {
                session_id: "sess-a".into(),
                call_id: "a-shell-1".into(),
                tool: "shell".into(),
                requested_at: Timestamp(T0 + 15 * SEC),
                resolved_at: Some(Timestamp(T0 + 19 * SEC)),
                outcome: Some(ApprovalOutcome::ApprovedOnce),
                operator: Some("alice".into()),
                note: Some("looks fine".into()),
                rule_written: None,
            })
            .await
            .unwrap();
        ledger.close().await.unwrap();
    });
}

fn fixture() -> (TempDir, PathBuf) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("ledger.db");
    write_fixture(&path);
    (dir, path)
}

fn portcullis() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_portcullis"));
    cmd.env_remove("RUST_LOG");
    cmd
}

fn run(args: &[&str]) -> Output {
    portcullis().args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Runs a command that must succeed; returns its stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?} failed: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Runs a command that must fail with exactly one error line of this code, exit 2 and no stdout.
fn fails(args: &[&str], code: &str) -> String {
    let out = run(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} wrote to stdout: {}", text(&out.stdout));
    assert_eq!(stderr.lines().count(), 1, "{args:?}: not one line: {stderr:?}");
    assert!(stderr.ends_with('\n'));
    let prefix = format!("portcullis: error[{code}]: ");
    assert!(stderr.starts_with(&prefix), "{args:?}: expected {prefix:?}, got {stderr:?}");
    assert!(!stderr.contains("panicked"));
    stderr
}

fn db(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn query_json(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["ledger", "query", "--db", db(path), "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(&args)).unwrap()
}

/// `session/call` of each call a query lists (first page, up to 1,000).
fn query_ids(path: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--limit", "1000"];
    args.extend_from_slice(extra);
    let page = query_json(path, &args);
    assert_eq!(page["next"], Value::Null);
    page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}/{}", c["session_id"].as_str().unwrap(), c["call_id"].as_str().unwrap()))
        .collect()
}

fn call<'a>(page: &'a Value, session: &str, call_id: &str) -> &'a Value {
    page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["session_id"] == session && c["call_id"] == call_id)
        .unwrap_or_else(|| panic!("{session}/{call_id} not listed"))
}

/// RFC 4180: quoted fields may hold commas, doubled quotes and line breaks.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = false,
                other => field.push(other),
            }
        } else {
            match c {
                '"' => quoted = true,
                ',' => row.push(std::mem::take(&mut field)),
                '\n' => {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                other => field.push(other),
            }
        }
    }
    assert!(field.is_empty() && row.is_empty() && !quoted, "CSV does not end with a line break");
    rows
}

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
    let ledger = SqliteLedger::open(&path).unwrap();
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
    assert!(lines[3].contains("error interrupted: the process writing this ledger stopped"), "{}", lines[3]);

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
        json!([{"start": T0, "count": 5}, {"start": T0 + 60 * SEC, "count": 2}, {"start": T0 + 120 * SEC, "count": 3}])
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

// ---- check and migrate ----

#[test]
fn check_a_healthy_ledger() {
    let (_dir, path) = fixture();
    let out = run(&["ledger", "check", "--db", db(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let report = text(&out.stdout);
    assert!(report.contains("integrity: ok\n"), "{report}");
    let version = portcullis_ledger::schema::SCHEMA_VERSION;
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
            portcullis_ledger::schema::SCHEMA_VERSION
        )
    );
    // Take the file back to schema 1 (no approvals, no search index, no policy decision columns, no
    // session end reasons, no refusals).
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE approvals; DROP TABLE records_fts; DROP TABLE refusals;
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
        format!("{}: schema version {}\n", path.display(), portcullis_ledger::schema::SCHEMA_VERSION)
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
        let ledger = SqliteLedger::open(&path).unwrap();
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
