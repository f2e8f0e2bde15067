//! The walls, built by the second stage before the command starts, in this order: mounts (a private
//! view, a new `/proc`, a copy-on-write layer over each write root, hidden and read-only places, a
//! private `/tmp` and `/dev/shm`), the process
//! count, the drop to the hub's own user, Landlock, resource limits. Every step that fails stops the
//! command: it never runs behind half-built walls.

use crate::egress::{PROXY_PORT, relay};
use crate::failure::Failure;
use crate::launcher::map_ids;
use crate::protocol::Applied;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::resource::{Resource, setrlimit};
use portcullis_harness::{SandboxLimits, SandboxProfile};
use std::path::{Path, PathBuf};

/// Devices a command may read and write. Not `/dev/tty`: the command has no controlling terminal, and no
/// terminal of the operator's is to be opened by path either.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// The Landlock ABI the rules are written for (the kernel may offer less; what it offers is reported).
const ABI_USED: ABI = ABI::V6;

/// PIDs below this are the kernel's to hand out only before the first wrap (`RESERVED_PIDS`): after it,
/// a PID namespace allocates from here to its `pid_max`.
const RESERVED_PIDS: u32 = 300;

/// Room the namespace keeps above the process limit, so a command pressing against the kernel's bound
/// is always seen above the limit by the watchdog (which then ends it, and says so).
const PID_HEADROOM: u32 = 32;

/// The namespace's `pid_max` for a process limit: even after PIDs wrap, the limit and the headroom fit.
/// (The kernel accepts nothing under 301.)
fn pid_max(processes: u32) -> u32 {
    RESERVED_PIDS + processes + PID_HEADROOM
}

fn fail(step: &'static str) -> impl FnOnce(nix::errno::Errno) -> Failure {
    move |e| (step, e.to_string())
}

/// What the second stage built, for the command it starts.
pub(crate) struct Built {
    pub applied: Applied,
    /// `TMPDIR` inside.
    pub tmp: PathBuf,
    /// The process count the watchdog enforces (the namespace's `pid_max` bounds it too).
    pub processes: u32,
    /// The egress relay to start before the command (its rules name hosts and the hub opened a gate).
    pub relay: Option<relay::Plumbing>,
}

/// The file a command's name lookups read their servers from: empty inside, so every resolver falls
/// back to 127.0.0.1, where the relay's stub refuses (and reports) every question.
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// What the second stage builds before its request comes (the same for every command): a private view
/// of the mounts and a `/proc` of the new PID namespace.
pub(crate) struct Prepared {
    /// Why `/proc` is still the host's, if it is.
    proc_error: Option<String>,
    /// The network namespace is made already (a launcher started ahead for commands without network).
    offline: bool,
}

pub(crate) fn prepare(offline: bool) -> Result<Prepared, Failure> {
    let none: Option<&str> = None;
    if offline {
        unshare(CloneFlags::CLONE_NEWNET).map_err(fail("a network namespace"))?;
    }
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).map_err(fail("private mounts"))?;
    let proc_mounted = mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        none,
    );
    Ok(Prepared { proc_error: proc_mounted.err().map(|e| e.to_string()), offline })
}

