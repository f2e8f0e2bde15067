//! `portcullis undo <call>`: shows, then with `--yes` carries out, the undo of a confined command's
//! committed changes (`start::undo_call`); a refusal says why and exits 1.

use crate::args::UndoArgs;
use crate::error::CliError;
use portcullis_hub::start::{default_ledger_path, undo_call};
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
