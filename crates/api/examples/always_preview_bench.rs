//! What the "always" sheet costs an operator waiting on it: `OperatorApi::always_preview` (amend the
//! policy in memory, diff the file, replay every call of the ledger against it) over a ledger of N calls,
//! one JSON object per line on stdout.
//!
//! `cargo run --release -p portcullis-ledger --example ledger_bench -- 1000 100000 /tmp/demo.ledger`
//! `cargo run --release -p portcullis-hub --example always_preview_bench -- /tmp/demo.ledger 5`
//!
//! The ledger is copied first (the hub opens its copy as its own ledger and may migrate it). A call that
//! the policy prompts for is made and left waiting; its preview is timed `runs` times.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use portcullis_api::{ErrorCode, OperatorApi};
use portcullis_hub::{Hub, HubConfig};
use serde_json::json;
use std::error::Error;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> BenchResult<()> {
    let mut args = std::env::args().skip(1);
    let source = args.next().ok_or("usage: always_preview_bench LEDGER [RUNS]")?;
    let runs: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(5);
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("proj");
    std::fs::create_dir_all(project.join(".portcullis"))?;
    std::fs::write(
        project.join(".portcullis/policy.json"),
        r#"{ "commands": { "default": "prompt", "rules": [ { "id": "reads", "pattern": [["ls", "cat"]], "decision": "allow" } ] } }"#,
    )?;
    let db = dir.path().join("ledger.db");
    std::fs::copy(&source, &db)?;
    let hub =
        Hub::open(HubConfig { config_dir: Some(dir.path().join("config")), ..HubConfig::new(&project, &db) })
            .await?;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let caller = hub.clone();
    let waiting = tokio::spawn(async move {
        caller
            .call(
                "bench",
                "c1",
                "shell",
                json!({"command": "git status --short"}),
                "bench",
                CancellationToken::new(),
            )
            .await
    });
    let (id, arguments_sha256) = loop {
        if let Some(p) = api.pending_approvals().into_iter().next() {
            break (p.id, p.arguments_sha256);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let api = api.clone();
        let started = Instant::now();
        let preview = tokio::task::spawn_blocking(move || api.always_preview(id, None)).await??;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        last = Some(preview);
    }
    let preview = last.ok_or("no run")?;
    let impact = preview.impact.ok_or_else(|| preview.impact_error.unwrap_or_default())?;
    times.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({
            "calls_in_ledger": impact.calls,
            "would_allow": impact.would_allow,
            "were_refused": impact.were_refused,
            "runs": runs,
            "ms_min": times.first(),
            "ms_median": times.get(times.len() / 2),
            "ms_max": times.last(),
        })
    );
    let deny = portcullis_api::types::Answer {
        answer: portcullis_api::types::Choice::Deny,
        arguments_sha256,
        note: None,
        scope: None,
    };
    match api.answer_approval(id, &deny, &portcullis_api::Operator::named("bench")) {
        Ok(_) | Err(portcullis_api::ApiError { code: ErrorCode::ApprovalAnswered, .. }) => {}
        Err(e) => return Err(e.message.into()),
    }
    waiting.await?;
    Ok(())
}
