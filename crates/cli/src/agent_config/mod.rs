//! The agents' own configuration files that `portcullis setup` writes and `portcullis doctor` reads:
//! which file of which agent holds which Portcullis entry ([`AGENT_FILES`], one row per file), the
//! entries themselves (made from the hub's hook-up snippets, so the files get what the README and the
//! Connections view show), and the checks that say whether a file has them.

pub mod claude;
pub mod codex;
pub mod files;

use crate::args::AgentName;
use portcullis_api::start::config_dir;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{0}")]
    Unavailable(String),
    /// A file that is not JSON / TOML: never overwritten (it would lose what it holds).
    #[error("{path}: not {format} ({reason}); fix it by hand, then run this again")]
    Unparsable { path: String, format: &'static str, reason: String },
    /// A key Portcullis adds to that holds something else than the agent documents.
    #[error("{path}: `{key}` is not {expected}; fix it by hand, then run this again")]
    WrongShape { path: String, key: &'static str, expected: &'static str },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// The hub's snippets lack one this module parses (a change in `hookup.rs` not followed here).
    #[error("the hub's hook-up snippets have no {0}")]
    Snippet(&'static str),
}

impl ConfigError {
    pub fn code(&self) -> &'static str {
        match self {
            ConfigError::Unavailable(_) => "unavailable",
            ConfigError::Unparsable { .. } => "agent_file_unparsable",
            ConfigError::WrongShape { .. } => "agent_file_shape",
            ConfigError::Io { .. } => "io_failed",
            ConfigError::Snippet(_) => "snippet_missing",
        }
    }

    pub fn io(path: &Path, source: std::io::Error) -> ConfigError {
        ConfigError::Io { path: path.display().to_string(), source }
    }
}

/// `--user` or `--project`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
}

impl Scope {
    pub fn flag(self) -> &'static str {
        match self {
            Scope::User => "--user",
            Scope::Project => "--project",
        }
    }
}

/// The folder a row's path is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// Where Claude Code keeps `.claude.json`: `$CLAUDE_CONFIG_DIR`, else the home folder.
    ClaudeState,
    /// Claude Code's user folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    ClaudeUser,
    /// Codex's folder: `$CODEX_HOME`, else `~/.codex`.
    CodexHome,
    /// The current folder (the project).
    Project,
}

/// What a file holds for Portcullis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `mcpServers.portcullis`: the stdio relay (`portcullis mcp`), which reads the token itself.
    ClaudeMcpRelay,
    /// `permissions.allow` `mcp__portcullis` and the `PreToolUse` hook `portcullis hook claude`.
    ClaudeHook,
    /// `[mcp_servers.portcullis]`: the stdio relay, tools approved (the hub judges).
    CodexRelay,
}

/// One agent file: where it is and what Portcullis puts in it.
#[derive(Debug, Clone, Copy)]
pub struct AgentFile {
    pub agent: AgentName,
    pub scope: Scope,
    pub base: Base,
    pub name: &'static str,
    pub entry: Entry,
    /// It holds the gateway token: written owner-only.
    pub secret: bool,
}

/// Every file `setup` writes, by agent and scope. Claude Code's server is the stdio relay in both
/// scopes: a project's `.mcp.json` is shared, and `~/.claude.json` is read by the agent, so neither
/// carries the token (the relay reads it from the hub's folder); the relay also names Claude Code's
/// session to the hub, which records its calls beside the same session's hook calls.
pub const AGENT_FILES: [AgentFile; 6] = [
    AgentFile {
        agent: AgentName::Claude,
        scope: Scope::User,
        base: Base::ClaudeState,
        name: ".claude.json",
        entry: Entry::ClaudeMcpRelay,
        secret: false,
    },
    AgentFile {
        agent: AgentName::Claude,
        scope: Scope::User,
        base: Base::ClaudeUser,
        name: "settings.json",
        entry: Entry::ClaudeHook,
        secret: false,
    },
    AgentFile {
        agent: AgentName::Claude,
        scope: Scope::Project,
        base: Base::Project,
        name: ".mcp.json",
        entry: Entry::ClaudeMcpRelay,
        secret: false,
    },
    AgentFile {
        agent: AgentName::Claude,
        scope: Scope::Project,
        base: Base::Project,
        name: ".claude/settings.json",
        entry: Entry::ClaudeHook,
        secret: false,
    },
    AgentFile {
        agent: AgentName::Codex,
        scope: Scope::User,
        base: Base::CodexHome,
        name: "config.toml",
        entry: Entry::CodexRelay,
        secret: false,
    },
    AgentFile {
        agent: AgentName::Codex,
        scope: Scope::Project,
        base: Base::Project,
        name: ".codex/config.toml",
        entry: Entry::CodexRelay,
        secret: false,
    },
];

