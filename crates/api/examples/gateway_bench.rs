//! What the gateway adds: the reference MCP server's `echo` called directly and through the hub, one JSON
//! object per line on stdout.
//!
//! `cargo run --release -p portcullis-hub --example gateway_bench -- 2000 [--ship]`
//!
//! With `--ship` the hub also ships its ledger to a private PostgreSQL (Debian's binaries, on this same
//! machine, as the team ledger bench runs it): the lag is sampled every 50 ms while the gateway is under
//! load, and a `gateway_ship` line says how many records per second were shipped under that load, the
//! most records behind, the backlog when the load ended and how long it took to drain.
//!
//! Needs node and the npm peers in `tests/interop/node_modules` (`npm ci --prefix tests/interop`).
//! Both paths reach the same kind of upstream: `server-everything` over stdio, a child of this process for
//! the direct calls and a child of the hub for the gateway calls. The direct client is an rmcp client on the
//! child's stdin/stdout; the gateway client is an rmcp client over Streamable HTTP with the bearer token,
//! calling `everything__echo` through the whole pipeline (grants, schema, policy, SQLite ledger on a
//! temporary file) and the hub's own rmcp client to its upstream. Latencies are per call, sequential, after
//! a warm-up; throughput is measured with one client and with 32 concurrent clients (32 gateway sessions,
//! or 32 tasks on the one direct connection). To say where the added time goes, `ping` is timed on both
//! paths, `Hub::call` in process (pipeline + ledger + upstream, no HTTP), and the gateway once more with
//! a client that keeps its HTTP connection (rmcp's default client opens one per request). The clients
//! run in this process, on the hub's 2-worker runtime. Every answer is checked; a wrong one ends the
//! bench non-zero, and so does a gateway call the ledger does not hold as finished.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use portcullis_api::serve;
use portcullis_harness::CallOutcome;
use portcullis_hub::{Hub, HubConfig};
use portcullis_hub::{TeamLedgerChoice, TeamLedgerSetting};
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::{CallFilter, CallStatus, LedgerReader};
use portcullis_team::testing::PrivatePostgres;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation, JsonObject,
    PingRequest, ProtocolVersion, ServerResult,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;
type Client = RunningService<RoleClient, ClientConfig>;

const CONCURRENT_CLIENTS: usize = 32;
const MESSAGE: &str = "hello from the gateway bench, a short line of text";
const SERVER: &str = "everything";
/// The tool's name in the hub's registry, and as agents see it.
const REGISTRY_NAME: &str = "mcp:everything:echo";
const WIRE_NAME: &str = "everything__echo";

/// One JSON object per line, fields in the order given.
fn emit(fields: &[(&str, Value)]) {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{v}", json!(k))).collect();
    let line = format!("{{{}}}", body.join(","));
    // A closed stdout (`| head`) ends the bench quietly.
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(0);
    }
}

fn server_script() -> BenchResult<PathBuf> {
    let interop = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop");
    let script = interop.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    std::fs::canonicalize(&script).map_err(|e| {
        format!(
            "{}: {e}; the npm peers are not installed: run `npm ci --prefix tests/interop`",
            script.display()
        )
        .into()
    })
}

fn client_info(name: &str) -> ClientConfig {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new(name.to_owned(), "0.1.0"))
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// An rmcp client on a `server-everything` child over stdio.
async fn direct_client(script: &Path) -> BenchResult<Client> {
    let mut command = tokio::process::Command::new("node");
    command.arg(script).arg("stdio").kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn()?;
    let client = client_info("gateway-bench-direct").serve(transport).await?;
    client.peer().set_response_cache_config(ClientCacheConfig::disabled()).await;
    Ok(client)
}

/// An rmcp client of the hub's gateway (its own MCP session). rmcp's default HTTP client opens a new
/// connection for every request; `keep_alive` gives it a pooling client instead, as Node's fetch does.
async fn gateway_client(url: &str, token: &str, n: usize, keep_alive: bool) -> BenchResult<Client> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token);
    config.reinit_on_expired_session = false;
    let transport = if keep_alive {
        StreamableHttpClientTransport::with_client(reqwest::Client::builder().build()?, config)
    } else {
        StreamableHttpClientTransport::from_config(config)
    };
    let client = client_info(&format!("gateway-bench-{n}")).serve(transport).await?;
    client.peer().set_response_cache_config(ClientCacheConfig::disabled()).await;
    Ok(client)
}

