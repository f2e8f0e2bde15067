//! The sandbox a command runs in: what the kernel lets it read, write and reach, and the resource limits
//! it runs under. The policy derives a profile from its roots and the approved action; the tools that
//! start processes hand it to the launcher (`portcullis-sandbox`), which applies it before the command
//! starts. It travels on the execution action a tool describes, so the approval card, the live view and the
//! ledger show the walls a command runs inside.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Whether the kernel confines the command.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Enforcement {
    /// Landlock (and, where the kernel has them, namespaces) confine it.
    Confined,
    /// It runs without walls: this kernel cannot enforce them and the policy does not demand it.
    Unconfined { reason: String },
}

/// Resource limits of one command (each process it starts has them; `processes` counts the whole
/// command).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxLimits {
    /// Data memory of one process, MiB (heap and private mappings).
    pub memory_mb: u32,
    /// CPU time of one process, seconds.
    pub cpu_seconds: u32,
    /// Processes of the whole command.
    pub processes: u32,
    /// Largest file one process may write, MiB.
    pub file_size_mb: u32,
    /// Open files of one process.
    pub open_files: u32,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            memory_mb: 4096,
            cpu_seconds: 600,
            processes: 512,
            file_size_mb: 1024,
            open_files: 4096,
        }
    }
}

/// The hosts a command may reach by name (through the hub's egress proxy, its only way out), and the
/// rules that name them.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressScope {
    /// `registry.npmjs.org`, `*.crates.io`, `github.com:443`: the strictest set across layers (empty:
    /// the layers name no host in common, so none).
    pub hosts: Vec<String>,
    /// Who names them, for a refusal's words: "rule `npm-install` (policy.json)".
    pub by: String,
    /// The rule that asks the operator for a host it does not name (`"other_hosts": "prompt"`), and to
    /// which "always" adds it; `None`: such a host is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<crate::RuleRef>,
}

/// The walls of one command.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxProfile {
    pub enforcement: Enforcement,
    /// System folders readable and executable (programs, libraries, `/etc`).
    pub system: Vec<PathBuf>,
    /// Further trees readable and executable: toolchains, read roots, reads the operator approved.
    pub read: Vec<PathBuf>,
    /// Trees readable and writable: write roots and writes the operator approved (a private temporary
    /// folder is added when the command starts).
    pub write: Vec<PathBuf>,
    /// Places never visible inside (secrets folders, the hub's files): empty there. One that does not
    /// exist (a project's `.portcullis`) is made as an empty folder, so nothing can be created there.
    pub hidden: Vec<PathBuf>,
    /// Places inside writable trees kept read-only (git hooks and config, editor settings).
    pub read_only: Vec<PathBuf>,
    /// Whether the command may use the network (TCP connect and bind, the machine's interfaces).
    pub network: bool,
    /// Why the network is open or closed (the rule that allows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_reason: Option<String>,
    /// The hosts the rules that matched name, reached only through the hub's egress proxy; `None` when
    /// no rule names hosts (any host, or no network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<EgressScope>,
    pub limits: SandboxLimits,
    /// The walls of a contained command (allowed without asking because part of it cannot be read
    /// statically): what is masked, and why it runs contained. `None` for every other command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contained: Option<Box<Containment>>,
    /// Why the command writes its roots in place rather than on a copy-on-write layer reviewed when it
    /// ends (a rule that says `direct_writes`: a server or watcher whose output other commands read
    /// while it runs). `None`: copy-on-write, the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_writes: Option<String>,
}

/// What a contained command runs under besides its profile's trees: the strictest reading of the policy.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Containment {
    /// What the judge could not read, one line each (why it is contained, not judged).
    pub unread: Vec<String>,
    /// Programs that cannot run inside (masked in the command's mount namespace): a rule prompts or
    /// forbids some use of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masked: Vec<MaskedProgram>,
    /// Files below the roots the policy's deny globs name, hidden inside (they are also in `hidden`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden_by_globs: Vec<PathBuf>,
    /// The policy's deny globs: a change at a path they name is held for the operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_globs: Vec<String>,
    /// The rule of a deleting program (`rm`, `rmdir`, ...) that prompts or forbids: the contained
    /// command's deletions of files that existed are held for the operator. `None`: deletions are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletions_held_by: Option<String>,
}

