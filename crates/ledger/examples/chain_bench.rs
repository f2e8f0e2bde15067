//! The hash chain's figures, one JSON object per line on stdout: what a link costs the appender per
//! record, and how long `ledger verify` takes over a ledger of N records and over its JSON Lines export.
//!
//! `cargo run --release -p portcullis-ledger --example chain_bench -- [records] [--runs R]`
//! (default 1,000,000 records, three runs of each verification; the ledger is written through the
//! real writer with a signing key, in a temporary folder removed at the end).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use portcullis_harness::{
    CallContext, DecidedBy, Ledger, RecordKind, RuleRef, Timestamp, ToolCallRecord, ToolOutput,
};
use portcullis_ledger::chain::{self, CHAINED_COLUMNS};
use portcullis_ledger::export_proof::verify_export;
use portcullis_ledger::{
    CallFilter, ExportFormat, LedgerKey, LedgerOptions, LedgerReader, SqliteLedger, Verdict,
};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("chain_bench: {what}: {e}");
    std::process::exit(1);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A call's two records, shaped like a shell call's (arguments, a short output).
fn records(i: usize) -> [ToolCallRecord; 2] {
    let ctx = Arc::new(CallContext {
        session_id: Arc::from(format!("s{}", i / 500)),
        run_id: "run".into(),
        call_id: Arc::from(format!("c{i}")),
        owner: "agent".into(),
        cwd: None,
        mcp: None,
    });
    let decided = DecidedBy::Rule { rule_id: "allow-reads".into(), source: "policy.json".into() };
    let mut started = ToolCallRecord::new(RecordKind::Started, ctx.clone(), "shell".into(), decided.clone());
    started.arguments =
        Some(Arc::new(json!({"command": format!("grep -rn TODO src/module_{i}.rs"), "cwd": "/work"})));
    started.at = Timestamp(1_700_000_000_000_000 + i as i64 * 1000);
    let mut finished = ToolCallRecord::new(RecordKind::Finished, ctx, "shell".into(), decided);
    finished.started_at = Some(started.at);
    finished.at = Timestamp(started.at.0 + 800);
    finished.output = Some(Arc::new(ToolOutput::text(format!("src/module_{i}.rs:12: // TODO: split"))));
    finished.matched_rules =
        vec![RuleRef { id: "allow-reads".into(), source: "policy.json".into(), decision: None }];
    [started, finished]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut n: usize = 1_000_000;
    let mut runs = 3usize;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => {
                runs = args.next().and_then(|r| r.parse().ok()).unwrap_or_else(|| fail("usage", "--runs R"))
            }
            other => n = other.parse().unwrap_or_else(|e| fail("records", e)),
        }
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| fail("temp", e));
    let path = dir.path().join("chain.db");
    let key = LedgerKey::generate().unwrap_or_else(|e| fail("key", e));
    let public = key.public();
    let started = Instant::now();
    let ledger = SqliteLedger::open_signed(&path, LedgerOptions::default(), Some(Arc::new(key)))
        .unwrap_or_else(|e| fail("open", e));
    for i in 0..n.div_ceil(2) {
        for record in records(i) {
            ledger.record(record).await.unwrap_or_else(|e| fail("record", e));
        }
    }
    ledger.close().await.unwrap_or_else(|e| fail("close", e));
    let written = started.elapsed();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "{}",
        json!({"part": "generate", "records": n.div_ceil(2) * 2, "seconds": written.as_secs_f64(), "file_bytes": bytes})
    );

    // What one link costs: the canonical bytes of every record hashed in chain order (the appender's
    // added work per record: it hashes the bytes it journals).
    let reader = LedgerReader::open(&path).unwrap_or_else(|e| fail("reader", e));
    let conn = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| fail("sqlite", e));
    let mut canonical: Vec<Vec<u8>> = Vec::new();
    {
        let mut stmt = conn
            .prepare(&format!("SELECT {CHAINED_COLUMNS} FROM records ORDER BY id LIMIT 200000"))
            .unwrap_or_else(|e| fail("sqlite", e));
        let mut rows = stmt.query([]).unwrap_or_else(|e| fail("sqlite", e));
        while let Ok(Some(row)) = rows.next() {
            let mut bytes = Vec::new();
            if let Ok(Ok(())) = chain::canonical_from_sql(row, 0, &mut bytes) {
                canonical.push(bytes);
            }
        }
    }
    let mean_len = canonical.iter().map(Vec::len).sum::<usize>() as f64 / canonical.len().max(1) as f64;
    let mut link_runs = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let mut head = [0u8; 32];
        for bytes in &canonical {
            head = chain::link(&head, bytes);
        }
        std::hint::black_box(head);
        link_runs.push(t.elapsed());
    }
    let per_link = median(link_runs).as_secs_f64() * 1e9 / canonical.len().max(1) as f64;
    println!(
        "{}",
        json!({"part": "link", "records": canonical.len(), "mean_canonical_bytes": mean_len, "ns_per_record": per_link, "ns_per_call": per_link * 2.0})
    );

    let mut verify_runs = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let report = reader.verify(&public).unwrap_or_else(|e| fail("verify", e));
        verify_runs.push(t.elapsed());
        if report.verdict != Verdict::Intact {
            fail("verify", format!("{report:?}"));
        }
    }
    let verify = median(verify_runs.clone());
    println!(
        "{}",
        json!({"part": "verify", "records": n.div_ceil(2) * 2, "median_seconds": verify.as_secs_f64(), "runs": verify_runs.iter().map(Duration::as_secs_f64).collect::<Vec<_>>()})
    );

    let mut export = Vec::new();
    reader
        .export(&CallFilter::default(), ExportFormat::Jsonl, &mut export, &mut |_, _| {})
        .unwrap_or_else(|e| fail("export", e));
    let mut export_runs = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let report = verify_export(&export[..], &public).unwrap_or_else(|e| fail("verify export", e));
        export_runs.push(t.elapsed());
        if report.verdict != Verdict::Intact {
            fail("verify export", format!("{:?}", report.breaks.first()));
        }
    }
    println!(
        "{}",
        json!({"part": "verify_export", "records": n.div_ceil(2) * 2, "export_bytes": export.len(), "median_seconds": median(export_runs).as_secs_f64()})
    );
}
