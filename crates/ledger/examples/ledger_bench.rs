//! SQLite ledger figures, one JSON object per line on stdout.
//!
//! `cargo run --release -p portcullis-ledger --example ledger_bench -- [dispatch_calls] [ledger_calls] [KEEP]
//! [--runs R] [--only dispatch,dispatch_allowed,dispatch_blocked,latency,queries]`
//! (defaults 100,000 and 1,000,000, one run, every part; the latency figures use a fifth of
//! `dispatch_calls`; `--runs` repeats the dispatch figures and reports their min, median and max).
//! Files go to a temporary folder that is removed at the end; with a third argument the generated
//! ledger is written to that path and kept (a realistic ledger to explore with `portcullis ledger ...`).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, BlockedReason, CallContext, CallError, DecidedBy, Dispatcher, ExecutionAction, GrantScope,
    Grants, Ledger, RecordKind, RuleRef, RunContext, Timestamp, Tool, ToolCall, ToolCallRecord, ToolError,
    ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::{CallFilter, CallStatus, LedgerReader, SqliteLedger};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator the shipped binaries use (`portcullis`, the app), so the figures are theirs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A ledger as the hub opens it: its checkpoints signed with a key (made here for the run).
fn open_signed(path: &Path) -> SqliteLedger {
    let key = portcullis_ledger::LedgerKey::generate().unwrap_or_else(|e| fail("key", e));
    SqliteLedger::open_signed(path, portcullis_ledger::LedgerOptions::default(), Some(Arc::new(key)))
        .unwrap_or_else(|e| fail("open", e))
}

struct Echo(ToolSpec);

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let text = invocation.arguments.get("text").and_then(Value::as_str).unwrap_or_default();
        Ok(ToolOutput::text(text))
    }
}

/// An echo that says it writes a file (it does not): a call with a side effect, whose `started` record
/// the dispatcher makes durable before executing it.
struct SideEffectEcho(ToolSpec);

#[async_trait]
impl Tool for SideEffectEcho {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn describe_action(&self, _: &Value, _: &CallContext) -> Result<ExecutionAction, ToolError> {
        Ok(ExecutionAction::new(ActionKind::Write, "write").with_paths(vec!["/dev/null".into()]))
    }
    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let text = invocation.arguments.get("text").and_then(Value::as_str).unwrap_or_default();
        Ok(ToolOutput::text(text))
    }
}

fn emit(line: Value) {
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(0);
    }
}

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("ledger_bench: {what}: {e}");
    std::process::exit(1);
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn file_bytes(path: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", path.display())).ok())
        .map(|m| m.len())
        .sum()
}

/// Min, median and max of `runs` durations, in µs per call (three decimals).
fn spread_us(runs: &[Duration], n: usize) -> Value {
    let mut sorted = runs.to_vec();
    sorted.sort();
    let us = |d: Duration| (d.as_secs_f64() * 1e9 / n as f64).round() / 1000.0;
    json!({"min": us(sorted[0]), "median": us(sorted[sorted.len() / 2]), "max": us(sorted[sorted.len() - 1])})
}

