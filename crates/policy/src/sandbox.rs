//! The sandbox profile of a command: the policy's roots, the files the analysis found and the operator
//! approved, and the system folders programs need — minus the places no command may see (secrets
//! folders, the hub's files) — with the resource limits of the `sandbox` section. The kernel enforces
//! it (`portcullis-sandbox`); this module decides what it holds. The places are data: tables with a
//! reason per row.

use crate::document::{Access, Decision, SandboxMode};
use crate::evaluation::{EvalContext, Evaluation};
use crate::policy::Policy;
use crate::protected::ProtectedKind;
use crate::rule::NetworkScope;
use portcullis_harness::paths::canonicalize_lenient;
use portcullis_harness::{EgressScope, Enforcement, RuleRef, SandboxLimits, SandboxProfile, SandboxSupport};
use std::path::{Path, PathBuf};

/// Folders programs need to start and run: readable and executable, never writable.
pub const SYSTEM_FOLDERS: &[(&str, &str)] = &[
    ("/usr", "programs, libraries and their data"),
    ("/bin", "programs (often a link into /usr)"),
    ("/sbin", "system programs"),
    ("/lib", "libraries and the dynamic loader"),
    ("/lib32", "32-bit libraries"),
    ("/lib64", "the dynamic loader"),
    ("/libx32", "x32 libraries"),
    ("/etc", "configuration: the loader's cache, users, name service, certificates, alternatives"),
    ("/opt", "software installed outside the package manager"),
    ("/sys", "facts about the machine programs read (CPUs, memory)"),
];

/// Toolchains (and git's settings) in the home folder: readable and executable, so `cargo`, `rustup`,
/// `pyenv` or `nvm` shims run and `git commit` knows its author. Caches stay read-only unless a write root
/// names them.
pub const HOME_TOOLCHAINS: &[(&str, &str)] = &[
    (".cargo", "Rust: cargo, its registry and installed programs"),
    (".rustup", "Rust toolchains"),
    (".pyenv", "Python versions and their shims"),
    (".nvm", "Node.js versions"),
    (".volta", "Node.js toolchains"),
    (".bun", "the Bun runtime"),
    (".deno", "the Deno runtime"),
    (".local/bin", "programs the user installed"),
    (".local/lib", "Python packages the user installed"),
    (".rbenv", "Ruby versions"),
    (".sdkman", "JVM toolchains"),
    ("go", "Go modules and installed programs"),
    (".gitconfig", "git's identity and settings (`git commit` needs the author)"),
];

/// Secrets in the home folder: never visible to a command, whatever a root or an approval says.
pub const HOME_SECRETS: &[(&str, &str)] = &[
    (".ssh", "SSH keys"),
    (".aws", "AWS credentials"),
    (".config", "application settings and tokens (gh, gcloud, Portcullis's own tokens and policy)"),
    (".gnupg", "GPG keys"),
    (".local/share/keyrings", "desktop keyrings"),
    (".local/share/portcullis", "the hub's ledger"),
    (".password-store", "pass's password store"),
    (".kube", "Kubernetes credentials"),
    (".docker", "Docker registry credentials"),
    (".azure", "Azure credentials"),
    (".netrc", "HTTP credentials"),
    (".git-credentials", "git's stored credentials"),
    (".npmrc", "npm tokens"),
    (".pypirc", "PyPI tokens"),
    (".pgpass", "PostgreSQL passwords"),
    (".vault-token", "a Vault token"),
    (".cargo/credentials", "the crates.io token"),
    (".cargo/credentials.toml", "the crates.io token"),
    (".bash_history", "shell history (commands with secrets in them)"),
    (".zsh_history", "shell history (commands with secrets in them)"),
];

/// Secrets of the machine: never visible to a command.
pub const SYSTEM_SECRETS: &[(&str, &str)] = &[
    ("/etc/shadow", "password hashes"),
    ("/etc/gshadow", "group password hashes"),
    ("/etc/ssh", "the machine's SSH host keys"),
    ("/etc/sudoers", "sudo's rules"),
    ("/etc/sudoers.d", "sudo's rules"),
    ("/run/user", "per-user sockets: the session bus, keyrings, the SSH agent"),
    ("/run/dbus", "the system bus"),
    ("/run/docker.sock", "the Docker daemon (root on the machine)"),
];

