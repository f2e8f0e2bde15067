//! Stats over a time range alone, read from the per-dimension rollups (schema version 3): the counts by
//! each dimension, the time buckets, the duration histograms per tool and the sessions by state, each
//! from the whole days of the range, the whole hours at its ends, and the records (or sessions) of the
//! partial hours (or days) left. A few thousand rows for a month of a whole team's calls.

use crate::error::TeamError;
use crate::read::{TeamReader, call_where};
use crate::rows::{col, count_at};
use crate::schema::DAY_US;
use portcullis_harness::Timestamp;
use portcullis_ledger::durations::DenseHistogram;
use portcullis_ledger::{CallFilter, SessionCounts, StatsBuilder, StatsDim};
use std::collections::HashMap;

/// The whole units of `width` in `[since, until)` as `[a, b)`; an empty range is `[a, a)` (open ends
/// stay open).
pub(crate) fn whole(since: Option<i64>, until: Option<i64>, width: i64) -> (Option<i64>, Option<i64>) {
    let a = since.map(|t| t.div_euclid(width) * width + if t.rem_euclid(width) == 0 { 0 } else { width });
    let b = until.map(|t| t.div_euclid(width) * width);
    match (a, b) {
        (Some(a), Some(b)) if a >= b => (Some(a), Some(a)),
        other => other,
    }
}

/// The whole hours `[first, last)` of a range, split into its whole days and the hours outside them.
pub(crate) struct Grains {
    first: Option<i64>,
    last: Option<i64>,
    first_day: Option<i64>,
    last_day: Option<i64>,
}

impl Grains {
    pub fn new(first: Option<i64>, last: Option<i64>) -> Grains {
        let (first_day, last_day) = whole(first, last, DAY_US);
        Grains { first, last, first_day, last_day }
    }

    /// `$1` to `$4` of [`Grains::union`].
    fn params(&self) -> [Option<i64>; 4] {
        [self.first, self.last, self.first_day, self.last_day]
    }

    /// `cols` of the rows of table `days` (keyed `day`) in the whole days, and of table `hours` (keyed
    /// `hour`) in the hours outside them.
    fn union(cols: &str, days: &str, hours: &str) -> String {
        format!(
            "SELECT {cols} FROM portcullis.{days}
             WHERE ($3::bigint IS NULL OR day >= $3) AND ($4::bigint IS NULL OR day < $4)
             UNION ALL
             SELECT {cols} FROM portcullis.{hours}
             WHERE ($1::bigint IS NULL OR hour >= $1) AND ($2::bigint IS NULL OR hour < $2)
               AND (hour < $3 OR hour >= $4)"
        )
    }
}

impl TeamReader {
    /// Adds the calls of the whole hours of `grains` from the per-dimension rollups: the time buckets
    /// from each hour's calls by status, the counts by each dimension from days and hours.
    pub(crate) fn add_dim_rollups(
        &self,
        builder: &mut StatsBuilder,
        grains: &Grains,
        ran: &mut Vec<(String, i64, Option<i64>)>,
    ) -> Result<(), TeamError> {
        let statuses = self.rows(
            "SELECT hour, value, calls, prompted FROM portcullis.call_dim_hours
             WHERE dim = 'status' AND ($1::bigint IS NULL OR hour >= $1) AND ($2::bigint IS NULL OR hour < $2)",
            &[&grains.first, &grains.last],
        )?;
        for r in &statuses {
            let (hour, status): (i64, &str) = (col(r, 0)?, col(r, 1)?);
            let (calls, prompted) = (count_at(r, 2)?, count_at(r, 3)?);
            builder.add_at(hour, status, true, prompted);
            builder.add_at(hour, status, false, calls - prompted.min(calls));
        }
        let p = grains.params();
        let rows = self.rows(
            &format!(
                "SELECT dim, value, sum(calls)::bigint, sum(ran)::bigint, max(max_us) FROM ({}) AS g GROUP BY 1, 2",
                Grains::union("dim, value, calls, ran, max_us", "call_dim_days", "call_dim_hours")
            ),
            &[&p[0], &p[1], &p[2], &p[3]],
        )?;
        for r in &rows {
            let (name, value): (&str, String) = (col(r, 0)?, col(r, 1)?);
            let Some(dim) = StatsDim::from_name(name) else {
                return Err(TeamError::BadRow(format!("call_dim rollups: no dimension {name:?}")));
            };
            builder.add_dim(dim, &value, count_at(r, 2)?);
            if dim == StatsDim::Tool {
                ran.push((value, col(r, 3)?, col(r, 4)?));
            }
        }
        Ok(())
    }