/// Sequential dispatch into a fresh SQLite ledger file per run: `allowed` calls (echo with the JSON
/// Schema of the harness bench: a queued `started` record and a `finished` one) or `blocked` calls (a
/// tool the grants refuse: one `blocked` record). A run is `n` calls after a warm-up of n/10; it counts
/// until the last dispatch returned (`us_per_call`), until a durable flush after it returned
/// (`durable`: everything in the journal, survives a crash of the process) and until a visible flush
/// after that returned (`visible`: everything in SQLite, what readers see). `index_backlog` is the rows
/// journaled and not yet in SQLite when the last dispatch returned (median).
async fn dispatch_bench(dir: &Path, n: usize, runs: usize, variant: &str) {
    let schema =
        json!({"type":"object","properties":{"text":{"type":"string","maxLength":1000}},"required":["text"]});
    let args = json!({"text": "hello from the bench, a short line of text"});
    let (tool, expect_finished) =
        if variant == "blocked" { ("forbidden_echo", false) } else { ("echo", true) };
    let mut dispatched = Vec::with_capacity(runs);
    let mut durable = Vec::with_capacity(runs);
    let mut visible = Vec::with_capacity(runs);
    let mut backlogs = Vec::with_capacity(runs);
    let mut rows = 0;
    let mut commits = 0;
    let mut bytes = 0;
    for r in 0..runs {
        let path = dir.join(format!("dispatch-{variant}-{r}.ledger"));
        let ledger = Arc::new(open_signed(&path));
        let mut registry = ToolRegistry::new();
        let _ = registry.register(Arc::new(Echo(
            ToolSpec::new("echo", "Echo the text back").with_parameters(schema.clone()),
        )));
        let _ = registry.register(Arc::new(Echo(ToolSpec::new("forbidden_echo", "Never granted"))));
        let dispatcher = Dispatcher::builder(registry).ledger(ledger.clone()).build();
        let run = RunContext::new("bench", "run")
            .with_grants(Grants::new(vec![GrantScope::new("b").allow(["echo"])]));
        let check = |result: &portcullis_harness::ToolCallResult| {
            if result.is_finished() != expect_finished {
                fail("dispatch", format!("{variant}: {:?}", result.error()));
            }
        };
        for i in 0..n / 10 {
            check(&dispatcher.dispatch(ToolCall::new(format!("w{i}"), tool, args.clone()), &run).await);
        }
        ledger.flush().await.unwrap_or_else(|e| fail("flush", e));
        let before = ledger.committed_rows();
        let commits_before = ledger.commits();
        let calls: Vec<ToolCall> =
            (0..n).map(|i| ToolCall::new(format!("c{i}"), tool, args.clone())).collect();
        let start = Instant::now();
        for call in calls {
            check(&dispatcher.dispatch(call, &run).await);
        }
        dispatched.push(start.elapsed());
        backlogs.push(ledger.index_backlog());
        ledger.flush_durable().await.unwrap_or_else(|e| fail("flush", e));
        durable.push(start.elapsed());
        ledger.flush().await.unwrap_or_else(|e| fail("flush", e));
        visible.push(start.elapsed());
        rows = ledger.committed_rows() - before;
        commits = ledger.commits() - commits_before;
        ledger.close().await.unwrap_or_else(|e| fail("close", e));
        bytes = file_bytes(&path);
        let _ = ["", "-wal", "-shm", ".journal"]
            .map(|suffix| std::fs::remove_file(format!("{}{suffix}", path.display())));
    }
    let median_visible = {
        let mut sorted = visible.clone();
        sorted.sort();
        sorted[sorted.len() / 2]
    };
    backlogs.sort_unstable();
    emit(json!({
        "bench": "dispatch_with_sqlite_ledger",
        "variant": variant,
        "calls": n,
        "runs": runs,
        "us_per_call": spread_us(&dispatched, n),
        "us_per_call_durable": spread_us(&durable, n),
        "us_per_call_visible": spread_us(&visible, n),
        "index_backlog": backlogs[backlogs.len() / 2],
        "rows_per_run": rows,
        "rows_per_commit": (rows as f64 / commits.max(1) as f64 * 10.0).round() / 10.0,
        "rows_per_s_visible": (rows as f64 / median_visible.as_secs_f64()).round(),
        "file_bytes_after_close": bytes,
    }));
}

/// The `q`-quantile of sorted durations, in µs.
fn quantile_us(sorted: &[Duration], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else { return 0.0 };
    let at = ((last as f64) * q).round() as usize;
    (sorted[at.min(last)].as_secs_f64() * 1e6 * 10.0).round() / 10.0
}

