//! `portcullis ledger query | show | check | migrate`: read a ledger and print what it holds.

use crate::args::{CheckArgs, MigrateArgs, QueryArgs, ShowArgs};
use crate::error::CliError;
use crate::render::{
    approval_line, call_decided, call_policy_label, change_lines, changes_label, clean, policy_label,
    record_decided,
};
use crate::table::Table;
use portcullis_api::ErrorCode;
use portcullis_api::ledger::{CallOrigin, LedgerAddress, LedgerView, migrate_ledger, parse_cursor};
use portcullis_api::ledger_browse::{CallDetail, CallOrder};
use portcullis_api::times::{format_duration, format_time};
use portcullis_api::types::DeciderKind;
use portcullis_api::types::Timestamp;
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;

/// Opens a ledger read-only through the operator API (a file works while another process writes it;
/// a team ledger is read in its database).
pub fn open_reader(db: &LedgerAddress) -> Result<LedgerView, CliError> {
    tracing::debug!(ledger = ?db, "opening ledger read-only");
    Ok(LedgerView::open_at(db)?)
}

/// Where a team ledger's call ran, in a word: `user@host`.
pub fn origin_label(origin: Option<&CallOrigin>) -> String {
    origin.map_or_else(|| "-".into(), |o| clean(&format!("{}@{}", o.user, o.host)))
}

