//! What becomes of a Claude Code tool call the hook allowed. A `Bash` command runs in the hub's sandbox:
//! the hook answers with a command that redeems a one-time ticket (`portcullis run --ticket T`), and the
//! hub runs the judged command under the profile the card showed, streaming its output back. Any other
//! tool Claude Code runs itself, and its `PostToolUse` hook reports what it got. Either way the call's
//! one ledger row ends with what really happened: the sandboxed run's output, the output Claude Code
//! reported, or that nothing was reported.

use base64::Engine as _;
use portcullis_coding::shell::{OutputStream, OutputTee, RunSpec, environment_of, run_command};
use portcullis_harness::CallErrorCode;
use portcullis_harness::{ToolError, ToolInvocation, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How long a ticket can be redeemed: Claude Code runs the command as soon as the hook answers.
pub const TICKET_LIFETIME: Duration = Duration::from_secs(60);
/// The most tickets (and report waits) outstanding at once; past it new ones are refused.
const MAX_OUTSTANDING: usize = 256;
/// How long a call Claude Code runs itself waits for its `PostToolUse` report (Claude Code's longest
/// tool timeout is 10 minutes; its user may also be asked first).
pub const REPORT_WAIT: Duration = Duration::from_secs(15 * 60);
/// The most of a reported tool response kept (the ledger's copy; Claude Code's own is whole).
const MAX_REPORT_BYTES: usize = 256 * 1024;
/// Claude Code's default `Bash` timeout, and the longest it allows.
const BASH_DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const BASH_MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a `Bash` command Claude Code runs in the background may run in the sandbox.
const BACKGROUND_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// One line of a sandboxed run's stream, as `portcullis run` reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunUpdate {
    /// Output bytes (base64), in the order the command wrote them.
    Stdout {
        data: String,
    },
    Stderr {
        data: String,
    },
    /// The run ended: the command's exit code (none: killed, or never run), the folder it ended in, and
    /// what the sandbox has to say (walls that refused something, changes held back), or why it did not
    /// run.
    End {
        exit_code: Option<i32>,
        #[serde(default)]
        signal: Option<i32>,
        #[serde(default)]
        folder: Option<String>,
        #[serde(default)]
        notes: Vec<String>,
    },
}

/// A ticket's slot: who may redeem it (the session, for the record) and the run waiting for it.
struct Slot {
    session: String,
    expires: Instant,
    redeem: oneshot::Sender<mpsc::Sender<RunUpdate>>,
}

/// Tickets issued and not yet redeemed, and calls waiting for Claude Code's report.
#[derive(Default)]
pub struct HookRuns {
    tickets: Mutex<HashMap<String, Slot>>,
    reports: Mutex<HashMap<(String, String), oneshot::Sender<Value>>>,
    /// The Claude Code sessions (and their projects) whose ledger session row is written.
    sessions: Mutex<std::collections::HashSet<(String, std::path::PathBuf)>>,
}

/// 32 random bytes as hex (a ticket, or a run's folder marker).
fn random_ticket() -> Result<String, String> {
    crate::console_logins::random_hex(32).map_err(|e| format!("no randomness for a ticket: {e}"))
}

impl HookRuns {
    /// A one-time ticket for a run of the session's call, and where its redeemer's stream arrives.
    fn issue(
        &self,
        session: &str,
        lifetime: Duration,
    ) -> Result<(String, oneshot::Receiver<mpsc::Sender<RunUpdate>>), String> {
        let ticket = random_ticket()?;
        let mut slots = self.tickets.lock().map_err(|_| "the tickets' lock is poisoned")?;
        let now = Instant::now();
        slots.retain(|_, slot| slot.expires > now && !slot.redeem.is_closed());
        if slots.len() >= MAX_OUTSTANDING {
            return Err(format!("{MAX_OUTSTANDING} sandboxed runs are already waiting to be started"));
        }
        let (tx, rx) = oneshot::channel();
        slots.insert(
            ticket.clone(),
            Slot { session: session.to_owned(), expires: now + lifetime, redeem: tx },
        );
        Ok((ticket, rx))
    }

