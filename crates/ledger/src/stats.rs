//! Aggregates over the calls a filter selects: counts by tool, status, blocked reason and decider,
//! calls per time bucket, and duration percentiles per tool — one pass over the rows.

use crate::error::{AtPath, LedgerStoreError};
use crate::query::{CallFilter, LedgerReader, call_where};
use crate::refusals::{RefusalCounts, RefusalFilter};
use crate::sessions::{SessionCounts, SessionFilter};
use portcullis_harness::Timestamp;
use rusqlite::params_from_iter;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How many buckets the time histogram aims for when no bucket width is given.
pub const DEFAULT_BUCKETS: i64 = 60;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    pub key: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub start: Timestamp,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDurations {
    pub tool: String,
    /// Calls that ran (finished or error) and so have a duration.
    pub count: u64,
    pub p50_us: i64,
    pub p95_us: i64,
    pub max_us: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub total: u64,
    pub by_tool: Vec<Count>,
    pub by_status: Vec<Count>,
    pub by_reason: Vec<Count>,
    pub by_decided_by: Vec<Count>,
    /// Width of the time buckets, microseconds.
    pub bucket_us: i64,
    pub buckets: Vec<Bucket>,
    pub durations: Vec<ToolDurations>,
    /// Sessions started in the filter's time range (or the filter's session): open, closed, cut.
    pub sessions: SessionCounts,
    /// Requests the gateway refused in the filter's time range (not calls: they never reached a tool).
    pub refusals: RefusalCounts,
}

/// Most histogram buckets one stats call may make.
pub const MAX_BUCKETS: usize = 100_000;

/// Counts one more `key` (allocating only the first time a key is seen).
fn bump(map: &mut HashMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(count) => *count += 1,
        None => {
            map.insert(key.to_owned(), 1);
        }
    }
}

fn sorted(map: HashMap<String, u64>) -> Vec<Count> {
    let mut v: Vec<Count> = map.into_iter().map(|(key, count)| Count { key, count }).collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
    v
}

/// The smallest readable width (1 s, 10 s, 1 min, 5 min, 15 min, 1 h, 6 h, 1 d, 7 d, 30 d) at least `raw`.
fn round_bucket(raw: i64) -> i64 {
    const S: i64 = 1_000_000;
    const WIDTHS: [i64; 10] = [
        S,
        10 * S,
        60 * S,
        300 * S,
        900 * S,
        3600 * S,
        6 * 3600 * S,
        86_400 * S,
        7 * 86_400 * S,
        30 * 86_400 * S,
    ];
    WIDTHS
        .into_iter()
        .find(|w| *w >= raw)
        .unwrap_or(WIDTHS[WIDTHS.len() - 1] * (raw / WIDTHS[WIDTHS.len() - 1] + 1))
}

