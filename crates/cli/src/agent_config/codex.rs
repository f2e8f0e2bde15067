//! Codex's `config.toml`: the `[mcp_servers.portcullis]` table (the stdio relay, tools approved since
//! the hub judges every call). Merged with `toml_edit`, so the file keeps its comments, order and
//! layout; a file that is not TOML, or an `mcp_servers` that is not a table, is left alone.

use super::{ConfigError, Finding, Wanted, config_seen_with, runnable};
use toml_edit::{DocumentMut, Item, Table};

fn parse(path: &str, text: Option<&str>) -> Result<DocumentMut, ConfigError> {
    text.unwrap_or("").parse::<DocumentMut>().map_err(|e| ConfigError::Unparsable {
        path: path.into(),
        format: "TOML",
        reason: e.to_string().lines().next().unwrap_or("").to_owned(),
    })
}

/// The snippet's table, made fresh (no position or decoration from the snippet's document).
fn relay_table(wanted: &Wanted) -> Table {
    let mut table = Table::new();
    for (key, item) in wanted.relay.iter() {
        table.insert(key, item.clone());
    }
    table
}

/// The text with `[mcp_servers.portcullis]` set to the relay (replacing the one there).
pub fn apply_relay(wanted: &Wanted, path: &str, text: Option<&str>) -> Result<String, ConfigError> {
    let mut doc = parse(path, text)?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let table = relay_table(wanted);
    match servers {
        Item::Table(servers) => {
            servers.insert("portcullis", Item::Table(table));
        }
        Item::Value(toml_edit::Value::InlineTable(servers)) => {
            servers.insert("portcullis", toml_edit::Value::InlineTable(table.into_inline_table()));
        }
        _ => {
            return Err(ConfigError::WrongShape {
                path: path.into(),
                key: "mcp_servers",
                expected: "a table",
            });
        }
    }
    let mut out = doc.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// Whether `[mcp_servers.portcullis]` runs the relay on this machine, for the hub's config folder,
/// with its tools approved.
pub fn check_relay(wanted: &Wanted, text: Option<&str>) -> Vec<Finding> {
    let Some(text) = text else {
        return vec![Finding::Missing("no [mcp_servers.portcullis] (no file)".into())];
    };
    let Ok(doc) = parse("", Some(text)) else {
        return vec![Finding::Wrong("not TOML".into())];
    };
    let Some(entry) = doc.get("mcp_servers").and_then(|s| s.get("portcullis")).and_then(Item::as_table_like)
    else {
        return vec![Finding::Missing("no [mcp_servers.portcullis]".into())];
    };
    let command = entry.get("command").and_then(Item::as_str).unwrap_or("");
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Item::as_array)
        .map(|a| a.iter().filter_map(toml_edit::Value::as_str).collect())
        .unwrap_or_default();
    let env: Vec<(String, String)> = entry
        .get("env")
        .and_then(Item::as_table_like)
        .map(|t| t.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.to_owned(), v.to_owned()))).collect())
        .unwrap_or_default();
    let is_portcullis = std::path::Path::new(command).file_name().is_some_and(|n| n == "portcullis");
    let mut out = Vec::new();
    out.push(if !is_portcullis || !runnable(command) {
        Finding::Wrong(format!(
            "[mcp_servers.portcullis] runs `{command}`, which is not a portcullis binary here"
        ))
    } else if args != ["mcp"] {
        Finding::Wrong(format!(
            "[mcp_servers.portcullis] runs `{command} {}`, not `{command} mcp`",
            args.join(" ")
        ))
    } else {
        match config_seen_with(&env) {
            Some(seen) if seen == wanted.config => {
                Finding::Ok(format!("[mcp_servers.portcullis]: the relay `{command} mcp`"))
            }
            seen => Finding::Wrong(format!(
                "[mcp_servers.portcullis]: the relay would read the config folder {}, the hub's is {}",
                seen.map(|s| s.display().to_string()).unwrap_or_else(|| "(none)".into()),
                wanted.config.display()
            )),
        }
    });
    let mode = entry.get("default_tools_approval_mode").and_then(Item::as_str);
    out.push(match mode {
        Some("approve") => Finding::Ok("default_tools_approval_mode = \"approve\"".into()),
        None => Finding::Missing("no default_tools_approval_mode = \"approve\"".into()),
        Some(other) => Finding::Wrong(format!("default_tools_approval_mode is \"{other}\", not \"approve\"")),
    });
    if entry.get("enabled").and_then(Item::as_bool) == Some(false) {
        out.push(Finding::Wrong("[mcp_servers.portcullis] has enabled = false".into()));
    }
    out
}
