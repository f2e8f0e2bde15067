//! Claude Code's JSON files: the `mcpServers.portcullis` entry (HTTP with the gateway token in
//! `~/.claude.json`, the stdio relay in a project's `.mcp.json`) and, in `settings.json`, the
//! `PreToolUse` and `PostToolUse` hooks with `permissions.allow` `mcp__portcullis`. Merged into what the file holds, every
//! other key kept in its place; a file that is not JSON, or a key of another shape, is left alone.

use super::{ConfigError, Finding, Wanted, config_seen_with, runnable};
use serde_json::{Map, Value, json};

/// The file's top-level object (`{}` for no file or an empty one).
fn parse(path: &str, text: Option<&str>) -> Result<Map<String, Value>, ConfigError> {
    let text = text.unwrap_or("");
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(root)) => Ok(root),
        Ok(_) => {
            Err(ConfigError::WrongShape { path: path.into(), key: "(top level)", expected: "an object" })
        }
        Err(e) => Err(ConfigError::Unparsable { path: path.into(), format: "JSON", reason: e.to_string() }),
    }
}

/// `root` as text, two-space indented like Claude Code writes it, ending as the old text did.
fn render(root: Map<String, Value>, old: Option<&str>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(root)).unwrap_or_default();
    if old.is_none_or(|o| o.trim().is_empty() || o.ends_with('\n')) {
        text.push('\n');
    }
    text
}

/// `root[key]` as an object, made when absent.
fn object_at<'a>(
    root: &'a mut Map<String, Value>,
    key: &'static str,
    path: &str,
) -> Result<&'a mut Map<String, Value>, ConfigError> {
    root.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| ConfigError::WrongShape { path: path.into(), key, expected: "an object" })
}

/// `root[key]` as an array, made when absent.
fn array_at<'a>(
    root: &'a mut Map<String, Value>,
    key: &'static str,
    path: &str,
) -> Result<&'a mut Vec<Value>, ConfigError> {
    root.entry(key)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| ConfigError::WrongShape { path: path.into(), key, expected: "an array" })
}

/// The server entry `setup` writes: the stdio relay, which reads the token itself (none in the file).
fn server_entry(wanted: &Wanted) -> Value {
    let mut entry = json!({ "type": "stdio", "command": wanted.relay_command(), "args": ["mcp"] });
    let env = wanted.relay_env();
    if !env.is_empty() {
        entry["env"] = Value::Object(env.into_iter().map(|(k, v)| (k, Value::String(v))).collect());
    }
    entry
}

/// The text with `mcpServers.portcullis` set to the relay (replacing the entry there).
pub fn apply_server(wanted: &Wanted, path: &str, text: Option<&str>) -> Result<String, ConfigError> {
    let mut root = parse(path, text)?;
    object_at(&mut root, "mcpServers", path)?.insert("portcullis".into(), server_entry(wanted));
    Ok(render(root, text))
}

/// Whether `mcpServers.portcullis` is there and works: the relay on this machine reading the hub's
/// config folder. `exact`: the command as `setup` writes it (`setup` rewrites anything else); otherwise
/// any path to a portcullis binary, as `doctor` accepts it. The HTTP entry older set-ups wrote is named
/// wrong: it puts the gateway token in a file Claude Code reads.
pub fn check_server(wanted: &Wanted, text: Option<&str>, exact: bool) -> Vec<Finding> {
    let Some(text) = text else {
        return vec![Finding::Missing("no mcpServers.portcullis (no file)".into())];
    };
    let root = match parse("", Some(text)) {
        Ok(root) => root,
        Err(_) => return vec![Finding::Wrong("not a JSON object".into())],
    };
    let Some(entry) = root.get("mcpServers").and_then(|s| s.get("portcullis")) else {
        return vec![Finding::Missing("no mcpServers.portcullis".into())];
    };
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or(if entry.get("command").is_some() {
        "stdio"
    } else {
        "(none)"
    });
    let finding = match kind {
        "http" => Finding::Wrong(
            "mcpServers.portcullis is the HTTP server with the gateway token in a file Claude Code reads; \
             the relay needs no token there"
                .into(),
        ),
        "stdio" => check_relay(wanted, entry, exact),
        other => Finding::Wrong(format!("mcpServers.portcullis has type `{other}`, not stdio")),
    };
    vec![finding]
}

