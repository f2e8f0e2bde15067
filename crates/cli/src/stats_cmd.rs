//! `portcullis ledger stats`: counts, duration percentiles per tool, and calls over time as a bar chart.

use crate::args::StatsArgs;
use crate::error::CliError;
use crate::ledger_cmd::open_reader;
use crate::render::{count, duration, parse_width, width};
use crate::table::Table;
use portcullis_harness::Timestamp;
use portcullis_ledger::stats::{Bucket, Count};
use portcullis_ledger::timefmt::format_rfc3339;
use std::io::Write;
use std::process::ExitCode;

/// Widest bar of the histogram, in characters.
const BAR_WIDTH: u64 = 40;
/// Most buckets drawn with their empty neighbours filled in; beyond, only non-empty buckets are drawn.
const MAX_FILLED_BUCKETS: i64 = 200;

pub fn stats(args: &StatsArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let filter = args.filter.to_filter(Timestamp::now())?;
    let bucket = args.bucket.as_deref().map(|b| parse_width("--bucket", b)).transpose()?;
    let reader = open_reader(&args.db.file()?)?;
    let stats = reader.stats(&filter, bucket)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&stats)?)?;
        return Ok(ExitCode::SUCCESS);
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
                duration(d.p50_us),
                duration(d.p95_us),
                duration(d.max_us),
            ]);
        }
        table.write(out, "  ")?;
    }
    if !stats.buckets.is_empty() {
        writeln!(out)?;
        writeln!(out, "calls per {}:", width(stats.bucket_us))?;
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

/// The buckets with the empty ones between them filled in, when there are not too many.
fn filled(buckets: &[Bucket], bucket_us: i64) -> (Vec<Bucket>, bool) {
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else { return (Vec::new(), false) };
    let span = (last.start.0 - first.start.0) / bucket_us.max(1) + 1;
    if span > MAX_FILLED_BUCKETS {
        return (buckets.to_vec(), true);
    }
    let mut all = Vec::new();
    let mut given = buckets.iter().peekable();
    for i in 0..span {
        let start = Timestamp(first.start.0 + i * bucket_us);
        let n = match given.peek() {
            Some(b) if b.start == start => given.next().map(|b| b.count).unwrap_or(0),
            _ => 0,
        };
        all.push(Bucket { start, count: n });
    }
    (all, false)
}

fn write_histogram(out: &mut dyn Write, buckets: &[Bucket], bucket_us: i64) -> Result<(), CliError> {
    let (buckets, gaps) = filled(buckets, bucket_us);
    let max = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let mut table = Table::headless(3).right(1);
    for b in &buckets {
        let bar = if b.count == 0 { 0 } else { (b.count * BAR_WIDTH).div_ceil(max) };
        table.push(vec![format_rfc3339(b.start), count(b.count), "#".repeat(bar as usize)]);
    }
    table.write(out, "  ")?;
    if gaps {
        writeln!(out, "  (empty buckets not shown)")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_gaps_between_buckets() {
        let b = |s, count| Bucket { start: Timestamp(s), count };
        let (all, gaps) = filled(&[b(0, 2), b(30, 1)], 10);
        assert!(!gaps);
        let counts: Vec<u64> = all.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 0, 0, 1]);
        let (sparse, gaps) = filled(&[b(0, 2), b(10_000, 1)], 10);
        assert!(gaps);
        assert_eq!(sparse.len(), 2);
    }
}