pub fn query(args: &QueryArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let filter = args.filter.to_filter(Timestamp::now())?;
    let before = args.before.as_deref().map(parse_cursor).transpose()?;
    let address = args.db.address()?;
    let team = matches!(address, LedgerAddress::Team { .. });
    tracing::debug!(?filter, ?before, limit = args.limit, "querying calls");
    // The ledger browser's listing, through the same table.
    let (ledger, password_file) = crate::client::opened_as(&address);
    let page = crate::client::in_process(password_file, |client| async move {
        let opened = client.open_ledger(Some(ledger)).await?;
        client.ledger_calls(opened.id, filter, CallOrder::NewestFirst, before, u32::from(args.limit)).await
    })?;
    if args.json {
        let calls = page
            .calls
            .iter()
            .map(|call| {
                let mut value = serde_json::to_value(call)?;
                if let Value::Object(map) = &mut value {
                    map.insert("time".into(), Value::String(format_time(call.head.at)));
                }
                Ok(value)
            })
            .collect::<Result<Vec<Value>, serde_json::Error>>()?;
        let next = page.next.map(|c| c.to_string());
        writeln!(out, "{}", json!({ "calls": calls, "next": next }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if page.calls.is_empty() {
        writeln!(out, "no calls match")?;
    } else {
        let mut headers = vec![
            "TIME",
            "SESSION",
            "CALL",
            "TOOL",
            "STATUS",
            "REASON/ERROR",
            "POLICY",
            "DECIDED BY",
            "CHANGES",
            "DURATION",
        ];
        if team {
            headers.insert(0, "HUB");
        }
        let mut table = Table::new(&headers).right(headers.len() - 1);
        for call in &page.calls {
            let reason =
                call.head.reason.map(|r| r.as_str()).or(call.head.error_code.as_ref().map(|c| c.as_str()));
            let mut row = vec![
                format_time(call.head.at),
                call.head.session_id.clone(),
                call.head.call_id.clone(),
                call.head.tool.clone(),
                call.status.as_str().to_owned(),
                reason.unwrap_or("-").to_owned(),
                call_policy_label(call),
                call_decided(call),
                changes_label(call),
                call.head.duration_us.map(format_duration).unwrap_or_else(|| "-".into()),
            ];
            if team {
                row.insert(0, origin_label(call.origin.as_ref()));
            }
            table.push(row);
        }
        table.write(out, "")?;
    }
    if let Some(next) = page.next {
        writeln!(out, "next page: --before {next}")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(args: &ShowArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let address = args.db.address()?;
    let (ledger, password_file) = crate::client::opened_as(&address);
    // The same command the ledger browser's drawer calls, through the same table, for a file or a team
    // ledger (whose call says the hub it ran on).
    let found = crate::client::in_process(password_file, |client| async move {
        let opened = client.open_ledger(Some(ledger)).await?;
        client.ledger_call_details(opened.id, args.call_id.clone(), args.session.clone()).await
    });
    let details = match found {
        Err(CliError::Api(e)) if e.code == ErrorCode::CallNotFound => {
            let within = args.session.as_deref().map(|s| format!(" in session {s:?}")).unwrap_or_default();
            let shown = match &address {
                LedgerAddress::File(path) => path.display().to_string(),
                LedgerAddress::Team { .. } => "the team ledger".to_owned(),
            };
            return Err(CliError::CallNotFound(format!("{shown}: no call {:?}{within}", args.call_id)));
        }
        other => other?,
    };
    if args.json {
        // One object per session the call id occurs in (one line each); a team ledger's with `origin`.
        for detail in &details {
            let mut value = serde_json::to_value(detail)?;
            if let (Value::Object(map), Some(origin)) = (&mut value, &detail.call.origin) {
                map.insert("origin".into(), serde_json::to_value(origin)?);
            }
            writeln!(out, "{value}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    for (i, detail) in details.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        if let Some(o) = &detail.call.origin {
            writeln!(out, "hub {} ({}@{})", clean(&o.ledger_id), clean(&o.user), clean(&o.host))?;
        }
        show_detail(detail, out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One session's call in text: what it is and what the policy said, each record on one line, the files
/// it touches, the walls it ran in and what they refused, its approvals.
fn show_detail(detail: &CallDetail, out: &mut dyn Write) -> Result<(), CliError> {
    let call = &detail.call;
    // What the policy said, when the call reached it (and the ledger kept it).
    let policy = match (&call.head.policy_decision, &detail.policy_decider) {
        (None, _) => String::new(),
        // A protected place decided: say which (no rule did, so the label alone names none).
        (Some(decision), Some(by)) if by.kind == DeciderKind::ProtectedPlace => {
            format!("  policy {} ({})", policy_label(Some(*decision), None), clean(&by.words))
        }
        (Some(decision), _) => {
            format!("  policy {}", policy_label(Some(*decision), call.head.policy_rule.as_deref()))
        }
    };
    // Allowed without asking because it ran contained (stored as `allow`; its walls say contained).
    let contained = detail.records.iter().any(|s| {
        s.record.body.action.as_ref().and_then(|a| a.sandbox.as_ref()).is_some_and(|p| p.contained.is_some())
    });
    let policy = if contained { format!("{policy}, contained") } else { policy };
    writeln!(
        out,
        "call {}  tool {}  session {}  run {}  owner {}  status {}{policy}",
        clean(&call.head.call_id),
        clean(&call.head.tool),
        clean(&call.head.session_id),
        clean(&call.head.run_id),
        clean(&call.head.owner),
        call.status.as_str(),
    )?;
    let mut table = Table::new(&["TIME", "KIND", "DECIDED BY", "DETAILS"]);
    for step in &detail.records {
        table.push(vec![
            format_time(step.record.head.at),
            step.record.kind.as_str().to_owned(),
            record_decided(&step.record.body.decided_by),
            clean(&step.summary),
        ]);
    }
    table.write(out, "  ")?;
    // Every file the call reads or writes, as the policy saw it, with its verdict on each.
    if !detail.files.is_empty() {
        writeln!(out, "  files:")?;
        for f in &detail.files {
            writeln!(out, "    {}", clean(&file_line(f)))?;
        }
    }
    // The walls a command ran inside, and what they refused.
    let records = || detail.records.iter().map(|s| &s.record);
    if let Some(profile) = records().find_map(|r| r.body.action.as_ref().and_then(|a| a.sandbox.as_ref())) {
        for line in crate::sandbox_cmd::profile_lines(profile) {
            writeln!(out, "  {}", clean(&line))?;
        }
    }
    for record in records() {
        for line in crate::sandbox_cmd::refusal_lines(
            record.body.output.as_deref().and_then(|o| o.structured.as_ref()),
        ) {
            writeln!(out, "  {}", clean(&line))?;
        }
    }
    // What the command changed, and what became of each change, with sizes and digests.
    if let Some(record) = &detail.changes {
        for line in change_lines(record) {
            writeln!(out, "  {line}")?;
        }
    }
    // Every connection the command made or tried through its egress proxy.
    let connections: Vec<_> =
        records().filter_map(|r| r.body.output.as_deref()).flat_map(|o| &o.connections).collect();
    if !connections.is_empty() {
        writeln!(out, "  network (through the egress proxy):")?;
        for c in connections {
            writeln!(out, "    {}", clean(&c.summary()))?;
        }
    }
    if !detail.approvals.is_empty() {
        writeln!(out, "  approvals:")?;
        for approval in &detail.approvals {
            writeln!(out, "    {}", approval_line(approval))?;
        }
    }
    Ok(())
}

/// `read  /p/a.txt via cat operand: allow`, as `policy check` prints a file.
fn file_line(f: &portcullis_api::types::FileVerdict) -> String {
    let access = match f.access {
        portcullis_api::types::FileAccess::Read => "read ",
        portcullis_api::types::FileAccess::Write => "write",
    };
    let decision = match f.decision {
        portcullis_api::types::PolicyDecision::Allow => "allow",
        portcullis_api::types::PolicyDecision::Contain => "contain",
        portcullis_api::types::PolicyDecision::Ask => "prompt",
        portcullis_api::types::PolicyDecision::Deny => "forbidden",
    };
    let tree = if f.recursive { " (whole tree)" } else { "" };
    let why = f.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    format!("{access} {}{tree} via {}: {decision}{why}", f.path, f.via)
}

pub fn check(args: &CheckArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let (ledger, password_file) = crate::client::opened_as(&args.db.address()?);
    let report = crate::client::in_process(password_file, |client| async move {
        let opened = client.open_ledger(Some(ledger)).await?;
        client.ledger_check(opened.id).await
    })?;
    let healthy = report.healthy();
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let Value::Object(map) = &mut value {
            map.insert("healthy".into(), Value::Bool(healthy));
        }
        writeln!(out, "{value}")?;
    } else {
        writeln!(out, "ledger: {}", args.db.file()?.display())?;
        if report.integrity_ok {
            writeln!(out, "integrity: ok")?;
        } else {
            writeln!(out, "integrity: FAILED")?;
            for message in &report.integrity_messages {
                writeln!(out, "  {}", clean(message))?;
            }
        }
        writeln!(
            out,
            "schema version: {} (this build: {})",
            report.schema_version, report.supported_version
        )?;
        let mut table = Table::headless(2).right(1);
        for (what, n) in [
            ("records", report.records),
            ("calls", report.calls),
            ("sessions", report.sessions),
            ("approvals", report.approvals),
            ("open calls", report.open_calls),
            ("unclosed writers", report.unclosed_writers),
            ("unreadable bodies", report.unreadable_bodies),
        ] {
            table.push(vec![format!("{what}:"), n.to_string()]);
        }
        table.write(out, "")?;
        writeln!(out, "{}", if healthy { "healthy" } else { "NOT healthy" })?;
    }
    Ok(if healthy { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub fn migrate(args: &MigrateArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let db = &args.db.file()?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(CliError::Runtime)?;
    // A missing file is not created; a file it refuses (another application's, a newer schema) is left
    // as it was.
    let report = runtime.block_on(migrate_ledger(db))?;
    writeln!(out, "{}: schema version {}", db.display(), report.schema_version)?;
    let (interrupted, cut) = (report.interrupted_calls, report.cut_sessions);
    if interrupted > 0 {
        writeln!(out, "marked {interrupted} calls left open by a stopped writer as interrupted")?;
    }
    if cut > 0 {
        writeln!(out, "marked {cut} sessions still open (their writer stopped without ending them) as cut")?;
    }
    Ok(ExitCode::SUCCESS)
}
