//! The gateway beside its peers, in one run: the reference MCP server (`server-everything`, the
//! official SDK's) called directly over stdio, the same server behind `mcp-proxy` (a Rust MCP gateway),
//! behind `portcullis serve --single-upstream`, and Portcullis's built-in `read` tool, one JSON object
//! per line on stdout.
//!
//! `cargo run --release -p portcullis-hub --example peers_bench -- N --portcullis BIN [--mcp-proxy BIN]
//! [--rounds R]` (`scripts/bench-peers.sh` builds and installs what it needs and runs it).
//!
//! Every target is a separate process, and every one is called by the same minimal client in this
//! process: JSON-RPC lines on the child's stdin/stdout for the direct server; for the HTTP targets, one
//! HTTP/1.1 connection per MCP session (kept alive, `TCP_NODELAY`) on hyper, reading a JSON answer or
//! the event stream of one. The client does nothing else, so what differs between the targets is the
//! path behind them. The targets are measured in turns, round after round (times on this machine
//! drift within minutes, so each round measures all of them within seconds): per round and target,
//! `N` sequential `tools/call`s of `echo` (a 50-byte message), `N` `ping`s, and `N` calls spread over
//! 32 concurrent sessions. A line per target gives the percentiles over all rounds and the median of
//! the rounds' 32-session throughput; a last line the gateways' added latency (their `echo` p50 minus
//! the direct one) and the ratios between them. Every answer is checked; a wrong one ends the bench
//! non-zero.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};
use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

const MESSAGE: &str = "hello from the gateway bench, a short line of text";
const CONCURRENT: usize = 32;
const PROTOCOL: &str = "2025-06-18";

fn emit(value: Value) {
    if writeln!(std::io::stdout(), "{value}").is_err() {
        std::process::exit(0);
    }
}

fn interop() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

fn server_script() -> BenchResult<PathBuf> {
    let script = interop().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    std::fs::canonicalize(&script)
        .map_err(|e| format!("{}: {e}; run `npm ci --prefix tests/interop`", script.display()).into())
}

/// A free port on 127.0.0.1 (bound, then released for the child to take).
fn free_port() -> BenchResult<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// What a session calls: `tools/call` of `tool` with `arguments`, whose text must contain `expect`.
#[derive(Clone)]
struct Call {
    tool: String,
    arguments: Value,
    expect: String,
}

/// The text of a `tools/call` answer, or why it is not one.
fn call_text(answer: &Value) -> BenchResult<String> {
    let result = answer.get("result").ok_or_else(|| format!("not a result: {answer}"))?;
    if result["isError"] == json!(true) {
        return Err(format!("an error result: {result}").into());
    }
    Ok(result["content"][0]["text"].as_str().unwrap_or("").to_owned())
}

/// A JSON-RPC client on a child's stdin/stdout.
struct StdioSession {
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next: u64,
    _child: tokio::process::Child,
}

impl StdioSession {
    async fn start(script: &Path) -> BenchResult<Self> {
        let mut child = tokio::process::Command::new("node")
            .arg(script)
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut session =
            StdioSession { stdin, lines: BufReader::new(stdout).lines(), next: 0, _child: child };
        session.request("initialize", initialize_params()).await?;
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        Ok(session)
    }

    async fn send(&mut self, message: &Value) -> BenchResult<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        Ok(())
    }

    async fn request(&mut self, method: &str, params: Value) -> BenchResult<Value> {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        loop {
            let line = self.lines.next_line().await?.ok_or("the server closed its stdout")?;
            let message: Value = serde_json::from_str(&line)?;
            if message["id"] == json!(id) {
                return Ok(message);
            }
        }
    }
}

