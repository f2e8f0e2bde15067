//! The hub's side of the launcher: a command that starts it with a socket on its standard input, the
//! conversation over that socket (the request down, reports up), and the probe the hub runs at start to
//! learn what this machine's kernel can enforce.

use crate::ENTRY;
use crate::egress::Resolver;
use crate::protocol::{LaunchReport, LaunchRequest};
use portcullis_harness::SandboxSupport;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The largest report line read (a report is small; more is a broken launcher).
const MAX_REPORT_LINE: usize = 64 * 1024;

/// The program that runs commands inside their sandbox: a Portcullis binary whose `main` calls
/// [`crate::entry_point`].
#[derive(Debug, Clone)]
pub struct SandboxLauncher {
    program: PathBuf,
    /// Launchers started ahead, waiting for their request, one for commands with network and one
    /// without (its network namespace made already); shared by the clones of this launcher.
    ahead: Arc<Mutex<Ahead>>,
    /// How the egress proxy of commands whose rules name hosts resolves those names.
    resolver: Resolver,
}

/// The launchers started ahead: `[with network, without]`.
type Ahead = [Option<Waiting>; 2];

/// A launcher process waiting for its request: its output piped, in a process group of its own, killed
/// when dropped.
#[derive(Debug)]
struct Waiting {
    child: tokio::process::Child,
    conversation: Conversation,
}

/// A launcher taken for one command ([`SandboxLauncher::start`]): the waiting process, and the guard
/// that starts the next one ahead.
#[derive(Debug)]
pub struct Started {
    pub child: tokio::process::Child,
    pub conversation: Conversation,
    /// Keep until the command ended: the next launcher is started ahead then (see [`Replenish`]).
    pub replenish: Replenish,
}

/// The launcher for the next command is started ahead when this is dropped (the command this one was
/// taken for has ended), or [`REPLENISH_AFTER`] after it was taken, whichever comes first. A launcher
/// starting up (two `exec`s of this binary, the namespaces, the mounts) competes for the CPU with the
/// command it would follow; on a 2-core machine, starting it at once added ~0.3–0.5 ms to a short
/// command. Commands close together (one within a few ms of the last one's end) may find none ready and
/// start their own.
#[derive(Debug)]
pub struct Replenish {
    _ended: tokio::sync::oneshot::Sender<()>,
}

/// The latest the next launcher is started after one is taken, for commands that run long.
pub const REPLENISH_AFTER: std::time::Duration = std::time::Duration::from_millis(50);

/// The hub's end of the socket to one launcher.
#[derive(Debug)]
pub struct Conversation {
    stream: tokio::net::UnixStream,
}

impl SandboxLauncher {
    pub fn new(program: impl Into<PathBuf>) -> Self {
        SandboxLauncher {
            program: program.into(),
            ahead: Arc::new(Mutex::new([None, None])),
            resolver: Resolver::System,
        }
    }

