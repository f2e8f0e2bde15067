//! The team ledger's figures, one JSON object per line on stdout, against a private PostgreSQL server
//! (Debian's binaries, started by the bench on a temporary folder; `fsync=off`, as in the tests).
//!
//! `cargo run --release -p portcullis-hub --example team_ledger_bench -- [calls] [team_calls] [--only ship,team]`
//!
//! - `ship` (default 20,000 calls): the durable-ledger cost per call through `Hub::call` (the built-in
//!   `read` of a small file: grants, schema, policy, SQLite ledger) without shipping and with shipping to
//!   PostgreSQL, alternated three times; while shipping, the lag sampled every 50 ms; after the calls,
//!   the backlog left and how fast it drains (records per second shipped with the hub idle).
//! - `team` (default 10,000,000 calls from 50 hubs): a team ledger generated in the database (one
//!   terminal record per call, 12 tools, 10 % blocked, 5 % errors, arguments from a 16-word vocabulary and
//!   the call number, 30 days; a session per 40 calls). With `PORTCULLIS_BENCH_PG=DIR` the server and its
//!   data are kept in DIR, and a later run that finds the same number of calls there measures them again
//!   without generating them (after migrating the schema, timed), then the reader's queries, each the median of 5 runs: the first page, a
//!   filtered first page, a full-text search (common and rare words), a count and the stats.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use portcullis_harness::CallOutcome;
use portcullis_hub::{Hub, HubConfig};
use portcullis_hub::{TeamLedgerChoice, TeamLedgerSetting};
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::{CallFilter, CallStatus};
use portcullis_team::testing::PrivatePostgres;
use portcullis_team::{TeamDb, TeamReader};
use serde_json::{Value, json};
use std::error::Error;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// The allocator the shipped binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn emit(line: Value) {
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(1);
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// A hub for a fresh project whose policy lets agents `read`; shipping to `team` when given.
async fn hub_for(base: &Path, team: Option<TeamLedgerSetting>) -> BenchResult<Hub> {
    std::fs::create_dir_all(base.join("proj/.portcullis"))?;
    std::fs::write(base.join("proj/note.txt"), "a short note\n")?;
    std::fs::write(
        base.join("proj/.portcullis/policy.json"),
        r#"{ "grants": [ { "name": "agents", "allow": ["read"] } ] }"#,
    )?;
    let hub = Hub::open(HubConfig {
        config_dir: Some(base.join("config")),
        unattended: true,
        team_ledger: team.map_or(TeamLedgerChoice::Off, TeamLedgerChoice::Named),
        ..HubConfig::new(base.join("proj"), base.join("ledger.db"))
    })
    .await?;
    Ok(hub)
}

/// µs per call of `n` sequential reads (after a warm-up), each returned once its records are in the
/// ledger's hands (as a call through the gateway is).
async fn calls(hub: &Hub, n: usize, tag: &str) -> BenchResult<f64> {
    let session = hub.open_session("team-ledger-bench", "0.1.0").await;
    let call = async |i: usize| -> BenchResult<()> {
        let result = hub
            .call(
                &session,
                &format!("{tag}{i}"),
                "read",
                json!({"path": "note.txt"}),
                "bench",
                CancellationToken::new(),
            )
            .await;
        match &result.outcome {
            CallOutcome::Finished { output } if !output.is_error => Ok(()),
            other => Err(format!("read: unexpected outcome {other:?}").into()),
        }
    };
    for i in 0..n / 10 {
        call(i).await?;
    }
    let started = Instant::now();
    for i in 0..n {
        call(n + i).await?;
    }
    let elapsed = started.elapsed();
    hub.close_session(session).await;
    Ok(elapsed.as_secs_f64() * 1e6 / n as f64)
}

