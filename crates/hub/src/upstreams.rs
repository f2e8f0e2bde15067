//! The hub's upstream MCP servers: specs from the policy (environment-sourced headers, capped bounds),
//! one supervisor per server, kept in step with policy reloads (changed servers restarted, removed ones
//! stopped), and the registry rebuilt whenever a server's tools change; an operator's restart of one.

use crate::config::CHILD_ENV;
use portcullis_harness::Timestamp;
use portcullis_mcp::client_side::AgentRoutes;
use portcullis_mcp::upstream::{
    Offerings, Upstream, UpstreamFailure, UpstreamHost, UpstreamLimits, UpstreamNotice, UpstreamReport,
    UpstreamSpec, UpstreamStatus, UpstreamTransport,
};
use portcullis_policy::policy::ServerEntry;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn capped(value: Option<u64>, default: u64, cap: u64) -> u64 {
    value.unwrap_or(default).clamp(1, cap)
}

/// The bridge's spec for a declared server; an error names what is missing.
pub fn spec_of(entry: &ServerEntry) -> Result<UpstreamSpec, String> {
    let server = &entry.server;
    let l = &server.limits;
    let limits = UpstreamLimits {
        call_timeout: Duration::from_secs(capped(l.call_timeout_seconds, 60, 600)),
        result_bytes: usize::try_from(capped(l.result_bytes, 10_000_000, 32 * 1024 * 1024))
            .unwrap_or(usize::MAX),
        max_tools: usize::try_from(capped(l.max_tools, 500, 5000)).unwrap_or(usize::MAX),
        schema_bytes: usize::try_from(capped(l.schema_bytes, 256 * 1024, 1024 * 1024)).unwrap_or(usize::MAX),
        description_bytes: usize::try_from(capped(l.description_bytes, 16 * 1024, 64 * 1024))
            .unwrap_or(usize::MAX),
        list_pages: usize::try_from(capped(l.list_pages, 20, 100)).unwrap_or(usize::MAX),
        ..UpstreamLimits::default()
    };
    let transport = match (&server.command, &server.url) {
        (Some(command), None) => {
            let mut env: Vec<(String, String)> = CHILD_ENV
                .iter()
                .copied()
                .chain(server.pass_env.iter().map(String::as_str))
                .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_owned(), v)))
                .collect();
            env.extend(server.env.iter().map(|(k, v)| (k.clone(), v.clone())));
            UpstreamTransport::Stdio {
                command: command.clone(),
                args: server.args.clone(),
                env,
                cwd: entry.cwd.clone(),
            }
        }
        (None, Some(url)) => {
            let mut headers = Vec::new();
            for (header, variable) in &server.headers_from_env {
                let value = std::env::var(variable).map_err(|_| {
                    format!("server {:?}: header {header} needs the environment variable {variable}, which is not set", server.id)
                })?;
                headers.push((header.clone(), value));
            }
            UpstreamTransport::Http { url: url.clone(), headers }
        }
        _ => return Err(format!("server {:?}: expected exactly one of command or url", server.id)),
    };
    Ok(UpstreamSpec { id: server.id.clone(), transport, limits })
}

struct Running {
    spec: UpstreamSpec,
    stop: CancellationToken,
    upstream: Arc<Upstream>,
}

/// Servers the policy declares but that could not be specified (a missing environment variable).
struct Unstartable {
    id: String,
    why: String,
    since: Timestamp,
}

/// Why a server was not restarted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestartRefused {
    #[error("no upstream server {0:?}")]
    Unknown(String),
    /// Declared, but not started at all: restarting cannot help until the policy or environment changes.
    #[error("{why}")]
    Unstartable { id: String, why: String },
}

/// The supervised servers.
pub struct Upstreams {
    running: Mutex<Vec<Running>>,
    broken: Mutex<Vec<Unstartable>>,
    on_change: portcullis_mcp::upstream::OnChange,
    shutdown: CancellationToken,
    /// Where every server's notices go, the agents' routes, the relay of servers' requests to agents.
    host: UpstreamHost,
    /// Each server's status time when the registry last took its tools: a server that became ready
    /// after that is reported connecting until the registry holds its tools (agents would otherwise
    /// call a ready server's tool the registry does not have yet).
    registered: Mutex<std::collections::HashMap<String, Timestamp>>,
}

