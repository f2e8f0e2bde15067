//! The SQLite ledger as a store: file identity and permissions, migrations (fresh, older, newer refused),
//! every record kind round-tripping through the harness, what decided each call, back-pressure without
//! loss, flush durability, write failures surfacing and recovering, locking, clean-close interruption,
//! sessions and approvals, and no secret anywhere in the files.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use async_trait::async_trait;
use portcullis_harness::{
    BlockedReason, CallErrorCode, DecidedBy, Dispatcher, ExecutionPolicy, GrantScope, Grants, Ledger,
    MemoryLedger, OperatorOutcome, PolicyRequest, PolicyVerdict, Redactor, RunContext, Timestamp, Tool,
    ToolCall, ToolCallRecord, ToolError, ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::schema::{SCHEMA_VERSION, migrate};
use portcullis_ledger::{
    ApprovalOutcome, ApprovalRecord, CallFilter, LedgerOptions, LedgerReader, LedgerStoreError, SessionInfo,
    SqliteLedger, StoredKind,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.ledger");
    (dir, path)
}

#[tokio::test]
async fn a_fresh_ledger_is_ours_owner_only_and_current() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open(&path).unwrap();
    ledger.close().await.unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let journal = std::fs::metadata(format!("{}.journal", path.display())).unwrap();
        assert_eq!(journal.permissions().mode() & 0o777, 0o600, "the journal is owner-only too");
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (app, version) = portcullis_ledger::schema::identity(&conn).unwrap();
    assert_eq!(app, portcullis_ledger::schema::APPLICATION_ID);
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let report = LedgerReader::open(&path).unwrap().check().unwrap();
    assert!(report.healthy(), "{report:?}");
}

#[tokio::test]
async fn an_existing_world_readable_file_is_tightened() {
    let (_dir, path) = temp();
    SqliteLedger::open(&path).unwrap().close().await.unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let journal = format!("{}.journal", path.display());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o644)).unwrap();
        SqliteLedger::open(&path).unwrap().close().await.unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&journal).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

#[tokio::test]
async fn an_older_ledger_is_migrated_and_its_records_become_searchable() {
    let (_dir, path) = temp();
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        migrate(&mut conn, 0, 1).unwrap();
        conn.execute("INSERT INTO writers(pid, opened_at, first_record, closed_at) VALUES (1, 1, 1, 2)", [])
            .unwrap();
        let body = json!({"arguments": {"command": "legacy zebracorn"}, "decided_by": {"by": "default"}})
            .to_string();
        conn.execute(
            "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, status, at,
                 decided_by, redacted, body)
             VALUES (1, 's', 'r', 'old-1', ?1, 'agent', 'shell', 'blocked', 'blocked', 5, 'default', 0, ?2)",
            rusqlite::params![portcullis_ledger::schema::call_key("old-1"), body],
        )
        .unwrap();
        let (_, v) = portcullis_ledger::schema::identity(&conn).unwrap();
        assert_eq!(v, 1);
    }
    assert!(
        matches!(LedgerReader::open(&path), Err(LedgerStoreError::OlderSchema { found: 1, .. })),
        "readers do not migrate"
    );
    SqliteLedger::open(&path).unwrap().close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    assert_eq!(reader.check().unwrap().schema_version, SCHEMA_VERSION);
    let filter = CallFilter { search: Some("zebracorn".into()), ..CallFilter::default() };
    let page = reader.calls(&filter, None, 10).unwrap();
    assert_eq!(page.calls.len(), 1);
    assert_eq!(page.calls[0].head.call_id, "old-1");
}