/// One `echo`; an error result or another text is an error.
async fn echo(peer: &Peer<RoleClient>, tool: &'static str) -> BenchResult<()> {
    let mut arguments = JsonObject::new();
    arguments.insert("message".into(), json!(MESSAGE));
    let result = peer.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments)).await?;
    let text = result.content.first().and_then(|b| b.as_text()).map(|t| t.text.as_str());
    if result.is_error == Some(true) || text != Some(format!("Echo: {MESSAGE}").as_str()) {
        return Err(format!("{tool}: unexpected result {result:?}").into());
    }
    Ok(())
}

/// A `ping` (an empty request and answer): the transport's own round trip.
async fn ping(peer: &Peer<RoleClient>) -> BenchResult<()> {
    match peer.send_request(ClientRequest::PingRequest(PingRequest::default())).await? {
        ServerResult::EmptyResult(_) => Ok(()),
        other => Err(format!("ping: unexpected answer {other:?}").into()),
    }
}

/// One `echo` through `Hub::call` in process: the pipeline, the ledger and the hub's client to its
/// upstream, without HTTP and the gateway's MCP server.
async fn hub_echo(hub: &Hub, session: &str, call_id: &str) -> BenchResult<()> {
    let arguments = json!({ "message": MESSAGE });
    let result =
        hub.call(session, call_id, REGISTRY_NAME, arguments, "bench", CancellationToken::new()).await;
    match &result.outcome {
        CallOutcome::Finished { output }
            if !output.is_error && output.joined_text() == format!("Echo: {MESSAGE}") =>
        {
            Ok(())
        }
        other => Err(format!("{REGISTRY_NAME} in process: unexpected outcome {other:?}").into()),
    }
}

/// [`hub_echo`] with an idempotency key (SEP-3182): a new key claims its effect (durable in the journal
/// before the call runs); a key already answered is a retry answered from the first call.
async fn hub_echo_keyed(hub: &Hub, session: &str, call_id: &str, key: &str) -> BenchResult<()> {
    let request = portcullis_harness::McpRequest {
        method: "tools/call".into(),
        request_id: call_id.to_owned(),
        protocol_version: None,
        traceparent: None,
        received_at: portcullis_harness::Timestamp::now(),
        agent: Some("bench".into()),
        idempotency_key: Some(key.to_owned()),
    };
    let arguments = json!({ "message": MESSAGE });
    let result = hub
        .call_requested(
            session,
            call_id,
            REGISTRY_NAME,
            arguments,
            "bench",
            CancellationToken::new(),
            Some(std::sync::Arc::new(request)),
        )
        .await;
    match &result.outcome {
        CallOutcome::Finished { output }
            if !output.is_error && output.joined_text() == format!("Echo: {MESSAGE}") =>
        {
            Ok(())
        }
        other => Err(format!("{REGISTRY_NAME} keyed in process: unexpected outcome {other:?}").into()),
    }
}