    /// Redeems `ticket` once: the stream of its run. Unknown, used, expired or abandoned tickets are
    /// refused alike.
    pub fn redeem(&self, ticket: &str) -> Result<mpsc::Receiver<RunUpdate>, String> {
        let slot = self.tickets.lock().map_err(|_| "the tickets' lock is poisoned")?.remove(ticket);
        let refused = || {
            format!(
                "this ticket is unknown, used or expired (each allowed command runs once, within {} s of \
                 the hook's answer, or {} min when Claude Code asked its user)",
                TICKET_LIFETIME.as_secs(),
                REPORT_WAIT.as_secs() / 60
            )
        };
        let Some(slot) = slot else { return Err(refused()) };
        if slot.expires <= Instant::now() {
            return Err(refused());
        }
        let (tx, rx) = mpsc::channel(64);
        slot.redeem.send(tx).map_err(|_| "the call this ticket was for has ended".to_owned())?;
        tracing::debug!(session = %slot.session, "a sandboxed run's ticket was redeemed");
        Ok(rx)
    }

    /// Waits for Claude Code's report of the call `tool_use_id` of `session`.
    fn await_report(&self, session: &str, tool_use_id: &str) -> Result<oneshot::Receiver<Value>, String> {
        let mut reports = self.reports.lock().map_err(|_| "the reports' lock is poisoned")?;
        reports.retain(|_, waiting| !waiting.is_closed());
        if reports.len() >= MAX_OUTSTANDING {
            return Err(format!("{MAX_OUTSTANDING} calls are already waiting for Claude Code's reports"));
        }
        let (tx, rx) = oneshot::channel();
        reports.insert((session.to_owned(), tool_use_id.to_owned()), tx);
        Ok(rx)
    }

    /// Whether the session's row naming `project` is still to be written (true once per pair; the set
    /// is bounded, forgetting all past its size: a row written twice is the same row).
    pub fn first_call_of(&self, session: &str, project: &std::path::Path) -> bool {
        let Ok(mut sessions) = self.sessions.lock() else { return false };
        if sessions.len() >= 4096 {
            sessions.clear();
        }
        sessions.insert((session.to_owned(), project.to_path_buf()))
    }

    /// Hands a `PostToolUse` report to the call waiting for it; false when none waits (a sandboxed run,
    /// whose own output is on record, or a call from before the hub started).
    pub fn report(&self, session: &str, tool_use_id: &str, response: Value) -> bool {
        let waiting = match self.reports.lock() {
            Ok(mut reports) => reports.remove(&(session.to_owned(), tool_use_id.to_owned())),
            Err(_) => None,
        };
        waiting.is_some_and(|tx| tx.send(response).is_ok())
    }
}

/// What the hook answers once the call has passed every check.
#[derive(Debug)]
pub enum Go {
    /// Claude Code runs the tool itself.
    ClaudeCodeRuns,
    /// Claude Code runs `portcullis run --ticket` instead, and the hub runs the command.
    Ticket(String),
}

/// How an allowed call is carried out.
pub enum Carried {
    /// Claude Code runs it; nothing waits (no running hub: the hook process ends with its answer).
    Unwatched,
    /// Claude Code runs it and reports through `PostToolUse`.
    Reported { runs: std::sync::Arc<HookRuns>, session: String, tool_use_id: String },
    /// The hub runs it in its sandbox, once the ticket is redeemed.
    Sandboxed {
        runs: std::sync::Arc<HookRuns>,
        session: String,
        workspace: std::sync::Arc<portcullis_coding::Workspace>,
        launcher: portcullis_sandbox::SandboxLauncher,
    },
}