#[tokio::test]
async fn a_newer_ledger_is_refused_and_left_untouched() {
    let (_dir, path) = temp();
    SqliteLedger::open(&path).unwrap().close().await.unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1)).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    match SqliteLedger::open(&path) {
        Err(LedgerStoreError::NewerSchema { found, supported, .. }) => {
            assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("expected NewerSchema, got {:?}", other.err()),
    }
    let err = LedgerReader::open(&path).err().unwrap();
    assert_eq!(err.code(), "ledger_schema_newer");
    assert!(err.to_string().contains("newer than this build"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "a refused file is not altered");
}

#[tokio::test]
async fn foreign_and_missing_files_are_refused_clearly() {
    let (dir, path) = temp();
    let missing = dir.path().join("nope.ledger");
    assert_eq!(LedgerReader::open(&missing).err().unwrap().code(), "ledger_missing");

    std::fs::write(&path, b"this is not a database, just text that goes on for a while....").unwrap();
    let err = SqliteLedger::open(&path).err().unwrap();
    assert_eq!(err.code(), "not_a_ledger", "{err}");
    assert_eq!(LedgerReader::open(&path).err().unwrap().code(), "not_a_ledger");

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    let err = SqliteLedger::open(&other).err().unwrap();
    assert_eq!(err.code(), "not_a_ledger");
    assert!(err.to_string().contains("another application"), "{err}");
}

#[tokio::test]
async fn a_second_writer_is_locked_out() {
    let (_dir, path) = temp();
    let first = SqliteLedger::open(&path).unwrap();
    assert_eq!(SqliteLedger::open(&path).err().unwrap().code(), "ledger_locked");
    first.close().await.unwrap();
    drop(first);
    SqliteLedger::open(&path).unwrap().close().await.unwrap();
}

/// Writes every record to two ledgers.
struct Tee(Vec<Arc<dyn Ledger>>);

#[async_trait]
impl Ledger for Tee {
    async fn record(&self, record: ToolCallRecord) -> Result<(), portcullis_harness::LedgerError> {
        for l in &self.0 {
            l.record(record.clone()).await?;
        }
        Ok(())
    }
}

struct Probe(ToolSpec);

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn execute(&self, inv: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let text = inv.arguments.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
        match text.as_str() {
            "fail" => Err(ToolError::failed("it broke, key=sk-test-SECRETSECRETSECRET0001")),
            "progress" => {
                inv.progress.report(json!({"step": 1})).await;
                Ok(ToolOutput::text("done with progress"))
            }
            _ => Ok(ToolOutput::text(format!("echo {text}"))),
        }
    }
}

struct RulePolicy;

#[async_trait]
impl ExecutionPolicy for RulePolicy {
    async fn evaluate(&self, request: PolicyRequest<'_>) -> PolicyVerdict {
        if request.arguments.get("text").and_then(Value::as_str) == Some("deny") {
            PolicyVerdict::deny(rule("no-deny"), "the word deny is denied")
        } else {
            PolicyVerdict::allow(DecidedBy::Operator {
                receipt: None,
                outcome: OperatorOutcome::ApprovedForSession,
                operator: Some("ana".into()),
                rule_written: None,
            })
        }
    }
}

const SECRET: &str = "sk-test-SECRETSECRETSECRET0001";

fn dispatcher(ledger: Arc<dyn Ledger>) -> Dispatcher {
    let mut registry = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    registry.register(Arc::new(Probe(ToolSpec::new("probe", "p").with_parameters(schema)))).unwrap();
    registry.register(Arc::new(Probe(ToolSpec::new("hidden", "h")))).unwrap();
    Dispatcher::builder(registry)
        .ledger(ledger)
        .policy(Arc::new(RulePolicy))
        .redactor(Redactor::builder().secret(SECRET).build())
        .build()
}

