//! Command-line arguments (clap derive): the `ledger` subcommands, their filters, and how the filter
//! options become a ledger `CallFilter`.

use crate::error::CliError;
use clap::{Args, Parser, Subcommand};
use portcullis_harness::{BlockedReason, Timestamp};
use portcullis_ledger::timefmt::parse_time;
use portcullis_ledger::{CallFilter, CallStatus, LedgerStoreError};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "portcullis", version, about = "Portcullis: a gate for AI agents' tool calls.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read, search, export, check and migrate a ledger file.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// List calls, newest first, one page at a time.
    Query(QueryArgs),
    /// Show one call's whole timeline: every record and its approvals.
    Show(ShowArgs),
    /// Counts by tool, status, reason and decider; durations per tool; calls over time.
    Stats(StatsArgs),
    /// Write every record of the selected calls as JSON Lines or CSV.
    Export(ExportArgs),
    /// Check that the file is a healthy ledger (exit 0 when healthy, 1 otherwise).
    Check(CheckArgs),
    /// Open the ledger for writing once, migrating an older schema, and close it.
    Migrate(MigrateArgs),
}

#[derive(Debug, Args)]
pub struct DbArg {
    /// The ledger file.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
}

/// Which calls a command is about. Repeated options (or comma-separated values) mean "any of these".
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Only calls of this tool (repeatable).
    #[arg(long = "tool", value_name = "TOOL")]
    pub tools: Vec<String>,
    /// finished, error, blocked, interrupted or running (repeatable; default: every ended call).
    #[arg(long = "status", value_name = "STATUS", value_delimiter = ',')]
    pub statuses: Vec<String>,
    /// Blocked reason: guardrail_blocked, unknown_tool, tool_denied, invalid_arguments,
    /// permission_denied, validation_failed, execution_denied (repeatable).
    #[arg(long = "reason", value_name = "REASON", value_delimiter = ',')]
    pub reasons: Vec<String>,
    /// What decided: default, rule, operator, session_grant, approval_timeout, grants, guardrail,
    /// permission, registry, validator (repeatable).
    #[arg(long = "decided-by", value_name = "KIND", value_delimiter = ',')]
    pub decided_by: Vec<String>,
    /// Only calls decided by this rule id.
    #[arg(long, value_name = "ID")]
    pub rule: Option<String>,
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// From this time on: RFC 3339, a date (2026-11-30) or an age (90s, 15m, 2h, 7d).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Words that must all appear in the tool name, arguments, output or error.
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Calls per page.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
    /// Continue after this cursor (the `next page` cursor of the previous page).
    #[arg(long, value_name = "CURSOR")]
    pub before: Option<String>,
    /// One JSON object: {"calls": [...], "next": cursor or null}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// The call id.
    #[arg(value_name = "CALL_ID")]
    pub call_id: String,
    /// The session, when the call id occurs in several.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Width of the histogram's time buckets: 90s, 15m, 1h, 7d (default: about 60 buckets).
    #[arg(long, value_name = "AGE")]
    pub bucket: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// jsonl or csv.
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// Write to this file (created owner-only) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub db: DbArg,
}

fn parse_reason(text: &str) -> Result<BlockedReason, CliError> {
    BlockedReason::ALL.into_iter().find(|r| r.as_str() == text).ok_or_else(|| {
        let names: Vec<&str> = BlockedReason::ALL.iter().map(|r| r.as_str()).collect();
        CliError::Ledger(LedgerStoreError::BadFilter(format!(
            "unknown reason {text:?}: expected one of {}",
            names.join(", ")
        )))
    })
}

fn parse_when(option: &str, text: &str, now: Timestamp) -> Result<Timestamp, CliError> {
    parse_time(text, now).map_err(|e| CliError::BadTime(format!("{option}: {e}")))
}

impl FilterArgs {
    /// The ledger filter these options describe; `now` anchors ages such as `2h`.
    pub fn to_filter(&self, now: Timestamp) -> Result<CallFilter, CliError> {
        let statuses =
            self.statuses.iter().map(|s| s.parse::<CallStatus>()).collect::<Result<Vec<_>, _>>()?;
        let reasons = self.reasons.iter().map(|r| parse_reason(r)).collect::<Result<Vec<_>, _>>()?;
        Ok(CallFilter {
            session: self.session.clone(),
            run: self.run.clone(),
            tools: self.tools.clone(),
            statuses,
            reasons,
            decided_by: self.decided_by.clone(),
            rule: self.rule.clone(),
            since: self.since.as_deref().map(|t| parse_when("--since", t, now)).transpose()?,
            until: self.until.as_deref().map(|t| parse_when("--until", t, now)).transpose()?,
            search: self.search.clone(),
        })
    }
}
