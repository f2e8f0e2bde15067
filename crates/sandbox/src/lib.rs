//! Portcullis sandbox: runs one command inside the walls of its profile. The hub starts its own binary
//! as the launcher (`<binary> sandbox-exec`); the launcher makes user, mount, PID, IPC and (without
//! network) network namespaces, starts itself again as the first process of the new PID namespace, and
//! that process hides the places no command may see, keeps protected places read-only, bounds the
//! process count, drops to the hub's own user, confines itself with Landlock and resource limits, and
//! only then starts the command, in a session of its own, without the descriptors the hub inherited and
//! with the terminal-injecting ioctls refused. Both stages are safe Rust (no `pre_exec`, no `fork`) but
//! for one reviewed `close_range` call (`inheritance.rs`).
//!
//! The hub side ([`SandboxLauncher`]) keeps launchers started ahead, one per recent profile with its
//! walls already built ([`Walls`]), sends the request over a socket on the launcher's standard input
//! and reads back what the walls hold, and how the command ended ([`LaunchReport`]). [`findings`] reads
//! what the kernel refused from the command's own error output.

pub mod changes;
mod channel;
mod client;
pub mod egress;
mod failure;
pub mod findings;
pub mod held;
mod inheritance;
mod init;
mod launcher;
pub mod masks;
pub mod overlay;
mod private_tmp;
mod protocol;
pub mod undo;
mod walls;

pub use client::{Conversation, REPLENISH_AFTER, Replenish, SandboxLauncher, Started};
pub use private_tmp::PrivateTmp;
pub use protocol::{Applied, LaunchReport, LaunchRequest, Walls};

/// The first argument that makes a Portcullis binary the launcher.
pub const ENTRY: &str = "sandbox-exec";
/// The second argument of the launcher's second stage (the new PID namespace's first process).
const INIT: &str = "--init";
/// The flag of a launcher started ahead for a command without network: its network namespace is made
/// before the request comes.
const OFFLINE: &str = "--offline";
/// The launcher's exit code when the walls could not be built (the command did not run).
pub const WALLS_FAILED: i32 = 125;

/// Set once `main` called [`entry_point`]: this binary can be the launcher.
static ENTRY_REGISTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The smallest profile that runs programs: the system folders programs start from, readable; `write`
/// writable; no network, default limits. The hub's probe, the bench and the launcher's tests use it; a
/// policy's profiles come from `portcullis_policy`.
pub fn system_only(write: Vec<std::path::PathBuf>) -> portcullis_harness::SandboxProfile {
    let system = ["/usr", "/bin", "/lib", "/lib64", "/etc"].iter().map(std::path::PathBuf::from);
    portcullis_harness::SandboxProfile {
        enforcement: portcullis_harness::Enforcement::Confined,
        system: system.filter(|p| p.exists()).collect(),
        read: Vec::new(),
        write,
        hidden: Vec::new(),
        read_only: Vec::new(),
        network: false,
        network_reason: None,
        egress: None,
        limits: portcullis_harness::SandboxLimits::default(),
        contained: None,
        direct_writes: None,
    }
}

/// The dedicated launcher's file name (`crates/sandbox/src/main.rs`), installed beside the CLI and the app.
pub const LAUNCHER_BINARY: &str = "portcullis-sandbox";

/// This binary as the launcher, when its `main` called [`entry_point`] (test binaries do not).
pub fn this_binary() -> Option<SandboxLauncher> {
    if !ENTRY_REGISTERED.load(std::sync::atomic::Ordering::SeqCst) {
        return None;
    }
    std::env::current_exe().ok().map(SandboxLauncher::new)
}

/// The launcher a hub uses: the dedicated `portcullis-sandbox` beside this program (small, so quick to
/// start; and the only choice for a program whose libraries start threads before `main`, as the desktop
/// app's do: a process with threads cannot make a user namespace), else this binary when its `main` is
/// the launcher's entry point (the CLI's is).
pub fn default_launcher() -> Option<SandboxLauncher> {
    let sibling = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.join(LAUNCHER_BINARY)));
    match sibling {
        Some(path) if path.is_file() => Some(SandboxLauncher::new(path)),
        _ => this_binary(),
    }
}

/// Runs the launcher when this process was started as one (`<binary> sandbox-exec [--init]`), and
/// returns its exit code; `None` otherwise. Call it first in `main`, before any thread starts (a
/// process with threads cannot make a user namespace). In every process it first marks the descriptors
/// above 2 it inherited close-on-exec, so none reaches a command, confined or not.
pub fn entry_point() -> Option<i32> {
    ENTRY_REGISTERED.store(true, std::sync::atomic::Ordering::SeqCst);
    // Whatever this process was handed without close-on-exec (a descriptor its parent shell left open)
    // goes no further than this process: not to a command run unconfined, nor to any other child.
    if let Err(e) = inheritance::close_inherited_descriptors() {
        tracing::debug!(%e, "inherited descriptors are not marked close-on-exec");
    }
    let mut args = std::env::args_os().skip(1);
    if args.next()? != ENTRY {
        return None;
    }
    let rest: Vec<std::ffi::OsString> = args.collect();
    let offline = rest.iter().any(|a| a == OFFLINE);
    Some(match rest.first() {
        Some(flag) if flag == INIT => init::init_main(offline),
        None => launcher::launch_main(false),
        Some(flag) if flag == OFFLINE && rest.len() == 1 => launcher::launch_main(true),
        Some(_) => 2,
    })
}
