//! The launcher's first stage, started by the hub: makes the namespaces, maps the hub's user to root
//! inside them (so the second stage may mount), starts the second stage as the first process of the new
//! PID namespace, and relays its reports to the hub.

use crate::channel::{from_stdin, read_request, send};
use crate::inheritance;
use crate::protocol::LaunchReport;
use crate::{ENTRY, INIT, OFFLINE, WALLS_FAILED};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{getgid, getuid};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
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

/// Waits until the second stage has something to say (`true`) or the hub's end of its socket is closed
/// (`false`: the hub was killed or crashed). A thread cannot watch instead: after `unshare` of a PID
/// namespace a process can make no thread, and before it a thread forbids the user namespace.
fn init_speaks_before_hub_goes(init: &UnixStream, hub: &UnixStream) -> bool {
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
                if gone(&fds[1]) {
                    return false;
                }
                if fds[0].revents().is_some_and(|r| !r.is_empty()) {
                    return true;
                }
            }
        }
    }
}

pub(crate) fn launch_main(offline: bool) -> i32 {
    let Ok(mut hub) = from_stdin() else { return WALLS_FAILED };
    // Nothing the hub was handed without close-on-exec goes further than this process.
    if let Err(message) = inheritance::close_inherited_descriptors() {
        send(&mut hub, &LaunchReport::failed("descriptors", message));
        return WALLS_FAILED;
    }

    // Everything up to the second stage waiting for the request is done before the request comes: a
    // hub keeps one launcher started ahead, so a command pays only for what depends on its profile.
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
    let started = UnixStream::pair().and_then(|(ours, theirs)| {
        let exe = std::env::current_exe()?;
        let mut command = Command::new(exe);
        command.arg(ENTRY).arg(INIT);
        if offline {
            command.arg(OFFLINE);
        }
        let child = command
            .env_clear()
            .env(IDS_VAR, format!("{} {}", ids.0, ids.1))
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .spawn()?;
        Ok((ours, child))
    });
    let (mut init, mut child) = match started {
        Ok(s) => s,
        Err(e) => {
            let message = format!("starting the sandbox's first process: {e}");
            send(&mut hub, &LaunchReport::failed("start", message));
            return WALLS_FAILED;
        }
    };
    let raw = match read_request(&mut hub) {
        Ok((raw, _)) => raw,
        Err(message) => {
            send(&mut hub, &LaunchReport::failed("request", message));
            return WALLS_FAILED;
        }
    };
    let _ = init.write_all(&raw);
    let _ = init.shutdown(std::net::Shutdown::Write);
    let mut ended = false;
    let mut reports = BufReader::new(&init);
    loop {
        // When the hub goes, this stage goes: the second stage dies with it (PR_SET_PDEATHSIG), and with
        // the second stage every process of the namespace.
        if !reports.buffer().contains(&b'\n') && !init_speaks_before_hub_goes(&init, &hub) {
            std::process::exit(WALLS_FAILED);
        }
        let mut line = String::new();
        match reports.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = line.trim_end_matches('\n');
        ended |= matches!(serde_json::from_str(line), Ok(LaunchReport::Ended { .. }));
        let _ = hub.write_all(line.as_bytes());
        let _ = hub.write_all(b"\n");
    }
    let status = child.wait();
    if !ended {
        let (exit_code, signal) = match &status {
            Ok(s) => (s.code(), s.signal()),
            Err(_) => (None, None),
        };
        send(&mut hub, &LaunchReport::Ended { exit_code, signal, limit: None });
    }
    0
}
