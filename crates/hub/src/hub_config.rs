//! How to start a hub: every setting a front end (the CLI's `serve`, the app, tests) chooses, with the
//! defaults. Split from `hub.rs`, which runs the hub.

use crate::error::HubError;
use portcullis_policy::discovery::user_config_dir;
use portcullis_policy::{Policy, ProtectedKind};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default [`HubConfig::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(20);
/// The default [`HubConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How to start a hub.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The project folder: the coding tools' root and where project policies are found.
    pub project: PathBuf,
    /// Policy files (user first, then project); empty: discovered for the project and the user.
    pub policy_files: Vec<PathBuf>,
    /// The ledger file.
    pub db: PathBuf,
    /// Where the gateway listens (127.0.0.1 unless `allow_remote`).
    pub listen: SocketAddr,
    /// Binding to a non-loopback address must be asked for explicitly.
    pub allow_remote: bool,
    /// The user config folder (token, runtime file); default: the user's.
    pub config_dir: Option<PathBuf>,
    /// Origins allowed besides none (browser pages are refused unless listed).
    pub allowed_origins: Vec<String>,
    /// Host names (any port) or `host:port` the gateway answers to besides the loopback names and the
    /// address it listens on (DNS rebinding: any other Host is refused on every route). Only with
    /// `allow_remote`.
    pub allowed_hosts: Vec<String>,
    /// A connection that does not finish sending a request's headers within this time (idle
    /// keep-alive connections included) is closed; an admitted request's body gets the same time.
    pub header_read_timeout: Duration,
    /// Open connections at most; further ones wait to be accepted until one closes. Lowered at start
    /// to half the open-file limit left after a reserve, if that is less.
    pub max_connections: usize,
    /// MCP sessions the agents' token may hold, and how long one may idle.
    pub sessions: portcullis_mcp::sessions::SessionLimits,
    /// Time allowed for calls to finish at shutdown.
    pub shutdown_grace: Duration,
    /// Values never written to the ledger or shown; the hub's own tokens and secrets found in the
    /// environment are added.
    pub secrets: Vec<String>,
    /// No operator can be reached (an embedded stdio hub): prompts nobody watches are denied at once.
    pub unattended: bool,
    /// Folders of tool manifests; empty: `<project>/.portcullis/tools` and `<config>/tools`.
    pub manifest_dirs: Vec<PathBuf>,
    /// Above this many visible tools, agents are shown only `search_tools` and find the rest by
    /// keywords (progressive disclosure); the other tools stay callable.
    pub search_tools_above: usize,
    /// The folder `~` means in the commands and paths the policy judges; `None`: `$HOME`.
    pub home: Option<PathBuf>,
    /// The program that runs commands inside their sandbox; default: `portcullis-sandbox` beside this
    /// program, else this binary when its `main` set itself up as one
    /// ([`portcullis_sandbox::default_launcher`]). None: commands run unconfined, and say so.
    pub sandbox_launcher: Option<portcullis_sandbox::SandboxLauncher>,
    /// Serve agents only this upstream server's tools, resources and prompts, under their own names
    /// (Portcullis as a guard in front of one server); the built-in tools are not served to agents.
    pub single_upstream: Option<String>,
    /// Where records go besides the ledger (fed from its tail: `crate::record_sinks`).
    pub record_sinks: crate::record_sinks::RecordSinks,
    /// Whether the browser console is served, and how long its logins last.
    pub console: crate::console_logins::ConsoleSettings,
    /// TLS on every connection (required beyond loopback); none: plain HTTP on loopback.
    pub tls: Option<crate::tls::TlsSource>,
    /// The team ledger to ship to (default: the one the user's `team-ledger.json` names, if any).
    pub team_ledger: crate::team_ledger::TeamLedgerChoice,
    /// The OpenTelemetry collector every call is exported to (default: none).
    pub otlp: Option<crate::otel_export::OtlpSettings>,
    /// How long an idempotency key is kept (then a call with it runs as a new one); an unknown
    /// outcome is kept until an operator marks it.
    pub effect_window: Duration,
}

