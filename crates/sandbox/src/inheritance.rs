//! What a confined command must not inherit from the hub or from the operator's terminal: descriptors the
//! hub was given without close-on-exec (an `echo x >&7` would write through one, past Landlock), the
//! controlling terminal (a new session without one: `/dev/tty` cannot be opened), the terminal ioctls that
//! push input into another program's terminal (`TIOCSTI`, `TIOCLINUX`, refused by seccomp as well), a
//! reach into the sandbox's other processes (ptrace and its kin), io_uring (whose operations pass the
//! filter unseen), new Unix sockets when it has no network
//! (a host service's socket is a way out Landlock does not guard), and a life of its own (it dies with
//! the launcher, which dies with the hub).

use nix::sys::signal::Signal;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};
use std::collections::BTreeMap;

/// `ioctl` requests refused inside: each pushes bytes into a terminal's input as if typed there.
pub(crate) const REFUSED_IOCTLS: &[(u64, &str)] = &[
    (0x5412, "TIOCSTI: types characters into the terminal's input"),
    (0x541C, "TIOCLINUX: the Linux console's selection paste types into it"),
];

/// Marks every descriptor above 2 close-on-exec: whatever this process was given (by the hub, and the hub
/// by whoever started it) ends at the next `exec`. Nothing is closed, so no descriptor this process owns
/// is invalidated.
#[allow(unsafe_code)]
pub(crate) fn close_inherited_descriptors() -> Result<(), String> {
    // SAFETY (reviewed exception to the workspace's `unsafe_code` rule): `close_range` with
    // CLOSE_RANGE_CLOEXEC only sets the close-on-exec flag on descriptors 3 and up; it closes nothing,
    // takes no pointers, and cannot invalidate a descriptor Rust code owns. No safe wrapper exists in
    // the crates the workspace uses (nix and rustix take a borrowed descriptor, which needs one per fd).
    let done = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) };
    if done == 0 {
        return Ok(());
    }
    Err(format!("close_range: {}", std::io::Error::last_os_error()))
}

/// A new session, with no controlling terminal: `/dev/tty` is `ENXIO` inside, and no terminal's
/// foreground group is the command's.
pub(crate) fn new_session() -> Result<(), String> {
    nix::unistd::setsid().map(drop).map_err(|e| format!("setsid: {e}"))
}

/// Dies (SIGKILL) when the process that started this one dies.
pub(crate) fn die_with_parent() -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| format!("PR_SET_PDEATHSIG: {e}"))
}

/// System calls refused to every confined command: each reaches into another process of the sandbox
/// (its first process holds the launcher's socket and, for egress by name, the relay to the proxy).
pub(crate) const REFUSED_CALLS: &[(i64, &str)] = &[
    (libc::SYS_ptrace, "ptrace: would read and write the sandbox's first process"),
    (libc::SYS_process_vm_readv, "process_vm_readv: reads another process's memory"),
    (libc::SYS_process_vm_writev, "process_vm_writev: writes another process's memory"),
    (libc::SYS_pidfd_getfd, "pidfd_getfd: copies another process's descriptors"),
    // io_uring makes sockets and connects them without the `socket` call the filter below sees.
    (libc::SYS_io_uring_setup, "io_uring_setup: system calls past this filter"),
    (libc::SYS_io_uring_enter, "io_uring_enter: system calls past this filter"),
    (libc::SYS_io_uring_register, "io_uring_register: system calls past this filter"),
];

/// The x32 ABI's bit on x86-64 system call numbers.
const X32_BIT: i64 = 0x4000_0000;

/// The x32 ABI's own numbers for calls whose arguments differ from x86-64's (the kernel's syscall table).
const X32_OWN: &[(i64, i64)] = &[
    (libc::SYS_ioctl, 514),
    (libc::SYS_ptrace, 521),
    (libc::SYS_process_vm_readv, 539),
    (libc::SYS_process_vm_writev, 540),
];

/// Every number `call` goes by on this machine: on x86-64 also the x32 ABI's (the same number with the
/// x32 bit, or x32's own), which a kernel with x32 enabled would let past a rule on the x86-64 number.
fn numbers(call: i64) -> Vec<i64> {
    if !cfg!(target_arch = "x86_64") {
        return vec![call];
    }
    let own = X32_OWN.iter().find(|(c, _)| *c == call).map(|(_, x32)| x32 | X32_BIT);
    [Some(call), Some(call | X32_BIT), own].into_iter().flatten().collect()
}

/// The seccomp filter refusing, with `EPERM`: [`REFUSED_IOCTLS`] (only the low 32 bits of the request
/// count, as the kernel reads them, so high bits set do not slip past), [`REFUSED_CALLS`], and when
/// `no_unix_sockets` (a command without the host's network) new Unix sockets: Landlock does not guard
/// `connect` to a socket by path, so a host service's socket (`/run/docker.sock`) would be a way out.
/// Socket pairs, which reach no one else, stay allowed.
pub(crate) fn command_filter(no_unix_sockets: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("seccomp: {e}"))?;
    let seccomp = |e: seccompiler::BackendError| format!("seccomp: {e}");
    let mut rules = Vec::new();
    for (request, _) in REFUSED_IOCTLS {
        let condition =
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *request).map_err(seccomp)?;
        rules.push(SeccompRule::new(vec![condition]).map_err(seccomp)?);
    }
    let mut calls = BTreeMap::new();
    for number in numbers(libc::SYS_ioctl) {
        calls.insert(number, rules.clone());
    }
    for (call, _) in REFUSED_CALLS {
        for number in numbers(*call) {
            calls.insert(number, Vec::new());
        }
    }
    if no_unix_sockets {
        let unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)
            .map_err(seccomp)?;
        let rule = SeccompRule::new(vec![unix]).map_err(seccomp)?;
        for number in numbers(libc::SYS_socket) {
            calls.insert(number, vec![rule.clone()]);
        }
    }
    let filter =
        SeccompFilter::new(calls, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(|e| format!("seccomp: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp: {e}"))
}

/// Installs [`command_filter`] on this thread (and so on the command it starts).
pub(crate) fn refuse_from_command(no_unix_sockets: bool) -> Result<(), String> {
    let program = command_filter(no_unix_sockets)?;
    seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_machine_with_a_row_per_request() {
        assert_eq!(REFUSED_IOCTLS.len(), 2);
        for (request, why) in REFUSED_IOCTLS {
            assert!(*request > 0 && !why.is_empty());
        }
        assert_eq!(REFUSED_IOCTLS[0].0, libc::TIOCSTI);
        assert!(command_filter(false).is_ok_and(|p| !p.is_empty()));
        let (open, closed) = (command_filter(false).unwrap(), command_filter(true).unwrap());
        assert!(closed.len() > open.len(), "Unix sockets add a rule");
        assert_eq!(REFUSED_CALLS.len(), 7);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(numbers(libc::SYS_socket), vec![41, 41 | X32_BIT]);
            assert_eq!(numbers(libc::SYS_ptrace), vec![101, 101 | X32_BIT, 521 | X32_BIT]);
            assert_eq!(numbers(libc::SYS_ioctl), vec![16, 16 | X32_BIT, 514 | X32_BIT]);
        }
    }
}