async fn ship(n: usize) -> BenchResult<()> {
    let pg = PrivatePostgres::start();
    pg.create_db("team");
    let dir = tempfile::tempdir()?;
    let password = pg.password_file(dir.path(), "pw");
    let setting = TeamLedgerSetting { url: pg.url("team"), password_file: Some(password) };
    let (mut off, mut on, mut drains) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        let base = dir.path().join(format!("off{round}"));
        let hub = hub_for(&base, None).await?;
        off.push(calls(&hub, n, "c").await?);
        hub.close().await?;

        let base = dir.path().join(format!("on{round}"));
        let hub = hub_for(&base, Some(setting.clone())).await?;
        let stop = CancellationToken::new();
        let sampler = {
            let (api, stop) = (portcullis_api::OperatorApi::new(hub.clone()), stop.clone());
            tokio::spawn(async move {
                let mut most = 0;
                while !stop.is_cancelled() {
                    most = most.max(api.shipping().first().map_or(0, |l| l.records_behind));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                most
            })
        };
        on.push(calls(&hub, n, "c").await?);
        let calls_done = Instant::now();
        let api = portcullis_api::OperatorApi::new(hub.clone());
        let backlog = api.shipping().first().map_or(0, |l| l.records_behind);
        let records = i64::try_from(2 * (n + n / 10))?;
        let ledger_id = portcullis_ledger::LedgerReader::open(base.join("ledger.db"))?.ledger_id()?;
        loop {
            let shipped = pg.count(
                "team",
                &format!("SELECT count(*) FROM portcullis.records WHERE ledger_id = '{ledger_id}'"),
            );
            if shipped >= records {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let drain = calls_done.elapsed().as_secs_f64();
        drains.push(backlog as f64 / drain);
        stop.cancel();
        let most_behind = sampler.await?;
        hub.close().await?;
        emit(
            json!({"bench": "ship_round", "round": round, "us_per_call_off": off[round], "us_per_call_on": on[round],
            "records": records, "max_records_behind": most_behind, "backlog_after_calls": backlog,
            "drain_records_per_s": backlog as f64 / drain}),
        );
    }
    let (off, on) = (median(off), median(on));
    emit(
        json!({"bench": "ship", "calls": n, "us_per_call_without_shipping": off, "us_per_call_with_shipping": on,
        "cost_ratio": on / off, "drain_records_per_s": median(drains)}),
    );
    Ok(())
}

/// Fills the team ledger with `n` calls from 50 hubs, in the database itself.
fn generate(pg: &PrivatePostgres, n: i64) {
    let started = Instant::now();
    pg.sql(
        "team",
        "DROP INDEX portcullis.records_calls_at, portcullis.records_call, portcullis.records_search",
    );
    let chunk = 1_000_000;
    for from in (0..n).step_by(chunk) {
        let to = (from + i64::try_from(chunk).unwrap_or(i64::MAX)).min(n) - 1;
        pg.sql(
            "team",
            &format!(
                "WITH words AS (SELECT ARRAY['kubernetes','migration','deploy','cargo','build','test','lint','format',
                                             'docker','image','cache','release','branch','merge','rebase','commit'] AS w),
                 g AS (SELECT i, i % 50 AS hub, 1764547200000000 + i * (2592000000000 / {n}) AS at,
                              (ARRAY['shell','read','write','edit','grep','glob','fetch','search','list','move','copy','delete'])[1 + i % 12] AS tool,
                              CASE WHEN i % 10 = 0 THEN 'blocked' WHEN i % 20 = 1 THEN 'error' ELSE 'finished' END AS status,
                              (SELECT w[1 + i % 16] || ' ' || w[1 + (i / 16) % 16] FROM words) || ' n' || i AS text
                       FROM generate_series({from}, {to}) AS i)
                 INSERT INTO portcullis.records (ledger_id, id, hub_host, hub_user, session_id, run_id, call_id, owner, tool,
                     kind, status, at, started_at, duration_us, reason, decided_by, decided_rule, policy_decision, redacted,
                     record, search)
                 SELECT 'hub' || hub, i, 'host' || hub, 'user' || (hub % 7), 's' || (i / 40), 'r', 'c' || i, 'agent', tool,
                     status, status, at, at - 900, CASE WHEN status = 'blocked' THEN NULL ELSE 100 + (i * 37) % 50000 END,
                     CASE WHEN status = 'blocked' THEN 'execution_denied' END,
                     CASE WHEN status = 'blocked' THEN 'default' ELSE 'rule' END,
                     CASE WHEN status = 'blocked' THEN NULL ELSE 'r' || (i % 30) END,
                     CASE WHEN status = 'blocked' THEN 'forbidden' ELSE 'allow' END, false,
                     jsonb_build_object('id', i, 'session_id', 's' || (i / 40), 'run_id', 'r', 'call_id', 'c' || i,
                         'owner', 'agent', 'tool', tool, 'kind', status, 'at', at, 'redacted', false,
                         'arguments', jsonb_build_object('command', text),
                         'reason', CASE WHEN status = 'blocked' THEN 'execution_denied' END,
                         'started_at', at - 900,
                         'duration_us', CASE WHEN status = 'blocked' THEN NULL ELSE 100 + (i * 37) % 50000 END,
                         'decided_by', CASE WHEN status = 'blocked' THEN jsonb_build_object('by', 'default')
                             ELSE jsonb_build_object('by', 'rule', 'rule_id', 'r' || (i % 30), 'source', 'policy.json') END),
                     to_tsvector('simple', tool || ' ' || text)
                 FROM g"
            ),
        );
        eprintln!("team_ledger_bench: {} of {n} calls in {:.0} s", to + 1, started.elapsed().as_secs_f64());
    }
    pg.sql("team", "CREATE INDEX records_calls_at ON portcullis.records (at DESC, ledger_id, id) WHERE status IS NOT NULL");
    pg.sql("team", "CREATE INDEX records_call ON portcullis.records (ledger_id, session_id, call_id)");
    pg.sql(
        "team",
        "CREATE INDEX records_search ON portcullis.records USING gin (search) WHERE status IS NOT NULL",
    );
    // A session per 40 calls, a tenth of them still open and a tenth cut.
    pg.sql(
        "team",
        &format!(
            "INSERT INTO portcullis.sessions (ledger_id, id, hub_host, hub_user, client_name, client_version, cwd,
                 started_at, ended_at, end_reason)
             SELECT 'hub' || (s % 50), 's' || s, 'host' || (s % 50), 'user' || (s % 50 % 7), 'claude-code', '2.0',
                 '/work/p' || (s % 50), 1764547200000000 + s * 40 * (2592000000000 / {n}),
                 CASE WHEN s % 10 = 0 THEN NULL ELSE 1764547200000000 + (s * 40 + 39) * (2592000000000 / {n}) END,
                 CASE WHEN s % 10 = 0 THEN NULL WHEN s % 10 = 1 THEN 'cut' ELSE 'closed' END
             FROM generate_series(0, {n} / 40 - 1) AS s"
        ),
    );
    for backfill in portcullis_team::schema::rollup_backfills() {
        pg.sql("team", &backfill);
    }
    pg.sql("team", "VACUUM ANALYZE portcullis.records");
    pg.sql("team", "VACUUM ANALYZE");
    let bytes = pg.count("team", "SELECT pg_total_relation_size('portcullis.records')");
    emit(json!({"bench": "team_generate", "calls": n, "seconds": started.elapsed().as_secs_f64(),
        "bytes_per_call": bytes as f64 / n as f64}));
}