/// Per-call latency and throughput of dispatch into a SQLite ledger, for a tool without side effect
/// (`none`: its `started` record is queued) and one with (`write`: the call waits until its `started`
/// record is committed), with `tasks` concurrent callers.
async fn latency_bench(dir: &Path, n: usize, action: &str, tasks: usize) {
    let path = dir.join(format!("latency-{action}-{tasks}.ledger"));
    let ledger = Arc::new(open_signed(&path));
    let mut registry = ToolRegistry::new();
    let spec = ToolSpec::new("echo", "Echo the text back");
    let tool: Arc<dyn Tool> =
        if action == "write" { Arc::new(SideEffectEcho(spec)) } else { Arc::new(Echo(spec)) };
    let _ = registry.register(tool);
    let dispatcher = Dispatcher::builder(registry).ledger(ledger.clone()).build();
    let args = json!({"text": "hello from the bench, a short line of text"});
    let per_task = n / tasks;
    let warm = RunContext::new("bench", "warm");
    for i in 0..(n / 20).max(10) {
        dispatcher.dispatch(ToolCall::new(format!("w{i}"), "echo", args.clone()), &warm).await;
    }
    let start = Instant::now();
    let mut joins = Vec::new();
    for t in 0..tasks {
        let dispatcher = dispatcher.clone();
        let args = args.clone();
        joins.push(tokio::spawn(async move {
            let run = RunContext::new("bench", format!("run-{t}"));
            let mut times = Vec::with_capacity(per_task);
            for i in 0..per_task {
                let call = ToolCall::new(format!("t{t}-c{i}"), "echo", args.clone());
                let begun = Instant::now();
                let result = dispatcher.dispatch(call, &run).await;
                times.push(begun.elapsed());
                if !result.is_finished() {
                    fail("dispatch", format!("{:?}", result.error()));
                }
            }
            times
        }));
    }
    let mut times = Vec::with_capacity(n);
    for join in joins {
        times.extend(join.await.unwrap_or_else(|e| fail("join", e)));
    }
    let elapsed = start.elapsed();
    times.sort();
    emit(json!({
        "bench": "dispatch_latency_sqlite",
        "action": action,
        "tasks": tasks,
        "calls": times.len(),
        "p50_us": quantile_us(&times, 0.5),
        "p90_us": quantile_us(&times, 0.9),
        "p99_us": quantile_us(&times, 0.99),
        "calls_per_s": (times.len() as f64 / elapsed.as_secs_f64()).round(),
    }));
    ledger.close().await.unwrap_or_else(|e| fail("close", e));
}

const TOOLS: [&str; 12] = [
    "shell",
    "read",
    "write",
    "edit",
    "list",
    "search_tools",
    "mcp:github:create_issue",
    "mcp:github:list_prs",
    "mcp:fs:read_file",
    "mcp:fs:write_file",
    "mcp:browser:navigate",
    "mcp:db:query",
];
const WORDS: [&str; 16] = [
    "cargo",
    "build",
    "test",
    "release",
    "README",
    "main.rs",
    "lib.rs",
    "src",
    "grep",
    "TODO",
    "deploy",
    "docker",
    "kubernetes",
    "migration",
    "tokio",
    "serde",
];

