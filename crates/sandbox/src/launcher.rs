//! The launcher's first stage, started by the hub: makes the namespaces, maps the hub's user to root
//! inside them (so the second stage may mount), starts the second stage as the first process of the new
//! PID namespace with the hub's socket as its standard input (the walls, the request and the reports go
//! between the hub and the second stage directly), and stays only to end it when the hub goes.

use crate::channel::{from_stdin, send};
use crate::inheritance;
use crate::protocol::LaunchReport;
use crate::{ENTRY, INIT, OFFLINE, WALLS_FAILED};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{getgid, getuid};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// The variable that tells the second stage the hub's user and group (`uid gid`).
pub(crate) const IDS_VAR: &str = "PORTCULLIS_SANDBOX_IDS";

/// Writes this process's user and group maps: `inside` is `outside` in the parent namespace.
pub(crate) fn map_ids(inside: (u32, u32), outside: (u32, u32)) -> std::io::Result<()> {
    match std::fs::write("/proc/self/setgroups", "deny") {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::write("/proc/self/uid_map", format!("{} {} 1\n", inside.0, outside.0))?;
    std::fs::write("/proc/self/gid_map", format!("{} {} 1\n", inside.1, outside.1))
}

/// Waits until the second stage has ended (`true`) or the hub's end of its socket is closed (`false`:
/// the hub was killed or crashed). A thread cannot watch instead: after `unshare` of a PID namespace a
/// process can make no thread, and before it a thread forbids the user namespace.
fn init_ends_before_hub_goes(init: &OwnedFd, hub: &UnixStream) -> bool {
    loop {
        let mut fds =
            [PollFd::new(init.as_fd(), PollFlags::POLLIN), PollFd::new(hub.as_fd(), PollFlags::empty())];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return true,
            Ok(_) => {
                let gone = |fd: &PollFd<'_>| {
                    fd.revents().is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
                };
                if fds[0].revents().is_some_and(|r| !r.is_empty()) {
                    return true;
                }
                if gone(&fds[1]) {
                    return false;
                }
            }
        }
    }
}

/// Points this process's standard output and error at `/dev/null`: the command's output pipes are then
/// held by the command alone, and end when it does.
pub(crate) fn let_go_of_output() -> Result<(), String> {
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null").map_err(|e| e.to_string())?;
    nix::unistd::dup2_stdout(&null).and_then(|()| nix::unistd::dup2_stderr(&null)).map_err(|e| e.to_string())
}

pub(crate) fn launch_main(offline: bool) -> i32 {
    let Ok(mut hub) = from_stdin() else { return WALLS_FAILED };
    // Nothing the hub was handed without close-on-exec goes further than this process.
    if let Err(message) = inheritance::close_inherited_descriptors() {
        send(&mut hub, &LaunchReport::failed("descriptors", message));
        return WALLS_FAILED;
    }

    // Everything up to the second stage waiting for the walls or the request is done before either
    // comes: a hub keeps launchers started ahead, so a command pays only for what is left.
    let ids = (getuid().as_raw(), getgid().as_raw());
    let flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC;
    if let Err(e) = unshare(flags) {
        let message = format!("the kernel refused new namespaces: {e}");
        send(&mut hub, &LaunchReport::failed("namespaces", message));
        return WALLS_FAILED;
    }
    if let Err(e) = map_ids((0, 0), ids) {
        let message = format!("mapping the user into the namespace: {e}");
        send(&mut hub, &LaunchReport::failed("namespaces", message));
        return WALLS_FAILED;
    }
    let started = hub.try_clone().and_then(|theirs| {
        let exe = std::env::current_exe()?;
        let mut command = Command::new(exe);
        command.arg(ENTRY).arg(INIT);
        if offline {
            command.arg(OFFLINE);
        }
        command
            .env_clear()
            .env(IDS_VAR, format!("{} {}", ids.0, ids.1))
            // The launcher may be a front end's binary whose allocator is mimalloc (`portcullis` when
            // no `portcullis-sandbox` lies beside it, as after `cargo install --path crates/cli`):
            // mimalloc reserves a 1 GiB arena up front, which would count against the RLIMIT_DATA the
            // first process sets on itself before it starts the command, and fail that start under a
            // memory limit near 1 GiB. Reserve nothing up front there.
            .env("MIMALLOC_ARENA_RESERVE", "0")
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .spawn()
    });
    let mut child = match started {
        Ok(c) => c,
        Err(e) => {
            let message = format!("starting the sandbox's first process: {e}");
            send(&mut hub, &LaunchReport::failed("start", message));
            return WALLS_FAILED;
        }
    };
    let watched = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX))
        .ok_or(rustix::io::Errno::SRCH)
        .and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()));
    let init = match watched.map_err(|e| e.to_string()).and_then(|fd| let_go_of_output().map(|()| fd)) {
        Ok(fd) => fd,
        Err(message) => {
            let _ = child.kill();
            let _ = child.wait();
            send(&mut hub, &LaunchReport::failed("start", format!("watching the first process: {message}")));
            return WALLS_FAILED;
        }
    };
    // When the hub goes, this stage goes: the second stage dies with it (PR_SET_PDEATHSIG), and with
    // the second stage every process of the namespace.
    if !init_ends_before_hub_goes(&init, &hub) {
        std::process::exit(WALLS_FAILED);
    }
    let status = child.wait();
    // The second stage exits 0 after its `Ended` report and WALLS_FAILED after its `Failed` one; ended
    // otherwise (killed), it said nothing: say how it ended.
    let reported = matches!(&status, Ok(s) if matches!(s.code(), Some(0) | Some(WALLS_FAILED)));
    if !reported {
        let (exit_code, signal) = match &status {
            Ok(s) => (s.code(), s.signal()),
            Err(_) => (None, None),
        };
        send(&mut hub, &LaunchReport::Ended { exit_code, signal, limit: None });
    }
    0
}