#[tokio::test]
async fn every_record_kind_round_trips_through_the_harness() {
    let (_dir, path) = temp();
    let sqlite = Arc::new(SqliteLedger::open(&path).unwrap());
    let memory = Arc::new(MemoryLedger::new());
    let d = dispatcher(Arc::new(Tee(vec![memory.clone(), sqlite.clone()])));
    let run =
        RunContext::new("s1", "r1").with_grants(Grants::new(vec![GrantScope::new("g").deny(["hidden"])]));
    for (id, name, args) in [
        ("ok", "probe", json!({"text": "hi"})),
        ("fail", "probe", json!({"text": "fail"})),
        ("prog", "probe", json!({"text": "progress"})),
        ("deny", "probe", json!({"text": "deny"})),
        ("grant", "hidden", json!({})),
        ("bad", "probe", json!({"text": 5})),
        ("unknown", "nothing", json!({})),
    ] {
        d.dispatch(ToolCall::new(id, name, args), &run).await;
    }
    sqlite.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let expected = memory.records();
    let mut stored = Vec::new();
    for id in ["ok", "fail", "prog", "deny", "grant", "bad", "unknown"] {
        stored.extend(reader.timeline(id, Some("s1")).unwrap().records);
    }
    stored.sort_by_key(|r| r.id);
    assert_eq!(stored.len(), expected.len());
    for (s, m) in stored.iter().zip(expected.iter()) {
        assert_eq!(s.kind, StoredKind::from(m.kind));
        assert_eq!(
            (s.head.session_id.as_str(), s.head.run_id.as_str(), s.head.owner.as_str()),
            ("s1", "r1", "agent")
        );
        assert_eq!(s.head.call_id, &*m.call.call_id);
        assert_eq!(s.head.tool, &*m.tool_name);
        assert_eq!(s.head.at, m.at);
        assert_eq!(s.head.started_at, m.started_at);
        assert_eq!(s.body.arguments, m.arguments);
        assert_eq!(s.body.action, m.action);
        assert_eq!(s.body.progress, m.progress);
        assert_eq!(s.body.output, m.output);
        assert_eq!(s.body.error, m.error);
        assert_eq!(s.head.reason, m.blocked_reason);
        assert_eq!(s.head.error_code, m.error.as_ref().map(|e| e.code.clone()));
        assert_eq!(s.body.decided_by, m.decided_by);
        assert_eq!(s.body.matched_rules, m.matched_rules);
        assert_eq!(s.head.redacted, m.redacted);
    }
    let kinds: Vec<StoredKind> =
        reader.timeline("prog", None).unwrap().records.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [StoredKind::Started, StoredKind::Progress, StoredKind::Finished]);
    let fail = reader.timeline("fail", None).unwrap().records;
    assert_eq!(fail[1].head.duration_us, Some(fail[1].head.at.0 - fail[0].head.at.0));
    assert!(fail[1].head.redacted);

    // What decided each call is queryable.
    let by = |kind: &str| {
        let f = CallFilter { decided_by: vec![kind.parse().unwrap()], ..CallFilter::default() };
        let mut ids: Vec<String> =
            reader.calls(&f, None, 100).unwrap().calls.into_iter().map(|c| c.head.call_id).collect();
        ids.sort();
        ids
    };
    assert_eq!(by("operator"), ["fail", "ok", "prog"]);
    assert_eq!(by("rule"), ["deny"]);
    assert_eq!(by("grants"), ["grant"]);
    assert_eq!(by("validator"), ["bad"]);
    assert_eq!(by("registry"), ["unknown"]);
    let denied = reader
        .calls(&CallFilter { rule: Some("no-deny".into()), ..CallFilter::default() }, None, 10)
        .unwrap();
    assert_eq!(denied.calls[0].decider.source.as_deref(), Some("project.json"));
    let ok = reader
        .calls(&CallFilter { tools: vec!["probe".into()], ..CallFilter::default() }, None, 100)
        .unwrap();
    let row = ok.calls.iter().find(|c| c.head.call_id == "ok").unwrap();
    assert_eq!(row.decider.operator.as_deref(), Some("ana: approved_for_session"));
}

