//! `portcullis setup claude|codex`: hooks an agent up to Portcullis by merging the hub's entries into
//! the agent's own files (every other key kept). Each file's diff is shown first; it writes only with
//! `--yes` or a "y" on the terminal, keeps a backup of each file it changes, and `--undo` puts them back.
//! No token goes into an agent's files: both agents start the stdio relay, which reads it itself.

use crate::agent_config::files::{self, Undo};
use crate::agent_config::{AgentFile, ConfigError, Folders, Scope, Wanted, agent_files, agent_word, apply};
use crate::args::{AgentName, SetupArgs};
use crate::error::CliError;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// One file `setup` would change.
struct Change {
    row: &'static AgentFile,
    path: PathBuf,
    shown: String,
    before: Option<String>,
    /// `None`: the file goes (an undo of a file `setup` made).
    after: Option<String>,
    undo: Option<Undo>,
}

pub fn setup(args: &SetupArgs) -> Result<ExitCode, CliError> {
    match run(args) {
        Ok(code) => Ok(code),
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "portcullis: error[{}]: {e}", e.code());
            Ok(ExitCode::from(2))
        }
    }
}

fn run(args: &SetupArgs) -> Result<ExitCode, ConfigError> {
    let scope = if args.project { Scope::Project } else { Scope::User };
    let folders = Folders::from_env()?;
    let changes =
        if args.undo { undo_changes(args.agent, scope, &folders)? } else { changes(args, scope, &folders)? };
    let what = format!("{} {}", agent_word(args.agent), scope.flag());
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| ConfigError::io(std::path::Path::new("(stdout)"), e);
    if changes.is_empty() {
        let state = if args.undo { "nothing to undo" } else { "set up already" };
        writeln!(out, "portcullis setup {what}: {state}").map_err(io)?;
        return Ok(ExitCode::SUCCESS);
    }
    let token = portcullis_api::start::config_dir()
        .ok()
        .and_then(|c| std::fs::read_to_string(c.join("token")).ok())
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    for change in &changes {
        let diff = files::unified_diff(&change.shown, change.before.as_deref(), change.after.as_deref());
        // The diff is for reading on a terminal: the token is named, not shown.
        let diff = match &token {
            Some(t) => diff.replace(t.as_str(), "<the gateway token>"),
            None => diff,
        };
        write!(out, "{diff}").map_err(io)?;
    }
    out.flush().map_err(io)?;
    if args.dry_run {
        writeln!(out, "portcullis setup {what}: dry run, nothing written").map_err(io)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes && !confirmed()? {
        return Ok(ExitCode::from(1));
    }
    for change in &changes {
        match &change.undo {
            Some(undo) => files::carry_out(&change.path, undo)?,
            None => files::write_with_backup(
                &change.path,
                change.before.as_deref(),
                change.after.as_deref().unwrap_or(""),
                change.row.secret,
            )?,
        }
        let done = match (&change.undo, &change.before) {
            (Some(Undo::Restore(_)), _) => "restored from its backup".to_owned(),
            (Some(Undo::Remove), _) => "removed (setup had made it)".to_owned(),
            (None, Some(_)) => format!("written (the old one is kept as {}.portcullis-backup)", change.shown),
            (None, None) => "made".to_owned(),
        };
        writeln!(out, "portcullis setup: {}: {done}", change.shown).map_err(io)?;
    }
    if !args.undo {
        writeln!(out, "{}", after_word(args.agent, scope)).map_err(io)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The changes that merge the entries in.
fn changes(args: &SetupArgs, scope: Scope, folders: &Folders) -> Result<Vec<Change>, ConfigError> {
    let wanted = Wanted::from_env()?;
    let mut out = Vec::new();
    for row in agent_files(args.agent, scope) {
        let path = folders.path(row);
        let shown = folders.shown(&path);
        let before = files::read(&path)?;
        let after = apply(row.entry, &wanted, &shown, before.as_deref())?;
        if before.as_deref() != Some(after.as_str()) {
            out.push(Change { row, path, shown, before, after: Some(after), undo: None });
        }
    }
    Ok(out)
}

/// The changes that put the backups back.
fn undo_changes(agent: AgentName, scope: Scope, folders: &Folders) -> Result<Vec<Change>, ConfigError> {
    let mut out = Vec::new();
    for row in agent_files(agent, scope) {
        let path = folders.path(row);
        if let Some(undo) = files::undo_of(&path)? {
            let after = match &undo {
                Undo::Restore(text) => Some(text.clone()),
                Undo::Remove => None,
            };
            let before = files::read(&path)?;
            out.push(Change { row, shown: folders.shown(&path), path, before, after, undo: Some(undo) });
        }
    }
    Ok(out)
}

/// A "y" on the terminal; without a terminal, no (and says to pass `--yes`).
fn confirmed() -> Result<bool, ConfigError> {
    let stdin = std::io::stdin();
    let mut err = std::io::stderr().lock();
    let io = |e: std::io::Error| ConfigError::io(std::path::Path::new("(terminal)"), e);
    if !stdin.is_terminal() {
        writeln!(
            err,
            "portcullis setup: nothing written: stdin is not a terminal; pass --yes to write these changes"
        )
        .map_err(io)?;
        return Ok(false);
    }
    write!(err, "Write these changes? [y/N] ").map_err(io)?;
    err.flush().map_err(io)?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer).map_err(io)?;
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    if !yes {
        writeln!(err, "portcullis setup: nothing written").map_err(io)?;
    }
    Ok(yes)
}

/// What to know once the files are written.
fn after_word(agent: AgentName, scope: Scope) -> String {
    let note = match (agent, scope) {
        (AgentName::Claude, Scope::User) => {
            "Claude Code starts the relay `portcullis mcp`, which reads the token itself; its Bash commands run in the hub's sandbox while `portcullis serve` runs."
        }
        (AgentName::Claude, Scope::Project) => {
            "Claude Code asks once before it starts a project's .mcp.json server (the relay `portcullis mcp`, no token in the project)."
        }
        (AgentName::Codex, Scope::User) => {
            "Codex starts the relay `portcullis mcp`, which reads the token itself."
        }
        (AgentName::Codex, Scope::Project) => {
            "Codex reads a project's .codex/config.toml only when it trusts the project (it asks, or `[projects.\"<path>\"] trust_level = \"trusted\"` in ~/.codex/config.toml)."
        }
    };
    format!("{note}\nCheck it with `portcullis doctor {}`.", agent_word(agent))
}
