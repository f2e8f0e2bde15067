//! Starting a command inside its sandbox and reading back what happened: the launcher's reports (the
//! walls it built, how the command ended, the limit that ended it) and the refusals the command's own
//! error output shows, and the review of what it changed in its write roots (see [`change_review`]).
//! Shared by the shell tool and the hub's process tools.

use crate::change_review::{self, ChangeReview};
use crate::host_asker::OperatorHostAsker;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{ChangeRecord, Connection, HostPattern, OperatorAsk, SandboxProfile, ToolError};
use portcullis_sandbox::egress::{EgressGate, EgressRules, GateRecord, OpenGate};
use portcullis_sandbox::findings::{Finding, findings};
use portcullis_sandbox::{Applied, LaunchReport, LaunchRequest, SandboxLauncher};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tokio::task::JoinHandle;

pub use portcullis_sandbox::PrivateTmp;

/// One launch in progress: the conversation task and what it needs afterwards.
pub struct Launch {
    talk: Talk,
    pub profile: SandboxProfile,
    pub cwd: PathBuf,
    pub tmp: PrivateTmp,
    /// The command's way out when its rules name hosts (closed once it ended).
    pub gate: Option<OpenGate>,
    /// Starts the next launcher when the command ended (dropped with the launch).
    pub replenish: portcullis_sandbox::Replenish,
    /// When the command was started: its review does not overwrite what changed in the real tree since.
    pub started_at: std::time::SystemTime,
    /// Where what its commit replaced is kept.
    pub undo: Option<portcullis_sandbox::undo::UndoTarget>,
}

/// The conversation with the launcher: under way, or over (its last report read).
enum Talk {
    Running(JoinHandle<Vec<LaunchReport>>),
    Over(Vec<LaunchReport>),
}

impl Launch {
    /// Waits until the launcher's last report: the command ended and nothing it started is left (or
    /// the walls failed, or the launcher went). Its reports are kept for [`finish`].
    pub async fn over(&mut self) {
        if let Talk::Running(handle) = &mut self.talk {
            let reports = handle.await.unwrap_or_default();
            self.talk = Talk::Over(reports);
        }
    }
}

/// What a confined command runs: the program, its arguments, environment, folder and input.
#[derive(Debug, Clone)]
pub struct Command {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Bytes for its standard input (none: `/dev/null`).
    pub stdin: Option<String>,
    /// How the call's agent wrote it, shown with a question about a host (agent text).
    pub shown: String,
    /// Where what the commit of its changes replaced is kept, for an undo (none: not kept).
    pub undo: Option<portcullis_sandbox::undo::UndoTarget>,
}

/// Opens the egress gate of a command whose rules name hosts (and that has no network of its own);
/// with `asks`, a host the rules do not name is asked of the operator where the rule says so.
fn open_gate(
    launcher: &SandboxLauncher,
    profile: &SandboxProfile,
    command: &Command,
    asks: Option<&OperatorAsk>,
) -> Result<Option<OpenGate>, ToolError> {
    let Some(egress) = profile.gated_egress() else {
        return Ok(None);
    };
    // The policy parsed these when it loaded; one that no longer parses is left out (fewer hosts, never
    // more).
    let hosts = egress.hosts.iter().filter_map(|h| HostPattern::parse(h).ok()).collect();
    let mut rules = EgressRules { hosts, by: egress.by.clone(), ask: None };
    if let (Some(rule), Some(asks)) = (&egress.ask, asks) {
        let asker =
            OperatorHostAsker::new(asks.clone(), rule.clone(), rules.allowed_words(), command.shown.clone());
        rules.ask = Some(std::sync::Arc::new(asker));
    }
    let gate = EgressGate { rules, resolver: launcher.resolver().clone() };
    gate.open(None).map(Some).map_err(|e| {
        ToolError::new(
            CallErrorCode::SandboxFailed,
            format!("could not open the command's egress proxy: {e}"),
        )
    })
}