#[tokio::test]
async fn no_secret_anywhere_in_the_files() {
    let (_dir, path) = temp();
    let sqlite = Arc::new(SqliteLedger::open(&path).unwrap());
    let d = dispatcher(sqlite.clone());
    let run = RunContext::new("s", "r");
    d.dispatch(ToolCall::new("a", "probe", json!({"text": format!("use {SECRET} please")})), &run).await;
    d.dispatch(ToolCall::new("b", "probe", json!({"text": "fail"})), &run).await;
    d.dispatch(ToolCall::new("c", "probe", json!({"text": 1, "api_key": "plain-value-123"})), &run).await;
    d.dispatch(ToolCall::new("e", "nothing", json!({"token": SECRET})), &run).await;
    sqlite.flush().await.unwrap();
    // While open: main file, WAL and shared memory.
    let raw = raw_bytes(&path);
    assert!(raw.len() > 10_000);
    for needle in [SECRET.as_bytes(), b"SECRETSECRETSECRET", b"plain-value-123"] {
        assert!(!contains(&raw, needle), "{} found in the ledger files", String::from_utf8_lossy(needle));
    }
    assert!(contains(&raw, b"[REDACTED]"));
    sqlite.close().await.unwrap();
    let raw = raw_bytes(&path);
    assert!(!contains(&raw, SECRET.as_bytes()) && !contains(&raw, b"SECRETSECRETSECRET"));
    // The search index (FTS shadow tables) has no trace either.
    let reader = LedgerReader::open(&path).unwrap();
    let hits = reader.calls(
        &CallFilter { search: Some("SECRETSECRETSECRET0001".into()), ..CallFilter::default() },
        None,
        10,
    );
    assert!(hits.unwrap().calls.is_empty());
    assert_eq!(
        reader
            .calls(&CallFilter { search: Some("REDACTED".into()), ..CallFilter::default() }, None, 10)
            .unwrap()
            .calls
            .len(),
        4
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_pressure_never_drops_a_record() {
    let (_dir, path) = temp();
    let options = LedgerOptions { channel_capacity: 4, batch_max_rows: 3, ..LedgerOptions::default() };
    let ledger = Arc::new(SqliteLedger::open_with(&path, options).unwrap());
    let mut tasks = Vec::new();
    for t in 0..4 {
        let ledger = ledger.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..500 {
                let call = format!("t{t}-{i}");
                ledger
                    .record(blocked("s", &call, "shell", i, BlockedReason::ToolDenied, DecidedBy::Registry))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    ledger.flush().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    assert_eq!(reader.count(&CallFilter::default()).unwrap(), 2000);
    // The records, and the chain's checkpoints among them (`checkpoint_every`).
    assert_eq!(ledger.committed_rows(), 2000 + 2000 / options.checkpoint_every);
    ledger.close().await.unwrap();
}

#[tokio::test]
async fn flush_is_a_durability_barrier() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open_with(
        &path,
        LedgerOptions { batch_max_delay: Duration::from_millis(200), ..LedgerOptions::default() },
    )
    .unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    for i in 0..50 {
        ledger.record(started("s", &format!("c{i}"), "read", i, DecidedBy::DEFAULT)).await.unwrap();
        ledger.record(finished("s", &format!("c{i}"), "read", i, 10, DecidedBy::DEFAULT)).await.unwrap();
        if i % 10 == 9 {
            ledger.flush().await.unwrap();
            // Another connection sees everything handed in before the flush.
            assert_eq!(reader.count(&CallFilter::default()).unwrap(), (i + 1) as u64);
        }
    }
    ledger.close().await.unwrap();
}

#[tokio::test]
async fn a_failed_commit_surfaces_keeps_its_rows_and_recovers() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open(&path).unwrap();
    let mut failures = ledger.subscribe_failures();
    let saboteur = rusqlite::Connection::open(&path).unwrap();
    saboteur
        .execute_batch("CREATE TRIGGER sabotage BEFORE INSERT ON records WHEN NEW.tool = 'explode' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END;")
        .unwrap();
    ledger.record(started("s", "ok-before", "read", 1, DecidedBy::DEFAULT)).await.unwrap();
    ledger.record(started("s", "boom", "explode", 2, DecidedBy::DEFAULT)).await.unwrap();
    let err = ledger.flush().await.expect_err("flush reports the failed commit");
    assert!(err.to_string().contains("disk on fire"), "{err}");
    let failure = failures.recv().await.unwrap();
    assert!(failure.message.contains("disk on fire") && failure.pending_rows >= 1, "{failure:?}");
    // While failing, no new call may start unaudited.
    let refused = ledger.record(started("s", "new", "read", 3, DecidedBy::DEFAULT)).await;
    assert!(refused.is_err());
    // Terminal records of running calls are still taken.
    ledger.record(finished("s", "ok-before", "read", 1, 5, DecidedBy::DEFAULT)).await.unwrap();
    saboteur.execute_batch("DROP TRIGGER sabotage").unwrap();
    // The writer retries on its own; flush succeeds once it has.
    let mut flushed = false;
    for _ in 0..100 {
        if ledger.flush().await.is_ok() {
            flushed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(flushed);
    let reader = LedgerReader::open(&path).unwrap();
    let ids: Vec<String> = reader.records(0, 100).unwrap().into_iter().map(|r| r.head.call_id).collect();
    assert_eq!(ids, ["ok-before", "boom", "ok-before"], "nothing lost, nothing reordered");
    ledger.close().await.unwrap();
}

#[tokio::test]
async fn calls_still_running_at_close_are_interrupted() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open(&path).unwrap();
    ledger.record(started("s", "done", "read", 1, rule("r"))).await.unwrap();
    ledger.record(finished("s", "done", "read", 1, 2, rule("r"))).await.unwrap();
    ledger.record(started("s", "open", "shell", 3, rule("r"))).await.unwrap();
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let timeline = reader.timeline("open", None).unwrap().records;
    assert_eq!(
        timeline.iter().map(|r| r.kind).collect::<Vec<_>>(),
        [StoredKind::Started, StoredKind::Interrupted]
    );
    let interrupted = &timeline[1];
    assert_eq!(interrupted.head.error_code, Some(CallErrorCode::Interrupted));
    assert_eq!(interrupted.body.decided_by, rule("r"));
    assert_eq!(interrupted.head.started_at, Some(Timestamp(3)));
    assert_eq!(reader.timeline("done", None).unwrap().records.len(), 2);
    let report = reader.check().unwrap();
    assert_eq!((report.open_calls, report.unclosed_writers), (0, 0));
    // Interrupted calls are found by status and by search (with their arguments).
    let f = CallFilter {
        statuses: vec![portcullis_ledger::CallStatus::Interrupted],
        search: Some("open shell".into()),
        ..CallFilter::default()
    };
    assert_eq!(reader.calls(&f, None, 10).unwrap().calls[0].head.call_id, "open");
}

#[tokio::test]
async fn sessions_and_approvals_are_kept() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open(&path).unwrap();
    let session = SessionInfo {
        id: "s1".into(),
        client_name: Some("claude-code".into()),
        client_version: Some("2.1.0".into()),
        cwd: Some("/work/project".into()),
        policy_hash: Some("abc123".into()),
        started_at: Timestamp(10),
        ended_at: None,
    };
    ledger.begin_session(session.clone()).await.unwrap();
    ledger.record(started("s1", "c1", "shell", 11, DecidedBy::DEFAULT)).await.unwrap();
    let approval = ApprovalRecord {
        receipt: None,
        session_id: "s1".into(),
        call_id: "c1".into(),
        tool: "shell".into(),
        requested_at: Timestamp(11),
        resolved_at: Some(Timestamp(15)),
        outcome: Some(ApprovalOutcome::ApprovedAlways),
        operator: Some("ana".into()),
        note: Some("fine, it is cargo test".into()),
        rule_written: Some("allow-cargo-test".into()),
    };
    ledger.record_approval(approval.clone()).await.unwrap();
    ledger.end_session("s1", Timestamp(99)).await.unwrap();
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let sessions = reader.sessions(10).unwrap();
    assert_eq!(sessions, [SessionInfo { ended_at: Some(Timestamp(99)), ..session }]);
    assert_eq!(reader.timeline("c1", Some("s1")).unwrap().approvals, [approval]);
}

/// Issue 10: what the policy said before any approval is kept apart from the outcome, on every record of
/// the call (an `interrupted` one included); rows of an older ledger migrate with no decision.
#[tokio::test]
async fn the_policys_decision_is_kept_apart_from_the_outcome() {
    use portcullis_harness::{PolicyDecision, PolicyRuling};
    use portcullis_ledger::StoredPolicyDecision;
    let (_dir, path) = temp();
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        migrate(&mut conn, 0, 3).unwrap();
        conn.execute("INSERT INTO writers(pid, opened_at, first_record, closed_at) VALUES (1, 1, 1, 2)", [])
            .unwrap();
        conn.execute(
            "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, status, at,
                 decided_by, redacted, body)
             VALUES (1, 's', 'r', 'old', ?1, 'agent', 'shell', 'blocked', 'blocked', 5, 'approval_timeout', 0,
                 '{\"decided_by\": {\"by\": \"approval_timeout\", \"after_ms\": 5}}')",
            [portcullis_ledger::schema::call_key("old")],
        )
        .unwrap();
    }
    let ruling = PolicyRuling {
        decision: PolicyDecision::Ask,
        decided_by: rule("ask-deploy"),
        files: Vec::new(),
        version: None,
    };
    let ledger = SqliteLedger::open(&path).unwrap();
    let mut asked = started("s", "asked", "shell", 10, DecidedBy::ApprovalTimeout { after_ms: 5 });
    asked.policy = Some(ruling.clone());
    let mut refused =
        blocked("s", "asked", "shell", 12, BlockedReason::ExecutionDenied, asked.decided_by.clone());
    refused.policy = Some(ruling);
    ledger.record(asked.clone()).await.unwrap();
    ledger.record(refused).await.unwrap();
    let mut open = started("s", "open", "shell", 20, rule("allow-make"));
    open.policy = Some(PolicyRuling {
        decision: PolicyDecision::Allow,
        decided_by: rule("allow-make"),
        files: Vec::new(),
        version: None,
    });
    ledger.record(open).await.unwrap();
    ledger.close().await.unwrap();

    let reader = LedgerReader::open(&path).unwrap();
    let calls = reader.calls(&CallFilter::default(), None, 10).unwrap().calls;
    let by_id = |id: &str| calls.iter().find(|c| c.head.call_id == id).unwrap().clone();
    assert_eq!(by_id("asked").head.policy_decision, Some(StoredPolicyDecision::Prompt));
    assert_eq!(by_id("asked").head.policy_rule.as_deref(), Some("ask-deploy"));
    assert_eq!(by_id("asked").decider.kind.as_str(), "approval_timeout");
    assert_eq!(by_id("open").status, portcullis_ledger::CallStatus::Interrupted);
    assert_eq!(by_id("open").head.policy_decision, Some(StoredPolicyDecision::Allow));
    assert_eq!((by_id("old").head.policy_decision, by_id("old").head.policy_rule), (None, None));
    for record in reader.timeline("asked", None).unwrap().records {
        assert_eq!(record.head.policy_decision, Some(StoredPolicyDecision::Prompt), "{record:?}");
    }
}