impl HubConfig {
    /// A hub for `project` writing `db`, with the defaults: 127.0.0.1:7391, the user's config folder,
    /// no extra Origins or Hosts, a 10 s shutdown grace, attended, default manifest folders,
    /// `search_tools` above 64, a 20 s header-read timeout, 256 connections.
    pub fn new(project: impl Into<PathBuf>, db: impl Into<PathBuf>) -> Self {
        HubConfig {
            project: project.into(),
            policy_files: Vec::new(),
            db: db.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], crate::config::DEFAULT_PORT)),
            allow_remote: false,
            config_dir: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            sessions: portcullis_mcp::sessions::SessionLimits::default(),
            shutdown_grace: Duration::from_secs(10),
            secrets: Vec::new(),
            unattended: false,
            manifest_dirs: Vec::new(),
            search_tools_above: 64,
            home: None,
            sandbox_launcher: portcullis_sandbox::default_launcher(),
            single_upstream: None,
            record_sinks: crate::record_sinks::RecordSinks::default(),
            console: crate::console_logins::ConsoleSettings::default(),
            tls: None,
            team_ledger: crate::team_ledger::TeamLedgerChoice::UserSetting,
            otlp: None,
            effect_window: crate::effects::DEFAULT_EFFECT_WINDOW,
        }
    }

    /// The team ledger this hub ships to: the one named at start, else the user's setting.
    pub fn team_ledger(&self) -> Result<Option<crate::team_ledger::TeamLedgerSetting>, HubError> {
        use crate::team_ledger::{TeamLedgerChoice, TeamLedgerSetting};
        match (&self.team_ledger, self.user_config()) {
            (TeamLedgerChoice::Named(setting), _) => Ok(Some(setting.clone())),
            (TeamLedgerChoice::UserSetting, Some(dir)) => TeamLedgerSetting::in_config_dir(&dir),
            (TeamLedgerChoice::UserSetting, None) | (TeamLedgerChoice::Off, _) => Ok(None),
        }
    }

    /// The user's config folder this hub uses: the one given, else the user's.
    pub fn user_config(&self) -> Option<PathBuf> {
        self.config_dir.clone().or_else(user_config_dir)
    }

    /// The manifest folders in force.
    pub fn manifest_folders(&self, project: &Path) -> Vec<PathBuf> {
        if !self.manifest_dirs.is_empty() {
            return self.manifest_dirs.clone();
        }
        let mut dirs: Vec<PathBuf> = self.user_config().map(|d| d.join("tools")).into_iter().collect();
        dirs.push(project.join(".portcullis").join("tools"));
        dirs
    }
}

/// Where the hub of the ledger `db` keeps what copy-on-write commits replaced (`portcullis undo` reads
/// it): a folder beside the ledger, hidden from commands like the ledger.
pub fn undo_store_of(db: &Path) -> PathBuf {
    db.parent().unwrap_or(Path::new(".")).join("undo")
}

/// The policy of `layers`, with this hub's own protected places (see [`load_policy`]).
pub fn policy_of_layers(
    config: &HubConfig,
    layers: Vec<portcullis_policy::PolicyLayer>,
) -> Result<(Policy, Vec<String>), HubError> {
    let team = config.team_ledger()?;
    let sources = layers.iter().map(|l| l.source.clone()).collect();
    let policy = Policy::from_layers(layers)?.with_protected(|places| {
        places.add_with_siblings(&config.db, ProtectedKind::HubSecret, "the hub's ledger");
        places.add(undo_store_of(&config.db), ProtectedKind::HubSecret, "the hub's undo store");
        for file in config.record_sinks.0.iter().filter_map(|sink| sink.local_file()) {
            places.add_with_siblings(file, ProtectedKind::HubSecret, "a copy of the hub's ledger");
        }
        if let Some(file) = team.as_ref().and_then(|t| t.password_file.as_ref()) {
            places.add(file, ProtectedKind::HubSecret, "the team ledger's password");
        }
        if let Some(dir) = &config.config_dir {
            places.add(dir.join("policy.json"), ProtectedKind::Policy, "the user's policy");
            places.add(dir.join("tools"), ProtectedKind::Policy, "the user's tool manifests");
            places.add(dir, ProtectedKind::HubSecret, "the hub's config folder (tokens, runtime file)");
        }
        for dir in &config.manifest_dirs {
            places.add(dir, ProtectedKind::Policy, "a tool-manifests folder");
        }
    });
    Ok((policy, sources))
}