    /// This launcher, its commands' egress proxy resolving names with `resolver` (the local user's
    /// hosts map: `portcullis serve --egress-hosts`).
    pub fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = resolver;
        self
    }

    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// A launcher ready for one request for a command with or without `network`: the one started ahead
    /// when it still waits, else a new one; either way another is started ahead for the next such
    /// command once this one's [`Replenish`] drops (its namespaces made and its second stage waiting,
    /// so a command pays only for the walls that depend on its profile). Call it within a tokio runtime.
    pub fn start(&self, network: bool) -> std::io::Result<Started> {
        let slot = usize::from(!network);
        let ready = self.ahead.lock().unwrap_or_else(PoisonError::into_inner)[slot].take();
        let waiting = ready.and_then(|mut s| matches!(s.child.try_wait(), Ok(None)).then_some(s));
        let started = match waiting {
            Some(s) => s,
            None => self.spawn_piped(!network)?,
        };
        let next = self.clone();
        let (ended, ended_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            tokio::select! {
                _ = ended_rx => {}
                () = tokio::time::sleep(REPLENISH_AFTER) => {}
            }
            match next.spawn_piped(!network) {
                Ok(s) => next.ahead.lock().unwrap_or_else(PoisonError::into_inner)[slot] = Some(s),
                Err(e) => tracing::warn!(%e, "could not start a sandbox launcher ahead"),
            }
        });
        let Waiting { child, conversation } = started;
        Ok(Started { child, conversation, replenish: Replenish { _ended: ended } })
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    fn spawn_piped(&self, offline: bool) -> std::io::Result<Waiting> {
        let (mut command, conversation) = self.command()?;
        if offline {
            command.arg(crate::OFFLINE);
        }
        command.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
        let child = command.spawn()?;
        // The command holds the launcher's end of the socket: dropped, the end is the launcher's alone.
        drop(command);
        Ok(Waiting { child, conversation })
    }

    /// A command starting the launcher, and the conversation with it. Set its output and process group,
    /// spawn it, drop the command (it holds the launcher's end of the socket), then
    /// [`Conversation::run`] the request.
    pub fn command(&self) -> std::io::Result<(tokio::process::Command, Conversation)> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let stream = tokio::net::UnixStream::from_std(ours)?;
        let mut command = tokio::process::Command::new(&self.program);
        command.arg(ENTRY).env_clear().stdin(Stdio::from(OwnedFd::from(theirs)));
        Ok((command, Conversation { stream }))
    }

    /// What this machine's kernel enforces: runs `true` inside a minimal profile and reads what the walls
    /// held. Takes a few milliseconds; the hub runs it once at start.
    pub async fn probe(&self) -> SandboxSupport {
        let dir = match tempfile_dir() {
            Ok(d) => d,
            Err(e) => return SandboxSupport::unavailable(format!("no temporary folder for the probe: {e}")),
        };
        let profile = crate::system_only(Vec::new());
        let program = ["/usr/bin/true", "/bin/true"].iter().map(PathBuf::from).find(|p| p.exists());
        let request = LaunchRequest {
            profile,
            program: program.unwrap_or_else(|| PathBuf::from("/bin/true")),
            args: Vec::new(),
            env: Vec::new(),
            // Not the private folder: it becomes `/tmp` inside, so its own path is gone there.
            cwd: PathBuf::from("/usr"),
            private_tmp: dir.clone(),
            stdin: None,
            gate: None,
        };
        let reports = tokio::time::timeout(Duration::from_secs(10), self.run_quietly(&request)).await;
        let _ = std::fs::remove_dir(&dir);
        let reports = match reports {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return SandboxSupport::unavailable(format!("the launcher could not start: {e}")),
            Err(_) => return SandboxSupport::unavailable("the launcher gave no answer within 10 s"),
        };
        for report in reports {
            match report {
                LaunchReport::Confined { applied } => {
                    return SandboxSupport {
                        landlock_abi: Some(applied.landlock_abi),
                        namespaces: true,
                        unavailable: None,
                    };
                }
                LaunchReport::Failed { step, message } => {
                    return SandboxSupport::unavailable(format!("{step}: {message}"));
                }
                LaunchReport::Ended { .. } => {}
            }
        }
        SandboxSupport::unavailable("the launcher ended without saying what it built")
    }

    /// Runs `request` with its output discarded, and returns the reports.
    pub async fn run_quietly(&self, request: &LaunchRequest) -> std::io::Result<Vec<LaunchReport>> {
        let (mut command, conversation) = self.command()?;
        command.stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(true);
        let mut child = command.spawn()?;
        drop(command);
        let reports = conversation.run(request).await;
        let _ = child.wait().await;
        Ok(reports)
    }
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "portcullis-probe-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

impl Conversation {
    /// Sends the request, then reads the launcher's reports until it ends (or the socket breaks).
    pub async fn run(mut self, request: &LaunchRequest) -> Vec<LaunchReport> {
        let mut reports = Vec::new();
        let Ok(body) = serde_json::to_vec(request) else { return reports };
        // A launcher that failed before reading the request has said why: read on regardless.
        if self.stream.write_all(&body).await.is_ok() {
            let _ = self.stream.shutdown().await;
        }
        let mut lines = BufReader::new(self.stream);
        let mut line = String::new();
        loop {
            line.clear();
            match (&mut lines).take(MAX_REPORT_LINE as u64).read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => match serde_json::from_str::<LaunchReport>(line.trim_end()) {
                    Ok(report) => reports.push(report),
                    Err(e) => tracing::warn!(%e, "the sandbox launcher sent a report that is not valid"),
                },
            }
        }
        reports
    }
}
