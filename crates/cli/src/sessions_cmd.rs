//! `portcullis ledger sessions` and `portcullis ledger refusals`: who connected and who was turned away.
//! Sessions newest first with how each ended — closed by its client or hub, or cut (the hub holding it
//! stopped without closing it); refused requests newest first, identical ones counted per minute.

use crate::args::{ListingArgs, option_error};
use crate::error::CliError;
use crate::render::clean;
use crate::table::Table;
use portcullis_api::ledger::LedgerAddress;
use portcullis_api::times::format_time;
use portcullis_api::types::Timestamp;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

pub fn refusals(args: &ListingArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let filter = args.range().refusal_filter(Timestamp::now()).map_err(option_error)?;
    let (ledger, password_file) = crate::client::opened_as(&args.db.address()?);
    let rows = crate::client::in_process(password_file, |client| async move {
        let opened = client.open_ledger(Some(ledger)).await?;
        client.ledger_refusals(opened.id, filter.since, filter.until, u32::from(args.limit)).await
    })?;
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
            format_time(row.first_at),
            format_time(row.last_at),
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
    let filter = args.range().session_filter(Timestamp::now()).map_err(option_error)?;
    let address = args.db.address()?;
    let team = matches!(address, LedgerAddress::Team { .. });
    // The ledger browser's sessions, through the same table.
    let (ledger, password_file) = crate::client::opened_as(&address);
    let rows = crate::client::in_process(password_file, |client| async move {
        let opened = client.open_ledger(Some(ledger)).await?;
        client.ledger_sessions(opened.id, filter.since, filter.until, u32::from(args.limit)).await
    })?;
    if args.json {
        writeln!(out, "{}", json!({ "sessions": rows }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(out, "no sessions")?;
        return Ok(ExitCode::SUCCESS);
    }
    let headers = if team {
        vec!["HUB", "STARTED", "SESSION", "CLIENT", "ENDED", "END"]
    } else {
        vec!["STARTED", "SESSION", "CLIENT", "ENDED", "END"]
    };
    let mut table = Table::new(&headers);
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
        let mut cells = vec![
            format_time(s.started_at),
            clean(&s.id),
            client,
            s.ended_at.map(format_time).unwrap_or_else(|| "-".into()),
            end.to_owned(),
        ];
        if team {
            cells.insert(0, crate::ledger_cmd::origin_label(row.origin.as_ref()));
        }
        table.push(cells);
    }
    table.write(out, "")?;
    Ok(ExitCode::SUCCESS)
}
