//! The bridge to upstream MCP servers. Each server is supervised: connected (a child process over stdio,
//! or Streamable HTTP), its tools listed within bounds and registered as `mcp:<server>:<tool>` tools that
//! pass the same pipeline as any other; refreshed on `tools/list_changed`; and reconnected with backoff
//! when it dies. While a server is down its tools stay listed and calls fail fast with a bounded error.
//! An operator can restart a server now ([`Upstream::restart`]); what operators see of it beyond its
//! status (restarts, last error, stderr tail) is in [`report`].

mod client;
mod listening;
mod offerings;
mod report;
mod request;
mod rounds;

pub use offerings::Offerings;
pub use report::{STDERR_LINE_BYTES, STDERR_TAIL_LINES, UpstreamFailure, UpstreamReport};

use crate::client_side::{AgentRoutes, CallOrigin, ClientRelay};
use crate::convert::{annotations_of, output_of};
use async_trait::async_trait;
use client::UpstreamClient;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, CallContext, ExecutionAction, MCP_READ, ProgressReporter, Risk, Timestamp, Tool, ToolError,
    ToolInvocation, ToolOutput, ToolSpec, validate_tool_name,
};
use report::{SharedStderrTail, StderrTail};
use request::Reach;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, JsonObject, PaginatedRequestParams, ProgressToken,
    ServerResult,
};
use rmcp::service::ClientServiceExt;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, Peer, RoleClient};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamTransport {
    /// A program spoken to over stdin/stdout; it gets exactly `env` (no inherited environment).
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)>, cwd: PathBuf },
    /// Streamable HTTP with these headers (values already taken from the environment).
    Http { url: String, headers: Vec<(String, String)> },
}

/// Bounds on one server (already capped by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamLimits {
    pub call_timeout: Duration,
    pub result_bytes: usize,
    pub max_tools: usize,
    pub schema_bytes: usize,
    pub description_bytes: usize,
    pub list_pages: usize,
    /// Time allowed to connect and list tools.
    pub connect_timeout: Duration,
}