/// The value at quantile `q` of sorted data (nearest rank).
fn quantile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl LedgerReader {
    /// Aggregates over the filtered calls. `bucket_us` sets the histogram width (default: the span
    /// divided into about 60 buckets).
    pub fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, LedgerStoreError> {
        let w = call_where(filter)?;
        let path = self.path().to_owned();
        let (min_at, max_at): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                &format!("SELECT min(r.at), max(r.at) FROM records r WHERE {}", w.sql),
                params_from_iter(w.params.iter()),
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .at(&path)?;
        let span = max_at.unwrap_or(0) - min_at.unwrap_or(0);
        let bucket_us = match bucket_us {
            Some(b) if b > 0 => b,
            Some(_) => return Err(LedgerStoreError::BadFilter("bucket width must be positive".into())),
            None => round_bucket(span / DEFAULT_BUCKETS),
        };
        let origin = min_at.unwrap_or(0).div_euclid(bucket_us) * bucket_us;

        let sql = format!(
            "SELECT r.tool, coalesce(r.status, 'running'), r.reason, r.decided_by, r.at, r.duration_us FROM records r WHERE {}",
            w.sql
        );
        let mut stmt = self.conn.prepare(&sql).at(&path)?;
        let mut rows = stmt.query(params_from_iter(w.params.iter())).at(&path)?;
        let mut total = 0u64;
        let mut by_tool: HashMap<String, u64> = HashMap::new();
        let mut by_status: HashMap<String, u64> = HashMap::new();
        let mut by_reason: HashMap<String, u64> = HashMap::new();
        let mut by_decided: HashMap<String, u64> = HashMap::new();
        let slots = usize::try_from((max_at.unwrap_or(0) - origin) / bucket_us + 1).unwrap_or(usize::MAX);
        if slots > MAX_BUCKETS {
            return Err(LedgerStoreError::BadFilter(format!(
                "a bucket of {bucket_us} µs cuts this span into {slots} buckets (at most {MAX_BUCKETS})"
            )));
        }
        let mut buckets: Vec<u64> = vec![0; slots];
        let mut durations: HashMap<String, Vec<i64>> = HashMap::new();
        while let Some(row) = rows.next().at(&path)? {
            total += 1;
            let tool = row.get_ref(0).at(&path)?.as_str().unwrap_or_default();
            let kind = row.get_ref(1).at(&path)?.as_str().unwrap_or_default();
            bump(&mut by_tool, tool);
            bump(&mut by_status, kind);
            if let Some(reason) = row.get_ref(2).at(&path)?.as_str_or_null().ok().flatten() {
                bump(&mut by_reason, reason);
            }
            bump(&mut by_decided, row.get_ref(3).at(&path)?.as_str().unwrap_or_default());
            let at: i64 = row.get(4).at(&path)?;
            let slot = usize::try_from((at - origin).div_euclid(bucket_us)).unwrap_or(0);
            if let Some(count) = buckets.get_mut(slot) {
                *count += 1;
            }
            if let Some(d) = row.get::<_, Option<i64>>(5).at(&path)? {
                if let Some(list) = durations.get_mut(tool) {
                    list.push(d);
                } else {
                    durations.insert(tool.to_owned(), vec![d]);
                }
            }
        }
        let buckets: Vec<Bucket> = buckets
            .into_iter()
            .enumerate()
            .filter(|(_, count)| *count > 0)
            .map(|(i, count)| Bucket { start: Timestamp(origin + i as i64 * bucket_us), count })
            .collect();
        let mut durations: Vec<ToolDurations> = durations
            .into_iter()
            .map(|(tool, mut list)| {
                list.sort_unstable();
                ToolDurations {
                    tool,
                    count: list.len() as u64,
                    p50_us: quantile(&list, 0.50),
                    p95_us: quantile(&list, 0.95),
                    max_us: list.last().copied().unwrap_or(0),
                }
            })
            .collect();
        durations.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.tool.cmp(&b.tool)));
        let sessions = self.session_counts(&SessionFilter {
            id: filter.session.clone(),
            since: filter.since,
            until: filter.until,
        })?;
        let refusals = self.refusal_counts(&RefusalFilter { since: filter.since, until: filter.until })?;
        Ok(Stats {
            total,
            by_tool: sorted(by_tool),
            by_status: sorted(by_status),
            by_reason: sorted(by_reason),
            by_decided_by: sorted(by_decided),
            bucket_us,
            buckets,
            durations,
            sessions,
            refusals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn bucket_widths_are_round() {
        use super::round_bucket;
        assert_eq!(round_bucket(0), 1_000_000);
        assert_eq!(round_bucket(1_000_001), 10_000_000);
        assert_eq!(round_bucket(3_000_000_000), 3_600_000_000);
        assert_eq!(round_bucket(100 * 86_400_000_000), 4 * 30 * 86_400_000_000);
    }

    #[test]
    fn nearest_rank_quantiles() {
        let data: Vec<i64> = (1..=100).collect();
        assert_eq!(quantile(&data, 0.5), 50);
        assert_eq!(quantile(&data, 0.95), 95);
        assert_eq!(quantile(&[7], 0.95), 7);
        assert_eq!(quantile(&[], 0.5), 0);
    }
}
