//! Starting a command inside its sandbox and reading back what happened: the launcher's reports (the
//! walls it built, how the command ended, the limit that ended it) and the refusals the command's own
//! error output shows. Shared by the shell tool and the hub's process tools.

use crate::errors::codes;
use portcullis_harness::{SandboxProfile, ToolError};
use portcullis_sandbox::findings::{Finding, findings};
use portcullis_sandbox::{Applied, LaunchReport, LaunchRequest, SandboxLauncher};
use serde_json::{Value, json};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use tokio::task::JoinHandle;

/// A command's own temporary folder, removed when the command is done.
#[derive(Debug)]
pub struct PrivateTmp(PathBuf);

impl PrivateTmp {
    /// A new folder under the system's temporary folder, owner-only, with a name nobody can guess (a
    /// name made in advance — a link planted there — is never reused: creating fails and another is
    /// tried).
    pub fn new() -> std::io::Result<Self> {
        use std::hash::{BuildHasher, Hasher};
        let mut last = None;
        for _ in 0..8 {
            let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
            let dir =
                std::env::temp_dir().join(format!("portcullis-cmd-{}-{random:016x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(PrivateTmp(dir)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no temporary folder")))
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

/// Starts `program args` in `cwd` with `env` (and `stdin`, if any) inside `profile`: a launcher ready
/// for it (see [`SandboxLauncher::start`]) with its output piped, and the launch whose reports
/// [`finish`] reads once the command ended.
pub fn launch(
    launcher: &SandboxLauncher,
    profile: &SandboxProfile,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    stdin: Option<String>,
) -> Result<(tokio::process::Child, Launch), ToolError> {
    let tmp = PrivateTmp::new().map_err(|e| {
        ToolError::new(codes::SANDBOX_FAILED, format!("could not make the command's temporary folder: {e}"))
    })?;
    let started = launcher.start(profile.network).map_err(|e| {
        ToolError::new(codes::SANDBOX_FAILED, format!("could not start the sandbox launcher: {e}"))
    })?;
    let request = LaunchRequest {
        profile: profile.clone(),
        program,
        args,
        env,
        cwd: cwd.clone(),
        private_tmp: tmp.path().to_path_buf(),
        stdin,
    };
    let conversation = started.conversation;
    let talk = tokio::spawn(async move { conversation.run(&request).await });
    Ok((started.child, Launch { talk, profile: profile.clone(), cwd, tmp }))
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
