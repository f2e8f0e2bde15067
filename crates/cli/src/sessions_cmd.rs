//! `portcullis ledger sessions`: the agent sessions a ledger holds, newest first, and how each ended —
//! closed by its client or hub, or cut (the hub holding it stopped without closing it).

use crate::args::{SessionsArgs, parse_when};
use crate::error::CliError;
use crate::ledger_cmd::open_reader;
use crate::render::clean;
use crate::table::Table;
use portcullis_harness::Timestamp;
use portcullis_ledger::SessionFilter;
use portcullis_ledger::timefmt::format_rfc3339;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

pub fn sessions(args: &SessionsArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let now = Timestamp::now();
    let filter = SessionFilter {
        id: None,
        since: args.since.as_deref().map(|t| parse_when("--since", t, now)).transpose()?,
        until: args.until.as_deref().map(|t| parse_when("--until", t, now)).transpose()?,
    };
    let reader = open_reader(&args.db.file()?)?;
    let rows = reader.session_rows(&filter, usize::from(args.limit))?;
    if args.json {
        writeln!(out, "{}", json!({ "sessions": rows }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(out, "no sessions")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Table::new(&["STARTED", "SESSION", "CLIENT", "ENDED", "END"]);
    for row in &rows {
        let s = &row.session;
        let client = match (&s.client_name, &s.client_version) {
            (Some(name), Some(version)) => format!("{} {}", clean(name), clean(version)),
            (Some(name), None) => clean(name),
            _ => "-".into(),
        };
        let end = match (row.end_reason, s.ended_at) {
            (Some(reason), _) => reason.as_str(),
            (None, Some(_)) => "closed",
            (None, None) => "open",
        };
        table.push(vec![
            format_rfc3339(s.started_at),
            clean(&s.id),
            client,
            s.ended_at.map(format_rfc3339).unwrap_or_else(|| "-".into()),
            end.to_owned(),
        ]);
    }
    table.write(out, "")?;
    Ok(ExitCode::SUCCESS)
}