/// The call has passed; tell the hook (`go`), then carry it out. The result is the call's record.
/// `asked_user`: Claude Code asks its user first, so its ticket waits as long as a report does.
pub async fn carry_out(
    carried: &Carried,
    invocation: ToolInvocation,
    go: oneshot::Sender<Go>,
    asked_user: bool,
) -> Result<ToolOutput, ToolError> {
    match carried {
        Carried::Unwatched => {
            let _ = go.send(Go::ClaudeCodeRuns);
            Ok(ToolOutput::text("allowed; Claude Code runs it (no hub was running to see how it ended)"))
        }
        Carried::Reported { runs, session, tool_use_id } => {
            let report = runs
                .await_report(session, tool_use_id)
                .map_err(|e| ToolError::new(CallErrorCode::Busy, e))?;
            let _ = go.send(Go::ClaudeCodeRuns);
            let waited = tokio::select! {
                report = tokio::time::timeout(REPORT_WAIT, report) => report,
                () = invocation.cancel.cancelled() => return Err(ToolError::new(CallErrorCode::Cancelled, "the hub stopped waiting for Claude Code's report")),
            };
            match waited {
                Ok(Ok(response)) => Ok(reported_output(response)),
                _ => Err(ToolError::new(
                    CallErrorCode::NotReported,
                    format!(
                        "allowed; Claude Code runs it, but it did not report how it ended within {} min \
                         (its user declined it, it was interrupted, or its PostToolUse hook is not set up)",
                        REPORT_WAIT.as_secs() / 60
                    ),
                )),
            }
        }
        Carried::Sandboxed { runs, session, workspace, launcher } => {
            let lifetime = if asked_user { REPORT_WAIT } else { TICKET_LIFETIME };
            sandboxed(runs, session, workspace, launcher, invocation, go, lifetime).await
        }
    }
}