/// Issue 10: sessions a writer left open when it stopped without closing (killed) are ended as `cut` by
/// the next writer, at their last recorded activity; sessions ended normally read `closed`.
#[tokio::test]
async fn sessions_left_open_by_a_stopped_writer_are_cut() {
    use portcullis_ledger::{SessionEnd, SessionFilter};
    let (_dir, path) = temp();
    let session = |id: &str, at: i64| SessionInfo {
        id: id.into(),
        client_name: Some("agent".into()),
        client_version: None,
        cwd: None,
        policy_hash: None,
        started_at: Timestamp(at),
        ended_at: None,
    };
    let ledger = SqliteLedger::open(&path).unwrap();
    ledger.begin_session(session("ended", 10)).await.unwrap();
    ledger.end_session("ended", Timestamp(20)).await.unwrap();
    ledger.close().await.unwrap();
    {
        // A writer that was killed: never closed, its session open, its last call at 70.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO writers(pid, opened_at, first_record) VALUES (1, 30, (SELECT coalesce(max(id), 0) + 1 FROM records))",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO sessions (id, client_name, started_at) VALUES ('killed', 'agent', 40), ('idle', 'agent', 45)",
            [],
        )
        .unwrap();
        let writer: i64 = conn.query_row("SELECT max(id) FROM writers", [], |r| r.get(0)).unwrap();
        conn.execute(
            "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, status, at,
                 decided_by, redacted, body)
             VALUES (?1, 'killed', 'r', 'c', ?2, 'agent', 'read', 'finished', 'finished', 70, 'default', 0,
                 '{\"decided_by\": {\"by\": \"default\"}}')",
            rusqlite::params![writer, portcullis_ledger::schema::call_key("c")],
        )
        .unwrap();
    }
    let ledger = SqliteLedger::open(&path).unwrap();
    assert_eq!(ledger.cut_sessions_on_open(), 2);
    ledger.begin_session(session("live", 100)).await.unwrap();
    ledger.flush().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let rows = reader.session_rows(&SessionFilter::default(), 10).unwrap();
    let ended = |id: &str| {
        let row = rows.iter().find(|r| r.session.id == id).unwrap();
        (row.end_reason, row.session.ended_at)
    };
    assert_eq!(ended("ended"), (Some(SessionEnd::Closed), Some(Timestamp(20))));
    assert_eq!(ended("killed"), (Some(SessionEnd::Cut), Some(Timestamp(70))));
    assert_eq!(ended("idle"), (Some(SessionEnd::Cut), Some(Timestamp(45))));
    assert_eq!(ended("live"), (None, None));
    let counts = reader.session_counts(&SessionFilter::default()).unwrap();
    assert_eq!((counts.total, counts.open, counts.closed, counts.cut), (4, 1, 1, 2));
    ledger.close().await.unwrap();
}