/// The rows of one agent and scope.
pub fn agent_files(agent: AgentName, scope: Scope) -> impl Iterator<Item = &'static AgentFile> {
    AGENT_FILES.iter().filter(move |f| f.agent == agent && f.scope == scope)
}

pub fn agent_word(agent: AgentName) -> &'static str {
    match agent {
        AgentName::Claude => "claude",
        AgentName::Codex => "codex",
    }
}

/// The folders the rows' paths are resolved in.
#[derive(Debug, Clone)]
pub struct Folders {
    pub home: PathBuf,
    pub project: PathBuf,
}

impl Folders {
    pub fn from_env() -> Result<Folders, ConfigError> {
        let home = non_empty_env("HOME").ok_or_else(|| ConfigError::Unavailable("HOME is not set".into()))?;
        let project = std::env::current_dir()
            .map_err(|e| ConfigError::Unavailable(format!("no current folder: {e}")))?;
        Ok(Folders { home, project })
    }

    pub fn path(&self, file: &AgentFile) -> PathBuf {
        let claude = non_empty_env("CLAUDE_CONFIG_DIR");
        let base = match file.base {
            Base::ClaudeState => claude.unwrap_or_else(|| self.home.clone()),
            Base::ClaudeUser => claude.unwrap_or_else(|| self.home.join(".claude")),
            Base::CodexHome => non_empty_env("CODEX_HOME").unwrap_or_else(|| self.home.join(".codex")),
            Base::Project => self.project.clone(),
        };
        base.join(file.name)
    }

    /// `path` as a person reads it: `~/…` in the home folder, relative in the project.
    pub fn shown(&self, path: &Path) -> String {
        // The nearer of the two folders names it (a home inside the project folder is still `~`).
        if let Ok(rest) = path.strip_prefix(&self.project)
            && self.project != self.home
            && !(path.starts_with(&self.home) && self.home.starts_with(&self.project))
        {
            return rest.display().to_string();
        }
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }
}

fn non_empty_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// What the entries must say on this machine: made from the hub's own snippets.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// The hub's config folder (its token, its runtime file).
    pub config: PathBuf,
    /// The `PreToolUse` hook snippet: `permissions` and `hooks`.
    pub hook: serde_json::Value,
    /// The relay's server entry: `command`, `args`, `default_tools_approval_mode`, maybe `env`.
    pub relay: toml_edit::Table,
}

impl Wanted {
    /// The entries for the hub whose config folder this process finds.
    pub fn from_env() -> Result<Wanted, ConfigError> {
        let config = config_dir().map_err(|e| ConfigError::Unavailable(e.to_string()))?;
        Wanted::new(config, &binary_for_agents())
    }

    /// The entries for a hub with config folder `config`, its relay and hook run as `binary` (the relay
    /// finds the hub by its runtime file and reads the token itself: neither goes into an agent's file).
    pub fn new(config: PathBuf, binary: &Path) -> Result<Wanted, ConfigError> {
        let snippets = portcullis_api::hookup_snippets(&config, binary);
        let text = |client: &str, language: &str| {
            snippets.iter().find(|s| s.client == client && s.language == language).map(|s| s.text.clone())
        };
        let hook_text = text("Claude Code", "json").ok_or(ConfigError::Snippet("Claude Code hook"))?;
        let hook = serde_json::from_str(&hook_text).map_err(|_| ConfigError::Snippet("valid hook JSON"))?;
        let codex_text = text("Codex", "toml").ok_or(ConfigError::Snippet("Codex relay"))?;
        let doc: toml_edit::DocumentMut =
            codex_text.parse().map_err(|_| ConfigError::Snippet("valid Codex TOML"))?;
        let relay = doc
            .get("mcp_servers")
            .and_then(|s| s.get("portcullis"))
            .and_then(toml_edit::Item::as_table)
            .cloned()
            .ok_or(ConfigError::Snippet("[mcp_servers.portcullis] table"))?;
        Ok(Wanted { config, hook, relay })
    }

