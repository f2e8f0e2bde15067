//! What the hub learns at start about confining commands here: it runs the launcher once and says, in
//! its log, whether commands will run inside kernel walls or why they cannot.

use portcullis_harness::SandboxSupport;
use portcullis_sandbox::SandboxLauncher;

/// Probes `launcher` (none: nothing can be confined) and logs what was found.
pub async fn probe(launcher: Option<&SandboxLauncher>) -> SandboxSupport {
    let support = match launcher {
        Some(launcher) => launcher.probe().await,
        None => SandboxSupport::unavailable("this hub was started without a sandbox launcher"),
    };
    match (&support.unavailable, support.landlock_abi) {
        // Not a fact about this machine: the hook's judge runs no commands (Claude Code runs them).
        _ if launcher.is_none() => tracing::debug!(
            "this hub starts no sandbox launcher: it confines no commands (the Claude Code hook judges commands Claude Code runs itself)"
        ),
        (None, Some(abi)) => {
            tracing::info!(
                landlock_abi = abi,
                "commands run confined (Landlock, user/mount/PID/network namespaces)"
            );
        }
        (reason, _) => tracing::warn!(
            reason = reason.as_deref().unwrap_or("no Landlock"),
            "commands cannot be confined on this machine: they run unconfined (forbidden where a policy says `sandbox.mode: required`), and every ledger row says so"
        ),
    }
    support
}

/// The launcher's entry point and this binary as the launcher: a front end's `main` calls
/// [`entry_point`] first, so the hub can start it as `<binary> sandbox-exec`.
pub use portcullis_sandbox::{default_launcher, entry_point};