/// Issue 10: refused requests are one row per kind and minute, with a count.
#[tokio::test]
async fn refusals_are_counted_per_kind_and_minute() {
    use portcullis_ledger::{RefusalFilter, RefusalRow};
    let (_dir, path) = temp();
    let refusal = |second: i64, code: &str| RefusalRow {
        first_at: Timestamp(second * 1_000_000),
        last_at: Timestamp(second * 1_000_000),
        count: 1,
        status: 401,
        code: code.into(),
        method: Some("GET".into()),
        path: Some("/v1/health".into()),
        peer: Some("127.0.0.1".into()),
        origin: None,
        host: Some("127.0.0.1:7391".into()),
        user_agent: None,
    };
    let ledger = SqliteLedger::open(&path).unwrap();
    for (second, code) in
        [(60, "unauthorized"), (70, "unauthorized"), (119, "unauthorized"), (120, "unauthorized")]
    {
        ledger.record_refusals(refusal(second, code)).await.unwrap();
    }
    ledger.record_refusals(refusal(61, "host_not_allowed")).await.unwrap();
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let rows = reader.refusals(&RefusalFilter::default(), 10).unwrap();
    let listed: Vec<(i64, i64, u64, &str)> = rows
        .iter()
        .map(|r| (r.first_at.0 / 1_000_000, r.last_at.0 / 1_000_000, r.count, r.code.as_str()))
        .collect();
    assert_eq!(
        listed,
        [(120, 120, 1, "unauthorized"), (61, 61, 1, "host_not_allowed"), (60, 119, 3, "unauthorized")]
    );
    let counts =
        reader.refusal_counts(&RefusalFilter { since: Some(Timestamp(100_000_000)), until: None }).unwrap();
    assert_eq!(counts.requests, 1);
    assert_eq!(reader.refusal_counts(&RefusalFilter::default()).unwrap().requests, 5);
}