/// Places inside a writable tree kept read-only: allowed programs execute what they hold, so writing
/// them is running code later (the policy prompts for it; the kernel keeps it unless approved).
pub const KEPT_READ_ONLY: &[(&str, &str)] = &[
    (
        ".git",
        "git runs what its repository folder names (hooks, config, commondir); a mount point, it cannot be renamed away",
    ),
    (".gitmodules", "git runs commands submodule settings name"),
    (".envrc", "direnv runs it on entering the folder"),
    (".vscode", "the editor runs its tasks and settings"),
    (".claude", "Claude Code runs its hooks and commands"),
    (".husky", "git hooks managed by husky"),
    (".githooks", "a git hooks folder"),
    (".hg", "Mercurial runs the hooks its hgrc names"),
    (".mcp.json", "Claude Code starts the MCP servers it lists"),
    (".cursor", "Cursor starts the MCP servers and runs the rules it holds"),
    (".gemini", "Gemini CLI runs what its settings name"),
    (".codex", "Codex runs what its config names"),
    (".devcontainer", "the dev container runs the commands it names"),
    (".github/workflows", "CI runs these workflows"),
    (".cargo/config.toml", "cargo runs the programs it names"),
    (".cargo/config", "cargo runs the programs it names"),
    (".npmrc", "npm runs the script shell and node options it sets"),
    (".yarnrc.yml", "yarn runs the release and plugins it names"),
    (".pnpmfile.cjs", "pnpm runs it on every install"),
    (".pre-commit-config.yaml", "pre-commit runs the hooks it names"),
    ("lefthook.yml", "lefthook runs the git hooks it names"),
    ("rust-toolchain.toml", "rustup runs the toolchain it names"),
    ("rust-toolchain", "rustup runs the toolchain it names"),
    (".mise.toml", "mise runs the tasks it names"),
    ("mise.toml", "mise runs the tasks it names"),
    (".gitconfig", "git runs the commands a config names"),
];

/// Inside `.git`, what stays read-only for a command that writes the repository (`git commit`, `git add`):
/// the rest of the folder (objects, refs, the index) is written by git itself.
pub const KEPT_READ_ONLY_IN_GIT: &[(&str, &str)] = &[
    (".git/hooks", "git runs its hooks"),
    (".git/config", "git runs commands it names (core.fsmonitor, aliases)"),
    (".git/commondir", "git reads the repository (and its config) from the folder it names"),
    (".git/info", "attributes and excludes git reads"),
    (".git/modules", "submodules' repositories, with their own config and hooks"),
    (".git/worktrees", "worktrees' repositories, with their own commondir"),
];

/// git subcommands that write the repository folder: their command gets `.git` writable (still a mount
/// point, with the places of [`KEPT_READ_ONLY_IN_GIT`] read-only).
const GIT_WRITING: &[&str] = &[
    "add",
    "am",
    "apply",
    "bisect",
    "branch",
    "checkout",
    "cherry-pick",
    "clean",
    "commit",
    "fetch",
    "gc",
    "init",
    "maintenance",
    "merge",
    "mv",
    "notes",
    "prune",
    "pull",
    "push",
    "rebase",
    "remote",
    "repack",
    "reset",
    "restore",
    "revert",
    "rm",
    "sparse-checkout",
    "stash",
    "submodule",
    "switch",
    "tag",
    "update-index",
    "update-ref",
    "worktree",
];

/// Whether `argv` is git writing its repository.
fn writes_git_repository(argv: &[String]) -> bool {
    let Some(program) = argv.first() else { return false };
    if crate::shell::basename_of(program) != "git" {
        return false;
    }
    let mut words = argv.iter().skip(1);
    while let Some(word) = words.next() {
        match word.as_str() {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            w => return GIT_WRITING.contains(&w),
        }
    }
    false
}

/// Places at the top of each writable tree that stay empty inside even where they do not exist yet (the
/// launcher makes them, as empty folders, so nothing can be created there): the hub watches them and
/// loads what appears.
pub const RESERVED_IN_WRITE_ROOTS: &[(&str, &str)] = &[(
    ".portcullis",
    "the project's policy and tool manifests: hot reload would load a policy or a tool a command put there",
)];