fn timed<T>(runs: usize, mut op: impl FnMut() -> BenchResult<T>) -> BenchResult<(f64, T)> {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        last = Some(op()?);
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok((median(times), last.ok_or("no run")?))
}

fn team(n: i64) -> BenchResult<()> {
    let pg = match std::env::var_os("PORTCULLIS_BENCH_PG") {
        Some(dir) => PrivatePostgres::kept(Path::new(&dir)),
        None => PrivatePostgres::start(),
    };
    if pg.count("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'team'") == 0 {
        pg.create_db("team");
    }
    let dir = tempfile::tempdir()?;
    let password = pg.password_file(dir.path(), "pw");
    let db = TeamDb::parse(&pg.url("team"), Some(&password))?;
    // The schema, made as a hub's first shipment makes it.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let started = Instant::now();
    runtime.block_on(async {
        let mut client = portcullis_team::connect(&db).await?;
        portcullis_team::schema::migrate(&mut client, &db.to_string()).await
    })?;
    emit(json!({"bench": "team_migrate", "seconds": started.elapsed().as_secs_f64()}));
    // A kept server (`PORTCULLIS_BENCH_PG`) that already holds these calls is measured as it is.
    if pg.count("team", "SELECT count(*) FROM portcullis.records") != n {
        pg.sql("team", "TRUNCATE portcullis.records, portcullis.sessions, portcullis.call_hours, portcullis.call_dim_hours, portcullis.call_dim_days");
        generate(&pg, n);
    }
    let reader = TeamReader::open(&db)?;
    let all = CallFilter::default();
    let (ms, page) = timed(5, || Ok(reader.calls(&all, None, 100)?))?;
    emit(json!({"bench": "team_first_page", "calls": n, "ms": ms, "rows": page.calls.len()}));
    let filtered = CallFilter {
        tools: vec!["shell".into()],
        statuses: vec![CallStatus::Blocked],
        hosts: vec!["host10".into()],
        ..CallFilter::default()
    };
    let (ms, page) = timed(5, || Ok(reader.calls(&filtered, None, 100)?))?;
    emit(json!({"bench": "team_filtered_first_page", "ms": ms, "rows": page.calls.len()}));
    if let Some(next) = page.next {
        let (ms, _) = timed(5, || Ok(reader.calls(&filtered, Some(next), 100)?))?;
        emit(json!({"bench": "team_next_page", "ms": ms}));
    }
    // Two words each in 1/16 of the calls, together in 1/256 of them; and one word in 1/8.
    let search = CallFilter { search: Some("kubernetes migration".into()), ..CallFilter::default() };
    let (ms, page) = timed(5, || {
        Ok(reader.calls(
            &CallFilter { search: Some("kubernetes".into()), ..CallFilter::default() },
            None,
            100,
        )?)
    })?;
    emit(json!({"bench": "team_search_common_word", "ms": ms, "rows": page.calls.len()}));
    let (ms, page) = timed(5, || Ok(reader.calls(&search, None, 100)?))?;
    emit(json!({"bench": "team_search_first_page", "ms": ms, "rows": page.calls.len()}));
    let rare = CallFilter { search: Some(format!("n{}", n / 2)), ..CallFilter::default() };
    let (ms, page) = timed(5, || Ok(reader.calls(&rare, None, 100)?))?;
    emit(json!({"bench": "team_search_rare", "ms": ms, "rows": page.calls.len()}));
    let (ms, count) = timed(3, || Ok(reader.count(&all)?))?;
    emit(json!({"bench": "team_count", "ms": ms, "calls": count}));
    let (ms, stats) = timed(3, || Ok(reader.stats(&all, None)?))?;
    emit(json!({"bench": "team_stats", "ms": ms, "total": stats.total, "buckets": stats.buckets.len()}));
    let day = CallFilter {
        since: Some(portcullis_harness::Timestamp(1_764_547_200_000_000 + 86_400_000_000 * 10)),
        until: Some(portcullis_harness::Timestamp(1_764_547_200_000_000 + 86_400_000_000 * 11)),
        ..CallFilter::default()
    };
    let (ms, stats) = timed(3, || Ok(reader.stats(&day, None)?))?;
    emit(json!({"bench": "team_stats_one_day", "ms": ms, "total": stats.total}));
    // Filtered on a dimension: from the hourly rollups per hub (every combination), not the
    // per-dimension ones.
    for (bench, filter) in [
        ("team_stats_one_tool", CallFilter { tools: vec!["shell".into()], ..CallFilter::default() }),
        ("team_stats_one_host", CallFilter { hosts: vec!["host11".into()], ..CallFilter::default() }),
    ] {
        let (ms, stats) = timed(3, || Ok(reader.stats(&filter, None)?))?;
        emit(
            json!({"bench": bench, "ms": ms, "total": stats.total, "durations_exact": stats.durations_exact}),
        );
    }
    Ok(())
}

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let numbers: Vec<&String> = args.iter().filter(|a| a.parse::<i64>().is_ok()).collect();
    let n: usize = numbers.first().map_or(Ok(20_000), |a| a.parse())?;
    let team_calls: i64 = numbers.get(1).map_or(Ok(10_000_000), |a| a.parse())?;
    let wants = |part: &str| only.as_deref().is_none_or(|o| o.split(',').any(|p| p == part));
    if wants("ship") {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        runtime.block_on(ship(n))?;
    }
    if wants("team") {
        team(team_calls)?;
    }
    Ok(())
}
