//! The `shell` tool: `bash -c` (or `/bin/sh -c`) in the evaluated cwd, in its own process group, with a
//! filtered environment, bounded output and a timeout; the whole group is killed on timeout or cancel.

use crate::args::{optional_str, optional_u64, required_str};
use crate::confined;
use crate::errors::{invalid, io_error, path_changed};
use crate::output::BoundedOutput;
use crate::paths::canonicalize_lenient;
use crate::workspace::{DEFAULT_ENV_ALLOWLIST, Workspace};
use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, CallContext, ExecutionAction, Risk, SandboxProfile, Tool, ToolAnnotations, ToolError,
    ToolInvocation, ToolOutput, ToolSpec,
};
use portcullis_sandbox::SandboxLauncher;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::task::JoinHandle;

/// How long the output readers may still run after the process group is gone (a process that left the
/// group with `setsid` may hold the pipes open).
const DRAIN_GRACE: Duration = Duration::from_millis(500);

pub struct ShellTool {
    workspace: Arc<Workspace>,
    spec: ToolSpec,
}

impl ShellTool {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let cap_ms = workspace.limits.shell_timeout_cap().as_millis() as u64;
        let spec = ToolSpec::new(
            "shell",
            format!(
                "Run a shell command (bash -c) in the project. Default timeout {} ms, at most {cap_ms} ms. \
                 stdout and stderr are each bounded to {} bytes (head and tail kept). A non-zero exit \
                 status is a normal result. Background processes are killed when the command ends.",
                workspace.limits.shell_timeout.as_millis(),
                workspace.limits.shell_output_bytes
            ),
        )
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command line, run with bash -c."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds (capped)."},
                "cwd": {"type": "string", "description": "Working directory inside the project (default: the agent's cwd or the project root)."}
            },
            "required": ["command"],
            "additionalProperties": false
        }))
        .with_annotations(ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: Some(false),
            open_world: Some(true),
        })
        .exclusive(true);
        ShellTool { workspace, spec }
    }
}

/// The interpreter: bash when present, else /bin/sh.
fn interpreter() -> &'static str {
    ["/bin/bash", "/usr/bin/bash"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("/bin/sh")
}

#[async_trait]
impl Tool for ShellTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let command = required_str(arguments, "command")?;
        if command.trim().is_empty() {
            return Err(invalid("`command` is empty"));
        }
        if command.contains('\0') {
            return Err(invalid("`command` contains a NUL byte"));
        }
        let cwd = match optional_str(arguments, "cwd")? {
            Some(dir) => self.workspace.resolve(dir, call)?,
            None => self.workspace.base_dir(call),
        };
        check_cwd(&self.workspace, &cwd)?;
        Ok(ExecutionAction::new(ActionKind::Execute, "exec")
            .with_command(command)
            .with_cwd(cwd)
            .with_risk(Risk::High))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let action = &invocation.action;
        let (Some(command), Some(cwd), ActionKind::Execute) = (&action.command, &action.cwd, action.kind)
        else {
            return Err(ToolError::new(
                CallErrorCode::BadAction,
                "the evaluated action has no command and cwd",
            ));
        };
        check_cwd(&self.workspace, cwd)?;
        if canonicalize_lenient(cwd)? != *cwd {
            return Err(path_changed(cwd));
        }
        let limits = &self.workspace.limits;
        let timeout = optional_u64(&invocation.arguments, "timeout_ms")?
            .map_or(limits.shell_timeout, Duration::from_millis)
            .min(limits.shell_timeout_cap());
        let sandbox = match (&action.sandbox, &self.workspace.sandbox) {
            (Some(profile), Some(launcher)) if profile.is_confined() => {
                Some((launcher.clone(), (**profile).clone()))
            }
            (Some(profile), None) if profile.is_confined() => {
                return Err(ToolError::new(
                    CallErrorCode::SandboxFailed,
                    "the policy confines this command, but this hub has no sandbox launcher: it did not run",
                ));
            }
            _ => None,
        };
        let run = RunSpec {
            command: command.clone(),
            cwd: cwd.clone(),
            env: self.environment(),
            timeout,
            output_bytes: limits.shell_output_bytes,
            kill_grace: limits.shell_kill_grace,
            sandbox,
            asks: invocation.asks.clone(),
            tee: None,
            undo: self.workspace.undo_target(&invocation.call),
        };
        run_command(run, &invocation.cancel).await
    }
}

impl ShellTool {
    fn environment(&self) -> Vec<(String, String)> {
        environment_of(&self.workspace)
    }
}