/// Latencies (ns, sorted) of `n` sequential runs of `op` after a warm-up, and the wall time of the `n`.
async fn sequential(n: usize, mut op: impl AsyncFnMut(usize) -> BenchResult<()>) -> BenchResult<Timed> {
    let warm_up = (n / 10).max(20);
    for i in 0..warm_up {
        op(i).await?;
    }
    let mut latencies = Vec::with_capacity(n);
    let start = Instant::now();
    for i in warm_up..warm_up + n {
        let call = Instant::now();
        op(i).await?;
        latencies.push(u64::try_from(call.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    let wall = start.elapsed();
    latencies.sort_unstable();
    Ok(Timed { latencies, wall })
}

struct Timed {
    latencies: Vec<u64>,
    wall: Duration,
}

impl Timed {
    fn p50(&self) -> f64 {
        percentile_us(&self.latencies, 50.0)
    }
}

/// `n` calls split over the peers, all running at once; returns the wall time.
async fn concurrent(peers: Vec<Peer<RoleClient>>, tool: &'static str, n: usize) -> BenchResult<Duration> {
    for peer in &peers {
        echo(peer, tool).await?;
    }
    let clients = peers.len();
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, peer) in peers.into_iter().enumerate() {
        let calls = n / clients + usize::from(i < n % clients);
        tasks.spawn(async move {
            for _ in 0..calls {
                echo(&peer, tool).await?;
            }
            BenchResult::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(start.elapsed())
}

/// The value at percentile `p` of sorted nanoseconds, in µs.
fn percentile_us(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    (sorted[index.min(sorted.len() - 1)] as f64 / 1e3 * 10.0).round() / 10.0
}

fn calls_per_s(n: usize, wall: Duration) -> Value {
    json!((n as f64 / wall.as_secs_f64()).round() as u64)
}

fn latency_line(bench: &str, timed: &Timed) {
    let n = timed.latencies.len();
    emit(&[
        ("bench", json!(bench)),
        ("calls", json!(n)),
        ("p50_us", json!(percentile_us(&timed.latencies, 50.0))),
        ("p90_us", json!(percentile_us(&timed.latencies, 90.0))),
        ("p99_us", json!(percentile_us(&timed.latencies, 99.0))),
        ("max_us", json!(percentile_us(&timed.latencies, 100.0))),
        ("calls_per_s", calls_per_s(n, timed.wall)),
    ]);
}

fn throughput_line(bench: &str, clients: usize, n: usize, wall: Duration) {
    emit(&[
        ("bench", json!(bench)),
        ("clients", json!(clients)),
        ("calls", json!(n)),
        ("wall_ms", json!((wall.as_secs_f64() * 1e4).round() / 10.0)),
        ("calls_per_s", calls_per_s(n, wall)),
    ]);
}

/// A project whose policy declares the upstream and grants its `echo`.
fn project(base: &Path, script: &Path) -> BenchResult<PathBuf> {
    let project = base.join("proj");
    std::fs::create_dir_all(project.join(".portcullis"))?;
    let policy = json!({
        "grants": [ { "name": "bench", "allow": [REGISTRY_NAME] } ],
        "servers": [ {
            "id": SERVER,
            "command": "node",
            "args": [script.display().to_string(), "stdio"],
            "decision": "allow"
        } ]
    });
    let file = project.join(".portcullis/policy.json");
    std::fs::write(&file, serde_json::to_string_pretty(&policy)?)?;
    Ok(file)
}

/// Waits until the upstream's `echo` is in the hub's registry and visible to agents.
async fn upstream_ready(hub: &Hub) -> BenchResult<()> {
    let start = Instant::now();
    while !hub.visible_tools().iter().any(|t| t.name == REGISTRY_NAME) {
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "{REGISTRY_NAME} never became available: {:?}",
                portcullis_api::OperatorApi::new(hub.clone()).servers()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A private PostgreSQL the hub ships its ledger to, and the hub's setting for it.
fn team_ledger(dir: &Path) -> BenchResult<(PrivatePostgres, TeamLedgerSetting)> {
    let pg = PrivatePostgres::start();
    pg.create_db("team");
    let password = pg.password_file(dir, "pw");
    let setting = TeamLedgerSetting { url: pg.url("team"), password_file: Some(password) };
    Ok((pg, setting))
}

/// Samples the hub's shipping lag every 50 ms until `stop`; the most records behind.
fn lag_sampler(hub: &Hub, stop: CancellationToken) -> tokio::task::JoinHandle<i64> {
    let api = portcullis_api::OperatorApi::new(hub.clone());
    tokio::spawn(async move {
        let mut most = 0;
        while !stop.is_cancelled() {
            most = most.max(api.shipping().first().map_or(0, |l| l.records_behind));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        most
    })
}

/// Records of the hub's ledger in the team ledger.
fn shipped(pg: &PrivatePostgres) -> i64 {
    pg.count("team", "SELECT count(*) FROM portcullis.records")
}

async fn run(n: usize, ship: bool) -> BenchResult<()> {
    let script = server_script()?;

    // (a) Directly to the upstream.
    let direct = direct_client(&script).await?;
    let peer = direct.peer().clone();
    let direct_echo = sequential(n, async |_| echo(&peer, "echo").await).await?;
    latency_line("direct_echo", &direct_echo);
    let direct_ping = sequential(n, async |_| ping(&peer).await).await?;
    latency_line("direct_ping", &direct_ping);
    let wall = concurrent(vec![peer; CONCURRENT_CLIENTS], "echo", n).await?;
    throughput_line("direct_echo_concurrent_one_connection", CONCURRENT_CLIENTS, n, wall);
    direct.cancel().await?;

    // (b) Through the hub's gateway.
    let dir = tempfile::tempdir()?;
    let base = std::fs::canonicalize(dir.path())?;
    let policy = project(&base, &script)?;
    let db = base.join("ledger.db");
    let team = if ship { Some(team_ledger(&base)?) } else { None };
    let hub = Hub::open(HubConfig {
        policy_files: vec![policy],
        listen: "127.0.0.1:0".parse()?,
        config_dir: Some(base.join("config")),
        unattended: true,
        team_ledger: team
            .as_ref()
            .map_or(TeamLedgerChoice::Off, |(_, setting)| TeamLedgerChoice::Named(setting.clone())),
        ..HubConfig::new(base.join("proj"), db.clone())
    })
    .await?;
    upstream_ready(&hub).await?;
    let running = serve(hub).await?;
    let load_started = Instant::now();
    let stop_sampling = CancellationToken::new();
    let sampler = team.is_some().then(|| lag_sampler(&running.hub, stop_sampling.clone()));
    let url = format!("http://{}/mcp", running.addr);

    let hub = running.hub.clone();
    let session = hub.open_session("gateway-bench-in-process", "0.1.0").await;
    let in_process = sequential(n, async |i| hub_echo(&hub, &session, &format!("p{i}")).await).await?;
    latency_line("hub_call_in_process", &in_process);
    // With an idempotency key: each call a new key (claimed, made durable, then run), then each a
    // retry of one key (answered from the first call; recorded as a duplicate).
    let keyed =
        sequential(n, async |i| hub_echo_keyed(&hub, &session, &format!("k{i}"), &format!("key-{i}")).await)
            .await?;
    latency_line("hub_call_in_process_new_key", &keyed);
    let retried =
        sequential(n, async |i| hub_echo_keyed(&hub, &session, &format!("r{i}"), "key-0").await).await?;
    latency_line("hub_call_in_process_retry", &retried);
    hub.close_session(session).await;

    let client = gateway_client(&url, &running.token, 0, false).await?;
    let peer = client.peer().clone();
    let gateway_ping = sequential(n, async |_| ping(&peer).await).await?;
    latency_line("gateway_ping", &gateway_ping);
    let gateway_echo = sequential(n, async |_| echo(&peer, WIRE_NAME).await).await?;
    latency_line("gateway_echo", &gateway_echo);
    client.cancel().await?;
    // The same with a client that keeps its connection (as Node's fetch does). A hub whose sockets
    // delay small writes (Nagle) against the client's delayed ACK stalls each call ~40 ms: then only a
    // few calls are made, enough to show it.
    let client = gateway_client(&url, &running.token, 0, true).await?;
    let peer = client.peer().clone();
    let probe = sequential(1, async |_| ping(&peer).await).await?;
    let stalled = probe.p50() > 10_000.0;
    let keep_alive_n = if stalled { n.min(20) } else { n };
    let keep_alive_ping = sequential(keep_alive_n, async |_| ping(&peer).await).await?;
    latency_line("gateway_ping_keep_alive", &keep_alive_ping);
    let keep_alive_echo = sequential(keep_alive_n, async |_| echo(&peer, WIRE_NAME).await).await?;
    latency_line("gateway_echo_keep_alive", &keep_alive_echo);
    client.cancel().await?;

    let tenth = |us: f64| json!((us * 10.0).round() / 10.0);
    let pipeline = in_process.p50() - direct_echo.p50();
    for (bench, ping, echo, stalled) in [
        ("gateway_added_latency", &gateway_ping, &gateway_echo, false),
        ("gateway_added_latency_keep_alive", &keep_alive_ping, &keep_alive_echo, stalled),
    ] {
        let added = echo.p50() - direct_echo.p50();
        emit(&[
            ("bench", json!(bench)),
            ("p50_us", tenth(added)),
            (
                "p90_us",
                tenth(percentile_us(&echo.latencies, 90.0) - percentile_us(&direct_echo.latencies, 90.0)),
            ),
            ("target_p50_us", json!(500)),
            ("met", json!(added <= 500.0)),
            // Where the added p50 goes (the three add up to it): one MCP round trip over Streamable HTTP
            // to the hub (a ping: HTTP, SSE framing, rmcp's session worker); the pipeline with its
            // ledger (in process, against the direct echo); the rest (the gateway's handler, the
            // larger messages, the two hops waking each other).
            ("http_round_trip_us", tenth(ping.p50())),
            ("pipeline_us", tenth(pipeline)),
            ("rest_us", tenth(echo.p50() - ping.p50() - in_process.p50())),
            ("stalled", json!(stalled)),
        ]);
    }

    let mut clients = Vec::with_capacity(CONCURRENT_CLIENTS);
    for i in 0..CONCURRENT_CLIENTS {
        clients.push(gateway_client(&url, &running.token, i + 1, false).await?);
    }
    let wall = concurrent(clients.iter().map(|c| c.peer().clone()).collect(), WIRE_NAME, n).await?;
    throughput_line("gateway_echo_concurrent_clients", CONCURRENT_CLIENTS, n, wall);
    for client in clients {
        client.cancel().await?;
    }
    if let (Some((pg, _)), Some(sampler)) = (&team, sampler) {
        let load = load_started.elapsed();
        let shipped_under_load = shipped(pg);
        let api = portcullis_api::OperatorApi::new(running.hub.clone());
        let backlog = api.shipping().first().map_or(0, |l| l.records_behind);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let made = LedgerReader::open(&db)?.last_record_id()?;
        let drained = Instant::now();
        while shipped(pg) < made {
            if drained.elapsed() > Duration::from_secs(120) {
                return Err(
                    format!("the team ledger holds {} of {made} records after 2 min", shipped(pg)).into()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let drain = drained.elapsed();
        stop_sampling.cancel();
        emit(&[
            ("bench", json!("gateway_ship")),
            ("load_s", json!(load.as_secs_f64())),
            ("records_shipped_under_load", json!(shipped_under_load)),
            ("records_per_s_under_load", json!(shipped_under_load as f64 / load.as_secs_f64())),
            ("max_records_behind", json!(sampler.await?)),
            ("backlog_when_load_ended", json!(backlog)),
            ("drain_s", json!(drain.as_secs_f64())),
            ("records", json!(made)),
        ]);
    }

    running.shutdown().await?;
    let reader = LedgerReader::open(&db)?;
    // The bench's own calls, the echoes, must all have finished. The `everything` server also asks
    // the client things now and then (`roots/list`), which the hub records as calls of that server and
    // refuses (the bench's grants allow only the echo): counted apart, never a failure.
    let echoes = || CallFilter { tools: vec![REGISTRY_NAME.to_owned()], ..CallFilter::default() };
    let finished = reader.count(&CallFilter { statuses: vec![CallStatus::Finished], ..echoes() })?;
    // The keyed retries are rows of their own, refused as duplicates (answered from the first call).
    let duplicates = reader.count(&CallFilter {
        statuses: vec![CallStatus::Blocked],
        reasons: vec![portcullis_harness::BlockedReason::DuplicateEffect],
        ..echoes()
    })?;
    let server_requests = reader.count(&CallFilter::default())? - reader.count(&echoes())?;
    let all = reader.count(&echoes())? - duplicates;
    emit(&[
        ("bench", json!("gateway_ledger")),
        ("finished_calls", json!(finished)),
        ("other_calls", json!(all - finished)),
        ("duplicate_calls", json!(duplicates)),
        ("server_requests", json!(server_requests)),
    ]);
    if all != finished {
        // Say which, and how each ended (a bench's failure should be readable from its output alone).
        let page = reader.calls(&echoes(), None, 10_000)?;
        let unfinished: Vec<String> = (page.calls.iter())
            .filter(|c| c.status != CallStatus::Finished)
            .map(|c| {
                let error = c
                    .head
                    .error_code
                    .as_ref()
                    .map(|c| c.as_str())
                    .or(c.head.reason.map(|r| r.as_str()))
                    .unwrap_or("-");
                format!(
                    "{} {} {} {}: {error}",
                    c.head.session_id,
                    c.head.call_id,
                    c.head.tool,
                    c.status.as_str()
                )
            })
            .collect();
        return Err(format!("{} gateway calls did not finish: {unfinished:?}", all - finished).into());
    }
    Ok(())
}

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ship = args.iter().any(|a| a == "--ship");
    let n: usize = match args.iter().find(|a| !a.starts_with("--")) {
        Some(arg) => arg.parse().map_err(|e| format!("calls count {arg:?}: {e}"))?,
        None => 2000,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run(n.max(1), ship))
}