/// The walls of `profile` around this process: `private_tmp` the command's own temporary folder, `gate`
/// its egress gate (rules that name hosts).
pub(crate) fn build(
    profile: &SandboxProfile,
    private_tmp: &Path,
    gate: Option<&Path>,
    ids: (u32, u32),
    prepared: &Prepared,
) -> Result<Built, Failure> {
    let mut applied = Applied {
        namespaces: ["user", "mount", "pid", "ipc"].iter().map(|s| (*s).to_owned()).collect(),
        ..Applied::default()
    };
    match (profile.network, prepared.offline) {
        (true, true) => {
            return Err((
                "a network namespace",
                "this launcher was started for commands without network".into(),
            ));
        }
        (true, false) => {}
        (false, offline) => {
            if !offline {
                // Still root of the first user namespace: a network namespace of its own, empty.
                unshare(CloneFlags::CLONE_NEWNET).map_err(fail("a network namespace"))?;
            }
            applied.namespaces.push("net".into());
        }
    }
    // Egress by name: loopback, the proxy port and the stub resolver, and the gate's folder held open,
    // all before the walls hide it. Rules that name hosts with no gate: no network at all.
    let egress = profile.gated_egress().is_some();
    let relay = match (gate, egress) {
        (Some(gate), true) => Some(relay::prepare(gate)?),
        _ => None,
    };
    let none: Option<&str> = None;
    if let Some(e) = &prepared.proc_error {
        applied.notes.push(format!(
            "/proc is the host's ({e}); Landlock still keeps other processes' memory and environment closed"
        ));
    }
    let limits = profile.limits;
    let sized = prepared
        .proc_error
        .is_none()
        .then(|| std::fs::write("/proc/sys/kernel/pid_max", pid_max(limits.processes).to_string()));
    applied.processes = match sized {
        Some(Ok(())) => format!("{} processes (the PID namespace's size, watched)", limits.processes),
        _ => {
            applied
                .notes
                .push("this kernel cannot size a PID namespace: only the watchdog counts processes".into());
            format!("{} processes (watched)", limits.processes)
        }
    };
    // The write roots' copy-on-write layers first: the hidden and read-only places then cover the
    // overlays' view (a mount under a root would not be seen through an overlay mounted over it).
    crate::overlay::mount_layers(profile, private_tmp)?;
    for place in &profile.hidden {
        hide(place)?;
    }
    for place in &profile.read_only {
        read_only(place)?;
    }
    if let Some(contained) = &profile.contained {
        crate::masks::mask(&contained.masked, private_tmp)?;
    }
    if relay.is_some() && Path::new(RESOLV_CONF).exists() {
        hide(Path::new(RESOLV_CONF))?;
    }
    if Path::new("/dev/shm").is_dir()
        && let Err(e) = mount(
            Some("tmpfs"),
            "/dev/shm",
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("size=64m,mode=1777"),
        )
    {
        applied.notes.push(format!("/dev/shm is not private ({e}); it is not writable either"));
    }
    let granted = || profile.system.iter().chain(&profile.read).chain(&profile.write);
    let tmp = if granted().any(|p| p.starts_with("/tmp")) {
        private_tmp.to_path_buf()
    } else {
        mount(Some(private_tmp), "/tmp", none, MsFlags::MS_BIND, none).map_err(fail("private /tmp"))?;
        PathBuf::from("/tmp")
    };
    unshare(CloneFlags::CLONE_NEWUSER).map_err(fail("dropping to the hub's user"))?;
    map_ids(ids, (0, 0)).map_err(|e| ("dropping to the hub's user", e.to_string()))?;
    landlock(profile, &tmp, relay.is_some(), &mut applied)?;
    resource_limits(&limits)?;
    if relay.is_some() {
        applied.notes.push(format!(
            "network only through the hub's egress proxy (127.0.0.1:{PROXY_PORT}); no resolver but its stub, which refuses"
        ));
    }
    Ok(Built { applied, tmp, processes: limits.processes, relay })
}

/// Makes `place` empty inside: an empty read-only tmpfs over a folder, the null device over a file. A
/// place that does not exist is made first, as an empty folder (the profile lists missing places only
/// where nothing may be created: a project's `.portcullis`), so it cannot be created inside either.
fn hide(place: &Path) -> Result<(), Failure> {
    let none: Option<&str> = None;
    let step = "hiding a place";
    let what = |e: nix::errno::Errno| (step, format!("{}: {e}", place.display()));
    let meta = match std::fs::metadata(place) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                .create(place)
                .and_then(|()| std::fs::metadata(place))
                .map_err(|e| (step, format!("{}: {e}", place.display())))?
        }
        Err(e) => return Err((step, format!("{}: {e}", place.display()))),
    };
    match meta {
        meta if meta.is_dir() => mount(
            Some("tmpfs"),
            place,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,mode=000"),
        )
        .map_err(what),
        _ => {
            mount(Some("/dev/null"), place, none, MsFlags::MS_BIND, none).map_err(what)?;
            mount(none, place, none, MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY, none)
                .map_err(what)
        }
    }
}

/// Whether the hidden and read-only places of walls built ahead still stand: each is a read-only mount
/// here. A place replaced on the host since (a file renamed over, a folder made again) is another file,
/// which no mount covers: it would be seen, or written, as it is. Checked before the command of a
/// launcher started ahead runs; a place that fails stops it.
pub(crate) fn still_standing(profile: &SandboxProfile) -> Result<(), Failure> {
    use rustix::fs::{AtFlags, CWD, StatxAttributes, StatxFlags, statx};
    let kept = profile.read_only.iter().filter(|p| std::fs::symlink_metadata(p).is_ok());
    for place in profile.hidden.iter().chain(kept) {
        let gone = |why: String| ("walls built ahead", format!("{}: {why}", place.display()));
        let found =
            statx(CWD, place, AtFlags::empty(), StatxFlags::BASIC_STATS).map_err(|e| gone(e.to_string()))?;
        if !found.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT) {
            return Err(gone("this kernel does not say where mounts are".into()));
        }
        if !found.stx_attributes.contains(StatxAttributes::MOUNT_ROOT) {
            return Err(gone("replaced since the walls were built".into()));
        }
        let flags = nix::sys::statvfs::statvfs(place).map_err(|e| gone(e.to_string()))?.flags();
        if !flags.contains(nix::sys::statvfs::FsFlags::ST_RDONLY) {
            return Err(gone("not read-only".into()));
        }
    }
    Ok(())
}

