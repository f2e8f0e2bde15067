//! A team ledger's stats: the counts, time buckets and duration percentiles a hub's ledger gives, over
//! every hub's calls, grouped in PostgreSQL (one pass per question) and assembled by the ledger's own
//! builder, so both read alike; plus the calls by host and user.

use crate::error::TeamError;
use crate::read::{TeamReader, call_where};
use portcullis_ledger::stats::{Count, ToolDurations};
use portcullis_ledger::{CallDims, CallFilter, RefusalCounts, SessionCounts, Stats, StatsBuilder};

impl TeamReader {
    /// Aggregates over the calls `filter` selects; `bucket_us` sets the histogram's width.
    pub fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, TeamError> {
        let w = call_where(filter)?;
        let extent = self.rows(
            &format!("SELECT min(r.at), max(r.at) FROM portcullis.records r WHERE {}", w.sql),
            &w.refs(),
        )?;
        let (min_at, max_at): (Option<i64>, Option<i64>) = match extent.first() {
            Some(row) => (row.get(0), row.get(1)),
            None => (None, None),
        };
        let mut builder =
            StatsBuilder::new(min_at, max_at, bucket_us).map_err(|e| TeamError::BadFilter(e.to_string()))?;
        let width = builder.width();
        let origin = min_at.unwrap_or(0).div_euclid(width) * width;
        let groups = self.rows(
            &format!(
                "SELECT r.tool, r.status, r.reason, r.decided_by, r.decided_rule, r.policy_decision, r.owner,
                        r.hub_host, r.hub_user, count(*)
                 FROM portcullis.records r WHERE {} GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9",
                w.sql
            ),
            &w.refs(),
        )?;
        for g in &groups {
            let dims = CallDims {
                tool: g.get(0),
                status: g.get(1),
                reason: g.get(2),
                decided_by: g.get(3),
                rule: g.get(4),
                policy_decision: g.get(5),
                owner: g.get(6),
            };
            builder.add_calls(&dims, g.get(7), g.get(8), u64::try_from(g.get::<_, i64>(9)).unwrap_or(0));
        }
        let mut params = w.refs();
        params.push(&origin);
        params.push(&width);
        let (o, wd) = (params.len() - 1, params.len());
        let buckets = self.rows(
            &format!(
                "SELECT ${o} + ((r.at - ${o}) / ${wd}) * ${wd}, r.status, coalesce(r.policy_decision = 'prompt', false),
                        count(*)
                 FROM portcullis.records r WHERE {} GROUP BY 1, 2, 3",
                w.sql
            ),
            &params,
        )?;
        for b in &buckets {
            builder.add_at(b.get(0), b.get(1), b.get(2), u64::try_from(b.get::<_, i64>(3)).unwrap_or(0));
        }
        let durations = self
            .rows(
                &format!(
                    "SELECT r.tool, count(*),
                            percentile_disc(0.5) WITHIN GROUP (ORDER BY r.duration_us),
                            percentile_disc(0.95) WITHIN GROUP (ORDER BY r.duration_us), max(r.duration_us)
                     FROM portcullis.records r WHERE {} AND r.duration_us IS NOT NULL
                       AND r.status IN ('finished', 'error')
                     GROUP BY 1 ORDER BY 2 DESC, 1",
                    w.sql
                ),
                &w.refs(),
            )?
            .iter()
            .map(|d| ToolDurations {
                tool: d.get(0),
                count: u64::try_from(d.get::<_, i64>(1)).unwrap_or(0),
                p50_us: d.get(2),
                p95_us: d.get(3),
                max_us: d.get(4),
            })
            .collect();
        let sessions = self.session_counts(filter)?;
        let refusals = self.refusal_counts(filter)?;
        Ok(builder.finish(durations, sessions, refusals))
    }

    fn session_counts(&self, filter: &CallFilter) -> Result<SessionCounts, TeamError> {
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
        let n = |i| rows.first().map_or(0, |r| u64::try_from(r.get::<_, i64>(i)).unwrap_or(0));
        Ok(SessionCounts { total: n(0), open: n(1), closed: n(2), cut: n(3) })
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
        let by_code: Vec<Count> = rows
            .iter()
            .map(|r| Count { key: r.get(0), count: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0) })
            .collect();
        Ok(RefusalCounts { requests: by_code.iter().map(|c| c.count).sum(), by_code })
    }
}