/// A journal that is not this ledger's (foreign bytes, or an epoch older than the one the ledger
/// indexed) is refused: the ledger is not opened for writing and neither file is changed.
#[tokio::test]
async fn a_journal_that_is_not_this_ledgers_is_refused() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open(&path).unwrap();
    ledger.record(started("s", "c1", "read", 1, DecidedBy::DEFAULT)).await.unwrap();
    ledger.close().await.unwrap();
    let journal = {
        let mut name = path.as_os_str().to_owned();
        name.push(".journal");
        std::path::PathBuf::from(name)
    };
    let kept = std::fs::read(&journal).unwrap();
    assert_eq!(kept.len(), 16, "a closed ledger's journal is empty (its header only)");
    for (what, bytes) in [
        ("foreign", b"SQLite format 3\0 some other file".to_vec()),
        ("older epoch", [&kept[..8], &0u64.to_le_bytes()[..], &[7u8; 12][..]].concat()),
    ] {
        std::fs::write(&journal, &bytes).unwrap();
        let db = std::fs::read(&path).unwrap();
        let Err(e) = SqliteLedger::open(&path) else { panic!("{what}: opened") };
        assert_eq!(e.code(), "ledger_journal_damaged", "{what}: {e}");
        assert!(e.to_string().contains(".journal"), "{what}: the message names the file: {e}");
        assert_eq!(std::fs::read(&journal).unwrap(), bytes, "{what}: journal unchanged");
        assert_eq!(std::fs::read(&path).unwrap(), db, "{what}: ledger unchanged");
    }
    std::fs::write(&journal, &kept).unwrap();
    SqliteLedger::open(&path).unwrap().close().await.unwrap();
}