/// The environment a command of `workspace` sees: the allowlist, `LC_*`, and the configured
/// pass-through names.
pub fn environment_of(workspace: &Workspace) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| {
            DEFAULT_ENV_ALLOWLIST.contains(&name.as_str())
                || name.starts_with("LC_")
                || workspace.env_passthrough.iter().any(|p| p == name)
        })
        .collect();
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env
}

fn check_cwd(workspace: &Workspace, cwd: &Path) -> Result<(), ToolError> {
    if !workspace.is_inside(cwd) {
        return Err(ToolError::new(
            CallErrorCode::OutsideRoot,
            format!("cwd {} is outside the project root {}", cwd.display(), workspace.root().display()),
        ));
    }
    match std::fs::symlink_metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => {
            Err(ToolError::new(CallErrorCode::NotADirectory, format!("{} is not a directory", cwd.display())))
        }
        Err(e) => Err(io_error(cwd, &e)),
    }
}

/// One command to run.
pub struct RunSpec {
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub output_bytes: usize,
    pub kill_grace: Duration,
    /// Run inside this profile through this launcher; none: run directly.
    pub sandbox: Option<(SandboxLauncher, SandboxProfile)>,
    /// The call's operator, asked about a host the command's rule asks about.
    pub asks: Option<portcullis_harness::OperatorAsk>,
    /// Where the output also goes as it comes (a person watching the command), besides its bounded copy.
    pub tee: Option<OutputTee>,
    /// Where what the commit of its changes replaced is kept, for an undo.
    pub undo: Option<portcullis_sandbox::undo::UndoTarget>,
}

/// Which of a command's outputs a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// A command's output as it comes. Bounded: a reader that falls behind slows the command down, as a
/// terminal does; one that went away is no longer sent to.
pub type OutputTee = tokio::sync::mpsc::Sender<(OutputStream, Vec<u8>)>;

enum Ending {
    /// The command ended: its status (a confined command's comes from its launcher's report).
    Exited(Option<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

fn reader<R: AsyncRead + Unpin + Send + 'static>(
    stream: Option<R>,
    limit: usize,
    tee: Option<(OutputTee, OutputStream)>,
) -> JoinHandle<BoundedOutput> {
    tokio::spawn(async move {
        let mut out = BoundedOutput::new(limit);
        let mut tee = tee;
        if let Some(mut stream) = stream {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        out.push(&buf[..n]);
                        if let Some((sender, which)) = &tee
                            && sender.send((*which, buf[..n].to_vec())).await.is_err()
                        {
                            tee = None;
                        }
                    }
                }
            }
        }
        out
    })
}

async fn collect(handle: JoinHandle<BoundedOutput>, limit: usize) -> BoundedOutput {
    let abort = handle.abort_handle();
    match tokio::time::timeout(DRAIN_GRACE, handle).await {
        Ok(Ok(out)) => out,
        _ => {
            abort.abort();
            let mut out = BoundedOutput::new(limit);
            out.push(b"[output unavailable: the stream stayed open after the command ended]");
            out
        }
    }
}

fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid
        && let Err(err) = killpg(pgid, signal)
        && err != nix::errno::Errno::ESRCH
    {
        tracing::warn!(%err, ?signal, "could not signal the shell's process group");
    }
}