/// The trees every root set grants (a path must be inside a root of each set), with the access all of
/// them give.
fn granted_trees(policy: &Policy) -> Vec<(PathBuf, Access)> {
    let mut granted: Option<Vec<(PathBuf, Access)>> = None;
    for set in policy.root_sets() {
        // Roots are resolved (canonical) when the policy loads.
        let roots: Vec<(PathBuf, Access)> = set.roots.clone();
        granted = Some(match granted {
            None => roots,
            Some(before) => {
                let mut both = Vec::new();
                for (a, access_a) in &before {
                    for (b, access_b) in &roots {
                        let access = (*access_a).min(*access_b);
                        if a.starts_with(b) {
                            both.push((a.clone(), access));
                        } else if b.starts_with(a) {
                            both.push((b.clone(), access));
                        }
                    }
                }
                both
            }
        });
    }
    granted.unwrap_or_default()
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Drops entries inside another entry of the list, sorts, dedupes.
fn outermost(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    kept
}

/// The hub's own places a policy knows (its files, tokens, ledger), with the ledger's `-wal`/`-shm`.
fn hub_places(policy: &Policy) -> Vec<PathBuf> {
    let mut places = Vec::new();
    for (path, kind, prefix) in policy.protected().places() {
        if !matches!(kind, ProtectedKind::HubSecret | ProtectedKind::Policy) {
            continue;
        }
        places.push(path.to_path_buf());
        // The ledger's `-wal`, `-shm` and `-journal` files beside it, when the ledger is there.
        if prefix
            && exists(path)
            && let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            places.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(name)))
                    .map(|e| e.path()),
            );
        }
    }
    places
}

impl Policy {
    /// Whether commands must be confined (`sandbox.mode`).
    pub fn sandbox_mode(&self) -> SandboxMode {
        self.sandbox.mode()
    }

    /// The resource limits of one command.
    pub fn sandbox_limits(&self) -> SandboxLimits {
        self.sandbox.limits()
    }

