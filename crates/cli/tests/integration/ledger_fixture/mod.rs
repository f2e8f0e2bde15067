//! The ledger the `portcullis ledger` tests read: two sessions, four tools, every record kind and six
//! kinds of decider, written with the real SQLite writer (through `portcullis_api::testing`); and how
//! the tests run the binary and read its output (JSON pages, CSV).
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
// Each test file uses part of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use portcullis_api::testing::{
    ApprovalOutcome, ApprovalRecord, BlockedReason, CallContext, CallError, CallErrorCode, DecidedBy,
    LedgerWriter, OperatorOutcome, RecordKind, SessionInfo, Timestamp, ToolCallRecord, ToolOutput,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use tempfile::TempDir;

/// 2025-03-01T10:00:00Z.
pub const T0: i64 = 1_740_823_200_000_000;
pub const SEC: i64 = 1_000_000;
pub const OWNER_WITH_COMMAS: &str = "ci bot, \"nightly\"\nrunner";

/// Every call of the fixture, newest first (`a-shell-2` was interrupted when the writer closed, now).
pub const ALL_CALLS: [&str; 11] = [
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
pub const ALL_RECORDS: usize = 19;

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

pub fn context(session: &str, run: &str, call: &str, owner: &str) -> Arc<CallContext> {
    Arc::new(CallContext {
        session_id: session.into(),
        run_id: run.into(),
        call_id: call.into(),
        owner: owner.into(),
        cwd: None,
        mcp: None,
    })
}

/// Builds records of one call.
pub struct Call {
    pub ctx: Arc<CallContext>,
    pub tool: &'static str,
    pub decided: DecidedBy,
}

impl Call {
    pub fn new(session: &str, call: &str, tool: &'static str, decided: DecidedBy) -> Self {
        let run = if session == "sess-a" { "run-a1" } else { "run-b1" };
        Call { ctx: context(session, run, call, "agent"), tool, decided }
    }

    pub fn owner(mut self, owner: &str) -> Self {
        let c = &*self.ctx;
        self.ctx = context(&c.session_id, &c.run_id, &c.call_id, owner);
        self
    }

    pub fn record(&self, kind: RecordKind, at: i64) -> ToolCallRecord {
        ToolCallRecord {
            at: Timestamp(T0 + at),
            ..ToolCallRecord::new(kind, self.ctx.clone(), self.tool.into(), self.decided.clone())
        }
    }

    pub fn started(&self, at: i64, arguments: Value) -> ToolCallRecord {
        ToolCallRecord { arguments: Some(Arc::new(arguments)), ..self.record(RecordKind::Started, at) }
    }

    pub fn progress(&self, at: i64, started: i64, progress: Value) -> ToolCallRecord {
        ToolCallRecord {
            progress: Some(progress),
            started_at: Some(Timestamp(T0 + started)),
            ..self.record(RecordKind::Progress, at)
        }
    }

    pub fn finished(&self, at: i64, started: i64, text: &str) -> ToolCallRecord {
        ToolCallRecord {
            output: Some(Arc::new(ToolOutput::text(text))),
            started_at: Some(Timestamp(T0 + started)),
            ..self.record(RecordKind::Finished, at)
        }
    }

    pub fn error(&self, at: i64, started: i64, code: &str, message: &str) -> ToolCallRecord {
        ToolCallRecord {
            error: Some(CallError::new(CallErrorCode::parse(code), message)),
            started_at: Some(Timestamp(T0 + started)),
            ..self.record(RecordKind::Error, at)
        }
    }

    pub fn blocked(&self, at: i64, arguments: Value, reason: BlockedReason, message: &str) -> ToolCallRecord {
        ToolCallRecord {
            arguments: Some(Arc::new(arguments)),
            blocked_reason: Some(reason),
            error: Some(CallError::new(CallErrorCode::parse(reason.as_str()), message)),
            ..self.record(RecordKind::Blocked, at)
        }
    }
}

pub fn rule(id: &str) -> DecidedBy {
    DecidedBy::Rule { rule_id: id.into(), source: "policy.toml".into() }
}

pub fn operator(outcome: OperatorOutcome, who: &str) -> DecidedBy {
    DecidedBy::Operator { outcome, operator: Some(who.into()), rule_written: None, receipt: None }
}

/// Two sessions, four tools, every record kind and six kinds of decider; 11 calls, 19 records.
pub fn fixture_records() -> Vec<ToolCallRecord> {
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

pub fn session(id: &str) -> SessionInfo {
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
pub fn write_fixture(path: &Path) {
    runtime().block_on(async {
        let ledger = LedgerWriter::open(path).unwrap();
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
                receipt: None,
            })
            .await
            .unwrap();
        ledger.close().await.unwrap();
    });
}

pub fn fixture() -> (TempDir, PathBuf) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("ledger.db");
    write_fixture(&path);
    (dir, path)
}

pub fn portcullis() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_portcullis"));
    cmd.env_remove("RUST_LOG");
    cmd
}

pub fn run(args: &[&str]) -> Output {
    portcullis().args(args).output().unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Runs a command that must succeed; returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?} failed: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Runs a command that must fail with exactly one error line of this code, exit 2 and no stdout.
pub fn fails(args: &[&str], code: &str) -> String {
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

pub fn db(path: &Path) -> &str {
    path.to_str().unwrap()
}

pub fn query_json(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["ledger", "query", "--db", db(path), "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(&args)).unwrap()
}

/// `session/call` of each call a query lists (first page, up to 1,000).
pub fn query_ids(path: &Path, extra: &[&str]) -> Vec<String> {
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

pub fn call<'a>(page: &'a Value, session: &str, call_id: &str) -> &'a Value {
    page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["session_id"] == session && c["call_id"] == call_id)
        .unwrap_or_else(|| panic!("{session}/{call_id} not listed"))
}

/// RFC 4180: quoted fields may hold commas, doubled quotes and line breaks.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
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
