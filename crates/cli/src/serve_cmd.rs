//! `portcullis serve`: the hub with its gateway on 127.0.0.1, policy hot reload, and (when there is a
//! terminal) a terminal approver; stops cleanly on SIGINT/SIGTERM.

use crate::args::{ServeApprover, ServeArgs};
use crate::error::CliError;
use crate::terminal::{TerminalPrompter, describe_pending, parse_answer};
use portcullis_api::events::FeedSources;
use portcullis_api::start::{
    ConsoleSettings, EgressResolver, HubConfig, JsonlFileSink, OtlpSettings, RecordSink, RecordSinks,
    TlsSource, default_ledger_path, launch, user_config_dir,
};
use portcullis_api::start::{TeamLedgerChoice, TeamLedgerSetting};
use portcullis_api::types::{AlwaysOffer, Answer, Approval, FeedEvent, FeedItem};
use portcullis_api::{Channel, Operator, OperatorApi, visible};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

fn hub_error(e: portcullis_api::start::HubError) -> CliError {
    CliError::Hub { code: e.code(), message: e.to_string() }
}

/// The project folder (default: the current directory) and the ledger (default: the user's).
pub fn project_and_ledger(
    project: Option<&PathBuf>,
    db: Option<&PathBuf>,
) -> Result<(PathBuf, PathBuf), CliError> {
    let project = match project {
        Some(p) => p.clone(),
        None => {
            std::env::current_dir().map_err(|e| CliError::BadArgument(format!("current directory: {e}")))?
        }
    };
    let db = match db {
        Some(db) => db.clone(),
        None => default_ledger_path().map_err(|e| CliError::BadArgument(e.to_string()))?,
    };
    Ok((project, db))
}

/// The OpenTelemetry collector `--otlp` names, else `$OTEL_EXPORTER_OTLP_ENDPOINT`; none without either.
fn otlp_settings(args: &ServeArgs) -> Result<Option<OtlpSettings>, CliError> {
    let Some(endpoint) = args.otlp.clone().or_else(OtlpSettings::endpoint_from_env) else {
        return Ok(None);
    };
    OtlpSettings::new(&endpoint, args.otlp_include_content)
        .map(Some)
        .map_err(|e| CliError::BadArgument(format!("--otlp: {e}")))
}

