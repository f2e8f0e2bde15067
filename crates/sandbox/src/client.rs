//! The hub's side of the launcher: a command that starts it with a socket on its standard input, the
//! conversation over that socket (the request down, reports up), and the probe the hub runs at start to
//! learn what this machine's kernel can enforce.

use crate::ENTRY;
use crate::PrivateTmp;
use crate::egress::Resolver;
use crate::protocol::{LaunchReport, LaunchRequest, Walls};
use portcullis_harness::{SandboxProfile, SandboxSupport};
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
    /// Launchers started ahead, waiting for their request, shared by the clones of this launcher.
    ahead: Arc<Mutex<Vec<(Key, Waiting)>>>,
    /// How the egress proxy of commands whose rules name hosts resolves those names.
    resolver: Resolver,
}

/// At most this many launchers wait ahead, one per profile, the least recently used going first (a
/// project's commands share a profile or a few: network closed, a rule's network, git's writes).
const MAX_AHEAD: usize = 4;

/// What a launcher started ahead is for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// Commands of exactly this profile: its walls are built already, around the launcher's own
    /// temporary folder.
    Walls(Box<SandboxProfile>),
    /// Any command with (`offline: false`) or without network whose walls are built with its request:
    /// one whose rules name hosts (its egress gate is its own). Namespaces only.
    Bare { offline: bool },
}

impl Key {
    fn of(profile: &SandboxProfile) -> Key {
        match profile.gated_egress() {
            Some(_) => Key::Bare { offline: true },
            None => Key::Walls(Box::new(profile.clone())),
        }
    }

    fn offline(&self) -> bool {
        match self {
            Key::Walls(profile) => !profile.network,
            Key::Bare { offline } => *offline,
        }
    }
}

/// Which file a place is: device, inode and birth time (an inode number is reused as soon as it is
/// free — and deleting or renaming over a place unmounts what covered it in other namespaces, freeing
/// it — but not with the same birth time). The change time where the file system keeps no birth time.
type FileIdentity = (u64, u64, Option<std::time::SystemTime>);

/// The hidden and read-only places of a profile as the host has them now (none where missing). Walls
/// built ahead cover the files that were there: one replaced since is not covered. The launcher checks
/// again, from inside, before the command runs (and refuses it); this check lets the hub start one in
/// line instead.
fn places(profile: &SandboxProfile) -> Vec<Option<FileIdentity>> {
    use std::os::unix::fs::MetadataExt;
    let at = |p: &PathBuf| {
        let m = std::fs::metadata(p).ok()?;
        let born = m.created().ok().or_else(|| {
            let ctime = u32::try_from(m.ctime_nsec()).ok();
            let secs = u64::try_from(m.ctime()).ok();
            secs.zip(ctime).map(|(s, n)| std::time::UNIX_EPOCH + std::time::Duration::new(s, n))
        });
        Some((m.dev(), m.ino(), born))
    };
    profile.hidden.iter().chain(&profile.read_only).map(at).collect()
}

/// A launcher process started ahead, not yet taken by a command: its output piped, in a process group of
/// its own, killed when dropped.
#[derive(Debug)]
struct Waiting {
    child: tokio::process::Child,
    conversation: Conversation,
    tmp: PrivateTmp,
    /// The hidden and read-only places as they were when the walls were sent ahead (see [`places`]).
    covered: Option<Vec<Option<FileIdentity>>>,
}

/// A launcher process taken for one command, waiting for its request: its output piped, in a process
/// group of its own, killed when dropped.
#[derive(Debug)]
pub struct Started {
    pub child: tokio::process::Child,
    pub conversation: Conversation,
    /// Keep until the command ended: the next launcher is started ahead then (see [`Replenish`]).
    pub replenish: Replenish,
    /// The command's own temporary folder: the request's `private_tmp` (the walls of a launcher started
    /// ahead are built around it; another folder is refused).
    pub tmp: PrivateTmp,
    /// The hidden and read-only places as they were when the walls were sent ahead (see [`places`]).
    covered: Option<Vec<Option<FileIdentity>>>,
}

/// The launcher for the next command is started ahead when this is dropped (the command this one was
/// taken for has ended), or [`REPLENISH_AFTER`] after it was taken, whichever comes first. A launcher
/// starting up (two `exec`s of this binary, the namespaces, the mounts, the walls) competes for the CPU
/// with the command it would follow; on a 2-core machine, starting it at once added ~0.3–0.5 ms to a
/// short command. Commands close together (one within a few ms of the last one's end) may find none
/// ready and start their own.
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

impl Started {
    /// Whether this launcher's walls were built ahead, for the profile it was taken for.
    pub fn built_ahead(&self) -> bool {
        self.covered.is_some()
    }
}