/// Keeps `place` read-only inside.
fn read_only(place: &Path) -> Result<(), Failure> {
    let none: Option<&str> = None;
    let what = |e: nix::errno::Errno| ("keeping a place read-only", format!("{}: {e}", place.display()));
    if std::fs::symlink_metadata(place).is_err() {
        return Ok(());
    }
    mount(Some(place), place, none, MsFlags::MS_BIND | MsFlags::MS_REC, none).map_err(what)?;
    mount(none, place, none, MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY, none).map_err(what)
}

fn existing<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> Vec<&'a PathBuf> {
    paths.into_iter().filter(|p| p.exists()).collect()
}

/// Confines this process (and so the command) with Landlock: reads only beneath the readable trees,
/// writes only beneath the writable ones, no TCP without network (but to the egress proxy's port when
/// `proxy`), no signals or abstract sockets out.
fn landlock(profile: &SandboxProfile, tmp: &Path, proxy: bool, applied: &mut Applied) -> Result<(), Failure> {
    let err = |e: landlock::RulesetError| ("Landlock", e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(err)?;
    if !profile.network {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI_USED)).map_err(err)?;
    }
    let readable: Vec<&PathBuf> = existing(profile.system.iter().chain(&profile.read));
    let writable: Vec<&PathBuf> = existing(&profile.write);
    let proc_dir = PathBuf::from("/proc");
    let shm = PathBuf::from("/dev/shm");
    let tmp = tmp.to_path_buf();
    let devices: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).filter(|p| p.exists()).collect();
    let proxy_port = proxy.then(|| NetPort::new(PROXY_PORT, AccessNet::ConnectTcp));
    let status = ruleset
        .scope(Scope::from_all(ABI_USED))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rules(proxy_port.into_iter().map(Ok::<_, landlock::RulesetError>))
        .map_err(err)?
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(ABI_USED)))
        .map_err(err)?
        .add_rules(path_beneath_rules([&proc_dir], AccessFs::ReadFile | AccessFs::ReadDir))
        .map_err(err)?
        .add_rules(path_beneath_rules(writable.into_iter().chain([&tmp]), AccessFs::from_all(ABI_USED)))
        .map_err(err)?
        .add_rules(path_beneath_rules(existing([&shm]), AccessFs::from_all(ABI_USED)))
        .map_err(err)?
        .add_rules(path_beneath_rules(&devices, AccessFs::from_file(ABI_USED)))
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    applied.landlock = match status.ruleset {
        RulesetStatus::FullyEnforced => "fully enforced".into(),
        RulesetStatus::PartiallyEnforced => {
            "partially enforced (an older kernel: some rights unhandled)".into()
        }
        RulesetStatus::NotEnforced => {
            return Err(("Landlock", "this kernel does not enforce Landlock".into()));
        }
    };
    applied.landlock_abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as u8,
        _ => 0,
    };
    Ok(())
}

/// Sets the per-process limits (the process count is the namespace's and the watchdog's).
fn resource_limits(limits: &SandboxLimits) -> Result<(), Failure> {
    let mib = |n: u32| u64::from(n) << 20;
    let rows = [
        (Resource::RLIMIT_DATA, mib(limits.memory_mb)),
        (Resource::RLIMIT_CPU, u64::from(limits.cpu_seconds)),
        (Resource::RLIMIT_FSIZE, mib(limits.file_size_mb)),
        (Resource::RLIMIT_NOFILE, u64::from(limits.open_files)),
        // A process killed at a limit leaves no core file in the project.
        (Resource::RLIMIT_CORE, 0),
    ];
    for (resource, value) in rows {
        // Never above what the hub itself may use (raising a hard limit needs privilege).
        let value = nix::sys::resource::getrlimit(resource).map_or(value, |(_, hard)| value.min(hard));
        setrlimit(resource, value, value).map_err(|e| ("resource limits", format!("{resource:?}: {e}")))?;
    }
    Ok(())
}