pub fn serve_cmd(args: &ServeArgs) -> Result<ExitCode, CliError> {
    let (project, db) = project_and_ledger(args.project.as_ref(), args.db.as_ref())?;
    let otlp = otlp_settings(args)?;
    let config = HubConfig {
        project,
        policy_files: args.policies.clone(),
        db,
        listen: SocketAddr::new(args.listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)), args.port),
        allow_remote: args.allow_remote,
        config_dir: None,
        allowed_origins: args.allow_origins.clone(),
        allowed_hosts: args.allow_hosts.clone(),
        header_read_timeout: Duration::from_secs(args.header_read_timeout),
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        sessions: portcullis_api::start::SessionLimits {
            max_sessions: usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
            idle: Duration::from_secs(args.session_idle),
        },
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        secrets: Vec::new(),
        unattended: false,
        manifest_dirs: args.manifest_dirs.clone(),
        search_tools_above: args.search_tools_above,
        home: None,
        sandbox_launcher: match &args.egress_hosts {
            None => portcullis_api::start::default_launcher(),
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| CliError::BadArgument(format!("--egress-hosts {}: {e}", file.display())))?;
                let resolver = EgressResolver::from_hosts_text(&text)
                    .map_err(|e| CliError::BadArgument(format!("--egress-hosts {}: {e}", file.display())))?;
                portcullis_api::start::default_launcher().map(|l| l.with_resolver(resolver))
            }
        },
        single_upstream: args.single_upstream.clone(),
        record_sinks: RecordSinks(
            (args.copy_records_to.iter())
                .map(|file| Arc::new(JsonlFileSink::new(file.clone())) as Arc<dyn RecordSink>)
                .collect(),
        ),
        tls: match (&args.tls_cert, &args.tls_key, args.tls_self_signed) {
            (Some(cert), Some(key), _) => Some(TlsSource::Files { cert: cert.clone(), key: key.clone() }),
            (_, _, true) => Some(TlsSource::SelfSigned),
            _ => None,
        },
        team_ledger: match &args.ship {
            Some(url) => TeamLedgerChoice::Named(TeamLedgerSetting {
                url: url.clone(),
                password_file: args.ship_password_file.clone(),
            }),
            None => TeamLedgerChoice::UserSetting,
        },
        otlp,
        effect_window: Duration::from_secs(args.effect_window),
        console: ConsoleSettings {
            enabled: !args.no_console,
            session_ttl: Duration::from_secs(args.console_session),
            session_idle: Duration::from_secs(args.console_session)
                .min(ConsoleSettings::default().session_idle),
            ..ConsoleSettings::default()
        },
    };
    let prompter = match args.approver {
        Some(ServeApprover::None) => None,
        Some(ServeApprover::Terminal) => Some(TerminalPrompter::controlling().ok_or_else(|| {
            CliError::BadArgument("--approver terminal: this process has no terminal (/dev/tty)".into())
        })?),
        None => TerminalPrompter::controlling(),
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(CliError::Runtime)?;
    runtime.block_on(async move {
        // Bound before the hub opens (a port in use leaves no token or ledger behind); another hub of
        // this user on the port or the ledger is named.
        let launched = launch(config).await.map_err(|e| CliError::Hub { code: e.code(), message: e.to_string() })?;
        let hub = launched.running.hub.clone();
        let addr = launched.running.addr;
        let dir = hub_config_dir_display();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "portcullis: guarding the project {} (its tools' root; --project DIR to choose another)\nportcullis: serving MCP at {}://{}/mcp (agents' bearer token in {dir}/token; the approval API takes only the operator token in {dir}/operator-token)\nportcullis: policies: {}\nportcullis: ledger: {}",
            hub.project().display(),
            if launched.running.tls_fingerprint.is_some() { "https" } else { "http" },
            addr,
            hub.policy_sources().join(", "),
            args.db.as_ref().map_or_else(
                || default_ledger_path().map(|p| p.display().to_string()).unwrap_or_default(),
                |p| p.display().to_string()
            )
        );
        let relative = portcullis_api::policy_check::relative_roots(&hub.live_policy().current());
        for line in crate::policy_cmd::relative_root_lines(&relative) {
            let _ = writeln!(err, "portcullis: {}", crate::render::clean(&line));
        }
        let api = launched.api();
        if let Some(team) = api.team_ledger_setting() {
            let shown = portcullis_api::ledger::LedgerAddress::of(std::path::Path::new(&team.url), None);
            let _ = writeln!(err, "portcullis: shipping the ledger to the team ledger {shown} (its lag: portcullis ledger stats)");
        }
        if let Some(fingerprint) = &launched.running.tls_fingerprint {
            let _ = writeln!(err, "portcullis: TLS certificate SHA-256 fingerprint: {fingerprint}");
        }
        if !args.no_console {
            match api.console_link(None) {
                Ok(link) => {
                    let _ = writeln!(
                        err,
                        "portcullis: operator console: {} (logs {} in once, within 10 minutes; another: portcullis operator link)",
                        link.url,
                        crate::render::clean(&link.operator)
                    );
                }
                Err(e) => tracing::warn!("no console login link: {}", e.message),
            }
        }
        drop(err);
        log_events(&api);
        if let Some(prompter) = prompter {
            answer_on_terminal(&api, Arc::new(prompter));
        }
        wait_for_signal().await;
        tracing::info!("shutting down");
        launched.shutdown().await.map_err(hub_error)?;
        let _ = writeln!(std::io::stderr().lock(), "portcullis: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

fn hub_config_dir_display() -> String {
    user_config_dir().map(|d| d.display().to_string()).unwrap_or_default()
}

/// Reload outcomes and rejected policies go to the log (stderr).
fn log_events(api: &OperatorApi) {
    let mut feed = api.events_from(FeedSources { hub: true, approvals: false, calls: false });
    tokio::spawn(async move {
        while let Some(item) = feed.next().await {
            match item.event {
                FeedEvent::PolicyReloaded { sources } => tracing::warn!(?sources, "policy reloaded"),
                FeedEvent::ManifestRejected { message } => {
                    tracing::error!(
                        "tool manifest change rejected, the previous manifests stay in force: {message}"
                    )
                }
                FeedEvent::PolicyRejected { message, .. } => {
                    tracing::error!("policy change rejected, the previous policy stays in force: {message}")
                }
                FeedEvent::SessionOpened { session_id, client, version } => {
                    tracing::info!(%session_id, %client, %version, "agent connected")
                }
                FeedEvent::SessionClosed { session_id } => tracing::info!(%session_id, "agent disconnected"),
                FeedEvent::ServersChanged { servers } => {
                    for s in servers {
                        tracing::info!(server = %s.id, state = ?s.state, restarts = s.restarts, "upstream server");
                    }
                }
                FeedEvent::Missed { source, count } => tracing::warn!(%source, count, "events missed"),
                _ => {}
            }
        }
    });
}

/// Asks each pending approval on the terminal, one at a time. Another approver (the API) may answer
/// first, or the approval may time out or be withdrawn: the terminal then says so and moves on.
fn answer_on_terminal(api: &OperatorApi, prompter: Arc<TerminalPrompter>) {
    let mut lines = match prompter.lines() {
        Ok(lines) => lines,
        Err(why) => {
            tracing::warn!("the terminal cannot be read, approvals go through the API only: {why}");
            return;
        }
    };
    let mut feed = api.events_from(FeedSources { hub: false, approvals: true, calls: false });
    let api = api.clone();
    let operator = Operator::through(Channel::Terminal, crate::terminal::terminal_operator());
    tokio::spawn(async move {
        let mut queue: std::collections::VecDeque<Approval> = Default::default();
        loop {
            let pending = match queue.pop_front() {
                Some(p) => p,
                None => match feed.next().await {
                    Some(FeedItem { event: FeedEvent::ApprovalAsked { approval }, .. }) => *approval,
                    Some(_) => continue,
                    None => break,
                },
            };
            if !api.pending_approvals().iter().any(|p| p.id == pending.id) {
                continue; // settled while it waited its turn
            }
            // Lines typed before the question are not answers to it.
            while lines.try_recv().is_ok() {}
            let always = matches!(pending.always, AlwaysOffer::Yes { .. });
            prompter.show(&describe_pending(&pending));
            let mut tries = 0;
            loop {
                tokio::select! {
                    line = lines.recv() => {
                        let Some(line) = line else { return };
                        match parse_answer(&line, always) {
                            Some(choice) => {
                                // The digest of the arguments this terminal showed: the answer approves them only.
                                let answer = Answer {
                                    answer: choice.into(),
                                    arguments_sha256: pending.arguments_sha256.clone(),
                                    note: None,
                                    scope: None,
                                };
                                if let Err(e) = api.answer_approval(pending.id, &answer, &operator) {
                                    prompter.show(&format!("approval #{}: {}\n", pending.id, visible(&e.message)));
                                }
                                break;
                            }
                            None if tries < 2 => {
                                tries += 1;
                                let options = if always { "o, s, a or d" } else { "o, s or d" };
                                prompter.show(&format!("answer {options}\n> "));
                            }
                            None => {
                                prompter.show(&format!("approval #{} left to the other approvers or its timeout\n", pending.id));
                                break;
                            }
                        }
                    }
                    item = feed.next() => match item.map(|i| i.event) {
                        Some(FeedEvent::ApprovalSettled { id, outcome, operator }) if id == pending.id => {
                            prompter.show(&settled_elsewhere(id, &outcome, operator.as_deref()));
                            break;
                        }
                        Some(FeedEvent::ApprovalAsked { approval }) => queue.push_back(*approval),
                        Some(_) => {}
                        None => return,
                    },
                }
            }
        }
    });
}

/// What the terminal says when the approval it asks was settled without it.
fn settled_elsewhere(id: u64, outcome: &str, operator: Option<&str>) -> String {
    match outcome {
        "timeout" => format!("\napproval #{id} timed out: nobody answered in time, the call is denied\n"),
        "withdrawn" => format!(
            "\napproval #{id} was withdrawn: the agent stopped waiting (it cancelled, or its connection \
             closed); nothing runs\n"
        ),
        answer => format!(
            "\napproval #{id} was answered elsewhere: {answer}{}\n",
            operator.map(|o| format!(" by {}", visible(o))).unwrap_or_default()
        ),
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