/// A program a contained command cannot run, where it is, and the rule that masks it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaskedProgram {
    pub program: String,
    /// Its files on this machine (each covered by a wall that says why and exits 126).
    pub paths: Vec<PathBuf>,
    /// "rule `push` (policy.json) says prompt".
    pub by: String,
}

impl SandboxProfile {
    /// The network in words, as every front end shows it: open to any host, closed, or only the hosts
    /// the rules name (through the hub's egress proxy).
    pub fn network_words(&self) -> String {
        match (&self.egress, self.network) {
            (Some(egress), _) if !egress.hosts.is_empty() => {
                format!("only {} (through the egress proxy)", egress.hosts.join(", "))
            }
            (_, true) => "open to any host".to_owned(),
            (_, false) => "closed".to_owned(),
        }
    }

    /// The hosts a command of this profile reaches only through the hub's egress gate: rules name hosts
    /// and the network is otherwise closed. `None`: no gate (the network is open to any host, or closed).
    /// The one test the launcher, the walls and the gate all use.
    pub fn gated_egress(&self) -> Option<&EgressScope> {
        self.egress.as_ref().filter(|e| !self.network && !e.hosts.is_empty())
    }

    pub fn is_confined(&self) -> bool {
        self.enforcement == Enforcement::Confined
    }
}

/// Why a command the Claude Code hook judged is not confined: Claude Code runs it itself, in its own
/// shell (with its user's whole environment), outside every wall.
pub const CLAUDE_CODE_RUNS_IT: &str = "runs outside Portcullis's sandbox (Claude Code runs it)";

impl SandboxProfile {
    /// Whether the command ran in the agent's own shell (Claude Code's), not the hub's.
    pub fn ran_by_the_agent(&self) -> bool {
        matches!(&self.enforcement, Enforcement::Unconfined { reason } if reason == CLAUDE_CODE_RUNS_IT)
    }
}

/// What this machine's kernel can enforce, as the launcher found when the hub started.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSupport {
    /// The Landlock ABI the kernel offers (none: no Landlock).
    pub landlock_abi: Option<u8>,
    /// User, mount, PID and network namespaces could be made.
    pub namespaces: bool,
    /// Why commands cannot be confined here (no launcher, no Landlock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl SandboxSupport {
    /// A machine where nothing can be confined, and why.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        SandboxSupport { landlock_abi: None, namespaces: false, unavailable: Some(reason.into()) }
    }

    pub fn can_confine(&self) -> bool {
        self.unavailable.is_none() && self.landlock_abi.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(network: bool, hosts: Option<&[&str]>) -> SandboxProfile {
        SandboxProfile {
            enforcement: Enforcement::Confined,
            system: Vec::new(),
            read: Vec::new(),
            write: Vec::new(),
            hidden: Vec::new(),
            read_only: Vec::new(),
            network,
            network_reason: None,
            egress: hosts.map(|h| EgressScope {
                hosts: h.iter().map(|s| (*s).to_owned()).collect(),
                by: "rule `t`".into(),
                ask: None,
            }),
            limits: SandboxLimits::default(),
            contained: None,
            direct_writes: None,
        }
    }

    #[test]
    fn only_named_hosts_on_a_closed_network_go_through_the_gate() {
        // (network open, hosts the rules name, gated)
        let rows: &[(bool, Option<&[&str]>, bool)] = &[
            (false, Some(&["registry.npmjs.org"]), true),
            (false, Some(&[]), false),
            (false, None, false),
            (true, Some(&["registry.npmjs.org"]), false),
            (true, None, false),
        ];
        for (network, hosts, gated) in rows {
            let p = profile(*network, *hosts);
            assert_eq!(p.gated_egress().is_some(), *gated, "network {network}, hosts {hosts:?}");
        }
    }
}
