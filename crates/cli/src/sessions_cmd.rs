//! `portcullis ledger sessions` and `portcullis ledger refusals`: who connected and who was turned away.
//! Sessions newest first with how each ended — closed by its client or hub, or cut (the hub holding it
//! stopped without closing it); refused requests newest first, identical ones counted per minute.

use crate::args::{ListingArgs, parse_when};
use crate::error::CliError;
use crate::ledger_cmd::open_reader;
use crate::render::clean;
use crate::table::Table;
use portcullis_harness::Timestamp;
use portcullis_ledger::timefmt::format_rfc3339;
use portcullis_ledger::{RefusalFilter, SessionFilter};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

/// The `--since` and `--until` of the arguments.
fn time_range(args: &ListingArgs) -> Result<(Option<Timestamp>, Option<Timestamp>), CliError> {
    let now = Timestamp::now();
    Ok((
        args.since.as_deref().map(|t| parse_when("--since", t, now)).transpose()?,
        args.until.as_deref().map(|t| parse_when("--until", t, now)).transpose()?,
    ))
}

pub fn refusals(args: &ListingArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let (since, until) = time_range(args)?;
    let reader = open_reader(&args.db.file()?)?;
    let rows = reader.refusals(&RefusalFilter { since, until }, usize::from(args.limit))?;
    if args.json {
        writeln!(out, "{}", json!({ "refusals": rows }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(out, "no refused requests")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Table::new(&[
        "FIRST",
        "LAST",
        "COUNT",
        "STATUS",
        "CODE",
        "REQUEST",
        "PEER",
        "ORIGIN",
        "HOST",
        "USER AGENT",
    ])
    .right(2);
    let shown = |v: &Option<String>| v.as_deref().map(clean).unwrap_or_else(|| "-".into());
    for row in &rows {
        let request = match (&row.method, &row.path) {
            (Some(method), Some(path)) => format!("{} {}", clean(method), clean(path)),
            _ => "(details not kept: too many kinds this minute)".into(),
        };
        table.push(vec![
            format_rfc3339(row.first_at),
            format_rfc3339(row.last_at),
            row.count.to_string(),
            row.status.to_string(),
            row.code.clone(),
            request,
            shown(&row.peer),
            shown(&row.origin),
            shown(&row.host),
            shown(&row.user_agent),
        ]);
    }
    table.write(out, "")?;
    Ok(ExitCode::SUCCESS)
}

pub fn sessions(args: &ListingArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let (since, until) = time_range(args)?;
    let filter = SessionFilter { id: None, since, until };
    let reader = open_reader(&args.db.file()?)?;
    let rows = reader.sessions(&filter, usize::from(args.limit))?;
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