    /// The walls the command `evaluation` judged runs inside, on a machine that can enforce `support`.
    /// Reads and writes outside the roots that the evaluation lists and did not forbid are included:
    /// they run only once an operator approved them.
    pub fn sandbox_profile(
        &self,
        evaluation: &Evaluation,
        ctx: &EvalContext,
        support: &SandboxSupport,
    ) -> SandboxProfile {
        let trees = granted_trees(self);
        let mut write: Vec<PathBuf> =
            trees.iter().filter(|(_, a)| *a == Access::Write).map(|(p, _)| p.clone()).collect();
        let mut read: Vec<PathBuf> =
            trees.iter().filter(|(_, a)| *a == Access::Read).map(|(p, _)| p.clone()).collect();
        let system: Vec<PathBuf> =
            SYSTEM_FOLDERS.iter().map(|(p, _)| PathBuf::from(p)).filter(|p| exists(p)).collect();
        if let Some(home) = &ctx.home {
            read.extend(HOME_TOOLCHAINS.iter().map(|(p, _)| home.join(p)).filter(|p| exists(p)));
        }
        // An operator approves what a prompt lists; a contained command gets only what the policy
        // allows without asking.
        let granted_access = |d: Decision| match evaluation.decision {
            Decision::Contain => d == Decision::Allow,
            _ => d != Decision::Forbidden,
        };
        for access in evaluation.accesses.iter().filter(|a| granted_access(a.decision)) {
            let path = PathBuf::from(&access.path);
            if !path.is_absolute() || !exists(&path) {
                continue;
            }
            let need = access.access;
            if trees.iter().any(|(root, a)| *a >= need && path.starts_with(root)) {
                continue;
            }
            match need {
                Access::Write => write.push(path),
                Access::Read => read.push(path),
            }
        }
        let mut hidden: Vec<PathBuf> = SYSTEM_SECRETS.iter().map(|(p, _)| PathBuf::from(p)).collect();
        if let Some(home) = &ctx.home {
            hidden.extend(HOME_SECRETS.iter().map(|(p, _)| home.join(p)));
        }
        hidden.extend(hub_places(self));
        // Only places that exist are covered (one `lstat` each; the few that exist are resolved).
        let hidden: Vec<PathBuf> =
            hidden.into_iter().filter(|p| exists(p)).map(|p| canonicalize_lenient(&p).unwrap_or(p)).collect();
        // A tree inside a hidden place is not granted at all: the place stays empty.
        let visible = |p: &PathBuf| !hidden.iter().any(|h| p.starts_with(h));
        write.retain(visible);
        read.retain(visible);
        let write = outermost(write);
        let read: Vec<PathBuf> =
            outermost(read).into_iter().filter(|p| !write.iter().any(|w| p.starts_with(w))).collect();
        let granted = |p: &PathBuf| system.iter().chain(&read).chain(&write).any(|t| p.starts_with(t));
        // Reserved places of each writable tree, made by the launcher where they are missing.
        let reserved =
            write.iter().flat_map(|w| RESERVED_IN_WRITE_ROOTS.iter().map(move |(rel, _)| w.join(rel)));
        let hidden = outermost(hidden.into_iter().filter(granted).chain(reserved).collect());
        let approved_writes: Vec<PathBuf> = evaluation
            .accesses
            .iter()
            .filter(|a| a.access == Access::Write && a.decision == Decision::Prompt)
            .map(|a| PathBuf::from(&a.path))
            .collect();
        let git_writes = evaluation.commands.iter().any(|argv| writes_git_repository(argv));
        let kept = KEPT_READ_ONLY.iter().filter(|(rel, _)| !(git_writes && *rel == ".git"));
        let kept_in_git = KEPT_READ_ONLY_IN_GIT.iter().filter(|_| git_writes);
        let read_only = write
            .iter()
            .flat_map(|w| kept.clone().chain(kept_in_git.clone()).map(move |(rel, _)| w.join(rel)))
            .filter(|p| exists(p) && !approved_writes.iter().any(|a| a.starts_with(p)))
            .collect();
        let (network, egress, network_reason) = self.network_use(evaluation);
        let enforcement = enforcement_on(support);
        SandboxProfile {
            enforcement,
            system,
            read,
            write,
            hidden,
            read_only,
            network,
            network_reason: Some(network_reason),
            egress,
            limits: self.sandbox_limits(),
            contained: None,
            direct_writes: self.direct_writes(evaluation),
        }
    }

    /// Why the command writes in place: the first rule that matched (and allowed it) saying
    /// `direct_writes`. Never a contained command (its changes are what is judged).
    fn direct_writes(&self, evaluation: &Evaluation) -> Option<String> {
        if evaluation.decision >= Decision::Contain {
            return None;
        }
        evaluation.matched_rules.iter().filter(|m| m.decision == Decision::Allow).find_map(|m| {
            let rule = self.rules.iter().find(|r| r.id == m.id && r.source == m.source && r.direct_writes)?;
            Some(format!(
                "rule `{}` ({}) says direct_writes: it writes in place, with no review",
                rule.id, rule.source
            ))
        })
    }

