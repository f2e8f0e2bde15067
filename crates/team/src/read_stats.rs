//! A team ledger's stats: the counts, time buckets and duration percentiles a hub's ledger gives, over
//! every hub's calls, grouped in PostgreSQL (from the hourly rollups where they answer) and assembled by
//! the ledger's own builder, so both read alike; plus the calls by host and user.

use crate::error::TeamError;
use crate::read::{TeamReader, call_where, call_where_on};
use crate::read_rollups::{Grains, edges, whole};
use crate::rows::{col, count_at};
use crate::schema::HOUR_US;
use portcullis_ledger::durations::DenseHistogram;
use portcullis_ledger::stats::{Count, ToolDurations};
use portcullis_ledger::{
    CallDims, CallFilter, RefusalCounts, SessionCounts, Stats, StatsBuilder, StatsSource,
};
use std::collections::HashMap;

/// Adds grouped rows (the dimensions in columns 0 to 6, host 7, user 8, bucket 9, calls 10, prompted 11,
/// calls that ran 12, their longest 13, hub 14), from the rollups or the records alike.
fn add_grouped(
    builder: &mut StatsBuilder,
    rows: &[tokio_postgres::Row],
    ran: &mut Vec<(String, i64, Option<i64>)>,
) -> Result<(), TeamError> {
    for r in rows {
        let dims = dims_of(r)?;
        let calls = count_at(r, 10)?;
        let prompted = count_at(r, 11)?;
        let bucket: i64 = col(r, 9)?;
        builder.add_calls(&dims, [col(r, 14)?, col(r, 7)?, col(r, 8)?], calls);
        builder.add_at(bucket, dims.status, true, prompted);
        builder.add_at(bucket, dims.status, false, calls - prompted.min(calls));
        ran.push((dims.tool.to_owned(), col(r, 12)?, col(r, 13)?));
    }
    Ok(())
}

/// The dimensions of a grouped row (columns 0 to 6).
fn dims_of(r: &tokio_postgres::Row) -> Result<CallDims<'_>, TeamError> {
    Ok(CallDims {
        tool: col(r, 0)?,
        status: col(r, 1)?,
        reason: col(r, 2)?,
        decided_by: col(r, 3)?,
        rule: col(r, 4)?,
        policy_decision: col(r, 5)?,
        owner: col(r, 6)?,
    })
}

/// Above this many calls that ran, duration percentiles are read from the rollups' histograms (a time
/// range alone) or a sample of the records (marked not exact); at or below it, from every one.
const EXACT_DURATIONS: i64 = 20_000;

/// Per-tool durations from the counts and maxima of the calls that ran (summed by tool) and each tool's
/// p50 and p95 as `percentiles` gives them (kept within the maximum): busiest tool first.
fn per_tool(
    ran: Vec<(String, i64, Option<i64>)>,
    percentiles: impl Fn(&str) -> (i64, i64),
) -> Vec<ToolDurations> {
    let mut by_tool: HashMap<String, (i64, Option<i64>)> = HashMap::new();
    for (tool, n, max) in ran {
        let entry = by_tool.entry(tool).or_insert((0, None));
        entry.0 += n;
        entry.1 = entry.1.max(max);
    }
    let mut durations: Vec<ToolDurations> = by_tool
        .into_iter()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(tool, (n, max))| {
            let max_us = max.unwrap_or(0);
            let (p50, p95) = percentiles(&tool);
            ToolDurations {
                count: u64::try_from(n).unwrap_or(0),
                p50_us: p50.min(max_us),
                p95_us: p95.min(max_us),
                max_us,
                tool,
            }
        })
        .collect();
    durations.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.tool.cmp(&b.tool)));
    durations
}

/// [`per_tool`] with percentiles read from each tool's histogram.
fn from_histograms(
    ran: Vec<(String, i64, Option<i64>)>,
    histograms: HashMap<String, DenseHistogram>,
) -> Vec<ToolDurations> {
    per_tool(ran, |tool| histograms.get(tool).map_or((0, 0), |h| (h.quantile(0.5), h.quantile(0.95))))
}

impl TeamReader {
    /// Aggregates over the calls `filter` selects; `bucket_us` sets the histogram's width. Counts and
    /// buckets come from rollups for whole hours (and the records of the partial hours at the ends)
    /// when the buckets are whole hours: the per-dimension rollups when the filter is a time range alone,
    /// the hourly rollups per hub when it names only what they keep; otherwise from the records.
    /// Duration percentiles are exact up to [`EXACT_DURATIONS`] calls, else read from histograms (a time
    /// range alone: each within 4.43 %) or a sample.
    pub fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, TeamError> {
        self.stats_from(filter, bucket_us, true)
    }