fn initialize_params() -> Value {
    json!({"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "peers-bench", "version": "1"}})
}

/// One MCP session over Streamable HTTP on its own kept-alive connection.
struct HttpSession {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    token: Option<String>,
    session: Option<String>,
    next: u64,
    /// The protocol version header sent after `initialize`.
    version_header: &'static str,
}

/// The version a session sends in its headers when it should bypass the gateway's fast lane: rmcp
/// accepts any known version there, the lane only the session's own.
const OTHER_VERSION: &str = "2025-03-26";

impl HttpSession {
    async fn start(url: &str, token: Option<&str>, version_header: &'static str) -> BenchResult<Self> {
        let uri: hyper::Uri = url.parse()?;
        let authority = uri.authority().ok_or("no authority")?.to_string();
        let stream = tokio::net::TcpStream::connect(&authority).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let mut session = HttpSession {
            sender,
            authority,
            path: uri.path().to_owned(),
            token: token.map(str::to_owned),
            session: None,
            next: 0,
            version_header,
        };
        session.request("initialize", initialize_params()).await?;
        session.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        Ok(session)
    }

    /// POSTs one message; the answer's body (a JSON message, or the events of a stream) and whether it
    /// was an event stream.
    async fn post(&mut self, message: &Value) -> BenchResult<(Bytes, bool)> {
        let mut request = hyper::Request::post(&self.path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = &self.session {
            request =
                request.header("mcp-session-id", session).header("mcp-protocol-version", self.version_header);
        }
        let request = request.body(Full::new(Bytes::from(serde_json::to_vec(message)?)))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        if !response.status().is_success() {
            return Err(format!("HTTP {} for {message}", response.status()).into());
        }
        if let Some(id) = response.headers().get("mcp-session-id") {
            self.session = Some(id.to_str()?.to_owned());
        }
        let stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        Ok((response.into_body().collect().await?.to_bytes(), stream))
    }

    async fn request(&mut self, method: &str, params: Value) -> BenchResult<Value> {
        self.next += 1;
        let id = self.next;
        let (body, stream) =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        if !stream {
            return Ok(serde_json::from_slice(&body)?);
        }
        for line in std::str::from_utf8(&body)?.lines() {
            if let Some(data) = line.strip_prefix("data:") {
                let message: Value = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
                if message["id"] == json!(id) {
                    return Ok(message);
                }
            }
        }
        Err(format!("no answer to request {id} in the stream").into())
    }
}

enum Session {
    Stdio(Box<StdioSession>),
    Http(HttpSession),
}

impl Session {
    async fn request(&mut self, method: &str, params: Value) -> BenchResult<Value> {
        match self {
            Session::Stdio(s) => s.request(method, params).await,
            Session::Http(s) => s.request(method, params).await,
        }
    }

    async fn call(&mut self, call: &Call) -> BenchResult<()> {
        let answer =
            self.request("tools/call", json!({"name": call.tool, "arguments": call.arguments})).await?;
        let text = call_text(&answer)?;
        if !text.contains(&call.expect) {
            return Err(format!("{}: unexpected text {text:?}", call.tool).into());
        }
        Ok(())
    }

    async fn ping(&mut self) -> BenchResult<()> {
        let answer = self.request("ping", json!({})).await?;
        if answer.get("result").is_none() {
            return Err(format!("ping: {answer}").into());
        }
        Ok(())
    }

    /// The name of the listed tool whose name ends with `suffix`.
    async fn tool_named(&mut self, suffix: &str) -> BenchResult<String> {
        let answer = self.request("tools/list", json!({})).await?;
        answer["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .find(|name| name.ends_with(suffix))
            .map(str::to_owned)
            .ok_or_else(|| format!("no tool ending in {suffix:?} in {answer}").into())
    }
}

/// Where a target is and what it calls.
struct Target {
    name: &'static str,
    kind: TargetKind,
    call: Call,
    latencies: Vec<u64>,
    pings: Vec<u64>,
    throughput: Vec<f64>,
    concurrent_latencies: Vec<u64>,
    /// The 32 sessions of the concurrent part, kept across rounds.
    pool: Vec<Session>,
}

#[derive(Clone)]
enum TargetKind {
    Stdio(PathBuf),
    Http { url: String, token: Option<String>, version_header: &'static str },
}

impl TargetKind {
    async fn session(&self) -> BenchResult<Session> {
        Ok(match self {
            TargetKind::Stdio(script) => Session::Stdio(Box::new(StdioSession::start(script).await?)),
            TargetKind::Http { url, token, version_header } => {
                Session::Http(HttpSession::start(url, token.as_deref(), version_header).await?)
            }
        })
    }
}

fn nanos(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// One round of a target: sequential calls and pings on one session, then `n` calls over 32 sessions.
async fn round(
    target: &mut Target,
    session: &mut Session,
    n: usize,
    concurrent_only: bool,
) -> BenchResult<()> {
    let sequential = if concurrent_only { 0 } else { n };
    for _ in 0..sequential {
        let start = Instant::now();
        session.call(&target.call).await?;
        target.latencies.push(nanos(start));
    }
    for _ in 0..sequential {
        let start = Instant::now();
        session.ping().await?;
        target.pings.push(nanos(start));
    }
    // 32 sessions at once: gateways only (32 "sessions" of a stdio server would be 32 servers).
    if matches!(target.kind, TargetKind::Stdio(_)) {
        return Ok(());
    }
    if target.pool.is_empty() {
        for _ in 0..CONCURRENT {
            let mut s = target.kind.session().await?;
            s.call(&target.call).await?;
            target.pool.push(s);
        }
    }
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, mut s) in target.pool.drain(..).enumerate() {
        let calls = n / CONCURRENT + usize::from(i < n % CONCURRENT);
        let call = target.call.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(calls);
            for _ in 0..calls {
                let start = Instant::now();
                s.call(&call).await?;
                latencies.push(nanos(start));
            }
            BenchResult::Ok((s, latencies))
        });
    }
    while let Some(done) = tasks.join_next().await {
        let (s, latencies) = done??;
        target.pool.push(s);
        target.concurrent_latencies.extend(latencies);
    }
    target.throughput.push(n as f64 / start.elapsed().as_secs_f64());
    Ok(())
}

fn percentile_us(values: &mut [u64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_unstable();
    let index = ((p / 100.0) * (values.len() - 1) as f64).round() as usize;
    (values[index.min(values.len() - 1)] as f64 / 100.0).round() / 10.0
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0).round()
}

/// A child process killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `port` accepts connections.
async fn listening(port: u16, child: &mut Child) -> BenchResult<()> {
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if let Some(status) = child.0.try_wait()? {
            return Err(format!("exited before listening: {status}").into());
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!("nothing listens on {port} after 60 s").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// `mcp-proxy` in front of the server over stdio; its MCP endpoint.
async fn start_mcp_proxy(bin: &Path, dir: &Path, script: &Path) -> BenchResult<(Child, String)> {
    let port = free_port()?;
    let config = format!(
        "[proxy]\nname = \"bench\"\nseparator = \"__\"\n\n[proxy.listen]\nhost = \"127.0.0.1\"\nport = {port}\n\n\
         [[backends]]\nname = \"everything\"\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
        script.display().to_string()
    );
    let file = dir.join("mcp-proxy.toml");
    std::fs::write(&file, config)?;
    let mut child = Child(
        std::process::Command::new(bin)
            .arg("--config")
            .arg(&file)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("mcp-proxy.log"))?)
            .spawn()?,
    );
    listening(port, &mut child).await?;
    Ok((child, format!("http://127.0.0.1:{port}/")))
}

/// `portcullis serve` for a project whose policy declares the server and grants `grant`; its MCP
/// endpoint and the agents' token.
async fn start_portcullis(
    bin: &Path,
    dir: &Path,
    script: &Path,
    grant: &[&str],
    args: &[&str],
) -> BenchResult<(Child, String, String)> {
    let project = dir.join("proj");
    std::fs::create_dir_all(project.join(".portcullis"))?;
    std::fs::write(project.join("note.txt"), MESSAGE)?;
    let policy = json!({
        "grants": [ { "name": "bench", "allow": grant } ],
        "servers": [ {
            "id": "everything",
            "command": "node",
            "args": [script.display().to_string(), "stdio"],
            "decision": "allow"
        } ]
    });
    std::fs::write(project.join(".portcullis/policy.json"), serde_json::to_string_pretty(&policy)?)?;
    std::fs::create_dir_all(dir.join("home"))?;
    let mut child = Child(
        std::process::Command::new(bin)
            .args(["serve", "--port", "0", "--approver", "none"])
            .args(args)
            .arg("--db")
            .arg(dir.join("ledger.db"))
            .current_dir(&project)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", dir.join("home"))
            .env("PORTCULLIS_CONFIG_DIR", dir.join("config"))
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("portcullis.log"))?)
            .spawn()?,
    );
    let runtime = dir.join("config/hub.json");
    let start = Instant::now();
    let info: Value = loop {
        if let Ok(text) = std::fs::read_to_string(&runtime)
            && let Ok(info) = serde_json::from_str::<Value>(&text)
        {
            break info;
        }
        if let Some(status) = child.0.try_wait()? {
            return Err(
                format!("portcullis exited: {status}; see {}", dir.join("portcullis.log").display()).into()
            );
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err("portcullis did not start in 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let url = info["mcp_url"].as_str().ok_or("no mcp_url")?.to_owned();
    let token = std::fs::read_to_string(dir.join("config/token"))?.trim().to_owned();
    Ok((child, url, token))
}

/// A session on `kind` once its tool `suffix` is listed (an upstream's tools come after its start).
async fn ready(kind: &TargetKind, suffix: &str) -> BenchResult<(Session, String)> {
    let start = Instant::now();
    loop {
        let mut session = kind.session().await?;
        match session.tool_named(suffix).await {
            Ok(tool) => return Ok((session, tool)),
            Err(e) if start.elapsed() > Duration::from_secs(60) => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

async fn run() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let rounds: usize = flag(&args, "--rounds").and_then(|r| r.parse().ok()).unwrap_or(3);
    let portcullis =
        std::fs::canonicalize(flag(&args, "--portcullis").ok_or("--portcullis BIN is required")?)?;
    // `--concurrent-only`: only the 32 sessions' part (for profiling it).
    let concurrent_only = args.iter().any(|a| a == "--concurrent-only");
    // `--only NAME` (repeatable through commas): measure only these targets (for profiling one).
    let only: Option<Vec<String>> = flag(&args, "--only").map(|o| o.split(',').map(str::to_owned).collect());
    let mcp_proxy = flag(&args, "--mcp-proxy").map(std::fs::canonicalize).transpose()?;
    let script = server_script()?;
    let base = tempfile::tempdir()?;
    let echo =
        |tool: String| Call { tool, arguments: json!({"message": MESSAGE}), expect: MESSAGE.to_owned() };

    let mut children = Vec::new();
    let mut targets = Vec::new();
    let mut sessions = Vec::new();
    let direct = TargetKind::Stdio(script.clone());
    let (session, tool) = ready(&direct, "echo").await?;
    sessions.push(session);
    targets.push(("direct", direct, echo(tool)));
    if let Some(bin) = &mcp_proxy {
        let dir = base.path().join("mcp-proxy");
        std::fs::create_dir_all(&dir)?;
        let (child, url) = start_mcp_proxy(bin, &dir, &script).await?;
        children.push(child);
        let kind = TargetKind::Http { url, token: None, version_header: PROTOCOL };
        let (session, tool) = ready(&kind, "echo").await?;
        sessions.push(session);
        targets.push(("mcp_proxy", kind, echo(tool)));
    }
    {
        let dir = base.path().join("portcullis-single");
        std::fs::create_dir_all(&dir)?;
        let (child, url, token) = start_portcullis(
            &portcullis,
            &dir,
            &script,
            &["mcp:everything:echo"],
            &["--single-upstream", "everything", "--max-sessions", "200"],
        )
        .await?;
        children.push(child);
        let kind =
            TargetKind::Http { url: url.clone(), token: Some(token.clone()), version_header: PROTOCOL };
        let (session, tool) = ready(&kind, "echo").await?;
        sessions.push(session);
        targets.push(("portcullis_single_upstream", kind, echo(tool)));
        // The same hub, its fast lane bypassed: every request through rmcp's session worker (as before).
        let kind = TargetKind::Http { url, token: Some(token), version_header: OTHER_VERSION };
        let (session, tool) = ready(&kind, "echo").await?;
        sessions.push(session);
        targets.push(("portcullis_single_upstream_via_rmcp", kind, echo(tool)));
    }
    {
        let dir = base.path().join("portcullis-builtin");
        std::fs::create_dir_all(&dir)?;
        let (child, url, token) = start_portcullis(&portcullis, &dir, &script, &["read"], &[]).await?;
        children.push(child);
        let kind = TargetKind::Http { url, token: Some(token), version_header: PROTOCOL };
        let (session, tool) = ready(&kind, "read").await?;
        sessions.push(session);
        let call = Call { tool, arguments: json!({"path": "note.txt"}), expect: MESSAGE.to_owned() };
        targets.push(("portcullis_builtin_read", kind, call));
    }
    let mut targets: Vec<Target> = targets
        .into_iter()
        .map(|(name, kind, call)| Target {
            name,
            kind,
            call,
            latencies: Vec::new(),
            pings: Vec::new(),
            throughput: Vec::new(),
            concurrent_latencies: Vec::new(),
            pool: Vec::new(),
        })
        .collect();
    // Warm-up: a tenth of a round on each.
    for (target, session) in targets.iter_mut().zip(sessions.iter_mut()) {
        for _ in 0..(n / 10).max(20) {
            session.call(&target.call).await?;
            session.ping().await?;
        }
    }
    for r in 0..rounds {
        for (target, session) in targets.iter_mut().zip(sessions.iter_mut()) {
            if only.as_ref().is_some_and(|only| !only.iter().any(|o| o == target.name)) {
                continue;
            }
            round(target, session, n, concurrent_only)
                .await
                .map_err(|e| format!("{} (round {r}): {e}", target.name))?;
        }
        eprintln!("round {} of {rounds} done", r + 1);
    }
    let mut summary = serde_json::Map::new();
    let mut echo_p50 = std::collections::BTreeMap::new();
    let mut ping_p50 = std::collections::BTreeMap::new();
    let mut rate = std::collections::BTreeMap::new();
    for target in &mut targets {
        let p50 = percentile_us(&mut target.latencies, 50.0);
        let ping = percentile_us(&mut target.pings, 50.0);
        let throughput = median(&target.throughput);
        echo_p50.insert(target.name, p50);
        ping_p50.insert(target.name, ping);
        rate.insert(target.name, throughput);
        emit(json!({
            "bench": "peers",
            "target": target.name,
            "tool": target.call.tool,
            "calls": target.latencies.len(),
            "call_p50_us": p50,
            "call_p90_us": percentile_us(&mut target.latencies, 90.0),
            "call_p99_us": percentile_us(&mut target.latencies, 99.0),
            "ping_p50_us": ping,
            "ping_p90_us": percentile_us(&mut target.pings, 90.0),
            "clients_32_calls_per_s": throughput,
            "clients_32_rounds": target.throughput.iter().map(|t| t.round()).collect::<Vec<_>>(),
            "clients_32_p50_us": percentile_us(&mut target.concurrent_latencies, 50.0),
        }));
    }
    let direct = echo_p50.get("direct").copied().unwrap_or(0.0);
    for (name, p50) in &echo_p50 {
        if *name != "direct" {
            summary.insert(format!("{name}_added_p50_us"), json!(((p50 - direct) * 10.0).round() / 10.0));
        }
    }
    if let (Some(ours), Some(theirs)) =
        (echo_p50.get("portcullis_single_upstream"), echo_p50.get("mcp_proxy"))
    {
        summary.insert(
            "added_vs_mcp_proxy".into(),
            json!(((ours - direct) / (theirs - direct) * 100.0).round() / 100.0),
        );
    }
    if let (Some(ours), Some(theirs)) = (rate.get("portcullis_single_upstream"), rate.get("mcp_proxy")) {
        summary.insert(
            "clients_32_throughput_vs_mcp_proxy".into(),
            json!((ours / theirs * 100.0).round() / 100.0),
        );
    }
    if let Some(ours) = ping_p50.get("portcullis_single_upstream") {
        summary.insert("ping_vs_direct".into(), json!((ours / ping_p50["direct"] * 100.0).round() / 100.0));
    }
    summary.insert("bench".into(), json!("peers_summary"));
    summary.insert("rounds".into(), json!(rounds));
    emit(Value::Object(summary));
    drop(children);
    Ok(())
}

fn main() -> BenchResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run())
}