/// Starts `command` inside `profile`: a launcher ready for it (see [`SandboxLauncher::start`]) with its
/// output piped, and the launch whose reports [`finish`] reads once the command ended. `asks`: the
/// call's operator, for a host the command's rule asks about.
pub fn launch(
    launcher: &SandboxLauncher,
    profile: &SandboxProfile,
    command: Command,
    asks: Option<&OperatorAsk>,
) -> Result<(tokio::process::Child, Launch), ToolError> {
    let gate = open_gate(launcher, profile, &command, asks)?;
    let Command { program, args, env, cwd, stdin, undo, .. } = command;
    let started_at = std::time::SystemTime::now();
    let started = launcher.start(profile).map_err(|e| {
        ToolError::new(CallErrorCode::SandboxFailed, format!("could not start the sandbox launcher: {e}"))
    })?;
    let tmp = started.tmp;
    let request = LaunchRequest {
        profile: profile.clone(),
        program,
        args,
        env,
        cwd: cwd.clone(),
        private_tmp: tmp.path().to_path_buf(),
        stdin,
        gate: gate.as_ref().map(|g| g.socket().to_path_buf()),
    };
    let conversation = started.conversation;
    let talk = Talk::Running(tokio::spawn(async move { conversation.run(&request).await }));
    Ok((
        started.child,
        Launch {
            talk,
            profile: profile.clone(),
            cwd,
            tmp,
            gate,
            replenish: started.replenish,
            started_at,
            undo,
        },
    ))
}

/// How a confined command ended, as the launcher saw it.
#[derive(Debug, Default)]
pub struct Outcome {
    pub applied: Option<Applied>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub limit: Option<String>,
    /// The walls could not be built (step, message): the command did not run.
    pub failed: Option<(String, String)>,
    /// What went through the egress proxy, or was refused there.
    pub network: GateRecord,
    /// What the command changed in its write roots: kept (committed) or discarded, and why.
    pub changes: ChangeReview,
}

/// Waits (briefly) for the reports and reads them.
pub async fn finish(launch: Launch, grace: std::time::Duration) -> (Outcome, SandboxProfile, PathBuf) {
    let reports = match launch.talk {
        Talk::Over(reports) => reports,
        Talk::Running(handle) => match tokio::time::timeout(grace, handle).await {
            Ok(Ok(r)) => r,
            _ => Vec::new(),
        },
    };
    // The command's changes are reviewed once its last process is gone (the launcher's `Ended` report
    // comes after that), and before its folder goes: the layers are named for it.
    let ended = reports.iter().any(|r| matches!(r, LaunchReport::Ended { .. }));
    let (profile, tmp, since) = (launch.profile.clone(), launch.tmp.path().to_path_buf(), launch.started_at);
    let undo = launch.undo.clone();
    let changes = tokio::task::spawn_blocking(move || {
        change_review::review(&profile, &tmp, ended, since, undo.as_ref())
    })
    .await;
    drop(launch.tmp);
    let changes = changes.unwrap_or_else(|e| {
        let why = format!("the review of the command's changes failed ({e})");
        let mut record = ChangeRecord::default();
        crate::change_record::add_root(&mut record, &launch.cwd, &why);
        ChangeReview {
            kept: Vec::new(),
            held: Vec::new(),
            discarded: vec![change_review::Discarded { path: launch.cwd.clone(), why }],
            record,
        }
    });
    let mut outcome = Outcome { changes, ..Outcome::default() };
    if let Some(gate) = launch.gate {
        outcome.network = gate.close().await;
    }
    for report in reports {
        match report {
            LaunchReport::Confined { applied } => outcome.applied = Some(applied),
            LaunchReport::Failed { step, message } => outcome.failed = Some((step, message)),
            LaunchReport::Ended { exit_code, signal, limit } => {
                outcome.exit_code = exit_code;
                outcome.signal = signal;
                outcome.limit = limit;
            }
        }
    }
    (outcome, launch.profile, launch.cwd)
}

/// The error of a command whose walls could not be built.
pub fn walls_failed(step: &str, message: &str) -> ToolError {
    ToolError::new(
        CallErrorCode::SandboxFailed,
        format!("the sandbox could not be built ({step}: {message}); the command did not run"),
    )
    .with_details(json!({ "step": step, "message": message }))
}

/// What the limit that ended a command was, in words.
pub fn limit_text(limit: &str, profile: &SandboxProfile) -> String {
    let l = profile.limits;
    match limit {
        "processes" => {
            format!("the process limit ({} processes): every process of the command was ended", l.processes)
        }
        "file_size" => format!("the file size limit ({} MiB)", l.file_size_mb),
        "cpu" => format!("the CPU time limit ({} s)", l.cpu_seconds),
        other => format!("the {other} limit"),
    }
}