    /// Whether the rules that matched (and did not forbid) let the command use the network, the hosts
    /// they name, and why. Within a layer the rules' grants add up; across the layers that grant some
    /// network, the strictest wins (any host gives way to named hosts, named hosts meet). Named hosts
    /// keep the command in a network namespace of its own whose one way out is the hub's egress proxy.
    fn network_use(&self, evaluation: &Evaluation) -> (bool, Option<EgressScope>, String) {
        if evaluation.decision == Decision::Forbidden {
            return (false, None, "the command is forbidden".into());
        }
        // Per layer, in order: what its matching rules grant, and the first rule that grants it.
        let mut layers: Vec<(usize, NetworkScope, String)> = Vec::new();
        // The first matching rule that names hosts and asks for others.
        let mut asking: Option<(usize, RuleRef)> = None;
        for m in evaluation.matched_rules.iter().filter(|m| m.decision != Decision::Forbidden) {
            let Some(rule) = self.rules.iter().find(|r| r.id == m.id && r.source == m.source) else {
                continue;
            };
            let named = format!("rule `{}` ({})", m.id, m.source);
            let grant = rule.network.clone();
            if grant == NetworkScope::None {
                continue;
            }
            if asking.is_none()
                && matches!(grant, NetworkScope::Hosts(_))
                && rule.other_hosts == crate::document::OtherHosts::Prompt
            {
                let ask = RuleRef { id: rule.id.clone(), source: rule.source.clone(), decision: None };
                asking = Some((rule.layer, ask));
            }
            match layers.iter_mut().find(|(layer, ..)| *layer == rule.layer) {
                Some((_, scope, _)) => *scope = union(scope, &grant),
                None => layers.push((rule.layer, grant, named)),
            }
        }
        let Some((_, first, _)) = layers.first() else {
            return (false, None, "no rule that matched allows network use".into());
        };
        let scope = layers.iter().skip(1).fold(first.clone(), |acc, (_, s, _)| meet(&acc, s));
        let by: Vec<&str> = layers.iter().map(|(.., named)| named.as_str()).collect();
        let by = by.join(" and ");
        match scope {
            NetworkScope::Any => (true, None, format!("{by} allows any host")),
            NetworkScope::Hosts(hosts) if hosts.is_empty() => (
                false,
                Some(EgressScope { hosts: Vec::new(), by: by.clone(), ask: None }),
                format!("{by} name no host in common: no network"),
            ),
            NetworkScope::Hosts(hosts) => {
                let names: Vec<String> = hosts.iter().map(ToString::to_string).collect();
                // Asking widens one rule: only where one layer grants network (across layers the
                // strictest set holds, which no answer about one layer's rule could widen).
                let ask =
                    asking.filter(|(layer, _)| layers.len() == 1 && layers[0].0 == *layer).map(|(_, r)| r);
                let others = if ask.is_some() { "; others are asked of the operator" } else { "" };
                let reason =
                    format!("{by} allows only {}, through the hub's egress proxy{others}", names.join(", "));
                (false, Some(EgressScope { hosts: names, by, ask }), reason)
            }
            NetworkScope::None => (false, None, "no rule that matched allows network use".into()),
        }
    }
}

/// Two rules of one layer: both grants.
fn union(a: &NetworkScope, b: &NetworkScope) -> NetworkScope {
    match (a, b) {
        (NetworkScope::Any, _) | (_, NetworkScope::Any) => NetworkScope::Any,
        (NetworkScope::None, other) | (other, NetworkScope::None) => other.clone(),
        (NetworkScope::Hosts(x), NetworkScope::Hosts(y)) => {
            let mut all = x.clone();
            all.extend(y.iter().filter(|h| !x.contains(h)).cloned());
            NetworkScope::Hosts(all)
        }
    }
}

/// Two layers that both grant some network: what both allow.
fn meet(a: &NetworkScope, b: &NetworkScope) -> NetworkScope {
    match (a, b) {
        (NetworkScope::None, _) | (_, NetworkScope::None) => NetworkScope::None,
        (NetworkScope::Any, other) | (other, NetworkScope::Any) => other.clone(),
        (NetworkScope::Hosts(x), NetworkScope::Hosts(y)) => {
            NetworkScope::Hosts(portcullis_harness::HostPattern::intersect(x, y))
        }
    }
}

/// Whether a command is confined on a machine that can enforce `support`, and why not.
pub fn enforcement_on(support: &SandboxSupport) -> Enforcement {
    match (&support.unavailable, support.landlock_abi, support.namespaces) {
        (Some(reason), _, _) => Enforcement::Unconfined { reason: reason.clone() },
        (None, None, _) => Enforcement::Unconfined { reason: "this kernel has no Landlock".into() },
        (None, Some(_), false) => {
            Enforcement::Unconfined { reason: "this kernel does not let the hub make user namespaces".into() }
        }
        (None, Some(_), true) => Enforcement::Confined,
    }
}

mod contained;
pub(crate) mod rules;
pub use contained::{
    ContainedRules, DELETING_PROGRAMS, HOME_PROGRAM_FOLDERS, MAX_HIDE_ENTRIES, PROGRAM_FOLDERS,
};
pub use rules::SandboxRules;

#[cfg(test)]
mod tests;