    /// The relay's command (as the snippet writes it).
    pub fn relay_command(&self) -> &str {
        self.relay.get("command").and_then(toml_edit::Item::as_str).unwrap_or("portcullis")
    }

    /// The relay's `env` (the config folder, when it is not the one the agent would find).
    pub fn relay_env(&self) -> Vec<(String, String)> {
        self.relay
            .get("env")
            .and_then(toml_edit::Item::as_table_like)
            .map(|t| t.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.to_owned(), v.to_owned()))).collect())
            .unwrap_or_default()
    }
}

/// The binary the agents should run: `portcullis` when the first one on `PATH` is this very binary (so
/// the files read like the README and survive an upgrade in place), else this binary's full path.
pub fn binary_for_agents() -> PathBuf {
    let exe = std::env::current_exe().ok().and_then(|e| std::fs::canonicalize(e).ok());
    match (exe, on_path("portcullis")) {
        (Some(exe), Some(found)) if std::fs::canonicalize(&found).ok().as_ref() == Some(&exe) => {
            PathBuf::from("portcullis")
        }
        (Some(exe), _) => exe,
        (None, _) => PathBuf::from("portcullis"),
    }
}

/// The first executable file `name` on `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Whether `command` (a bare name looked up on `PATH`, or a path) is an executable file.
pub fn runnable(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if command.contains('/') {
        std::fs::metadata(command).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    } else {
        on_path(command).is_some()
    }
}

/// One finding about a file or the set-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Ok(String),
    Missing(String),
    Wrong(String),
}

impl Finding {
    pub fn is_ok(&self) -> bool {
        matches!(self, Finding::Ok(_))
    }
}

/// The findings for `entry` in a file's text (`None`: no file). Doctor's view: Claude Code's server
/// may be either form (HTTP with the token, or the relay) in either scope.
pub fn check(entry: Entry, wanted: &Wanted, text: Option<&str>) -> Vec<Finding> {
    match entry {
        Entry::ClaudeMcpRelay => claude::check_server(wanted, text, false),
        Entry::ClaudeHook => claude::check_hook(wanted, text),
        Entry::CodexRelay => codex::check_relay(wanted, text),
    }
}

/// The file's text with `entry` merged in (every other key kept); the text itself when it already
/// has the entry as `setup` writes it.
pub fn apply(entry: Entry, wanted: &Wanted, path: &str, text: Option<&str>) -> Result<String, ConfigError> {
    let in_place = match entry {
        Entry::ClaudeMcpRelay => claude::check_server(wanted, text, true),
        Entry::ClaudeHook | Entry::CodexRelay => check(entry, wanted, text),
    };
    if let Some(text) = text
        && in_place.iter().all(Finding::is_ok)
    {
        return Ok(text.to_owned());
    }
    match entry {
        Entry::ClaudeMcpRelay => claude::apply_server(wanted, path, text),
        Entry::ClaudeHook => claude::apply_hook(wanted, path, text),
        Entry::CodexRelay => codex::apply_relay(wanted, path, text),
    }
}