/// The `sandbox` member of a confined command's structured result, and the lines added to its text.
pub fn describe(
    outcome: &Outcome,
    profile: &SandboxProfile,
    cwd: &Path,
    stderr: &str,
) -> (Value, Vec<String>) {
    let found: Vec<Finding> = findings(stderr, profile, cwd);
    let mut lines = Vec::new();
    if let Some(contained) = &profile.contained {
        lines.push(contained_line(contained, profile));
    }
    if let Some(limit) = &outcome.limit {
        lines.push(format!("[sandbox: ended at {}]", limit_text(limit, profile)));
    }
    lines.extend(connection_lines(&outcome.network));
    lines.extend(outcome.changes.lines(cwd));
    for f in &found {
        let what = match &f.path {
            Some(p) => format!("{} ({p})", f.meaning),
            None => f.meaning.clone(),
        };
        let times = if f.count > 1 { format!(" ×{}", f.count) } else { String::new() };
        lines.push(format!("[sandbox refused: {what}{times}]"));
    }
    let value = json!({
        "confined": true,
        "applied": outcome.applied,
        "limit": outcome.limit,
        "refusals": found,
        "limits": profile.limits,
        "network": profile.network,
        "changes": outcome.changes.value(),
        "contained": profile.contained,
    });
    (value, lines)
}

/// The walls of a contained run in one line, for the agent: why it ran contained, and what it could
/// not do, so a step that hit a wall can be issued as a command of its own (which the policy judges).
pub fn contained_line(contained: &portcullis_harness::Containment, profile: &SandboxProfile) -> String {
    let masked: Vec<&str> = contained.masked.iter().map(|m| m.program.as_str()).collect();
    let masked = if masked.is_empty() { "none".to_owned() } else { masked.join(", ") };
    let hidden = match contained.hidden_by_globs.len() {
        0 => String::new(),
        n => format!("; {n} files the deny globs name hidden"),
    };
    let deletions = match &contained.deletions_held_by {
        Some(by) => format!("; deletions held for the operator ({by})"),
        None => String::new(),
    };
    format!(
        "[ran contained (part of it cannot be read before it runs): network {}; programs masked: {masked}{hidden}{deletions}; \
         its changes were reviewed. A step that hit one of these walls can be run as a command of its own, which the policy judges]",
        profile.network_words()
    )
}

/// The egress proxy's connections in words, for the agent: each refusal once (with how many times),
/// and the hosts reached with the bytes each way.
pub fn connection_lines(record: &GateRecord) -> Vec<String> {
    let mut refused: Vec<(&str, usize)> = Vec::new();
    let mut reached: Vec<(String, usize, u64, u64)> = Vec::new();
    for c in &record.connections {
        if c.allowed {
            let at = format!("{}:{}", c.host, c.port);
            match reached.iter_mut().find(|r| r.0 == at) {
                Some(r) => (r.1, r.2, r.3) = (r.1 + 1, r.2 + c.bytes_out, r.3 + c.bytes_in),
                None => reached.push((at, 1, c.bytes_out, c.bytes_in)),
            }
        } else {
            match refused.iter_mut().find(|r| r.0 == c.why) {
                Some(r) => r.1 += 1,
                None => refused.push((&c.why, 1)),
            }
        }
    }
    let times = |n: usize| if n > 1 { format!(" ×{n}") } else { String::new() };
    let mut lines: Vec<String> =
        refused.into_iter().map(|(why, n)| format!("[sandbox refused: {why}{}]", times(n))).collect();
    for (at, n, out, back) in reached {
        lines.push(format!("[network: {at}{}, {out} bytes out, {back} bytes in]", times(n)));
    }
    if record.dropped > 0 {
        lines.push(format!("[network: {} more connections not kept]", record.dropped));
    }
    lines
}

/// The connections of an outcome, for the tool's output (and so the call's record).
pub fn connections(outcome: &Outcome) -> Vec<Connection> {
    outcome.network.connections.clone()
}

/// The record of what the command changed and what became of each change, for the tool's output (and
/// so the call's record); none when it changed nothing.
pub fn change_record(outcome: &Outcome) -> Option<Box<ChangeRecord>> {
    let record = &outcome.changes.record;
    (!record.is_empty()).then(|| Box::new(record.clone()))
}