/// xorshift: deterministic and dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// Writes `n` calls (≈2 records each: started + terminal, blocked calls 1) spread over 30 days.
async fn generate(path: &Path, n: usize) -> (Timestamp, Timestamp) {
    let ledger = open_signed(path);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let end = Timestamp::now();
    let span: i64 = 30 * 86_400 * 1_000_000;
    let begin = Timestamp(end.0 - span);
    let step = span / n as i64;
    let sessions: Vec<Arc<str>> = (0..50).map(|i| Arc::from(format!("session-{i}"))).collect();
    for i in 0..n {
        let at = Timestamp(begin.0 + i as i64 * step);
        let session = sessions[(rng.next() % sessions.len() as u64) as usize].clone();
        let call = Arc::new(CallContext {
            session_id: session,
            run_id: Arc::from(format!("run-{}", i / 200)),
            call_id: Arc::from(format!("call-{i}")),
            owner: Arc::from("agent"),
            cwd: None,
            mcp: None,
        });
        let tool: Arc<str> = Arc::from(rng.pick(&TOOLS));
        let text = format!("{} {} {} {}", rng.pick(&WORDS), rng.pick(&WORDS), rng.pick(&WORDS), i);
        let arguments = Arc::new(json!({"command": text, "timeout": 30}));
        let roll = rng.next() % 100;
        let rule = DecidedBy::Rule { rule_id: format!("rule-{}", roll % 7), source: "project.json".into() };
        if roll < 10 {
            let mut blocked = ToolCallRecord::new(RecordKind::Blocked, call, tool, rule);
            blocked.at = at;
            blocked.arguments = Some(arguments);
            blocked.blocked_reason =
                Some(if roll < 5 { BlockedReason::ExecutionDenied } else { BlockedReason::ToolDenied });
            blocked.error = Some(CallError::new(CallErrorCode::ExecutionDenied, "forbidden by rule"));
            ledger.record(blocked).await.unwrap_or_else(|e| fail("record", e));
            continue;
        }
        let mut started = ToolCallRecord::new(RecordKind::Started, call.clone(), tool.clone(), rule.clone());
        started.at = at;
        started.started_at = Some(at);
        started.arguments = Some(arguments);
        started.matched_rules = vec![RuleRef {
            id: format!("rule-{}", roll % 7),
            source: "project.json".into(),
            decision: Some("allow".into()),
        }];
        ledger.record(started).await.unwrap_or_else(|e| fail("record", e));
        let done = Timestamp(at.0 + 500 + (rng.next() % 200_000) as i64);
        let kind = if roll < 15 { RecordKind::Error } else { RecordKind::Finished };
        let mut end_record = ToolCallRecord::new(kind, call, tool, rule);
        end_record.at = done;
        end_record.started_at = Some(at);
        if kind == RecordKind::Error {
            end_record.error =
                Some(CallError::new(CallErrorCode::ToolError, format!("exit status 1: {text}")));
        } else {
            end_record.output = Some(Arc::new(ToolOutput::text(format!("ok: {text} done"))));
        }
        ledger.record(end_record).await.unwrap_or_else(|e| fail("record", e));
    }
    ledger.close().await.unwrap_or_else(|e| fail("close", e));
    (begin, end)
}

/// Median of `runs` timings of `f`.
fn median_ms<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        last = Some(f());
        times.push(start.elapsed());
    }
    times.sort();
    let value = last.unwrap_or_else(|| fail("median", "no runs"));
    (ms(times[times.len() / 2]), value)
}

