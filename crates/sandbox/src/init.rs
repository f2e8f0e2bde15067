//! The launcher's second stage: the first process of the command's PID namespace. It builds the walls
//! (see [`crate::walls`]) — before the request comes, when the hub sent them ahead for a profile —
//! starts the command, reaps every process left to it, ends them all at the process limit, and once the
//! command ended, ends and reaps what it left before reporting how it ended: nothing a command started
//! outlives that report (and when this process exits, the kernel ends whatever is still in the namespace).

use crate::WALLS_FAILED;
use crate::channel::{First, Incoming, from_stdin, send};
use crate::egress;
use crate::inheritance;
use crate::launcher::{IDS_VAR, let_go_of_output};
use crate::protocol::LaunchReport;
use crate::walls;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;
use portcullis_harness::SandboxProfile;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the watchdog counts the namespace's processes.
const WATCH_EVERY: Duration = Duration::from_millis(20);

fn ids() -> Option<(u32, u32)> {
    let text = std::env::var(IDS_VAR).ok()?;
    let (uid, gid) = text.split_once(' ')?;
    Some((uid.parse().ok()?, gid.parse().ok()?))
}

/// The processes in this PID namespace besides this one.
fn process_count() -> usize {
    std::fs::read_dir("/proc").map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
            .count()
            .saturating_sub(1)
    })
}

/// Ends every process of the namespace (but this one) once more than `limit` run. Started before the
/// command (with the walls); it counts once `go` says the command started.
fn watchdog(limit: u32, tripped: Arc<AtomicBool>) -> std::sync::mpsc::Sender<()> {
    let (go, started) = std::sync::mpsc::channel::<()>();
    let _ = std::thread::Builder::new().name("process-watchdog".into()).spawn(move || {
        if started.recv().is_err() {
            return;
        }
        loop {
            std::thread::sleep(WATCH_EVERY);
            if process_count() >= limit as usize {
                tripped.store(true, Ordering::SeqCst);
                // -1 from the namespace's first process: every other process in the namespace.
                let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
            }
        }
    });
    go
}

/// The walls up around this process and what comes with them: the egress relay started, the seccomp
/// filter installed, the watchdog waiting.
struct Ready {
    built: walls::Built,
    proxied: bool,
    tripped: Arc<AtomicBool>,
    go: std::sync::mpsc::Sender<()>,
}

fn ready(
    profile: &SandboxProfile,
    private_tmp: &Path,
    gate: Option<&Path>,
    ids: (u32, u32),
    prepared: &walls::Prepared,
) -> Result<Ready, (&'static str, String)> {
    let mut built = walls::build(profile, private_tmp, gate, ids, prepared)?;
    let proxied = built.relay.is_some();
    if let Some(plumbing) = built.relay.take() {
        egress::relay::start(plumbing).map_err(|m| ("the egress relay", m))?;
    }
    inheritance::refuse_from_command(!profile.network).map_err(|m| ("seccomp", m))?;
    let tripped = Arc::new(AtomicBool::new(false));
    let go = watchdog(built.processes, tripped.clone());
    Ok(Ready { built, proxied, tripped, go })
}

/// Ends every process of the namespace but this one and reaps them all: once this returns, nothing the
/// command started is left (orphans are this process's children; none can fork past a SIGKILL).
fn end_the_rest() {
    let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    // Until ECHILD: no child is left (an orphan is this process's child before its parent is reaped).
    while let Ok(_) | Err(nix::errno::Errno::EINTR) = waitpid(Pid::from_raw(-1), None) {}
}

pub(crate) fn init_main(offline: bool) -> i32 {
    let Ok(stream) = from_stdin() else { return WALLS_FAILED };
    let Ok(mut launcher) = stream.try_clone() else { return WALLS_FAILED };
    let mut incoming = Incoming::new(stream);
    // Dies with the first stage (so with the hub): the kernel then ends the whole namespace. A session of
    // its own: the operator's terminal is nobody's controlling terminal in here.
    let detached = inheritance::die_with_parent()
        .and_then(|()| inheritance::close_inherited_descriptors())
        .and_then(|()| inheritance::new_session());
    if let Err(message) = detached {
        send(&mut launcher, &LaunchReport::failed("detaching from the hub", message));
        return WALLS_FAILED;
    }
    let Some(ids) = ids() else {
        send(&mut launcher, &LaunchReport::failed("request", "the hub's user is not known"));
        return WALLS_FAILED;
    };
    // Before the request: what every command gets.
    let prepared = match walls::prepare(offline) {
        Ok(p) => p,
        Err((step, message)) => {
            send(&mut launcher, &LaunchReport::failed(step, message));
            return WALLS_FAILED;
        }
    };
    let prepared_request = match incoming.first() {
        // A launcher started ahead for a profile: its walls go up now, and the request must be for them.
        Ok(First::Walls(walls)) => {
            ready(&walls.profile, &walls.private_tmp, None, ids, &prepared).and_then(|ready| {
                let request = incoming.request().map_err(|m| ("request", m))?;
                if !walls.fit(&request) {
                    let message = "the request is not for the walls this launcher built";
                    return Err(("walls built ahead", message.to_owned()));
                }
                walls::still_standing(&walls.profile)?;
                Ok((request, ready))
            })
        }
        Ok(First::Request(request)) => {
            let gate = request.gate.clone();
            ready(&request.profile, &request.private_tmp, gate.as_deref(), ids, &prepared)
                .map(|ready| (*request, ready))
        }
        Err(message) => Err(("request", message)),
    };
    let (request, ready) = match prepared_request {
        Ok(r) => r,
        Err((step, message)) => {
            send(&mut launcher, &LaunchReport::failed(step, message));
            return WALLS_FAILED;
        }
    };
    let Ready { built, proxied, tripped, go } = ready;
    let mut command = Command::new(&request.program);
    command
        .args(&request.args)
        .env_clear()
        .envs(request.env.iter().filter(|(k, _)| k != "TMPDIR").map(|(k, v)| (k, v)))
        .env("TMPDIR", &built.tmp)
        .envs(if proxied { egress::PROXY_VARIABLES } else { &[] }.iter().copied())
        .current_dir(&request.cwd)
        .stdin(if request.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let message = format!("{}: {e}", request.program.display());
            send(&mut launcher, &LaunchReport::failed("starting the command", message));
            return WALLS_FAILED;
        }
    };
    // The output pipes are the command's alone now: they end when its last process does.
    let _ = let_go_of_output();
    send(&mut launcher, &LaunchReport::Confined { applied: built.applied });
    if let (Some(input), Some(mut pipe)) = (request.stdin, child.stdin.take()) {
        let _ = std::thread::Builder::new().name("stdin".into()).spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
    }
    let _ = go.send(());
    let main = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let (exit_code, signal) = loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => break (Some(code), None),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => break (None, Some(sig)),
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => break (None, None),
        }
    };
    // What the command left running goes before the report that it ended.
    end_the_rest();
    let limit = if tripped.load(Ordering::SeqCst) {
        Some("processes")
    } else {
        match signal {
            Some(Signal::SIGXFSZ) => Some("file_size"),
            Some(Signal::SIGXCPU) => Some("cpu"),
            _ => None,
        }
    };
    send(
        &mut launcher,
        &LaunchReport::Ended { exit_code, signal: signal.map(|s| s as i32), limit: limit.map(str::to_owned) },
    );
    0
}