fn check_relay(wanted: &Wanted, entry: &Value, exact: bool) -> Finding {
    let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let env: Vec<(String, String)> = entry
        .get("env")
        .and_then(Value::as_object)
        .map(|e| e.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect())
        .unwrap_or_default();
    let is_portcullis = std::path::Path::new(command).file_name().is_some_and(|n| n == "portcullis");
    if exact && (command != wanted.relay_command() || env != wanted.relay_env()) {
        return Finding::Wrong(format!(
            "mcpServers.portcullis runs `{command}`, not `{}`",
            wanted.relay_command()
        ));
    }
    if !is_portcullis || !runnable(command) {
        return Finding::Wrong(format!(
            "mcpServers.portcullis runs `{command}`, which is not a portcullis binary here"
        ));
    }
    if args != ["mcp"] {
        return Finding::Wrong(format!(
            "mcpServers.portcullis runs `{command} {}`, not `{command} mcp`",
            args.join(" ")
        ));
    }
    match config_seen_with(&env) {
        Some(seen) if seen == wanted.config => {
            Finding::Ok(format!("mcpServers.portcullis: the relay `{command} mcp`"))
        }
        seen => Finding::Wrong(format!(
            "mcpServers.portcullis: the relay would read the config folder {}, the hub's is {}",
            seen.map(|s| s.display().to_string()).unwrap_or_else(|| "(none)".into()),
            wanted.config.display()
        )),
    }
}

/// The hook events Portcullis answers: the question before a tool runs, the report after.
const HOOK_EVENTS: [&str; 2] = ["PreToolUse", "PostToolUse"];

/// The snippet's hook entry for `event` and its command.
fn wanted_hook(wanted: &Wanted, event: &str) -> (Value, String) {
    let entry = wanted.hook.pointer(&format!("/hooks/{event}/0")).cloned().unwrap_or(Value::Null);
    let command = entry.pointer("/hooks/0/command").and_then(Value::as_str).unwrap_or("").to_owned();
    (entry, command)
}

