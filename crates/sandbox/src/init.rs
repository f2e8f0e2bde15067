//! The launcher's second stage: the first process of the command's PID namespace. It builds the walls
//! (see [`crate::walls`]), starts the command, reaps every process left to it, ends them all at the
//! process limit, and reports how the command ended. When it exits, the kernel ends every process still
//! in the namespace: nothing a command started outlives it.

use crate::WALLS_FAILED;
use crate::channel::{from_stdin, read_request, send};
use crate::egress;
use crate::inheritance;
use crate::launcher::IDS_VAR;
use crate::protocol::LaunchReport;
use crate::walls;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;
use std::io::Write;
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

/// Ends every process of the namespace (but this one) once more than `limit` run.
fn watchdog(limit: u32, tripped: Arc<AtomicBool>) {
    let _ = std::thread::Builder::new().name("process-watchdog".into()).spawn(move || {
        loop {
            std::thread::sleep(WATCH_EVERY);
            if process_count() >= limit as usize {
                tripped.store(true, Ordering::SeqCst);
                // -1 from the namespace's first process: every other process in the namespace.
                let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
            }
        }
    });
}

pub(crate) fn init_main(offline: bool) -> i32 {
    let Ok(mut launcher) = from_stdin() else { return WALLS_FAILED };
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
    let request = match read_request(&mut launcher) {
        Ok((_, r)) => r,
        Err(message) => {
            send(&mut launcher, &LaunchReport::failed("request", message));
            return WALLS_FAILED;
        }
    };
    let mut built = match walls::build(&request, ids, &prepared) {
        Ok(b) => b,
        Err((step, message)) => {
            send(&mut launcher, &LaunchReport::failed(step, message));
            return WALLS_FAILED;
        }
    };
    let proxied = built.relay.is_some();
    if let Some(plumbing) = built.relay.take()
        && let Err(message) = egress::relay::start(plumbing)
    {
        send(&mut launcher, &LaunchReport::failed("the egress relay", message));
        return WALLS_FAILED;
    }
    if let Err(message) = inheritance::refuse_from_command(!request.profile.network) {
        send(&mut launcher, &LaunchReport::failed("seccomp", message));
        return WALLS_FAILED;
    }
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
    send(&mut launcher, &LaunchReport::Confined { applied: built.applied });
    if let (Some(input), Some(mut pipe)) = (request.stdin, child.stdin.take()) {
        let _ = std::thread::Builder::new().name("stdin".into()).spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
    }
    let tripped = Arc::new(AtomicBool::new(false));
    watchdog(built.processes, tripped.clone());
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
