//! `portcullis ledger stats`: counts, duration percentiles per tool, and calls over time as a bar chart.

use crate::args::StatsArgs;
use crate::error::CliError;
use crate::render::count;
use crate::table::Table;
use portcullis_api::ledger::{Bucket, Count, fill_histogram};
use portcullis_api::times::{format_duration, format_time, format_width, parse_width};
use portcullis_api::types::Timestamp;
use std::io::Write;
use std::process::ExitCode;

/// Widest bar of the histogram, in characters.
const BAR_WIDTH: u64 = 40;

pub fn stats(args: &StatsArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let filter = args.filter.to_filter(Timestamp::now())?;
    let bucket = args
        .bucket
        .as_deref()
        .map(parse_width)
        .transpose()
        .map_err(|e| CliError::BadArgument(format!("--bucket: {}", e.message)))?;
    // The ledger browser's stats, and how far behind the file's sinks are, through the same table.
    let (ledger, password_file) = crate::client::opened_as(&args.db.address()?);
    let (stats, shipping) = crate::client::in_process(password_file, |client| async move {
        let opened = client.open_ledger(Some(ledger)).await?;
        let stats = client.ledger_stats(opened.id, filter, bucket).await?;
        Ok((stats, client.ledger_shipping(opened.id).await?))
    })?;
    if args.json {
        let mut value = serde_json::to_value(&stats)?;
        if let (serde_json::Value::Object(map), false) = (&mut value, shipping.is_empty()) {
            map.insert("shipping".into(), serde_json::to_value(&shipping)?);
        }
        writeln!(out, "{value}")?;
        return Ok(ExitCode::SUCCESS);
    }
    for lag in &shipping {
        let behind = lag.records_behind + lag.rows_behind;
        writeln!(
            out,
            "shipping to {}: {} records and {} other rows behind (shipped through record {} of {})",
            crate::render::clean(lag.sink.strip_prefix("team:").unwrap_or(&lag.sink)),
            count(u64::try_from(lag.records_behind).unwrap_or(0)),
            count(u64::try_from(lag.rows_behind).unwrap_or(0)),
            lag.shipped_through,
            lag.ledger_head
        )?;
        if behind >= portcullis_api::ledger::SHIPPING_LAG_WARNING {
            writeln!(
                out,
                "warning: shipping is {} rows behind: is the sink reachable? (the ledger keeps them until it is)",
                count(u64::try_from(behind).unwrap_or(0))
            )?;
        }
    }
    writeln!(out, "calls: {}", count(stats.total))?;
    let s = &stats.sessions;
    writeln!(
        out,
        "sessions: {} ({} open, {} closed, {} cut)",
        count(s.total),
        count(s.open),
        count(s.closed),
        count(s.cut)
    )?;
    let refused = &stats.refusals;
    let by_code: Vec<String> =
        refused.by_code.iter().map(|c| format!("{} {}", c.key, count(c.count))).collect();
    if by_code.is_empty() {
        writeln!(out, "refused requests: 0")?;
    } else {
        writeln!(out, "refused requests: {} ({})", count(refused.requests), by_code.join(", "))?;
    }
    for (title, counts) in [
        ("by tool", &stats.by_tool),
        ("by status", &stats.by_status),
        ("by reason", &stats.by_reason),
        ("by decided by", &stats.by_decided_by),
        ("by host", &stats.by_host),
        ("by user", &stats.by_user),
    ] {
        write_counts(out, title, counts)?;
    }
    if !stats.durations.is_empty() {
        writeln!(out)?;
        writeln!(out, "durations (calls that ran):")?;
        let mut table =
            Table::new(&["TOOL", "CALLS", "P50", "P95", "MAX"]).right(1).right(2).right(3).right(4);
        for d in &stats.durations {
            table.push(vec![
                d.tool.clone(),
                count(d.count),
                format_duration(d.p50_us),
                format_duration(d.p95_us),
                format_duration(d.max_us),
            ]);
        }
        table.write(out, "  ")?;
    }
    if !stats.buckets.is_empty() {
        writeln!(out)?;
        writeln!(out, "calls per {}:", format_width(stats.bucket_us))?;
        write_histogram(out, &stats.buckets, stats.bucket_us)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_counts(out: &mut dyn Write, title: &str, counts: &[Count]) -> Result<(), CliError> {
    if counts.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{title}:")?;
    let mut table = Table::headless(2).right(1);
    for c in counts {
        table.push(vec![c.key.clone(), count(c.count)]);
    }
    table.write(out, "  ")?;
    Ok(())
}

fn write_histogram(out: &mut dyn Write, buckets: &[Bucket], bucket_us: i64) -> Result<(), CliError> {
    let histogram = fill_histogram(buckets, bucket_us);
    let max = histogram.buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let mut table = Table::headless(3).right(1);
    for b in &histogram.buckets {
        let bar = if b.count == 0 { 0 } else { (b.count * BAR_WIDTH).div_ceil(max) };
        table.push(vec![format_time(b.start), count(b.count), "#".repeat(bar as usize)]);
    }
    table.write(out, "  ")?;
    if histogram.empty_left_out {
        writeln!(out, "  (empty buckets not shown)")?;
    }
    Ok(())
}