    /// The duration histogram of each tool over `filter`'s range (a time range alone): the rollups'
    /// for the whole hours of `grains`, the records' for the partial hours at the ends.
    pub(crate) fn duration_histograms(
        &self,
        filter: &CallFilter,
        grains: &Grains,
    ) -> Result<HashMap<String, DenseHistogram>, TeamError> {
        let mut histograms: HashMap<String, DenseHistogram> = HashMap::new();
        let mut add = |rows: Vec<tokio_postgres::Row>| -> Result<(), TeamError> {
            for r in &rows {
                let (tool, bucket): (String, i32) = (col(r, 0)?, col(r, 1)?);
                histograms.entry(tool).or_default().add_bucket(bucket, count_at(r, 2)?);
            }
            Ok(())
        };
        let p = grains.params();
        add(self.rows(
            &format!(
                "SELECT tool, bucket, sum(calls)::bigint FROM ({}) AS g GROUP BY 1, 2",
                Grains::union("tool, bucket, calls", "call_duration_days", "call_duration_hours")
            ),
            &[&p[0], &p[1], &p[2], &p[3]],
        )?)?;
        for edge in edges(filter, grains.first, grains.last) {
            let w = call_where(&edge)?;
            add(self.rows(
                &format!(
                    "SELECT r.tool, portcullis.duration_bucket(r.duration_us), count(*) FROM portcullis.records r
                     WHERE {} AND r.status IN ('finished', 'error') AND r.duration_us IS NOT NULL GROUP BY 1, 2",
                    w.sql
                ),
                &w.refs(),
            )?)?;
        }
        Ok(histograms)
    }

    /// Sessions started in `filter`'s range (a time range alone): whole days from `session_days`, the
    /// partial days at the ends from the sessions.
    pub(crate) fn session_counts_by_day(&self, filter: &CallFilter) -> Result<SessionCounts, TeamError> {
        let (since, until) = (filter.since.map(|t| t.0), filter.until.map(|t| t.0));
        let (first_day, last_day) = whole(since, until, DAY_US);
        let rows = self.rows(
            "SELECT state, sum(sessions)::bigint FROM portcullis.session_days
             WHERE ($1::bigint IS NULL OR day >= $1) AND ($2::bigint IS NULL OR day < $2) GROUP BY 1",
            &[&first_day, &last_day],
        )?;
        let mut counts = SessionCounts::default();
        for r in &rows {
            let (state, n): (&str, u64) = (col(r, 0)?, count_at(r, 1)?);
            counts.total += n;
            match state {
                "open" => counts.open += n,
                "closed" => counts.closed += n,
                "cut" => counts.cut += n,
                _ => {}
            }
        }
        for edge in edges(filter, first_day, last_day) {
            let more = self.session_counts(&edge)?;
            counts.total += more.total;
            counts.open += more.open;
            counts.closed += more.closed;
            counts.cut += more.cut;
        }
        Ok(counts)
    }
}

/// The parts of `filter`'s range outside `[a, b)` (its whole units): `[since, a)` and `[b, until)`.
pub(crate) fn edges(filter: &CallFilter, a: Option<i64>, b: Option<i64>) -> Vec<CallFilter> {
    let mut parts = Vec::new();
    if let (Some(since), Some(a)) = (filter.since, a)
        && since.0 < a
    {
        parts.push(CallFilter { until: Some(Timestamp(a)), ..filter.clone() });
    }
    if let (Some(until), Some(b)) = (filter.until, b)
        && b < until.0
    {
        parts.push(CallFilter { since: Some(Timestamp(b)), ..filter.clone() });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::HOUR_US;

    #[test]
    fn whole_units_of_a_range() {
        let h = HOUR_US;
        assert_eq!(whole(None, None, h), (None, None));
        assert_eq!(whole(Some(1), Some(3 * h + 1), h), (Some(h), Some(3 * h)));
        assert_eq!(whole(Some(h), Some(3 * h), h), (Some(h), Some(3 * h)));
        // Within one unit: empty, at its start.
        assert_eq!(whole(Some(h + 5), Some(h + 9), h), (Some(2 * h), Some(2 * h)));
        assert_eq!(whole(Some(-1), None, h), (Some(0), None));
    }

    #[test]
    fn the_ends_outside_whole_units() {
        let h = HOUR_US;
        let f = CallFilter {
            since: Some(Timestamp(5)),
            until: Some(Timestamp(3 * h + 7)),
            ..CallFilter::default()
        };
        let parts = edges(&f, Some(h), Some(3 * h));
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].since, parts[0].until), (Some(Timestamp(5)), Some(Timestamp(h))));
        assert_eq!((parts[1].since, parts[1].until), (Some(Timestamp(3 * h)), Some(Timestamp(3 * h + 7))));
        assert!(edges(&CallFilter::default(), None, None).is_empty());
    }
}