/// The output Claude Code reported, as the call's output (bounded; redacted by the pipeline).
fn reported_output(response: Value) -> ToolOutput {
    let mut text = match &response {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    if text.len() > MAX_REPORT_BYTES {
        let mut end = MAX_REPORT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[…the rest of Claude Code's report is not kept]");
    }
    let mut output = ToolOutput::text(format!("Claude Code ran it and reported:\n{text}"));
    output.structured = Some(json!({ "ran_by": "claude_code", "reported": true }));
    output
}

/// The judged command in the wrapper that reports the folder it ends in (Claude Code follows `cd`
/// across calls): eval'd as Claude Code's own shell does, then the folder after a marker only this run
/// knows, cut from the output before anyone sees it.
fn wrapped(command: &str, marker: &str) -> String {
    let quoted = command.replace('\'', "'\\''");
    format!(
        "eval '{quoted}'\n__portcullis_status=$?\nprintf '%s%s' '{marker}' \"$(pwd -P)\"\nexit \"$__portcullis_status\""
    )
}

/// Splits a run's stdout stream at the folder marker: what comes before goes on, what follows is the
/// folder. Holds back only what could still be the marker's start.
struct MarkerCut {
    marker: Vec<u8>,
    pending: Vec<u8>,
    folder: Option<Vec<u8>>,
}

impl MarkerCut {
    fn new(marker: &str) -> Self {
        MarkerCut { marker: marker.as_bytes().to_vec(), pending: Vec::new(), folder: None }
    }

    /// The bytes of `chunk` that can go on now.
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if let Some(folder) = &mut self.folder {
            if folder.len() < 4096 {
                folder.extend_from_slice(chunk);
            }
            return Vec::new();
        }
        self.pending.extend_from_slice(chunk);
        if let Some(at) = self.pending.windows(self.marker.len()).position(|w| w == self.marker.as_slice()) {
            let rest = self.pending.split_off(at);
            self.folder = Some(rest[self.marker.len()..].to_vec());
            return std::mem::take(&mut self.pending);
        }
        // Keep the longest end that is a start of the marker.
        let keep = (1..self.marker.len().min(self.pending.len() + 1))
            .rev()
            .find(|&n| self.pending.ends_with(&self.marker[..n]))
            .unwrap_or(0);
        let cut = self.pending.len() - keep;
        let out = self.pending[..cut].to_vec();
        self.pending.drain(..cut);
        out
    }

    /// What was held back (no marker came), and the folder (if one did).
    fn finish(self) -> (Vec<u8>, Option<String>) {
        let folder = self.folder.and_then(|f| String::from_utf8(f).ok()).filter(|f| f.starts_with('/'));
        (self.pending, folder)
    }
}

/// The marker and its folder cut from a rendered output (the ledger's and the result's copies).
fn without_marker(text: &str, marker: &str) -> String {
    match text.find(marker) {
        Some(at) => {
            let rest = &text[at + marker.len()..];
            let end = rest.find('\n').map_or(rest.len(), |n| n);
            format!("{}{}", &text[..at], &rest[end..])
        }
        None => text.to_owned(),
    }
}

async fn sandboxed(
    runs: &HookRuns,
    session: &str,
    workspace: &portcullis_coding::Workspace,
    launcher: &portcullis_sandbox::SandboxLauncher,
    invocation: ToolInvocation,
    go: oneshot::Sender<Go>,
    lifetime: Duration,
) -> Result<ToolOutput, ToolError> {
    let action = &invocation.action;
    let (Some(command), Some(cwd)) = (&action.command, &action.cwd) else {
        return Err(ToolError::new(CallErrorCode::BadAction, "the judged action has no command and folder"));
    };
    // Judged for this hub's sandbox (its walls, its allowlisted environment): it runs there or not at
    // all, never in Claude Code's own shell (whose whole environment the judgement did not assume).
    let Some(profile) = action.sandbox.as_ref().filter(|p| p.is_confined()) else {
        return Err(ToolError::new(
            CallErrorCode::SandboxFailed,
            "the command was judged for the hub's sandbox, but its profile has no walls: it did not run",
        ));
    };
    let (ticket, redeemed) =
        runs.issue(session, lifetime).map_err(|e| ToolError::new(CallErrorCode::Busy, e))?;
    let _ = go.send(Go::Ticket(ticket));
    let updates = tokio::select! {
        redeemed = tokio::time::timeout(lifetime, redeemed) => match redeemed {
            Ok(Ok(updates)) => updates,
            _ => return Err(ToolError::new(
                CallErrorCode::NotRun,
                format!("allowed, but Claude Code did not start it within {} s: it did not run", lifetime.as_secs()),
            )),
        },
        () = invocation.cancel.cancelled() => return Err(ToolError::new(CallErrorCode::Cancelled, "the run was cancelled before it started")),
    };
    let marker = format!(
        "\n::portcullis-folder-{}::",
        random_ticket().map_err(|e| ToolError::new(CallErrorCode::Io, e))?
    );
    // Claude Code's own limits: its timeout (2 min by default, 10 at most), and none for a command it
    // runs in the background (a dev server, a watcher), which lives until Claude Code stops it (the
    // redeemer goes away) or a day has passed. Its changes reach the real tree when it ends.
    let background = invocation.arguments.get("run_in_background").and_then(Value::as_bool) == Some(true);
    let timeout = if background {
        BACKGROUND_LIMIT
    } else {
        invocation
            .arguments
            .get("timeout")
            .and_then(Value::as_u64)
            .map_or(BASH_DEFAULT_TIMEOUT, Duration::from_millis)
            .min(BASH_MAX_TIMEOUT)
    };
    // The redeemer went away (Claude Code's own timeout, an interrupt): the command is killed.
    let cancel = invocation.cancel.child_token();
    let watcher = {
        let (updates, cancel) = (updates.clone(), cancel.clone());
        tokio::spawn(async move {
            updates.closed().await;
            cancel.cancel();
        })
    };
    let (tee, mut tee_rx): (OutputTee, _) = mpsc::channel(64);
    let forward = {
        let (updates, marker) = (updates.clone(), marker.clone());
        tokio::spawn(async move {
            let mut cut = MarkerCut::new(&marker);
            let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
            while let Some((stream, bytes)) = tee_rx.recv().await {
                let update = match stream {
                    OutputStream::Stdout => RunUpdate::Stdout { data: encode(&cut.push(&bytes)) },
                    OutputStream::Stderr => RunUpdate::Stderr { data: encode(&bytes) },
                };
                let _ = updates.send(update).await;
            }
            let (held, folder) = cut.finish();
            if !held.is_empty() {
                let _ = updates.send(RunUpdate::Stdout { data: encode(&held) }).await;
            }
            folder
        })
    };
    let limits = &workspace.limits;
    let run = RunSpec {
        command: wrapped(command, &marker),
        cwd: cwd.clone(),
        env: environment_of(workspace),
        timeout,
        output_bytes: limits.shell_output_bytes,
        kill_grace: limits.shell_kill_grace,
        sandbox: Some((launcher.clone(), (**profile).clone())),
        asks: invocation.asks.clone(),
        tee: Some(tee),
        undo: workspace.undo_target(&invocation.call),
    };
    let result = run_command(run, &cancel).await;
    let folder = forward.await.ok().flatten();
    watcher.abort();
    let end = match &result {
        Ok(output) => {
            let structured = output.structured.clone().unwrap_or(Value::Null);
            RunUpdate::End {
                exit_code: structured["exit_code"].as_i64().and_then(|c| i32::try_from(c).ok()),
                signal: structured["signal"].as_i64().and_then(|c| i32::try_from(c).ok()),
                folder,
                notes: structured["sandbox_notes"]
                    .as_array()
                    .map(|lines| lines.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default(),
            }
        }
        Err(e) => RunUpdate::End { exit_code: None, signal: None, folder, notes: vec![e.message.clone()] },
    };
    let _ = updates.send(end).await;
    result.map(|mut output| {
        for content in &mut output.content {
            if let portcullis_harness::Content::Text { text } = content {
                *text = without_marker(text, &marker);
            }
        }
        if let Some(Value::String(stdout)) = output.structured.as_mut().and_then(|s| s.get_mut("stdout")) {
            *stdout = without_marker(stdout, &marker);
        }
        output
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_marker_is_cut_from_the_stream_whatever_the_chunks() {
        let marker = "\n::portcullis-folder-ab::";
        let whole = format!("out\nmore{marker}/srv/app/sub");
        // Every way of cutting the stream in two.
        for at in 0..=whole.len() {
            let mut cut = MarkerCut::new(marker);
            let mut passed = cut.push(&whole.as_bytes()[..at]);
            passed.extend(cut.push(&whole.as_bytes()[at..]));
            let (held, folder) = cut.finish();
            passed.extend(held);
            assert_eq!(String::from_utf8(passed).unwrap(), "out\nmore", "cut at {at}");
            assert_eq!(folder.as_deref(), Some("/srv/app/sub"), "cut at {at}");
        }
        // No marker: everything passes, a partial marker at the end included.
        let mut cut = MarkerCut::new(marker);
        let mut passed = cut.push(b"a\n::portcullis-fo");
        let (held, folder) = cut.finish();
        passed.extend(held);
        assert_eq!(passed, b"a\n::portcullis-fo");
        assert_eq!(folder, None);
    }

    #[test]
    fn the_rendered_output_loses_the_marker_and_folder_only() {
        let marker = "\n::portcullis-folder-ab::";
        let text = format!("hi{marker}/srv/app\n[stderr]\nwarn\n[exit code: 0]");
        assert_eq!(without_marker(&text, marker), "hi\n[stderr]\nwarn\n[exit code: 0]");
        assert_eq!(without_marker("plain", marker), "plain");
    }

    #[test]
    fn the_wrapper_quotes_the_command_whole() {
        let script = wrapped("echo 'it''s' \"$HOME\"", "M");
        assert!(script.starts_with("eval 'echo '\\''it'\\'''\\''s'\\'' \"$HOME\"'\n"), "{script}");
        let out = std::process::Command::new("bash").arg("-c").arg(&script).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with("its "), "{text}");
        assert!(text.contains("M/"), "{text}");
    }

    #[test]
    fn a_ticket_is_redeemed_once() {
        let runs = HookRuns::default();
        let (ticket, _waiting) = runs.issue("s", TICKET_LIFETIME).unwrap();
        assert!(runs.redeem("not-a-ticket").is_err());
        assert!(runs.redeem(&ticket).is_ok());
        assert!(runs.redeem(&ticket).is_err(), "a ticket runs one command once");
        // A ticket whose call ended cannot start anything.
        let (ticket, waiting) = runs.issue("s", TICKET_LIFETIME).unwrap();
        drop(waiting);
        assert!(runs.redeem(&ticket).is_err());
        // An expired ticket starts nothing either, though its call still waits.
        let (ticket, _still_waiting) = runs.issue("s", Duration::ZERO).unwrap();
        assert!(runs.redeem(&ticket).is_err());
    }
}