    /// [`TeamReader::stats`] from the records alone (what the rollups are checked against).
    pub fn stats_by_scan(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, TeamError> {
        self.stats_from(filter, bucket_us, false)
    }

    fn stats_from(
        &self,
        filter: &CallFilter,
        bucket_us: Option<i64>,
        rollups: bool,
    ) -> Result<Stats, TeamError> {
        let w = call_where(filter)?;
        let extent = self.rows(
            &format!("SELECT min(r.at), max(r.at) FROM portcullis.records r WHERE {}", w.sql),
            &w.refs(),
        )?;
        let (min_at, max_at): (Option<i64>, Option<i64>) = match extent.first() {
            Some(row) => (col(row, 0)?, col(row, 1)?),
            None => (None, None),
        };
        let mut builder =
            StatsBuilder::new(min_at, max_at, bucket_us).map_err(|e| TeamError::BadFilter(e.to_string()))?;
        let width = builder.width();
        let origin = min_at.unwrap_or(0).div_euclid(width) * width;
        // Whole hours from the rollups, the partial hours at the ends from the records: `[since, first)`,
        // `[first, last)` and `[last, until)`.
        let (first, last) = whole(filter.since.map(|t| t.0), filter.until.map(|t| t.0), HOUR_US);
        let spans_hours = match (first, last) {
            (Some(first), Some(last)) => first < last,
            _ => true,
        };
        let rolled = rollups
            && filter.session.is_none()
            && filter.run.is_none()
            && filter.search.is_none()
            && !filter.names_marks()
            && width % HOUR_US == 0
            && origin % HOUR_US == 0
            && spans_hours;
        let mut ran = Vec::new();
        // Only a time range: each dimension apart, from the per-dimension rollups.
        let apart =
            rollups && CallFilter { since: None, until: None, ..filter.clone() } == CallFilter::default();
        let grains = Grains::new(first, last);
        if rolled {
            if apart {
                self.add_dim_rollups(&mut builder, &grains, &mut ran)?;
            } else {
                self.add_rollups(&mut builder, filter, first, last, origin, width, &mut ran)?;
            }
            for edge in edges(filter, first, last) {
                self.add_records(&mut builder, &edge, origin, width, &mut ran)?;
            }
        } else {
            self.add_records(&mut builder, filter, origin, width, &mut ran)?;
        }
        let ran_in_all: i64 = ran.iter().map(|(_, n, _)| n).sum();
        let (durations, exact) = if rolled && apart && ran_in_all > EXACT_DURATIONS {
            (from_histograms(ran, self.duration_histograms(filter, &grains)?), false)
        } else {
            self.durations(filter, ran)?
        };
        let sessions = if apart { self.session_counts_by_day(filter)? } else { self.session_counts(filter)? };
        let refusals = self.refusal_counts(filter)?;
        let mut stats = builder.finish(durations, sessions, refusals);
        stats.durations_exact = exact;
        stats.source = if rolled { StatsSource::Rollup } else { StatsSource::Scan };
        Ok(stats)
    }

    /// Adds the rollup rows of the hours in `[first, last)` (open ends: every hour).
    #[allow(clippy::too_many_arguments)]
    fn add_rollups(
        &self,
        builder: &mut StatsBuilder,
        filter: &CallFilter,
        first: Option<i64>,
        last: Option<i64>,
        origin: i64,
        width: i64,
        ran: &mut Vec<(String, i64, Option<i64>)>,
    ) -> Result<(), TeamError> {
        let hours = CallFilter { since: None, until: None, ..filter.clone() };
        let mut w = call_where_on(&hours, "h")?;
        if let Some(first) = first {
            w.params.push(Box::new(first));
            w.sql.push_str(&format!(" AND h.hour >= ${}", w.params.len()));
        }
        if let Some(last) = last {
            w.params.push(Box::new(last));
            w.sql.push_str(&format!(" AND h.hour < ${}", w.params.len()));
        }
        w.params.push(Box::new(origin));
        w.params.push(Box::new(width));
        let (o, wd) = (w.params.len() - 1, w.params.len());
        let rows = self.rows(
            &format!(
                "SELECT h.tool, h.status, h.reason, h.decided_by, h.decided_rule, h.policy_decision, h.owner,
                        h.hub_host, h.hub_user, ${o}::bigint + ((h.hour - ${o}::bigint) / ${wd}::bigint) * ${wd}::bigint,
                        sum(h.calls)::bigint, sum(h.prompted)::bigint, sum(h.ran)::bigint, max(h.max_us), h.ledger_id
                 FROM portcullis.call_hours h WHERE {} GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15",
                w.sql
            ),
            &w.refs(),
        )?;
        add_grouped(builder, &rows, ran)
    }

    /// Adds the calls `filter` selects, counted from the records.
    fn add_records(
        &self,
        builder: &mut StatsBuilder,
        filter: &CallFilter,
        origin: i64,
        width: i64,
        ran: &mut Vec<(String, i64, Option<i64>)>,
    ) -> Result<(), TeamError> {
        let mut w = call_where(filter)?;
        w.params.push(Box::new(origin));
        w.params.push(Box::new(width));
        let (o, wd) = (w.params.len() - 1, w.params.len());
        let rows = self.rows(
            &format!(
                "SELECT r.tool, r.status, r.reason, r.decided_by, r.decided_rule, r.policy_decision, r.owner,
                        r.hub_host, r.hub_user, ${o}::bigint + ((r.at - ${o}::bigint) / ${wd}::bigint) * ${wd}::bigint,
                        count(*), count(*) FILTER (WHERE r.policy_decision = 'prompt'),
                        count(r.duration_us) FILTER (WHERE r.status IN ('finished', 'error')), max(r.duration_us),
                        r.ledger_id
                 FROM portcullis.records r WHERE {} GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15",
                w.sql
            ),
            &w.refs(),
        )?;
        add_grouped(builder, &rows, ran)
    }

    /// Per-tool durations: counts and maxima as counted, p50 and p95 from every record that ran, or
    /// from a sample of them when there are more than [`EXACT_DURATIONS`]. Busiest tool first.
    fn durations(
        &self,
        filter: &CallFilter,
        ran: Vec<(String, i64, Option<i64>)>,
    ) -> Result<(Vec<ToolDurations>, bool), TeamError> {
        let total: i64 = ran.iter().map(|(_, n, _)| n).sum();
        if total == 0 {
            return Ok((Vec::new(), true));
        }
        // A sample is taken of the table before the filter applies: sized on the table's rows, so that
        // about EXACT_DURATIONS of them are read whatever the filter.
        let table: f64 = self.one(
            "SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = 'portcullis.records'::regclass",
            &[],
        )?;
        let exact = total <= EXACT_DURATIONS || table <= EXACT_DURATIONS as f64;
        let sample = if exact {
            String::new()
        } else {
            let percent = (100.0 * EXACT_DURATIONS as f64 / table).clamp(0.01, 100.0);
            format!(" TABLESAMPLE SYSTEM ({percent})")
        };
        let w = call_where(filter)?;
        let rows = self.rows(
            &format!(
                "SELECT r.tool, percentile_disc(0.5) WITHIN GROUP (ORDER BY r.duration_us),
                        percentile_disc(0.95) WITHIN GROUP (ORDER BY r.duration_us)
                 FROM portcullis.records r{sample} WHERE {} AND r.duration_us IS NOT NULL
                   AND r.status IN ('finished', 'error')
                 GROUP BY 1",
                w.sql
            ),
            &w.refs(),
        )?;
        let mut percentiles: HashMap<String, (i64, i64)> = HashMap::new();
        for r in &rows {
            percentiles.insert(col(r, 0)?, (col(r, 1)?, col(r, 2)?));
        }
        let durations = per_tool(ran, |tool| percentiles.get(tool).copied().unwrap_or((0, 0)));
        Ok((durations, exact))
    }

    pub(crate) fn session_counts(&self, filter: &CallFilter) -> Result<SessionCounts, TeamError> {
        let rows = self.rows(
            "SELECT count(*), count(*) FILTER (WHERE ended_at IS NULL),
                    count(*) FILTER (WHERE end_reason = 'closed'), count(*) FILTER (WHERE end_reason = 'cut')
             FROM portcullis.sessions
             WHERE ($1::text IS NULL OR id = $1) AND ($2::bigint IS NULL OR started_at >= $2)
               AND ($3::bigint IS NULL OR started_at < $3)
               AND (cardinality($4::text[]) = 0 OR hub_host = ANY($4))
               AND (cardinality($5::text[]) = 0 OR hub_user = ANY($5))
               AND (cardinality($6::text[]) = 0 OR ledger_id = ANY($6))",
            &[
                &filter.session,
                &filter.since.map(|t| t.0),
                &filter.until.map(|t| t.0),
                &filter.hosts,
                &filter.users,
                &filter.hubs,
            ],
        )?;
        let n = |i| rows.first().map_or(Ok(0), |r| count_at(r, i));
        Ok(SessionCounts { total: n(0)?, open: n(1)?, closed: n(2)?, cut: n(3)? })
    }

    fn refusal_counts(&self, filter: &CallFilter) -> Result<RefusalCounts, TeamError> {
        let rows = self.rows(
            "SELECT code, sum(count)::bigint FROM portcullis.refusals
             WHERE ($1::bigint IS NULL OR first_at >= $1) AND ($2::bigint IS NULL OR first_at < $2)
               AND (cardinality($3::text[]) = 0 OR hub_host = ANY($3))
               AND (cardinality($4::text[]) = 0 OR hub_user = ANY($4))
               AND (cardinality($5::text[]) = 0 OR ledger_id = ANY($5))
             GROUP BY code ORDER BY 2 DESC, 1",
            &[
                &filter.since.map(|t| t.0),
                &filter.until.map(|t| t.0),
                &filter.hosts,
                &filter.users,
                &filter.hubs,
            ],
        )?;
        let by_code = rows
            .iter()
            .map(|r| Ok(Count { key: col(r, 0)?, count: count_at(r, 1)? }))
            .collect::<Result<Vec<Count>, TeamError>>()?;
        Ok(RefusalCounts { requests: by_code.iter().map(|c| c.count).sum(), by_code })
    }
}