/// The snippet's `permissions.allow` names.
fn wanted_allow(wanted: &Wanted) -> Vec<String> {
    wanted
        .hook
        .pointer("/permissions/allow")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A hook command that runs Portcullis's Claude Code hook (any binary path, any environment prefix).
pub fn is_portcullis_hook(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words.windows(3).any(|w| {
        w[0].trim_matches(['\'', '"']).rsplit('/').next() == Some("portcullis")
            && w[1] == "hook"
            && w[2] == "claude"
    })
}

/// Every `event` hook command with its entry's matcher.
fn hook_commands(root: &Map<String, Value>, event: &str) -> Vec<(String, String)> {
    let entries = root.get("hooks").and_then(|h| h.get(event)).and_then(Value::as_array);
    entries
        .into_iter()
        .flatten()
        .flat_map(|entry| {
            let matcher = entry.get("matcher").and_then(Value::as_str).unwrap_or("").to_owned();
            let hooks = entry.get("hooks").and_then(Value::as_array).cloned().unwrap_or_default();
            hooks.into_iter().filter_map(move |h| {
                h.get("command").and_then(Value::as_str).map(|c| (matcher.clone(), c.to_owned()))
            })
        })
        .collect()
}

/// The text with the hook and the permission added; other hooks and permissions kept, an older
/// Portcullis hook command (another binary path) replaced.
pub fn apply_hook(wanted: &Wanted, path: &str, text: Option<&str>) -> Result<String, ConfigError> {
    let mut root = parse(path, text)?;
    let permissions = object_at(&mut root, "permissions", path)?;
    let allow = array_at(permissions, "allow", path)?;
    for name in wanted_allow(wanted) {
        if !allow.iter().any(|a| a.as_str() == Some(&name)) {
            allow.push(Value::String(name));
        }
    }
    let hooks = object_at(&mut root, "hooks", path)?;
    for event in HOOK_EVENTS {
        let (entry, command) = wanted_hook(wanted, event);
        let pre = array_at(hooks, event, path)?;
        for existing in pre.iter_mut() {
            let matcher = existing.get("matcher").and_then(Value::as_str).unwrap_or("").to_owned();
            if let Some(list) = existing.get_mut("hooks").and_then(Value::as_array_mut) {
                list.retain(|h| {
                    let c = h.get("command").and_then(Value::as_str).unwrap_or("");
                    !is_portcullis_hook(c) || (c == command && matcher == "*")
                });
            }
        }
        pre.retain(|e| e.get("hooks").and_then(Value::as_array).is_none_or(|l| !l.is_empty()));
        if !hook_commands_of(pre, event).iter().any(|(m, c)| m == "*" && *c == command) {
            pre.push(entry);
        }
    }
    Ok(render(root, text))
}

fn hook_commands_of(entries: &[Value], event: &str) -> Vec<(String, String)> {
    let mut root = Map::new();
    root.insert("hooks".into(), json!({ event: entries }));
    hook_commands(&root, event)
}

/// Whether the hook runs on every tool and the gateway's tools are allowed.
pub fn check_hook(wanted: &Wanted, text: Option<&str>) -> Vec<Finding> {
    let allow = wanted_allow(wanted);
    let Some(text) = text else {
        let mut out: Vec<Finding> =
            allow.iter().map(|a| Finding::Missing(format!("no permissions.allow {a} (no file)"))).collect();
        for event in HOOK_EVENTS {
            let (_, command) = wanted_hook(wanted, event);
            out.push(Finding::Missing(format!("no {event} hook `{command}` (no file)")));
        }
        return out;
    };
    let Ok(root) = parse("", Some(text)) else {
        return vec![Finding::Wrong("not a JSON object".into())];
    };
    let listed = |key: &str, name: &str| {
        root.get("permissions")
            .and_then(|p| p.get(key))
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|v| v.as_str() == Some(name)))
    };
    let mut out: Vec<Finding> = allow
        .iter()
        .map(|a| match (listed("allow", a), listed("deny", a)) {
            (_, true) => Finding::Wrong(format!("permissions.deny lists {a}")),
            (true, false) => Finding::Ok(format!("permissions.allow has {a}")),
            (false, false) => Finding::Missing(format!("no permissions.allow {a}")),
        })
        .collect();
    if root.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
        out.push(Finding::Wrong("disableAllHooks is true: no hook runs".into()));
        return out;
    }
    for event in HOOK_EVENTS {
        let (_, command) = wanted_hook(wanted, event);
        let commands = hook_commands(&root, event);
        let ours: Vec<&(String, String)> = commands.iter().filter(|(_, c)| is_portcullis_hook(c)).collect();
        out.push(if ours.iter().any(|(m, c)| m == "*" && same_hook_command(c, &command)) {
            Finding::Ok(format!("{event} hook `{command}` on every tool"))
        } else if let Some((m, c)) = ours.first() {
            Finding::Wrong(format!("the {event} hook runs `{c}` on `{m}`; setup writes `{command}` on `*`"))
        } else {
            Finding::Missing(format!("no {event} hook `{command}`"))
        });
    }
    out
}

/// Two hook commands that run the same binary the same way: `portcullis hook claude` is the same as
/// `/usr/local/bin/portcullis hook claude` when that is the `portcullis` on PATH.
fn same_hook_command(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let resolved = |command: &str| -> Option<(std::path::PathBuf, String)> {
        let (program, rest) = command.split_once(' ')?;
        let program = program.trim_matches('\'');
        let path = if program.contains('/') {
            std::path::PathBuf::from(program)
        } else {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join(program))
                .find(|p| p.is_file())?
        };
        Some((std::fs::canonicalize(path).ok()?, rest.to_owned()))
    };
    matches!((resolved(a), resolved(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_hook_command_is_portcullis_whatever_its_path_and_environment() {
        for yes in [
            "portcullis hook claude",
            "/usr/local/bin/portcullis hook claude",
            "PORTCULLIS_CONFIG_DIR=/x '/a b/portcullis' hook claude",
        ] {
            assert!(is_portcullis_hook(yes), "{yes}");
        }
        for no in ["other hook claude", "portcullis mcp", "echo portcullis hook codex"] {
            assert!(!is_portcullis_hook(no), "{no}");
        }
    }
}
