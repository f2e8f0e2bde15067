//! Starting a command inside its sandbox and reading back what happened: the launcher's reports (the
//! walls it built, how the command ended, the limit that ended it) and the refusals the command's own
//! error output shows. Shared by the shell tool and the hub's process tools.

use crate::errors::codes;
use portcullis_harness::{SandboxProfile, ToolError};
use portcullis_sandbox::findings::{Finding, findings};
use portcullis_sandbox::{Applied, Conversation, LaunchReport, LaunchRequest, SandboxLauncher, Started};
use serde_json::{Value, json};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::task::JoinHandle;

/// A command's own temporary folder, removed when the command is done.
#[derive(Debug)]
pub struct PrivateTmp(PathBuf);

static NEXT_TMP: AtomicU64 = AtomicU64::new(0);

impl PrivateTmp {
    pub fn new() -> std::io::Result<Self> {
        let n = NEXT_TMP.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("portcullis-cmd-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(PrivateTmp(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One launch in progress: the conversation task and what it needs afterwards.
pub struct Launch {
    pub talk: JoinHandle<Vec<LaunchReport>>,
    pub profile: SandboxProfile,
    pub cwd: PathBuf,
    pub tmp: PrivateTmp,
}

/// A launcher ready for the request (see [`SandboxLauncher::start`]); start [`Launch`] with [`begin`].
pub fn start(launcher: &SandboxLauncher, profile: &SandboxProfile) -> Result<Started, ToolError> {
    launcher.start(profile.network).map_err(|e| {
        ToolError::new(codes::SANDBOX_FAILED, format!("could not start the sandbox launcher: {e}"))
    })
}

/// Sends the request to a spawned launcher and collects its reports in the background.
pub fn begin(conversation: Conversation, request: LaunchRequest, tmp: PrivateTmp) -> Launch {
    let profile = request.profile.clone();
    let cwd = request.cwd.clone();
    let talk = tokio::spawn(async move { conversation.run(&request).await });
    Launch { talk, profile, cwd, tmp }
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
}

/// Waits (briefly) for the reports and reads them.
pub async fn finish(launch: Launch, grace: std::time::Duration) -> (Outcome, SandboxProfile, PathBuf) {
    let reports = match tokio::time::timeout(grace, launch.talk).await {
        Ok(Ok(r)) => r,
        _ => Vec::new(),
    };
    drop(launch.tmp);
    let mut outcome = Outcome::default();
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
        codes::SANDBOX_FAILED,
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
    if let Some(limit) = &outcome.limit {
        lines.push(format!("[sandbox: ended at {}]", limit_text(limit, profile)));
    }
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
    });
    (value, lines)
}