async fn query_bench(path: &Path, n: usize) {
    let path = path.to_owned();
    let start = Instant::now();
    let (begin, end) = generate(&path, n).await;
    let generated = start.elapsed();
    let reader = LedgerReader::open(&path).unwrap_or_else(|e| fail("open reader", e));
    let check = reader.check().unwrap_or_else(|e| fail("check", e));
    emit(json!({
        "bench": "generate_ledger",
        "calls": n,
        "records": check.records,
        "seconds": (generated.as_secs_f64() * 100.0).round() / 100.0,
        "records_per_s": (check.records as f64 / generated.as_secs_f64()).round(),
        "file_bytes": file_bytes(&path),
        "bytes_per_call": file_bytes(&path) / n as u64,
    }));

    let filter = CallFilter {
        tools: vec!["shell".into()],
        statuses: vec![CallStatus::Finished],
        since: Some(Timestamp(begin.0 + (end.0 - begin.0) / 3)),
        until: Some(Timestamp(begin.0 + 2 * (end.0 - begin.0) / 3)),
        ..CallFilter::default()
    };
    let (first_ms, page) =
        median_ms(11, || reader.calls(&filter, None, 100).unwrap_or_else(|e| fail("page", e)));
    let cursor = page.next;
    let (next_ms, next) =
        median_ms(11, || reader.calls(&filter, cursor, 100).unwrap_or_else(|e| fail("next", e)));
    emit(json!({"bench": "filtered_first_page", "rows": page.calls.len(), "ms": first_ms, "target_ms": 10}));
    emit(json!({"bench": "next_page_by_key", "rows": next.calls.len(), "ms": next_ms}));

    let search = CallFilter { search: Some("kubernetes migration".into()), ..CallFilter::default() };
    let (search_ms, hits) =
        median_ms(5, || reader.calls(&search, None, 100).unwrap_or_else(|e| fail("search", e)));
    emit(
        json!({"bench": "full_text_search_first_page", "query": "kubernetes migration", "rows": hits.calls.len(), "ms": search_ms, "target_ms": 50}),
    );
    let rare = CallFilter { search: Some(format!("{}", n / 2)), ..CallFilter::default() };
    let (rare_ms, rare_hits) =
        median_ms(5, || reader.calls(&rare, None, 100).unwrap_or_else(|e| fail("search", e)));
    emit(json!({"bench": "full_text_search_rare_term", "rows": rare_hits.calls.len(), "ms": rare_ms}));

    // Stats as the ledger browser asks for them (default buckets: the span / 60), from the hourly
    // rollups (whole hours) and the records of the partial hours at the edges.
    const HOUR: i64 = 3_600_000_000;
    let middle = begin.0 + (end.0 - begin.0) / 2;
    let cases = [
        ("stats_over_everything", CallFilter::default()),
        ("stats_tool_filter", CallFilter { tools: vec!["shell".into()], ..CallFilter::default() }),
        (
            "stats_one_day",
            CallFilter {
                since: Some(Timestamp(end.0 - 24 * HOUR)),
                until: Some(end),
                ..CallFilter::default()
            },
        ),
        (
            "stats_two_hours",
            CallFilter {
                since: Some(Timestamp(middle)),
                until: Some(Timestamp(middle + 2 * HOUR)),
                ..CallFilter::default()
            },
        ),
    ];
    for (name, filter) in &cases {
        let (stats_ms, stats) =
            median_ms(7, || reader.stats(filter, None).unwrap_or_else(|e| fail("stats", e)));
        emit(json!({
            "bench": name,
            "source": stats.source,
            "calls": stats.total,
            "tools": stats.by_tool.len(),
            "buckets": stats.buckets.len(),
            "bucket_us": stats.bucket_us,
            "ms": stats_ms,
            "target_ms": 50,
        }));
    }
    // The same by a scan of every matching record (what `stats` did before the rollups).
    for (name, filter) in &cases[..2] {
        let (scan_ms, stats) =
            median_ms(3, || reader.stats_by_scan(filter, None).unwrap_or_else(|e| fail("stats by scan", e)));
        emit(json!({"bench": format!("{name}_by_scan"), "calls": stats.total, "ms": scan_ms}));
    }
    // Facet counts first: a session filter the rollups drop.
    let session = CallFilter { session: Some("session-7".into()), ..CallFilter::default() };
    let (approx_ms, stats) =
        median_ms(7, || reader.stats_approximate(&session, None).unwrap_or_else(|e| fail("approximate", e)));
    emit(json!({"bench": "stats_approximate_session_dropped", "calls": stats.total, "ms": approx_ms}));
}

fn main() {
    let mut positional = Vec::new();
    let mut runs = 1usize;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|r| r.parse().ok()).filter(|r| *r > 0).unwrap_or(1),
            "--only" => only = args.next(),
            _ => positional.push(arg),
        }
    }
    let part = |name: &str| only.as_deref().is_none_or(|o| o.split(',').any(|p| p == name));
    let dispatch_calls: usize = positional.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let ledger_calls: usize = positional.get(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let keep = positional.get(2).map(std::path::PathBuf::from);
    let dir = std::env::temp_dir().join(format!("portcullis-ledger-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail("temp dir", e));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail("tokio", e));
    runtime.block_on(async {
        for variant in ["allowed", "blocked"] {
            if part("dispatch") || part(&format!("dispatch_{variant}")) {
                dispatch_bench(&dir, dispatch_calls, runs, variant).await;
            }
        }
        if part("latency") {
            let latency_calls = (dispatch_calls / 5).max(64);
            for tasks in [1, 8, 64] {
                for action in ["none", "write"] {
                    latency_bench(&dir, latency_calls, action, tasks).await;
                }
            }
        }
        if part("queries") {
            let big = keep.clone().unwrap_or_else(|| dir.join("big.ledger"));
            if big.exists() {
                fail("keep", format!("{} exists already", big.display()));
            }
            query_bench(&big, ledger_calls).await;
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}
