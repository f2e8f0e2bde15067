//! The running hub: one dispatcher (coding tools, the live policy, the approval broker, the SQLite
//! ledger) served to agents through the MCP gateway, with the operator's HTTP API beside it.

use crate::broker::ApprovalBroker;
use crate::config::{Credentials, RuntimeInfo};
use crate::error::HubError;
use crate::manifest::load_manifests;
use crate::pipeline::{APPROVAL_BACKSTOP, Pipeline, builtin_registry, builtin_tools_confined};
use crate::upstreams::Upstreams;
use portcullis_coding::Limits;
use portcullis_harness::{
    Dispatcher, Grants, Redactor, RunContext, Timestamp, ToolCall, ToolCallResult, ToolRegistry, ToolSpec,
};
use portcullis_ledger::{SessionInfo, SqliteLedger};
use portcullis_policy::discovery::layers_for_user;
use portcullis_policy::{LivePolicy, Policy};
use serde_json::Value;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::effect_calls::{EffectStage, KeyedCall};
use crate::hub_config::{HubConfig, policy_of_layers, undo_store_of};
pub use crate::state::{HubEvent, HubState, OpenSession};

/// Values of environment variables that hold secrets (the table is `crate::secrets::SECRET_NAMES`).
pub use crate::secrets::environment_secrets;

/// A handle on the running hub (cheap to clone).
#[derive(Clone)]
pub struct Hub {
    pub state: Arc<HubState>,
}

/// The coding tools' bounds a policy sets (its image bounds).
pub fn coding_limits(policy: &Policy) -> Limits {
    let images = policy.image_bounds();
    Limits {
        image_bytes: images.max_bytes,
        image_max_dimension: Some(images.max_dimension),
        ..Limits::default()
    }
}

/// The policy for the project: the files named, else those discovered, else the built-in default. Its
/// protected places include this hub's own: its ledger (and the SQLite files beside it), its config
/// folder (tokens, runtime file) and the manifest folders it was given.
pub fn load_policy(config: &HubConfig, project: &Path) -> Result<(Policy, Vec<String>), HubError> {
    let layers = layers_for_user(&config.policy_files, project, config.user_config().as_deref())?;
    policy_of_layers(config, layers)
}