impl SandboxLauncher {
    pub fn new(program: impl Into<PathBuf>) -> Self {
        SandboxLauncher { program: program.into(), ahead: Arc::default(), resolver: Resolver::System }
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

    /// A launcher ready for one request for a command inside `profile`: the one started ahead for
    /// exactly this profile when it still waits and the places its walls hide or keep read-only are
    /// still the files they covered, else a new one (its walls built with the request). Either way
    /// another is started ahead for this profile once this one's [`Replenish`] drops: its namespaces
    /// made, its walls built around its own temporary folder, its second stage waiting, so a command
    /// pays only for its `exec` and what follows. The request must name `profile` and
    /// [`Started::tmp`]. A command whose rules name hosts gets one started ahead with namespaces only.
    /// Call it within a tokio runtime.
    pub fn start(&self, profile: &SandboxProfile) -> std::io::Result<Started> {
        let key = Key::of(profile);
        let ready = {
            let mut ahead = self.ahead.lock().unwrap_or_else(PoisonError::into_inner);
            ahead.iter().position(|(k, _)| *k == key).map(|i| ahead.remove(i).1)
        };
        let waiting = ready.and_then(|mut s| {
            let alive = matches!(s.child.try_wait(), Ok(None));
            let standing = s.covered.as_ref().is_none_or(|c| *c == places(profile));
            (alive && standing).then_some(s)
        });
        let started = match waiting {
            Some(s) => s,
            None => self.spawn_piped(key.offline(), PrivateTmp::new()?)?,
        };
        let next = self.clone();
        let (ended, ended_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            tokio::select! {
                _ = ended_rx => {}
                () = tokio::time::sleep(REPLENISH_AFTER) => {}
            }
            match next.spawn_ahead(&key).await {
                Ok(s) => next.keep(key, s),
                Err(e) => tracing::warn!(%e, "could not start a sandbox launcher ahead"),
            }
        });
        let Waiting { child, conversation, tmp, covered } = started;
        Ok(Started { child, conversation, replenish: Replenish { _ended: ended }, tmp, covered })
    }

    /// A launcher for `key`, its walls sent ahead when the key is a profile.
    async fn spawn_ahead(&self, key: &Key) -> std::io::Result<Waiting> {
        let mut started = self.spawn_piped(key.offline(), PrivateTmp::new()?)?;
        if let Key::Walls(profile) = key {
            started.covered = Some(places(profile));
            let walls = Walls { profile: (**profile).clone(), private_tmp: started.tmp.path().to_path_buf() };
            started.conversation.send_walls(&walls).await?;
        }
        Ok(started)
    }

    /// Keeps `started` ahead for `key`, in place of one for the same key, the least recently used going
    /// past [`MAX_AHEAD`] (dropped: killed, its folder removed).
    fn keep(&self, key: Key, started: Waiting) {
        let mut ahead = self.ahead.lock().unwrap_or_else(PoisonError::into_inner);
        ahead.retain(|(k, _)| *k != key);
        ahead.push((key, started));
        let extra = ahead.len().saturating_sub(MAX_AHEAD);
        ahead.drain(..extra);
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    fn spawn_piped(&self, offline: bool, tmp: PrivateTmp) -> std::io::Result<Waiting> {
        let (mut command, conversation) = self.command()?;
        if offline {
            command.arg(crate::OFFLINE);
        }
        command.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
        let child = command.spawn()?;
        // The command holds the launcher's end of the socket: dropped, the end is the launcher's alone.
        drop(command);
        Ok(Waiting { child, conversation, tmp, covered: None })
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
    /// held. Takes a few milliseconds; the hub runs it once at start, after sweeping the command folders
    /// that hubs killed earlier left behind.
    pub async fn probe(&self) -> SandboxSupport {
        let swept = crate::private_tmp::sweep_orphans(&std::env::temp_dir());
        if swept > 0 {
            tracing::info!(swept, "removed the command folders of hubs that were killed");
        }
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
    /// Sends the walls ahead of the request, as one line: the launcher builds them before the request
    /// comes, and runs only a request for them (the same profile and temporary folder, no egress gate).
    pub async fn send_walls(&mut self, walls: &Walls) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(walls).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.stream.write_all(&line).await
    }

    /// Sends the request, then reads the launcher's reports until the last (`Ended`, or `Failed`: the
    /// command did not run) or until the socket breaks.
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
                    Ok(report) => {
                        let last = matches!(report, LaunchReport::Ended { .. } | LaunchReport::Failed { .. });
                        reports.push(report);
                        if last {
                            break;
                        }
                    }
                    Err(e) => tracing::warn!(%e, "the sandbox launcher sent a report that is not valid"),
                },
            }
        }
        reports
    }
}