impl Upstreams {
    pub fn new(
        on_change: portcullis_mcp::upstream::OnChange,
        shutdown: CancellationToken,
        host: UpstreamHost,
    ) -> Self {
        Upstreams {
            running: Mutex::new(Vec::new()),
            broken: Mutex::new(Vec::new()),
            on_change,
            shutdown,
            host,
            registered: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Starts, restarts and stops servers so they match `entries`.
    pub fn sync(&self, entries: &[ServerEntry]) {
        let mut wanted = Vec::new();
        let mut broken = Vec::new();
        for entry in entries {
            match spec_of(entry) {
                Ok(spec) => wanted.push(spec),
                Err(why) => {
                    tracing::error!("{why}");
                    broken.push(Unstartable { id: entry.server.id.clone(), why, since: Timestamp::now() });
                }
            }
        }
        let mut running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        running.retain(|r| {
            let keep = wanted.contains(&r.spec);
            if !keep {
                tracing::info!(server = %r.spec.id, "stopping upstream server");
                r.stop.cancel();
            }
            keep
        });
        for spec in wanted {
            if running.iter().any(|r| r.spec == spec) {
                continue;
            }
            let stop = self.shutdown.child_token();
            tracing::info!(server = %spec.id, "starting upstream server");
            let upstream =
                Upstream::start_in(spec.clone(), self.on_change.clone(), stop.clone(), self.host.clone());
            running.push(Running { spec, stop, upstream });
        }
        drop(running);
        let mut was_broken = self.broken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A server that stays unstartable for the same reason keeps the time it became so.
        for now in &mut broken {
            if let Some(before) = was_broken.iter().find(|b| b.id == now.id && b.why == now.why) {
                now.since = before.since;
            }
        }
        *was_broken = broken;
        drop(was_broken);
        (self.on_change)("");
    }

    /// Every tool of every running server.
    pub fn tools(&self) -> Vec<Arc<dyn portcullis_harness::Tool>> {
        let running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The status each server's tools are taken at (the registry is built from them next).
        let mut registered = self.registered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        registered.clear();
        let mut tools = Vec::new();
        for r in running.iter() {
            registered.insert(r.spec.id.clone(), r.upstream.report().since);
            tools.extend(r.upstream.tools());
        }
        tools
    }

    /// What each running server offers besides tools, by id.
    pub fn offerings(&self) -> Vec<(String, Offerings)> {
        let running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        running.iter().map(|r| (r.spec.id.clone(), r.upstream.offerings())).collect()
    }

    /// A running server.
    pub fn get(&self, id: &str) -> Option<Arc<Upstream>> {
        let running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        running.iter().find(|r| r.spec.id == id).map(|r| r.upstream.clone())
    }

    /// Every server's notices from now on.
    pub fn notices(&self) -> tokio::sync::broadcast::Receiver<UpstreamNotice> {
        self.host.notices.subscribe()
    }

    /// Which agent each call in flight came from (the gateway fills it).
    pub fn routes(&self) -> AgentRoutes {
        self.host.routes.clone()
    }

    /// Every server's report (state, since when, restarts, last error, stderr tail), by id, in the
    /// order of [`Upstreams::states`].
    pub fn reports(&self) -> Vec<(String, UpstreamReport)> {
        self.reports_with_transport().into_iter().map(|(id, _, report)| (id, report)).collect()
    }

    /// [`Upstreams::reports`] with each server's transport (`None` for one that could not be specified).
    pub fn reports_with_transport(&self) -> Vec<(String, Option<UpstreamTransport>, UpstreamReport)> {
        let running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let registered = self.registered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut reports: Vec<(String, Option<UpstreamTransport>, UpstreamReport)> = running
            .iter()
            .map(|r| {
                let mut report = r.upstream.report();
                // Ready, but not yet in the registry: still connecting, as agents see it.
                let in_registry = registered.get(&r.spec.id).is_some_and(|at| *at >= report.since);
                if matches!(report.status, UpstreamStatus::Ready { .. }) && !in_registry {
                    report.status = UpstreamStatus::Connecting;
                }
                (r.spec.id.clone(), Some(r.spec.transport.clone()), report)
            })
            .collect();
        drop(registered);
        drop(running);
        let broken = self.broken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        reports.extend(broken.iter().map(|b| {
            let report = UpstreamReport {
                status: unstartable_status(b),
                since: b.since,
                tools: 0,
                restarts: 0,
                last_error: Some(UpstreamFailure { message: b.why.clone(), at: b.since }),
                stderr_tail: Vec::new(),
            };
            (b.id.clone(), None, report)
        }));
        reports
    }

    /// Restarts a running server now (see [`Upstream::restart`]).
    pub fn restart(&self, id: &str) -> Result<(), RestartRefused> {
        let running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(r) = running.iter().find(|r| r.spec.id == id) {
            r.upstream.restart();
            return Ok(());
        }
        drop(running);
        let broken = self.broken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match broken.iter().find(|b| b.id == id) {
            Some(b) => Err(RestartRefused::Unstartable { id: b.id.clone(), why: b.why.clone() }),
            None => Err(RestartRefused::Unknown(id.to_owned())),
        }
    }
}

/// A server that could not be specified reads as failed, not retried (it is not running).
fn unstartable_status(b: &Unstartable) -> UpstreamStatus {
    UpstreamStatus::Failed { error: b.why.clone(), failures: 0, retry_in_ms: 0 }
}
