//! How to hook agents up to this hub, as text to paste: Claude Code over Streamable HTTP (with the token
//! header) and its `PreToolUse`/`PostToolUse` hooks, Codex through the stdio relay. Made from what this hub really uses
//! (the address it listens on, its token file, the `portcullis` binary), in the shapes the README
//! documents, so a front end shows the lines that work here rather than a template to fill in.

use super::types::HookupSnippet;
use super::{ApiError, ErrorCode, OperatorApi};
use serde_json::json;
use std::path::{Path, PathBuf};

impl OperatorApi {
    /// The snippets that hook Claude Code and Codex up to this hub. `hub_unavailable` while the hub
    /// does not listen (nothing to connect to), or when it has no config folder (no token).
    pub fn hookup_snippets(&self) -> Result<Vec<HookupSnippet>, ApiError> {
        let state = &self.hub.state;
        // The relay finds a hub that listens (its runtime file); one that does not has nothing to offer.
        state.served_at.get().ok_or_else(|| {
            ApiError::new(ErrorCode::HubUnavailable, "the hub does not listen for agents", json!({}))
        })?;
        let config = state.config.user_config().ok_or_else(|| {
            ApiError::new(ErrorCode::HubUnavailable, "the hub has no config folder (set HOME)", json!({}))
        })?;
        Ok(snippets(&config, &portcullis_binary()))
    }
}

/// The snippets for a hub whose config folder is `config`, relayed by `binary` (both agents reach the hub
/// through the stdio relay, which finds it by its runtime file). Public so `portcullis setup` writes the
/// very entries shown here (it parses the JSON and TOML snippets).
pub fn snippets(config: &Path, binary: &Path) -> Vec<HookupSnippet> {
    let bin = binary.display().to_string();
    // Clients start the relay and the hook with their own environment: name the config folder when it is
    // not the one they would find by themselves.
    let custom_config =
        (Some(config) != natural_config_dir().as_deref()).then(|| config.display().to_string());
    let env_prefix =
        custom_config.as_ref().map(|c| format!("PORTCULLIS_CONFIG_DIR={} ", sh(c))).unwrap_or_default();
    // The stdio relay: the token stays in the hub's folder (out of `~/.claude.json`, which the agent
    // reads), and the relay names Claude Code's session to the hub.
    let claude_relay = format!(
        "claude mcp add --scope user {}portcullis -- {} mcp",
        custom_config.as_ref().map(|c| format!("-e PORTCULLIS_CONFIG_DIR={} ", sh(c))).unwrap_or_default(),
        sh(&bin)
    );
    // In the README's shape: one line per hook entry, the order Claude Code's documentation uses.
    let command = serde_json::to_string(&format!("{env_prefix}{} hook claude", sh(&bin))).unwrap_or_default();
    // `permissions.allow` lets Claude Code call the gateway's tools without asking first (the hub asks
    // where its policy says so): without it `claude -p` refuses every call, and people are asked twice.
    let hook = format!(
        "{{\n  \"permissions\": {{ \"allow\": [\"mcp__portcullis\"] }},\n  \"hooks\": {{\n    \"PreToolUse\": [\n      {{ \"matcher\": \"*\", \"hooks\": [ {{ \"type\": \"command\", \"command\": {command}, \"timeout\": 60 }} ] }}\n    ],\n    \"PostToolUse\": [\n      {{ \"matcher\": \"*\", \"hooks\": [ {{ \"type\": \"command\", \"command\": {command}, \"timeout\": 60 }} ] }}\n    ]\n  }}\n}}\n"
    );
    // `default_tools_approval_mode = "approve"`: the hub judges every call (and asks its operator);
    // without it `codex exec` refuses every call ("requires approval, but approval policy is never").
    let mut codex = format!(
        "[mcp_servers.portcullis]\ncommand = {}\nargs = [\"mcp\"]\ndefault_tools_approval_mode = \"approve\"\n",
        toml_str(&bin)
    );
    if let Some(c) = &custom_config {
        codex.push_str(&format!("env = {{ PORTCULLIS_CONFIG_DIR = {} }}\n", toml_str(c)));
    }
    vec![
        HookupSnippet {
            client: "Claude Code".into(),
            purpose: "MCP server through the stdio relay (no token in Claude Code's files)".into(),
            file: None,
            language: "sh".into(),
            text: claude_relay,
        },
        HookupSnippet {
            client: "Claude Code".into(),
            purpose: "PreToolUse and PostToolUse hooks: Claude Code's own tools under the same policy, its Bash commands in the hub's sandbox, what they did on record".into(),
            file: Some("~/.claude/settings.json".into()),
            language: "json".into(),
            text: hook,
        },
        HookupSnippet {
            client: "Codex".into(),
            purpose: "MCP server through the stdio relay".into(),
            file: Some("~/.codex/config.toml".into()),
            language: "toml".into(),
            text: codex,
        },
    ]
}

/// The config folder a client's process finds without `PORTCULLIS_CONFIG_DIR`.
fn natural_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("portcullis"));
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".config/portcullis"))
}

/// The `portcullis` binary: this process when it is that binary, else the one installed beside it (the
/// desktop app's), else the first on `PATH`, else the bare name.
fn portcullis_binary() -> PathBuf {
    let exe = std::env::current_exe().ok();
    if let Some(exe) = &exe {
        if exe.file_name().is_some_and(|n| n == "portcullis") {
            return exe.clone();
        }
        if let Some(beside) = exe.parent().map(|d| d.join("portcullis"))
            && beside.is_file()
        {
            return beside;
        }
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|d| d.join("portcullis"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("portcullis"))
}

/// `text` as one shell word.
fn sh(text: &str) -> String {
    let plain =
        !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c));
    if plain { text.to_owned() } else { format!("'{}'", text.replace('\'', "'\\''")) }
}

/// `text` as a TOML basic string (JSON's string escapes are TOML's).
fn toml_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_with_spaces_and_quotes_stay_one_word() {
        assert_eq!(sh("/home/dev/.config/portcullis/token"), "/home/dev/.config/portcullis/token");
        assert_eq!(sh("/home/a b/it's"), "'/home/a b/it'\\''s'");
        assert_eq!(toml_str("C:\\x \"y\""), "\"C:\\\\x \\\"y\\\"\"");
    }
}