/// Runs a command in its own process group and returns its bounded output.
pub async fn run_command(
    run: RunSpec,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let (mut child, mut launch) = match &run.sandbox {
        None => {
            let child = Command::new(interpreter())
                .arg("-c")
                .arg(&run.command)
                .current_dir(&run.cwd)
                .env_clear()
                .envs(run.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| {
                    ToolError::new(CallErrorCode::SpawnFailed, format!("could not start the shell: {e}"))
                })?;
            (child, None)
        }
        Some((launcher, profile)) => confined::launch(
            launcher,
            profile,
            confined::Command {
                program: PathBuf::from(interpreter()),
                args: vec!["-c".into(), run.command.clone()],
                env: run.env.clone(),
                cwd: run.cwd.clone(),
                stdin: None,
                shown: run.command.clone(),
                undo: run.undo.clone(),
            },
            run.asks.as_ref(),
        )
        .map(|(child, launch)| (child, Some(launch)))?,
    };
    let pgid = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
    let tee_of = |which| run.tee.clone().map(|sender| (sender, which));
    let stdout = reader(child.stdout.take(), run.output_bytes, tee_of(OutputStream::Stdout));
    let stderr = reader(child.stderr.take(), run.output_bytes, tee_of(OutputStream::Stderr));

    // A confined command has ended once its launcher says so (everything it started is gone by then);
    // the launcher's own exit, which tears its namespaces down, is not waited for.
    let ended = async {
        match launch.as_mut() {
            Some(launch) => {
                launch.over().await;
                Ok(None)
            }
            None => child.wait().await.map(Some),
        }
    };
    let ending = tokio::select! {
        status = ended => match status {
            Ok(status) => Ending::Exited(status),
            Err(e) => return Err(ToolError::new(CallErrorCode::Io, format!("waiting for the shell failed: {e}"))),
        },
        () = tokio::time::sleep(run.timeout) => Ending::TimedOut,
        () = cancel.cancelled() => Ending::Cancelled,
    };
    let status = match ending {
        Ending::Exited(status) => {
            // Background jobs left in the group do not outlive the call (a confined command's launcher
            // goes too).
            signal_group(pgid, Signal::SIGKILL);
            status
        }
        Ending::TimedOut | Ending::Cancelled => {
            signal_group(pgid, Signal::SIGTERM);
            let _ = tokio::time::timeout(run.kill_grace, child.wait()).await;
            signal_group(pgid, Signal::SIGKILL);
            let _ = child.wait().await;
            None
        }
    };
    if launch.is_some() && status.is_none() && matches!(ending, Ending::Exited(_)) {
        // The killed launcher, reaped without holding the result up.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
    }
    let stdout = collect(stdout, run.output_bytes).await;
    let stderr = collect(stderr, run.output_bytes).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    let mut exit_code = status.and_then(|s| s.code());
    let mut signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    let mut sandbox_value = None;
    let mut sandbox_lines = Vec::new();
    let mut connections = Vec::new();
    let mut changes = None;
    if let Some(launch) = launch {
        let (outcome, profile, cwd) = confined::finish(launch, DRAIN_GRACE).await;
        if let Some((step, message)) = &outcome.failed {
            return Err(confined::walls_failed(step, message));
        }
        if matches!(ending, Ending::Exited(_)) && outcome.applied.is_none() {
            return Err(confined::walls_failed("launcher", "it ended without starting the command"));
        }
        // The launcher's own status says nothing: the command's is the one it reported.
        exit_code = outcome.exit_code;
        signal = outcome.signal;
        let (value, lines) = confined::describe(&outcome, &profile, &cwd, &stderr.render());
        sandbox_value = Some(value);
        sandbox_lines = lines;
        connections = confined::connections(&outcome);
        changes = confined::change_record(&outcome);
    }
    // Agents hand their model the structured result when there is one (Claude Code and Codex both do):
    // it carries the output itself, not only its size.
    let structured = json!({
        "stdout": stdout.render(),
        "stderr": stderr.render(),
        "exit_code": exit_code,
        "signal": signal,
        "timed_out": matches!(ending, Ending::TimedOut),
        "duration_ms": duration_ms,
        "stdout_bytes": stdout.total(),
        "stderr_bytes": stderr.total(),
        "stdout_omitted_bytes": stdout.dropped(),
        "stderr_omitted_bytes": stderr.dropped(),
        "sandbox": sandbox_value,
        "sandbox_notes": sandbox_lines,
    });
    let mut text = stdout.render();
    let err_text = stderr.render();
    if !err_text.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(&err_text);
    }
    for line in sandbox_lines {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&line);
    }
    match ending {
        Ending::Exited(_) => {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            match (exit_code, signal) {
                (Some(code), _) => text.push_str(&format!("[exit code: {code}]")),
                (None, Some(sig)) => text.push_str(&format!("[killed by signal {sig}]")),
                (None, None) => text.push_str("[exit status unknown]"),
            }
            let mut output = ToolOutput::text(text);
            output.structured = Some(structured);
            output.connections = connections;
            output.changes = changes;
            Ok(output)
        }
        Ending::TimedOut => Err(ToolError::new(
            CallErrorCode::Timeout,
            format!(
                "the command timed out after {} ms; its process group was killed",
                run.timeout.as_millis()
            ),
        )
        .with_details(
            json!({ "output": text, "result": structured, "connections": connections, "changes": changes }),
        )),
        Ending::Cancelled => Err(ToolError::new(
            CallErrorCode::Cancelled,
            "the run was cancelled; the command was killed",
        )
        .with_details(
            json!({ "output": text, "result": structured, "connections": connections, "changes": changes }),
        )),
    }
}