impl Hub {
    /// Loads the policy, opens the ledger and builds the dispatcher. Nothing listens yet.
    pub async fn open(mut config: HubConfig) -> Result<Hub, HubError> {
        // Read once: a reload judges by the team ledger the hub started with.
        config.team_ledger = match config.team_ledger()? {
            Some(setting) => crate::team_ledger::TeamLedgerChoice::Named(setting),
            None => crate::team_ledger::TeamLedgerChoice::Off,
        };
        let project = std::fs::canonicalize(&config.project)
            .map_err(|e| HubError::Config(format!("project folder {}: {e}", config.project.display())))?;
        let (policy, sources) = load_policy(&config, &project)?;
        let timeout = Duration::from_secs(policy.approval_timeout_seconds());
        let limits = coding_limits(&policy);
        let servers = policy.servers().to_vec();
        let support = crate::sandboxing::probe(config.sandbox_launcher.as_ref()).await;
        let mut live = LivePolicy::new(policy, project.clone()).with_sandbox_support(support);
        if let Some(home) = &config.home {
            live = live.with_home(Some(home.clone()));
        }
        let live = Arc::new(live);
        // Made here, before the redactor, so both tokens are secrets it knows from the first call on.
        let credentials = match config.user_config() {
            Some(dir) => Some(
                Credentials::load_or_create(&dir)
                    .map_err(|e| HubError::Config(format!("credentials in {}: {e}", dir.display())))?,
            ),
            None => None,
        };
        let own_tokens = credentials.iter().flat_map(|c| {
            [c.agent.clone(), c.operator.clone()]
                .into_iter()
                .chain(c.named_agents.iter().map(|(_, token)| token.clone()))
                .collect::<Vec<_>>()
        });
        let team_sink = crate::team_ledger::sink_of(config.team_ledger()?.as_ref())?;
        let team_password = team_sink.as_ref().and_then(|s| s.db().password().map(str::to_owned));
        let redactor = Redactor::builder()
            .secrets(
                (config.secrets.iter().cloned())
                    .chain(environment_secrets())
                    .chain(own_tokens)
                    .chain(team_password),
            )
            .build();
        if let Some(parent) = config.db.parent().filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
            // A folder made for the ledger is the owner's alone (the ledger holds what agents did).
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| HubError::Config(format!("ledger folder {}: {e}", parent.display())))?;
        }
        // The key that signs the ledger's checkpoints, beside the tokens (no config folder: unsigned,
        // and `ledger verify` says so).
        let ledger_key = match config.user_config() {
            Some(dir) => Some(Arc::new(
                crate::config::load_or_create_ledger_key(&dir)
                    .map_err(|e| HubError::Config(format!("the ledger key: {e}")))?,
            )),
            None => None,
        };
        let ledger = Arc::new(SqliteLedger::open_signed(
            &config.db,
            portcullis_ledger::LedgerOptions::default(),
            ledger_key,
        )?);
        if let Some(dir) = config.user_config() {
            crate::config::keep_ledger_witness(&dir, &config.db);
        }
        // The pinned upstream tool definitions: a hub that cannot read them does not start (it would
        // pin whatever servers offer now, and a change made while it was down would pass unseen).
        let pins = portcullis_ledger::LedgerReader::open(&config.db).and_then(|reader| reader.tool_pins())?;
        let pins = crate::pins::ToolPins::load(pins);
        // The claimed effects, likewise: a hub that forgot them would run a retried effect again.
        let now = Timestamp::now();
        let effects =
            portcullis_ledger::LedgerReader::open(&config.db).and_then(|reader| reader.live_effects(now))?;
        let effects = crate::effects::EffectBook::load(effects, config.effect_window, now);
        let broker = ApprovalBroker::new(live.clone(), timeout, config.user_config())
            .with_redactor(redactor.clone())
            .with_ledger(ledger.clone());
        let broker = Arc::new(if config.unattended { broker.unattended() } else { broker });
        let (workspace, mut registry) = builtin_tools_confined(
            &project,
            limits,
            config.sandbox_launcher.clone(),
            Some(undo_store_of(&config.db)),
        )
        .map_err(HubError::Config)?;
        let manifests =
            load_manifests(&config.manifest_folders(&project), &project, config.sandbox_launcher.as_ref())
                .map_err(|e| HubError::Config(format!("tool manifest {e}")))?;
        for tool in &manifests {
            registry.register(tool.clone()).map_err(|e| HubError::Config(format!("tool manifest: {e}")))?;
        }
        let shutdown = CancellationToken::new();
        let (rebuild_tx, rebuild_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let relay = Arc::new(crate::relay::HubRelay::default());
        let host = portcullis_mcp::upstream::UpstreamHost {
            notices: broadcast::channel(256).0,
            routes: portcullis_mcp::client_side::AgentRoutes::default(),
            relay: Some(relay.clone()),
        };
        let upstreams = Upstreams::new(
            Arc::new(move |_id: &str| {
                let _ = rebuild_tx.send(());
            }),
            shutdown.clone(),
            host,
        );
        let dispatcher = Pipeline {
            policy: live.clone(),
            approvals: broker.clone(),
            // The broker answers timeouts itself; the harness bound is a backstop.
            approval_bound: timeout + APPROVAL_BACKSTOP,
            redactor,
            ledger: Some(ledger.clone()),
        }
        .assemble(registry);
        let mut sinks = config.record_sinks.clone();
        sinks.0.extend(team_sink.map(|s| s as Arc<dyn crate::record_sinks::RecordSink>));
        let otlp_sink = crate::otel_export::sink_of(config.otlp.as_ref(), &config.db);
        sinks.0.extend(otlp_sink.map(|s| s as Arc<dyn crate::record_sinks::RecordSink>));
        let tail = crate::record_sinks::RunningTail::start(&config.db, &sinks)?;
        let console_codes = Arc::new(crate::console_logins::LoginCodes::new(config.console.code_ttl));
        tracing::info!(project = %project.display(), policies = ?sources, db = %config.db.display(), "hub opened");
        let hub = Hub {
            state: Arc::new(HubState {
                config,
                project,
                dispatcher,
                live,
                broker,
                ledger,
                sources: RwLock::new(sources),
                tools_changed: watch::channel(0).0,
                offered: std::sync::atomic::AtomicU64::new(0),
                events: broadcast::channel(256).0,
                sessions: AtomicU64::new(0),
                open_sessions: std::sync::Mutex::new(std::collections::BTreeMap::new()),
                calls_in_flight: AtomicU64::new(0),
                shutdown,
                workspace,
                upstreams,
                pins,
                manifests: RwLock::new(manifests),
                credentials,
                served_at: std::sync::OnceLock::new(),
                served_scheme: std::sync::OnceLock::new(),
                tail: std::sync::Mutex::new(tail),
                console_codes,
                effects,
                projects: crate::projects::ProjectPolicies::default(),
                hook_runs: Arc::new(crate::hook_run::HookRuns::default()),
            }),
        };
        relay.attach(Box::new(RelayTarget(Arc::downgrade(&hub.state))));
        hub.rebuild_on_change(rebuild_rx);
        hub.state.upstreams.sync(&servers);
        Ok(hub)
    }

    /// Rebuilds the registry (coding tools, then every upstream tool) when servers change.
    fn rebuild_on_change(&self, mut changes: tokio::sync::mpsc::UnboundedReceiver<()>) {
        let hub = self.clone();
        tokio::spawn(async move {
            while changes.recv().await.is_some() {
                // Settle: one rebuild for a burst of changes.
                while let Ok(Some(())) = tokio::time::timeout(Duration::from_millis(30), changes.recv()).await
                {
                }
                if hub.state.shutdown.is_cancelled() {
                    break;
                }
                hub.rebuild_registry();
            }
        });
    }

    pub fn rebuild_registry(&self) {
        let mut registry = builtin_registry(&self.state.workspace).unwrap_or_else(|e| {
            tracing::error!(error = %e, "built-in tools not registered");
            ToolRegistry::new()
        });
        let manifests = self.state.manifests.read().map(|m| m.clone()).unwrap_or_default();
        // What agents would call each tool: a tool whose name agents would see as another's is refused.
        let mut wire_names: std::collections::HashMap<String, String> =
            registry.names().map(|n| (portcullis_mcp::wire::wire_name(n), n.to_owned())).collect();
        let mut pin_events = Vec::new();
        for tool in manifests.into_iter().chain(self.state.upstreams.tools()) {
            let name = tool.spec().name.clone();
            if registry.contains(&name) {
                tracing::error!(tool = %name, "two tools have the same name; the later one is left out");
                continue;
            }
            let wire = portcullis_mcp::wire::wire_name(&name);
            if let Some(other) = wire_names.get(&wire) {
                tracing::error!(tool = %name, agents_see = %wire, taken_by = %other, "a tool is refused: agents would see it under the name of another tool");
                continue;
            }
            let tool = match self.state.pins.check(tool.spec()) {
                crate::pins::Verdict::Serve(event) => {
                    pin_events.extend(event);
                    tool
                }
                crate::pins::Verdict::Hold(event) => {
                    pin_events.extend(event);
                    if !crate::pins::prompts_when_changed(&self.state.live.current(), tool.spec()) {
                        continue;
                    }
                    Arc::new(crate::pins::ChangedTool(tool))
                }
            };
            wire_names.insert(wire, name.clone());
            if let Err(e) = registry.register(tool) {
                tracing::error!(tool = %name, error = %e, "upstream tool not registered");
            }
        }
        if !pin_events.is_empty() {
            let ledger = self.state.ledger.clone();
            tokio::spawn(async move {
                for event in pin_events {
                    if let Err(e) = ledger.record_tool_pin(event).await {
                        tracing::error!(error = %e, "a tool definition event was not recorded");
                    }
                }
            });
        }
        let before: Vec<ToolSpec> = self.state.dispatcher.registry().specs().cloned().collect();
        let after: Vec<ToolSpec> = registry.specs().cloned().collect();
        self.state.dispatcher.replace_registry(registry);
        // A server's prompts and resources are not registry tools: their lists are compared apart.
        let offered = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            for (server, offerings) in self.state.upstreams.offerings() {
                (server, offerings.listed_digest()).hash(&mut hasher);
            }
            hasher.finish()
        };
        let offered_before = self.state.offered.swap(offered, std::sync::atomic::Ordering::Relaxed);
        if before != after || offered != offered_before {
            self.state.tools_changed.send_modify(|v| *v += 1);
        }
        let _ = self
            .state
            .events
            .send(HubEvent::Upstreams { servers: crate::server_reports::servers_of(&self.state.upstreams) });
    }

    /// The approval broker. Front ends answer through `portcullis_api::OperatorApi`; this is for tests of
    /// the broker itself and for embedding.
    pub fn broker(&self) -> &Arc<ApprovalBroker> {
        &self.state.broker
    }

    /// The policy in force (tests of hot reload read it).
    pub fn live_policy(&self) -> &Arc<LivePolicy> {
        &self.state.live
    }

    pub fn dispatcher(&self) -> &Dispatcher {
        &self.state.dispatcher
    }

    /// The ledger file the hub writes.
    pub fn ledger_path(&self) -> &Path {
        &self.state.config.db
    }

    pub fn project(&self) -> &Path {
        &self.state.project
    }

    /// The user's config folder this hub uses (its policy, tools, credentials).
    pub fn user_config(&self) -> Option<PathBuf> {
        self.state.config.user_config()
    }

    /// The policy files named at start (`--policy`); empty when the hub finds its own.
    pub fn named_policy_files(&self) -> &[PathBuf] {
        &self.state.config.policy_files
    }

    pub fn policy_sources(&self) -> Vec<String> {
        self.state.sources.read().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<HubEvent> {
        self.state.events.subscribe()
    }

    pub fn shutdown_token(&self) -> CancellationToken {
        self.state.shutdown.clone()
    }

    /// The grants of the policy in force.
    pub fn grants(&self) -> Arc<Grants> {
        self.state.live.current().grants().clone()
    }

    /// Re-reads the tool manifests; a broken one leaves the previous set in force.
    pub fn reload_manifests(&self) -> Result<(), HubError> {
        let dirs = self.state.config.manifest_folders(&self.state.project);
        match load_manifests(&dirs, &self.state.project, self.state.config.sandbox_launcher.as_ref()) {
            Ok(tools) => {
                if let Ok(mut m) = self.state.manifests.write() {
                    *m = tools;
                }
                self.rebuild_registry();
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "the changed tool manifest was rejected; the previous ones stay in force");
                let _ = self.state.events.send(HubEvent::ManifestRejected { message: e.to_string() });
                Err(HubError::Config(format!("tool manifest {e}")))
            }
        }
    }

    /// The manifest folders watched for changes.
    pub fn manifest_folders(&self) -> Vec<PathBuf> {
        self.state.config.manifest_folders(&self.state.project)
    }

    /// Re-reads the policy files; a policy that does not load leaves the previous one in force.
    pub fn reload(&self) -> Result<(), HubError> {
        match load_policy(&self.state.config, &self.state.project) {
            Ok((policy, sources)) => {
                let servers = policy.servers().to_vec();
                let timeout = Duration::from_secs(policy.approval_timeout_seconds());
                self.state.live.replace(policy);
                self.state.broker.configure(timeout);
                if let Ok(mut s) = self.state.sources.write() {
                    *s = sources.clone();
                }
                self.state.tools_changed.send_modify(|v| *v += 1);
                self.state.upstreams.sync(&servers);
                tracing::info!(?sources, "policy reloaded");
                let _ = self.state.events.send(HubEvent::PolicyReloaded { sources });
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "the changed policy was rejected; the previous one stays in force");
                let _ = self
                    .state
                    .events
                    .send(HubEvent::PolicyRejected { code: e.code().into(), message: e.to_string() });
                Err(e)
            }
        }
    }

    /// The tools agents may see now.
    pub fn visible_tools(&self) -> Vec<ToolSpec> {
        let grants = self.grants();
        self.state.dispatcher.registry().specs().filter(|s| grants.permits(&s.name)).cloned().collect()
    }

    /// Runs one call for a session through the pipeline.
    pub async fn call(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        owner: &str,
        cancel: CancellationToken,
    ) -> ToolCallResult {
        self.call_requested(session_id, call_id, tool, arguments, owner, cancel, None).await
    }

    /// [`Hub::call`] of a call an agent's MCP request carried: `request` is kept with its records.
    #[allow(clippy::too_many_arguments)] // `call`'s parts and the request
    pub async fn call_requested(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        owner: &str,
        cancel: CancellationToken,
        request: Option<Arc<portcullis_harness::McpRequest>>,
    ) -> ToolCallResult {
        let stage = EffectStage::new(&self.state);
        let request = request.map(|r| stage.with_declared_key(r, tool, &arguments));
        if let Some(request) = request.clone()
            && let Some(key) = request.idempotency_key.clone()
        {
            let call = KeyedCall { session_id, call_id, tool, arguments, owner, cancel, request, key };
            // The idempotency stage first: the pipeline runs only for the call that claims the key.
            return stage
                .run(call, |c| {
                    self.call_requested_now(
                        c.session_id,
                        c.call_id,
                        c.tool,
                        c.arguments,
                        c.owner,
                        c.cancel,
                        Some(c.request),
                    )
                })
                .await;
        }
        self.call_requested_now(session_id, call_id, tool, arguments, owner, cancel, request).await
    }

    /// Runs an agent's call through the pipeline now (a call with an idempotency key, once claimed).
    #[allow(clippy::too_many_arguments)] // the call's parts, and how it is run
    pub async fn call_requested_now(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        owner: &str,
        cancel: CancellationToken,
        request: Option<Arc<portcullis_harness::McpRequest>>,
    ) -> ToolCallResult {
        self.count_call(session_id);
        let mut run = self.mcp_run(session_id, owner).with_mcp(request);
        run.grants = self.grants();
        run.cancel = cancel;
        // Counted until the call ends, however it ends (the caller may drop this future).
        let _in_flight = InFlight::enter(&self.state.calls_in_flight);
        self.state.dispatcher.dispatch(ToolCall::new(call_id.to_owned(), tool, arguments), &run).await
    }

    /// One more call for an open session (the connections view shows how many).
    fn count_call(&self, session_id: &str) {
        let mut open = self.state.open_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(session) = open.get_mut(session_id) {
            session.calls += 1;
        }
    }

    /// The run of an agent's MCP call: its session, its owner, the project as working folder.
    pub fn mcp_run(&self, session_id: &str, owner: &str) -> RunContext {
        self.state.mcp_run(session_id, owner)
    }

    /// The idempotency stage: its book of claimed keys, and an operator's decision on an unknown outcome.
    pub fn effects(&self) -> EffectStage<'_> {
        EffectStage::new(&self.state)
    }

    /// Records a call whose request was malformed (see [`GatewayBackend::refuse_malformed`]).
    pub async fn refuse_malformed(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        owner: &str,
        message: String,
    ) -> ToolCallResult {
        self.count_call(session_id);
        let run = self.mcp_run(session_id, owner);
        self.state
            .dispatcher
            .refuse_malformed(ToolCall::new(call_id.to_owned(), tool, arguments), &run, message)
            .await
    }

    /// The hub's tokens, when it has a config folder.
    pub fn credentials(&self) -> Option<&Credentials> {
        self.state.credentials.as_ref()
    }

    /// Opens a ledger session for a client that calls in-process (a front end's own, a test's).
    pub async fn open_session(&self, client: &str, version: &str) -> String {
        self.open_session_over(client, version, "in-process").await
    }

    /// Opens a ledger session for a client connected over `transport` (`http`, `stdio`).
    pub async fn open_session_over(&self, client: &str, version: &str, transport: &str) -> String {
        self.open_session_linked(client, version, transport, None, None).await
    }

    /// [`Hub::open_session_over`] under the agent's own session id when it names one (Claude Code's,
    /// through the stdio relay) that no open connection holds already: its calls and the same session's
    /// hook calls are then one ledger session. `project`: the folder the agent says it works in (the
    /// session's recorded folder; else the hub's project).
    pub async fn open_session_linked(
        &self,
        client: &str,
        version: &str,
        transport: &str,
        linked: Option<String>,
        project: Option<String>,
    ) -> String {
        let n = self.state.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let taken = |id: &String| {
            self.state
                .open_sessions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains_key(id)
        };
        let id = linked.filter(|id| !taken(id)).unwrap_or_else(|| format!("s{:x}-{n}", Timestamp::now().0));
        let info_started = Timestamp::now();
        let info = SessionInfo {
            id: id.clone(),
            client_name: Some(client.to_owned()),
            client_version: Some(version.to_owned()),
            cwd: Some(project.unwrap_or_else(|| self.state.project.display().to_string())),
            policy_hash: Some(self.live_policy().current().version().to_string()),
            started_at: info_started,
            ended_at: None,
        };
        if let Err(e) = self.state.ledger.begin_session(info).await {
            tracing::error!(error = %e, session = %id, "session not recorded");
        }
        let open = OpenSession {
            client: client.to_owned(),
            version: version.to_owned(),
            transport: transport.to_owned(),
            opened_at: info_started,
            calls: 0,
        };
        self.state
            .open_sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id.clone(), open);
        let _ = self.state.events.send(HubEvent::SessionOpened {
            session_id: id.clone(),
            client: client.to_owned(),
            version: version.to_owned(),
        });
        id
    }

    pub async fn close_session(&self, session_id: String) {
        self.state
            .open_sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&session_id);
        if let Err(e) = self.state.ledger.end_session(&session_id, Timestamp::now()).await {
            tracing::warn!(error = %e, session = %session_id, "session end not recorded");
        }
        let _ = self.state.events.send(HubEvent::SessionClosed { session_id });
    }

    /// Stops: lets calls in flight finish within the grace period, then flushes and closes the ledger.
    pub async fn close(&self) -> Result<(), HubError> {
        self.state.shutdown.cancel();
        let deadline = tokio::time::Instant::now() + self.state.config.shutdown_grace;
        while self.state.calls_in_flight.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let left = self.state.calls_in_flight.load(Ordering::SeqCst);
        if left > 0 {
            tracing::warn!(calls = left, "calls still running at shutdown are recorded as interrupted");
        }
        if let Some(dir) = self.state.config.user_config() {
            RuntimeInfo::remove(&dir);
        }
        // Clients that never closed their session (no DELETE) are ended with the hub.
        let open: Vec<String> = std::mem::take(
            &mut *self.state.open_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_keys()
        .collect();
        for session_id in open {
            self.close_session(session_id).await;
        }
        self.state.ledger.close().await?;
        if let Some(dir) = self.state.config.user_config() {
            crate::config::keep_ledger_witness(&dir, &self.state.config.db);
        }
        let tail = self.state.tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(tail) = tail {
            tail.finish().await;
        }
        Ok(())
    }
}

/// One call counted in flight while it lives.
struct InFlight<'a>(&'a AtomicU64);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The hub as its relay sees it: held weakly (the hub holds the relay through its upstream servers).
struct RelayTarget(std::sync::Weak<HubState>);

#[async_trait::async_trait]
impl crate::relay::RelayedCalls for RelayTarget {
    fn routes(&self) -> Option<portcullis_mcp::client_side::AgentRoutes> {
        Some(self.0.upgrade()?.upstreams.routes())
    }

    async fn call(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        params: Value,
        owner: &str,
    ) -> Option<ToolCallResult> {
        let hub = Hub { state: self.0.upgrade()? };
        Some(hub.call(session_id, call_id, tool, params, owner, CancellationToken::new()).await)
    }
}