impl Default for UpstreamLimits {
    fn default() -> Self {
        UpstreamLimits {
            call_timeout: Duration::from_secs(60),
            result_bytes: 10_000_000,
            max_tools: 500,
            schema_bytes: 256 * 1024,
            description_bytes: 16 * 1024,
            list_pages: 20,
            connect_timeout: Duration::from_secs(30),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSpec {
    pub id: String,
    pub transport: UpstreamTransport,
    pub limits: UpstreamLimits,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum UpstreamStatus {
    Connecting,
    Ready {
        tools: usize,
        /// Tools left out, with why (invalid name, schema too large, over the tool limit).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<String>,
    },
    /// Down; reconnecting after `retry_in_ms`.
    Failed {
        error: String,
        failures: u32,
        retry_in_ms: u64,
    },
    Stopped,
}

struct State {
    tools: Vec<Arc<dyn Tool>>,
    offerings: Offerings,
    status: Option<UpstreamStatus>,
    /// When `status` last changed its kind (see [`UpstreamReport::since`]).
    since: Timestamp,
    restarts: u64,
    last_error: Option<UpstreamFailure>,
}

/// Called with the server id whenever its tools or status change.
pub type OnChange = Arc<dyn Fn(&str) + Send + Sync>;

/// One supervised upstream server.
pub struct Upstream {
    spec: UpstreamSpec,
    state: RwLock<State>,
    on_change: OnChange,
    progress: ProgressRoutes,
    live: LivePeer,
    /// An operator's restart, waiting for the supervisor (at most one is kept).
    restart: Notify,
    stderr: SharedStderrTail,
    host: UpstreamHost,
    origins: Origins,
    /// The log level agents last asked for, sent in each request's `_meta` to a 2026-07-28 server
    /// (that revision has no `logging/setLevel`).
    log_level: request::LogLevel,
}

/// What a hub gives its upstream servers: where their notices go, the agents' routes, and who relays
/// their requests to agents (none: such requests are refused).
#[derive(Clone)]
pub struct UpstreamHost {
    pub notices: broadcast::Sender<UpstreamNotice>,
    pub routes: AgentRoutes,
    pub relay: Option<Arc<dyn ClientRelay>>,
}

impl UpstreamHost {
    /// Notices to nobody, no relay.
    pub fn detached() -> Self {
        UpstreamHost {
            notices: broadcast::channel(NOTICES_KEPT).0,
            routes: AgentRoutes::default(),
            relay: None,
        }
    }
}

/// Requests in flight to a server that serve a call: upstream request id → the call.
type Origins = Arc<std::sync::Mutex<HashMap<rmcp::model::RequestId, CallOrigin>>>;

/// A notification of an upstream server that agents may want: a resource changed, a log message.
#[derive(Debug, Clone)]
pub enum UpstreamNotice {
    ResourceUpdated {
        server: String,
        uri: String,
    },
    /// `notifications/message` params as the server sent them (`level`, `logger`, `data`).
    Log {
        server: String,
        message: serde_json::Value,
    },
}

/// Ends a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Notices kept for a slow listener before the oldest are dropped.
const NOTICES_KEPT: usize = 256;

/// How a live connection ended.
enum Ended {
    /// The hub shuts down (or stops this server).
    Shutdown,
    /// An operator asked for a restart.
    Restart,
    /// The server went away or misbehaved.
    Lost(String),
}

/// The live connection's peer, if any: a server's tools call through it, so that after a reconnect
/// the tools still in the registry reach the new connection before the registry is rebuilt.
type LivePeer = Arc<RwLock<Option<Peer<RoleClient>>>>;

/// Calls in flight that want the server's progress: upstream progress token → the call's reporter.
type ProgressRoutes = Arc<std::sync::Mutex<HashMap<ProgressToken, ProgressTarget>>>;

/// Where a request's progress goes, and how many of its progress notifications were handled.
#[derive(Clone)]
struct ProgressTarget {
    reporter: ProgressReporter,
    handled: Arc<std::sync::atomic::AtomicU64>,
}

type Connection = RunningService<RoleClient, UpstreamClient>;

/// How long a restarted connection may take to close before its task is dropped.
const RESTART_CLOSE: Duration = Duration::from_secs(5);

fn backoff(failures: u32) -> Duration {
    Duration::from_millis((500u64 << failures.min(7)).min(60_000))
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The registry spec of a tool an upstream server listed (`mcp:<server>:<tool>`, its input schema,
/// its description cut to the limit, its hints), or why it is left out: a name the registry refuses, or
/// an input schema over the limit.
pub fn spec_of_listed(
    server: &str,
    tool: &rmcp::model::Tool,
    limits: &UpstreamLimits,
) -> Result<ToolSpec, String> {
    let name = format!("mcp:{server}:{}", tool.name);
    validate_tool_name(&name).map_err(|e| format!("{}: {e}", tool.name))?;
    let schema = Value::Object((*tool.input_schema).clone());
    let schema_bytes = serde_json::to_vec(&schema).map(|v| v.len()).unwrap_or(usize::MAX);
    if schema_bytes > limits.schema_bytes {
        return Err(format!(
            "{}: input schema of {schema_bytes} bytes (limit {})",
            tool.name, limits.schema_bytes
        ));
    }
    let description = cut(tool.description.as_deref().unwrap_or_default(), limits.description_bytes);
    let spec =
        ToolSpec::new(name, description).with_parameters(schema).with_annotations(annotations_of(tool));
    Ok(ToolSpec { meta: Some(serde_json::json!({ "server": server, "upstream_name": tool.name })), ..spec })
}

impl Upstream {
    /// Starts supervising; `on_change` runs after every change of tools or status.
    pub fn start(spec: UpstreamSpec, on_change: OnChange, shutdown: CancellationToken) -> Arc<Upstream> {
        Upstream::start_in(spec, on_change, shutdown, UpstreamHost::detached())
    }

    /// [`Upstream::start`] for a host that takes its notices and relays its requests to agents.
    pub fn start_in(
        spec: UpstreamSpec,
        on_change: OnChange,
        shutdown: CancellationToken,
        host: UpstreamHost,
    ) -> Arc<Upstream> {
        let upstream = Arc::new(Upstream {
            spec,
            state: RwLock::new(State {
                tools: Vec::new(),
                offerings: Offerings::default(),
                status: None,
                since: Timestamp::now(),
                restarts: 0,
                last_error: None,
            }),
            on_change,
            progress: ProgressRoutes::default(),
            live: LivePeer::default(),
            restart: Notify::new(),
            stderr: Arc::new(Mutex::new(StderrTail::new(STDERR_TAIL_LINES))),
            host,
            origins: Origins::default(),
            log_level: request::LogLevel::default(),
        });
        let supervised = upstream.clone();
        tokio::spawn(async move { supervised.supervise(shutdown).await });
        upstream
    }

    pub fn id(&self) -> &str {
        &self.spec.id
    }

    /// The server's tools (the last known ones while it reconnects).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.state.read().map(|s| s.tools.clone()).unwrap_or_default()
    }

    /// Its resources, templates and prompts as last listed (kept while it reconnects).
    pub fn offerings(&self) -> Offerings {
        self.state.read().map(|s| s.offerings.clone()).unwrap_or_default()
    }

    /// Its notifications from now on (resource updates, log messages).
    pub fn notices(&self) -> broadcast::Receiver<UpstreamNotice> {
        self.host.notices.subscribe()
    }

    /// Sends a request that is not a call (completion, logging level, resource subscription) on the
    /// live connection, within the server's call timeout.
    pub async fn forward(&self, request: ClientRequest) -> Result<ServerResult, ToolError> {
        let reach = self.reach();
        // 2026-07-28 has no `logging/setLevel`: the level rides in each later request's `_meta`.
        #[allow(deprecated)] // logging is deprecated in rmcp (SEP-2577), not in 2025-11-25
        if let ClientRequest::SetLevelRequest(set) = &request
            && request::live_peer(&reach).is_ok_and(|peer| request::speaks_2026(&peer))
        {
            *reach.log_level.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(set.params.level);
            return Ok(ServerResult::empty(()));
        }
        request::send(&reach, request, None, &CancellationToken::new(), None).await
    }

    /// What this server's tools and methods reach it with.
    fn reach(&self) -> Reach {
        Reach {
            server: self.spec.id.clone(),
            live: self.live.clone(),
            limits: self.spec.limits.clone(),
            progress: self.progress.clone(),
            origins: self.origins.clone(),
            relay: self.host.relay.clone(),
            log_level: self.log_level.clone(),
        }
    }

    pub fn status(&self) -> UpstreamStatus {
        self.state.read().ok().and_then(|s| s.status.clone()).unwrap_or(UpstreamStatus::Connecting)
    }

    /// Its status with since when, its restarts, last error and stderr tail.
    pub fn report(&self) -> UpstreamReport {
        let stderr_tail = self.stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner).lines();
        let state = self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        UpstreamReport {
            status: state.status.clone().unwrap_or(UpstreamStatus::Connecting),
            since: state.since,
            tools: state.tools.len(),
            restarts: state.restarts,
            last_error: state.last_error.clone(),
            stderr_tail,
        }
    }

    /// Restarts the server now: a live connection is closed (a stdio server's process group killed)
    /// and calls in flight on it fail with `upstream_unavailable`; a connection attempt under way is
    /// abandoned; a wait before the next attempt is cut short. The supervisor then connects again at
    /// once. Asking again before the supervisor took the first request changes nothing; a server
    /// that is stopped stays stopped.
    pub fn restart(&self) {
        tracing::info!(server = %self.spec.id, "restart asked");
        self.restart.notify_one();
    }

    /// New calls find no connection (and fail with `upstream_unavailable`) until the next one is ready.
    fn disconnected(&self) {
        *self.live.write().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    fn set(&self, update: impl FnOnce(&mut State)) {
        if let Ok(mut state) = self.state.write() {
            let kind = |s: &State| s.status.as_ref().map(std::mem::discriminant);
            let before = kind(&state);
            update(&mut state);
            if kind(&state) != before {
                state.since = Timestamp::now();
            }
        }
        (self.on_change)(&self.spec.id);
    }

    async fn supervise(self: Arc<Self>, shutdown: CancellationToken) {
        let mut failures: u32 = 0;
        let mut first = true;
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            let restarting = !std::mem::take(&mut first);
            self.set(|s| {
                s.status = Some(UpstreamStatus::Connecting);
                s.restarts += u64::from(restarting);
            });
            let changed = Arc::new(Notify::new());
            let connecting =
                tokio::time::timeout(self.spec.limits.connect_timeout, self.connect(changed.clone()));
            let connected = tokio::select! {
                () = shutdown.cancelled() => break,
                // Dropping the attempt drops its child (and process group) with it.
                () = self.restart.notified() => {
                    self.disconnected();
                    continue;
                }
                connected = connecting => connected,
            };
            let error = match connected {
                Ok(Ok((connection, group))) => {
                    match self.serve(connection, group, changed, &shutdown, &mut failures).await {
                        Ended::Shutdown => break,
                        Ended::Restart => {
                            self.disconnected();
                            continue;
                        }
                        Ended::Lost(error) => error,
                    }
                }
                Ok(Err(error)) => error,
                Err(_) => format!("no answer within {} s", self.spec.limits.connect_timeout.as_secs()),
            };
            failures = failures.saturating_add(1);
            let wait = backoff(failures);
            tracing::warn!(server = %self.spec.id, %error, failures, retry_in_ms = wait.as_millis() as u64, "upstream server down");
            let error = cut(&error, 2000);
            self.disconnected();
            self.set(|s| {
                s.last_error = Some(UpstreamFailure { message: error.clone(), at: Timestamp::now() });
                s.status = Some(UpstreamStatus::Failed {
                    error,
                    failures,
                    retry_in_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                });
            });
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.restart.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
        self.disconnected();
        self.set(|s| {
            s.status = Some(UpstreamStatus::Stopped);
        });
    }

    /// Serves a live connection until it ends, an operator restarts it, or the hub shuts down. A stdio
    /// server's process group lives as long as the connection; it is killed when this returns.
    async fn serve(
        &self,
        connection: Connection,
        mut group: Option<ProcessGroup>,
        changed: Arc<Notify>,
        shutdown: &CancellationToken,
        failures: &mut u32,
    ) -> Ended {
        let peer = connection.peer().clone();
        peer.set_response_cache_config(ClientCacheConfig::disabled()).await;
        tokio::select! {
            () = self.restart.notified() => return Ended::Restart,
            listed = self.refresh(&peer) => if let Err(e) = listed {
                return Ended::Lost(e);
            }
        }
        *failures = 0;
        // A 2026-07-28 server announces list changes only on a stream the client holds open.
        let _listening = request::speaks_2026(&peer).then(|| {
            AbortOnDrop(tokio::spawn(listening::hold(peer.clone(), self.spec.id.clone(), changed.clone())))
        });
        let stop = connection.cancellation_token();
        let mut ended = tokio::spawn(async move { connection.waiting().await });
        loop {
            tokio::select! {
                () = shutdown.cancelled() => {
                    stop.cancel();
                    let _ = ended.await;
                    return Ended::Shutdown;
                }
                () = self.restart.notified() => {
                    // Killed first, so the connection's close does not wait for a graceful exit.
                    drop(group.take());
                    stop.cancel();
                    if tokio::time::timeout(RESTART_CLOSE, &mut ended).await.is_err() {
                        ended.abort();
                    }
                    return Ended::Restart;
                }
                () = changed.notified() => {
                    if let Err(e) = self.refresh(&peer).await {
                        stop.cancel();
                        return Ended::Lost(format!("refreshing tools failed: {e}"));
                    }
                }
                quit = &mut ended => {
                    return Ended::Lost(match quit {
                        Ok(reason) => format!("the connection ended ({reason:?})"),
                        Err(e) => format!("the connection task failed: {e}"),
                    });
                }
            }
        }
    }

    /// Starts the stdio server and opens the connection with `lifecycle`.
    async fn connect_stdio(
        &self,
        client: UpstreamClient,
        lifecycle: rmcp::service::ClientLifecycleMode,
    ) -> Result<(Connection, Option<ProcessGroup>), String> {
        let UpstreamTransport::Stdio { command, args, env, cwd } = &self.spec.transport else {
            return Err("not a stdio server".into());
        };
        let mut cmd = tokio::process::Command::new(command);
        // Its own process group, so everything it starts (`npx` → `node`, helpers) goes with it.
        cmd.args(args)
            .env_clear()
            .envs(env.iter().cloned())
            .current_dir(cwd)
            .kill_on_drop(true)
            .process_group(0);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {command}: {e}"))?;
        let group = transport.id().map(ProcessGroup);
        if let Some(stderr) = stderr {
            tokio::spawn(report::read_stderr(stderr, self.stderr.clone(), self.spec.id.clone()));
        }
        let connection = client
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|e| format!("initialize failed: {e}"))?;
        Ok((connection, group))
    }

    /// Connects; a stdio server comes with the guard of its process group.
    async fn connect(&self, changed: Arc<Notify>) -> Result<(Connection, Option<ProcessGroup>), String> {
        let client = UpstreamClient {
            server: self.spec.id.clone(),
            changed,
            progress: self.progress.clone(),
            notices: self.host.notices.clone(),
            origins: self.origins.clone(),
            relay: self.host.relay.clone(),
        };
        match &self.spec.transport {
            UpstreamTransport::Stdio { .. } => {
                // Some servers end at any request before `initialize` (the 2026 probe): such a server is
                // started again and opened with `initialize` alone.
                match self.connect_stdio(client.clone(), client::lifecycle()).await {
                    Ok(connected) => Ok(connected),
                    Err(probed) => {
                        let legacy = rmcp::service::ClientLifecycleMode::Initialize;
                        self.connect_stdio(client, legacy)
                            .await
                            .map_err(|e| format!("{probed}; started again for 2025-11-25 alone: {e}"))
                    }
                }
            }
            UpstreamTransport::Http { url, headers } => {
                let mut map = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|e| format!("header name {name:?}: {e}"))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| format!("header {name}: invalid value: {e}"))?;
                    map.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(map);
                let connection = client
                    .serve_with_lifecycle(
                        StreamableHttpClientTransport::from_config(config),
                        client::lifecycle(),
                    )
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?;
                Ok((connection, None))
            }
        }
    }

    /// Lists the server's tools within the bounds and registers them.
    async fn refresh(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let limits = &self.spec.limits;
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        for page in 0..limits.list_pages {
            let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let result = tokio::time::timeout(limits.connect_timeout, peer.list_tools(params))
                .await
                .map_err(|_| "tools/list did not answer".to_owned())?
                .map_err(|e| format!("tools/list failed: {e}"))?;
            listed.extend(result.tools);
            match result.next_cursor {
                Some(next) if page + 1 < limits.list_pages && listed.len() < limits.max_tools => {
                    cursor = Some(next)
                }
                Some(_) => {
                    tracing::warn!(server = %self.spec.id, pages = limits.list_pages, "tools/list has more pages than read");
                    break;
                }
                None => break,
            }
        }
        let reach = self.reach();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut skipped = Vec::new();
        for tool in listed {
            if tools.len() >= limits.max_tools {
                skipped.push(format!("{}: over the limit of {} tools", tool.name, limits.max_tools));
                continue;
            }
            let spec = match spec_of_listed(&self.spec.id, &tool, limits) {
                Ok(spec) => spec,
                Err(why) => {
                    skipped.push(why);
                    continue;
                }
            };
            if tools.iter().any(|t| t.spec().name == spec.name) {
                skipped.push(format!("{}: listed twice", tool.name));
                continue;
            }
            tools.push(Arc::new(McpTool {
                spec,
                upstream_name: tool.name.to_string(),
                reach: reach.clone(),
            }));
        }
        if !skipped.is_empty() {
            tracing::warn!(server = %self.spec.id, ?skipped, "upstream tools left out");
        }
        let count = tools.len();
        let offerings = offerings::list(peer, limits).await?;
        tools.extend(offerings::method_tools(&offerings, &reach, &self.host.routes));
        *self.live.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(peer.clone());
        self.set(|s| {
            s.tools = tools;
            s.offerings = offerings;
            s.status = Some(UpstreamStatus::Ready { tools: count, skipped });
        });
        tracing::info!(server = %self.spec.id, tools = count, "upstream tools listed");
        Ok(())
    }
}

/// A stdio server's process group: killed (SIGKILL) when the connection is over, so nothing the server
/// started outlives it.
struct ProcessGroup(u32);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0) {
            let _ =
                nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// One upstream tool in the registry.
struct McpTool {
    spec: ToolSpec,
    upstream_name: String,
    reach: Reach,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, _arguments: &Value, _call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let risk = match (self.spec.annotations.read_only, self.spec.annotations.destructive) {
            (true, _) => Risk::Low,
            (_, true) => Risk::High,
            _ => Risk::Medium,
        };
        let operation = if self.spec.annotations.read_only { MCP_READ } else { "call" };
        Ok(ExecutionAction::new(ActionKind::Mcp, operation).with_risk(risk))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let origin = CallOrigin::of(&invocation.call);
        let arguments: JsonObject = match &invocation.arguments {
            Value::Object(map) => map.clone(),
            _ => JsonObject::new(),
        };
        let params = CallToolRequestParams::new(self.upstream_name.clone()).with_arguments(arguments);
        // A 2026-07-28 server asks for input by answering `InputRequiredResult`: each round's questions
        // go to the agent (judged), and the call is retried with the answers and its state untouched.
        let answer = rounds::exchange(&self.reach, &invocation, &origin, |responses, state| {
            let mut params = params.clone();
            params.input_responses = responses;
            params.request_state = state;
            Ok(ClientRequest::CallToolRequest(CallToolRequest::new(params)))
        })
        .await?;
        match answer {
            ServerResult::CallToolResult(result) => Ok(output_of(&result)),
            _ => Err(ToolError::new(
                CallErrorCode::UpstreamError,
                format!("{} answered tools/call with something else than a result", self.reach.server),
            )),
        }
    }
}