/// The config folder a relay or hook started with `env` uses (its `PORTCULLIS_CONFIG_DIR`, else the one
/// it finds from this process's environment).
pub fn config_seen_with(env: &[(String, String)]) -> Option<PathBuf> {
    if let Some((_, dir)) = env.iter().find(|(k, _)| k == "PORTCULLIS_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = non_empty_env("PORTCULLIS_CONFIG_DIR") {
        return Some(dir);
    }
    if let Some(dir) = non_empty_env("XDG_CONFIG_HOME") {
        return Some(dir.join("portcullis"));
    }
    non_empty_env("HOME").map(|h| h.join(".config/portcullis"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The entries for a hub in a temporary config folder, run by an executable named `portcullis`.
    fn wanted(dir: &Path) -> Wanted {
        let bin = dir.join("bin/portcullis");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(dir.join("config")).unwrap();
        std::fs::write(dir.join("config/token"), "t".repeat(64)).unwrap();
        Wanted::new(dir.join("config"), &bin).unwrap()
    }

    /// A file of the row's format holding one key of someone else's.
    fn other_content(row: &AgentFile) -> &'static str {
        match row.entry {
            Entry::CodexRelay => "# mine\nmodel = \"o3\"\n",
            _ => "{\n  \"mine\": [1, 2]\n}\n",
        }
    }

    /// One row of [`AGENT_FILES`]: its entry merged into no file and into someone else's file passes
    /// its check, keeps the other key, and merging again changes nothing.
    fn row_round_trips(index: usize) {
        let row = &AGENT_FILES[index];
        let dir = tempfile::tempdir().unwrap();
        let wanted = wanted(dir.path());
        for before in [None, Some(other_content(row))] {
            let after = apply(row.entry, &wanted, row.name, before).unwrap();
            let findings = check(row.entry, &wanted, Some(&after));
            assert!(findings.iter().all(Finding::is_ok), "{row:?} {before:?}: {findings:?}\n{after}");
            assert_eq!(apply(row.entry, &wanted, row.name, Some(&after)).unwrap(), after, "{row:?}");
            if before.is_some() {
                assert!(after.contains("mine"), "{row:?}: the other key is kept\n{after}");
            }
            assert_eq!(after.contains(&"t".repeat(64)), row.secret, "{row:?}: the token only where secret");
        }
        assert!(
            check(row.entry, &wanted, None).iter().all(|f| matches!(f, Finding::Missing(_))),
            "{row:?}: no file is missing"
        );
    }

    #[test]
    fn claude_user_state_file_gets_the_relay() {
        assert_eq!(AGENT_FILES[0].entry, Entry::ClaudeMcpRelay);
        row_round_trips(0);
    }

    #[test]
    fn claude_user_settings_get_the_hook() {
        assert_eq!(AGENT_FILES[1].entry, Entry::ClaudeHook);
        row_round_trips(1);
    }

    #[test]
    fn claude_project_mcp_json_gets_the_relay() {
        assert_eq!(AGENT_FILES[2].entry, Entry::ClaudeMcpRelay);
        row_round_trips(2);
    }

    #[test]
    fn claude_project_settings_get_the_hook() {
        assert_eq!(AGENT_FILES[3].entry, Entry::ClaudeHook);
        row_round_trips(3);
    }

    #[test]
    fn codex_user_config_gets_the_relay() {
        assert_eq!(AGENT_FILES[4].entry, Entry::CodexRelay);
        row_round_trips(4);
    }

    #[test]
    fn codex_project_config_gets_the_relay() {
        assert_eq!(AGENT_FILES[5].entry, Entry::CodexRelay);
        row_round_trips(5);
    }

    #[test]
    fn every_row_has_its_own_test() {
        assert_eq!(AGENT_FILES.len(), 6, "a row added to AGENT_FILES needs a test above");
    }

    #[test]
    fn files_of_another_shape_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let wanted = wanted(dir.path());
        for (entry, text) in [
            (Entry::ClaudeHook, "{ not json"),
            (Entry::ClaudeHook, "{\"permissions\": []}"),
            (Entry::ClaudeHook, "[1]"),
            (Entry::ClaudeMcpRelay, "{\"mcpServers\": 3}"),
            (Entry::CodexRelay, "mcp_servers = 1\n"),
            (Entry::CodexRelay, "[[x]\n"),
        ] {
            assert!(apply(entry, &wanted, "f", Some(text)).is_err(), "{entry:?} {text}");
        }
    }

    #[test]
    fn an_older_portcullis_hook_is_replaced_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let wanted = wanted(dir.path());
        let before = r#"{"hooks": {"PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": "/old/portcullis hook claude"},
                                       {"type": "command", "command": "audit"}]}]}}"#;
        let after = apply(Entry::ClaudeHook, &wanted, "f", Some(before)).unwrap();
        assert!(!after.contains("/old/portcullis") && after.contains("audit"), "{after}");
        assert!(check(Entry::ClaudeHook, &wanted, Some(&after)).iter().all(Finding::is_ok));
    }
}