/// `flush_durable` answers once the rows are in the journal; `flush` once readers see them. Both hold
/// every row handed in before them; a crash between the two loses nothing (the crash test).
#[tokio::test]
async fn durable_and_visible_flushes() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open(&path).unwrap();
    for i in 0..500 {
        ledger.record(started("s", &format!("c{i}"), "read", i, DecidedBy::DEFAULT)).await.unwrap();
        ledger.record(finished("s", &format!("c{i}"), "read", i, 1, DecidedBy::DEFAULT)).await.unwrap();
    }
    ledger.flush_durable().await.unwrap();
    assert_eq!(ledger.journaled_rows(), 1000);
    ledger.flush().await.unwrap();
    assert_eq!((ledger.committed_rows(), ledger.index_backlog()), (1000, 0));
    assert_eq!(LedgerReader::open(&path).unwrap().count(&CallFilter::default()).unwrap(), 500);
    ledger.close().await.unwrap();
}

/// Tool-pin events go through the journal like approvals: after a flush readers see every event and
/// the pin the last `pinned`/`accepted` set; a `changed` event moves no pin; a reopened ledger (the
/// journal replayed) keeps them.
#[tokio::test]
async fn tool_pin_events_and_pins_are_kept() {
    use portcullis_ledger::{PinKind, ToolPinEvent};
    let (_dir, path) = temp();
    let event = |kind: PinKind, digest: &str, operator: Option<&str>| ToolPinEvent {
        at: portcullis_harness::Timestamp(1_767_000_000_000_000),
        server: "dict".into(),
        tool: "lookup".into(),
        kind,
        digest: digest.into(),
        definition: json!({ "name": "lookup", "description": digest }),
        operator: operator.map(str::to_owned),
    };
    {
        let ledger = SqliteLedger::open(&path).unwrap();
        ledger.record_tool_pin(event(PinKind::Pinned, "d1", None)).await.unwrap();
        ledger.record_tool_pin(event(PinKind::Changed, "d2", None)).await.unwrap();
        ledger.flush().await.unwrap();
        let reader = LedgerReader::open(&path).unwrap();
        let pins = reader.tool_pins().unwrap();
        assert_eq!((pins.len(), pins[0].digest.as_str()), (1, "d1"), "a change moves no pin: {pins:?}");
        ledger.record_tool_pin(event(PinKind::Accepted, "d2", Some("alice (app)"))).await.unwrap();
        ledger.flush().await.unwrap();
    }
    let reader = LedgerReader::open(&path).unwrap();
    let pins = reader.tool_pins().unwrap();
    assert_eq!(pins[0].digest, "d2");
    assert_eq!(pins[0].definition["description"], "d2");
    let events = reader.tool_pin_events(10).unwrap();
    let kinds: Vec<(PinKind, Option<String>)> = events.into_iter().map(|e| (e.kind, e.operator)).collect();
    assert_eq!(
        kinds,
        [(PinKind::Pinned, None), (PinKind::Changed, None), (PinKind::Accepted, Some("alice (app)".into()))]
    );
}
