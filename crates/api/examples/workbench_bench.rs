//! What the policy workbench costs while an operator edits: a draft of a policy with N command rules
//! (two examples each) checked from cold, then re-checked after one example changes (what each
//! keystroke costs), linted, tried on a command; and the draft replayed over a ledger of past calls
//! against the policy in force. One JSON object per line on stdout.
//!
//! `cargo run --release -p portcullis-ledger --example ledger_bench -- 1000 1000000 /tmp/demo.ledger`
//! `cargo run --release -p portcullis-hub --example workbench_bench -- 1000 /tmp/demo.ledger 20`
//!
//! The ledger is copied first (the hub opens its copy as its own ledger and may migrate it).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use portcullis_api::OperatorApi;
use portcullis_api::workbench::TrialInput;
use portcullis_hub::{Hub, HubConfig};
use portcullis_policy::ExampleCommands;
use serde_json::json;
use std::error::Error;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// A policy of `rules` command rules, each with a `match` and a `not_match` example; `edited` changes
/// the match example of rule `rules / 2` (what one keystroke in it does).
fn policy(rules: usize, edited: usize) -> String {
    let body: Vec<String> = (0..rules)
        .map(|i| {
            let decision = ["allow", "prompt", "forbidden"][i % 3];
            let example = if i == rules / 2 { format!("tool{i} run --x {edited}") } else { format!("tool{i} run --x") };
            format!(
                r#"    {{ "id": "r{i}", "pattern": ["tool{i}", ["run", "check"]], "decision": "{decision}", "match": ["{example}"], "not_match": ["tool{i} stop"] }}"#
            )
        })
        .collect();
    format!(
        "{{\n  \"commands\": {{\n    \"default\": \"prompt\",\n    \"rules\": [\n{}\n    ]\n  }}\n}}\n",
        body.join(",\n")
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> BenchResult<()> {
    let mut args = std::env::args().skip(1);
    let rules: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(1000);
    let ledger = args.next();
    let runs: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(20);
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("proj");
    std::fs::create_dir_all(project.join(".portcullis"))?;
    let file = project.join(".portcullis/policy.json");
    std::fs::write(&file, policy(rules, 0))?;
    let db = dir.path().join("ledger.db");
    if let Some(source) = &ledger {
        std::fs::copy(source, &db)?;
    }
    let hub =
        Hub::open(HubConfig { config_dir: Some(dir.path().join("config")), ..HubConfig::new(&project, &db) })
            .await?;
    let api = OperatorApi::new(hub.clone());
    let file = file.display().to_string();

    let text = policy(rules, 0);
    let mut parsed = ExampleCommands::default();
    let started = Instant::now();
    let check = api.check_policy_draft(&file, &text, &mut parsed)?;
    let cold_ms = started.elapsed().as_secs_f64() * 1e3;
    assert!(check.problem.is_none(), "{:?}", check.problem);
    let mut warm = Vec::new();
    for run in 1..=runs {
        let text = policy(rules, run);
        let started = Instant::now();
        let check = api.check_policy_draft(&file, &text, &mut parsed)?;
        warm.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(check.examples.len(), rules * 2);
    }
    warm.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({ "bench": "draft_check", "rules": rules, "examples": rules * 2, "text_bytes": text.len(),
                "cold_ms": cold_ms, "retype_p50_ms": percentile(&warm, 0.5), "retype_p90_ms": percentile(&warm, 0.9),
                "retype_max_ms": warm.last() })
    );

    let started = Instant::now();
    let lint = api.lint_policy_draft(&file, &text)?;
    println!(
        "{}",
        json!({ "bench": "draft_lint", "rules": rules, "findings": lint.findings.len(), "ms": started.elapsed().as_secs_f64() * 1e3 })
    );
    let mut tries = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        api.try_policy_draft(
            &file,
            &text,
            TrialInput::Command { script: "git status && tool7 run x | tee out.txt".into() },
        )
        .await?;
        tries.push(started.elapsed().as_secs_f64() * 1e3);
    }
    tries.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({ "bench": "draft_try", "rules": rules, "p50_ms": percentile(&tries, 0.5), "p90_ms": percentile(&tries, 0.9) })
    );

    if ledger.is_some() {
        // What the rules did lately (the rule cards' counts and the candidate rules), over the week.
        let mut reads = Vec::new();
        let mut hits = 0;
        for _ in 0..3 {
            let started = Instant::now();
            let activity = api.rule_activity()?;
            reads.push(started.elapsed().as_secs_f64() * 1e3);
            hits = activity.hits.iter().map(|h| h.week).sum::<u64>();
        }
        reads.sort_by(f64::total_cmp);
        println!(
            "{}",
            json!({ "bench": "rule_activity", "calls_with_a_rule_this_week": hits, "median_ms": percentile(&reads, 0.5) })
        );
        // A draft that loosens one rule, replayed against the policy in force.
        let loosened = text.replacen(
            r#""id": "r2", "pattern": ["tool2", ["run", "check"]], "decision": "forbidden""#,
            r#""id": "r2", "pattern": ["tool2", ["run", "check"]], "decision": "allow""#,
            1,
        );
        let never = AtomicBool::new(false);
        let (mut updates, mut changes) = (0u64, 0u64);
        let started = Instant::now();
        let outcome = api.replay_policy_draft(&file, &loosened, None, &never, &mut |update| {
            updates += 1;
            if let portcullis_api::draft_replay::DraftReplayUpdate::Changes { changes: c } = update {
                changes += c.len() as u64;
            }
            true
        })?;
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "{}",
            json!({ "bench": "draft_replay", "records": outcome.summary.calls, "replayed": outcome.summary.replayed,
                    "changed": outcome.summary.changed, "listed": changes, "updates": updates, "seconds": seconds,
                    "calls_per_second": outcome.summary.calls as f64 / seconds })
        );
    }
    hub.close().await?;
    Ok(())
}
