//! `portcullis undo <call>`: shows, then with `--yes` carries out, the undo of a confined command's
//! committed changes (`start::undo_call`); `portcullis held`: lists, keeps or discards the changes held
//! for the operator. A refusal says why and exits 1.

use crate::args::{HeldArgs, UndoArgs};
use crate::error::CliError;
use portcullis_api::start::{default_ledger_path, discard_held, held_lines, keep_held, undo_call};
use std::io::Write;
use std::process::ExitCode;

pub fn undo(args: &UndoArgs) -> Result<ExitCode, CliError> {
    let db = match &args.db {
        Some(db) => db.clone(),
        None => default_ledger_path()?,
    };
    let mut out = std::io::stdout().lock();
    match undo_call(&db, &args.call, args.session.as_deref(), args.yes) {
        Ok(report) => {
            for line in &report.lines {
                writeln!(out, "{line}")?;
            }
            if report.done {
                writeln!(out, "undone: call {} ({} paths put back)", report.call, report.lines.len())?;
                Ok(ExitCode::SUCCESS)
            } else {
                writeln!(out, "not done: pass --yes to put these back")?;
                Ok(ExitCode::from(1))
            }
        }
        Err(why) => {
            writeln!(std::io::stderr().lock(), "portcullis undo: {why}")?;
            Ok(ExitCode::from(1))
        }
    }
}

pub fn held(args: &HeldArgs) -> Result<ExitCode, CliError> {
    let root = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    let root = std::fs::canonicalize(&root)?;
    let mut out = std::io::stdout().lock();
    let outcome = match (args.action.as_str(), &args.call) {
        ("list", _) => {
            let lines = held_lines(&root);
            if lines.is_empty() {
                writeln!(out, "no changes are held in {}", root.display())?;
            }
            Ok(lines)
        }
        ("keep", Some(call)) => keep_held(&root, call, args.session.as_deref()),
        ("discard", Some(call)) => discard_held(&root, call, args.session.as_deref())
            .map(|n| vec![format!("discarded: {n} held changes of call {call}")]),
        (action, None) => Err(format!("`held {action}` needs the call")),
        (action, _) => Err(format!("unknown action {action}")),
    };
    match outcome {
        Ok(lines) => {
            for line in lines {
                writeln!(out, "{line}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => {
            writeln!(std::io::stderr().lock(), "portcullis held: {why}")?;
            Ok(ExitCode::from(1))
        }
    }
}
