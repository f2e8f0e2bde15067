//! Aggregates over the calls a filter selects: counts by tool, status, blocked reason, decider, rule,
//! agent and policy decision, calls per time bucket stacked by outcome, and duration percentiles per
//! tool. [`LedgerReader::stats`] answers from the hourly rollups when the filter allows
//! (`stats_rollup.rs`); [`LedgerReader::stats_by_scan`] is the one pass over the rows it falls back to,
//! and what the rollups are checked against. The pieces both build a [`Stats`] from live here.

use crate::durations::DenseHistogram;
use crate::error::{AtPath, LedgerStoreError};
use crate::query::{CallFilter, CallStatus, call_where};
use crate::reader::LedgerReader;
use crate::refusals::{RefusalCounts, RefusalFilter};
use crate::sessions::{SessionCounts, SessionFilter};
use portcullis_harness::Timestamp;
use rusqlite::params_from_iter;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub use crate::count::Count;

/// How many buckets the time histogram aims for when no bucket width is given.
pub const DEFAULT_BUCKETS: i64 = 60;

/// Most histogram buckets one stats call may make.
pub const MAX_BUCKETS: usize = 100_000;

/// Calls in one time bucket, all of them and by outcome (the outcomes of running calls are not known:
/// they count in `count` only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Bucket {
    pub start: Timestamp,
    pub count: u64,
    #[serde(default)]
    pub finished: u64,
    #[serde(default)]
    pub error: u64,
    #[serde(default)]
    pub blocked: u64,
    #[serde(default)]
    pub interrupted: u64,
    /// Calls the policy prompted for (`policy_decision` = prompt), whatever their outcome.
    #[serde(default)]
    pub prompted: u64,
}

impl Bucket {
    /// A bucket without calls (to fill the gaps between the non-empty buckets [`Stats`] lists).
    pub fn empty(start: Timestamp) -> Bucket {
        Bucket { start, ..Bucket::default() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolDurations {
    pub tool: String,
    /// Calls that ran (finished or error) and so have a duration.
    pub count: u64,
    pub p50_us: i64,
    pub p95_us: i64,
    pub max_us: i64,
}

/// How a [`Stats`] was computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum StatsSource {
    /// From the hourly rollups (whole hours) and the records of the partial hours at the edges.
    Rollup,
    /// From every matching record.
    #[default]
    Scan,
}

fn exact_by_default() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Stats {
    pub total: u64,
    pub by_tool: Vec<Count>,
    pub by_status: Vec<Count>,
    pub by_reason: Vec<Count>,
    pub by_decided_by: Vec<Count>,
    /// By deciding rule (`decided_rule`); calls without one are left out.
    #[serde(default)]
    pub by_rule: Vec<Count>,
    /// By agent (each call's owner).
    #[serde(default)]
    pub by_owner: Vec<Count>,
    /// By what the policy said before any approval; calls refused before the policy stage left out.
    #[serde(default)]
    pub by_policy_decision: Vec<Count>,
    /// Width of the time buckets, microseconds.
    pub bucket_us: i64,
    pub buckets: Vec<Bucket>,
    pub durations: Vec<ToolDurations>,
    /// Whether `durations` are exact. `false`: p50 and p95 were read from the rollups' log-scale
    /// histograms, each within 4.43 % (+ 0.5 µs) of the exact value; counts and `max_us` are exact.
    #[serde(default = "exact_by_default")]
    pub durations_exact: bool,
    #[serde(default)]
    pub source: StatsSource,
    /// A team ledger's calls by the host and the OS user of the hub that ran them (empty on a hub's
    /// own ledger).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_host: Vec<Count>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_user: Vec<Count>,
    /// A team ledger's calls by hub (its ledger id).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_hub: Vec<Count>,
    /// Sessions started in the filter's time range (or the filter's session): open, closed, cut.
    pub sessions: SessionCounts,
    /// Requests the gateway refused in the filter's time range (not calls: they never reached a tool).
    pub refusals: RefusalCounts,
}

/// What one call (or a rollup's `calls` of them) is counted under.
#[derive(Debug, Clone, Copy)]
pub struct CallDims<'a> {
    pub tool: &'a str,
    pub status: &'a str,
    pub reason: Option<&'a str>,
    pub decided_by: &'a str,
    pub rule: Option<&'a str>,
    pub policy_decision: Option<&'a str>,
    pub owner: &'a str,
}

/// Counts by every dimension.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub total: u64,
    pub(crate) by_tool: HashMap<String, u64>,
    pub(crate) by_status: HashMap<String, u64>,
    pub(crate) by_reason: HashMap<String, u64>,
    pub(crate) by_decided_by: HashMap<String, u64>,
    pub(crate) by_rule: HashMap<String, u64>,
    pub(crate) by_owner: HashMap<String, u64>,
    pub(crate) by_policy_decision: HashMap<String, u64>,
}

/// Counts `n` more of `key` (allocating only the first time a key is seen).
pub(crate) fn bump(map: &mut HashMap<String, u64>, key: &str, n: u64) {
    match map.get_mut(key) {
        Some(count) => *count += n,
        None => {
            map.insert(key.to_owned(), n);
        }
    }
}

pub(crate) fn sorted(map: HashMap<String, u64>) -> Vec<Count> {
    let mut v: Vec<Count> = map.into_iter().map(|(key, count)| Count { key, count }).collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
    v
}

impl Tally {
    pub fn add(&mut self, call: &CallDims<'_>, n: u64) {
        self.total += n;
        bump(&mut self.by_tool, call.tool, n);
        bump(&mut self.by_status, call.status, n);
        if let Some(reason) = call.reason {
            bump(&mut self.by_reason, reason, n);
        }
        bump(&mut self.by_decided_by, call.decided_by, n);
        if let Some(rule) = call.rule {
            bump(&mut self.by_rule, rule, n);
        }
        bump(&mut self.by_owner, call.owner, n);
        if let Some(decision) = call.policy_decision {
            bump(&mut self.by_policy_decision, decision, n);
        }
    }
}

/// One bucket's calls by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stack {
    pub count: u64,
    pub finished: u64,
    pub error: u64,
    pub blocked: u64,
    pub interrupted: u64,
    pub prompted: u64,
}

impl Stack {
    pub fn add(&mut self, status: &str, prompted: bool, n: u64) {
        self.count += n;
        match status {
            "finished" => self.finished += n,
            "error" => self.error += n,
            "blocked" => self.blocked += n,
            "interrupted" => self.interrupted += n,
            _ => {}
        }
        if prompted {
            self.prompted += n;
        }
    }

    pub fn merge(&mut self, other: &Stack) {
        self.add_times(other, 1);
    }

    /// Adds `n` times `unit` (the stack of one call: a status, perhaps prompted).
    pub fn add_times(&mut self, unit: &Stack, n: u64) {
        self.count += unit.count * n;
        self.finished += unit.finished * n;
        self.error += unit.error * n;
        self.blocked += unit.blocked * n;
        self.interrupted += unit.interrupted * n;
        self.prompted += unit.prompted * n;
    }
}

/// The time histogram: buckets of `width` from `origin`.
#[derive(Debug)]
pub(crate) struct Grid {
    pub origin: i64,
    pub width: i64,
    stacks: Vec<Stack>,
}

impl Grid {
    /// The grid over calls from `min_at` to `max_at` with the requested width (default: about
    /// [`DEFAULT_BUCKETS`] readable buckets over the span).
    pub fn new(
        min_at: Option<i64>,
        max_at: Option<i64>,
        requested: Option<i64>,
    ) -> Result<Grid, LedgerStoreError> {
        let (min_at, max_at) = (min_at.unwrap_or(0), max_at.unwrap_or(0));
        let width = match requested {
            Some(b) if b > 0 => b,
            Some(_) => return Err(LedgerStoreError::BadFilter("bucket width must be positive".into())),
            None => round_bucket(max_at.saturating_sub(min_at) / DEFAULT_BUCKETS),
        };
        let origin = min_at.div_euclid(width).saturating_mul(width);
        let slots = usize::try_from(max_at.saturating_sub(origin) / width + 1).unwrap_or(usize::MAX);
        if slots > MAX_BUCKETS {
            return Err(LedgerStoreError::BadFilter(format!(
                "a bucket of {width} µs cuts this span into {slots} buckets (at most {MAX_BUCKETS})"
            )));
        }
        Ok(Grid { origin, width, stacks: vec![Stack::default(); slots] })
    }

    pub fn at(&mut self, at: i64) -> Option<&mut Stack> {
        let slot = usize::try_from(at.saturating_sub(self.origin).div_euclid(self.width)).ok()?;
        self.stacks.get_mut(slot)
    }

    pub fn into_buckets(self) -> Vec<Bucket> {
        let (origin, width) = (self.origin, self.width);
        self.stacks
            .into_iter()
            .enumerate()
            .filter(|(_, s)| s.count > 0)
            .map(|(i, s)| Bucket {
                start: Timestamp(origin + i as i64 * width),
                count: s.count,
                finished: s.finished,
                error: s.error,
                blocked: s.blocked,
                interrupted: s.interrupted,
                prompted: s.prompted,
            })
            .collect()
    }
}

/// One tool's durations: exact values (scanned), and histogram counts with the exact extremes (rolled
/// up).
#[derive(Debug, Default)]
pub(crate) struct ToolTimes {
    pub exact: Vec<i64>,
    pub histogram: Option<DenseHistogram>,
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl ToolTimes {
    pub fn push(&mut self, duration_us: i64) {
        self.exact.push(duration_us);
    }

    pub fn histogram(&mut self) -> &mut DenseHistogram {
        self.histogram.get_or_insert_with(DenseHistogram::default)
    }

    /// Widens the exact range of the rolled-up durations to `duration_us`.
    pub fn see(&mut self, duration_us: i64) {
        self.min = Some(self.min.map_or(duration_us, |m| m.min(duration_us)));
        self.max = Some(self.max.map_or(duration_us, |m| m.max(duration_us)));
    }
}

/// Per-tool durations, busiest first, and whether all of them are exact.
pub(crate) fn tool_durations(times: HashMap<String, ToolTimes>) -> (Vec<ToolDurations>, bool) {
    let mut all_exact = true;
    let mut durations: Vec<ToolDurations> = times
        .into_iter()
        .filter_map(|(tool, mut t)| {
            let rolled = t.histogram.as_ref().map_or(0, DenseHistogram::total);
            let count = t.exact.len() as u64 + rolled;
            if count == 0 {
                return None;
            }
            if let (Some(lo), Some(hi)) = (t.exact.iter().min().copied(), t.exact.iter().max().copied()) {
                t.see(lo);
                t.see(hi);
            }
            let (min_us, max_us) = (t.min.unwrap_or(0), t.max.unwrap_or(0));
            if rolled == 0 {
                t.exact.sort_unstable();
                return Some(ToolDurations {
                    tool,
                    count,
                    p50_us: quantile(&t.exact, 0.50),
                    p95_us: quantile(&t.exact, 0.95),
                    max_us,
                });
            }
            all_exact = false;
            let exact = std::mem::take(&mut t.exact);
            let histogram = t.histogram();
            for d in exact {
                histogram.add(d);
            }
            Some(ToolDurations {
                tool,
                count,
                // A value read back from its bucket, kept within the exact extremes.
                p50_us: histogram.quantile(0.50).max(min_us).min(max_us),
                p95_us: histogram.quantile(0.95).max(min_us).min(max_us),
                max_us,
            })
        })
        .collect();
    durations.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.tool.cmp(&b.tool)));
    (durations, all_exact)
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

/// A text column of a row, borrowed (`None`: NULL, or not text).
pub(crate) fn text<'r>(
    row: &'r rusqlite::Row<'_>,
    i: usize,
    path: &std::path::Path,
) -> Result<Option<&'r str>, LedgerStoreError> {
    Ok(row.get_ref(i).at(path)?.as_str_or_null().ok().flatten())
}

/// Whether the rollups can answer a filter exactly: it constrains only what they keep.
pub(crate) fn rollup_eligible(filter: &CallFilter) -> bool {
    filter.session.is_none()
        && filter.run.is_none()
        && filter.search.is_none()
        && !filter.names_marks()
        && !filter.statuses.contains(&CallStatus::Running)
}

/// A filter's calls in `[since, until)` instead of its own time range.
pub(crate) fn within(filter: &CallFilter, since: Option<i64>, until: Option<i64>) -> CallFilter {
    CallFilter { since: since.map(Timestamp), until: until.map(Timestamp), ..filter.clone() }
}

impl LedgerReader {
    /// Aggregates over the filtered calls. `bucket_us` sets the histogram width (default: the span
    /// divided into about 60 buckets). From the hourly rollups when the filter constrains only what they
    /// keep (tools, terminal statuses, reasons, deciders, rule, policy decisions, agents, time): counts
    /// and buckets equal the scan's, duration percentiles are approximate (`durations_exact`). Otherwise
    /// (session, run, search, `running`) by a scan.
    pub fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, LedgerStoreError> {
        crate::query::refuse_origins(filter)?;
        call_where(filter)?;
        let tx = self.conn.unchecked_transaction().at(self.path())?;
        let stats = match rollup_eligible(filter) {
            true => match self.rollup_stats(filter, bucket_us)? {
                Some(stats) => stats,
                None => self.scan_stats(filter, bucket_us)?,
            },
            false => self.scan_stats(filter, bucket_us)?,
        };
        tx.commit().at(self.path())?;
        Ok(stats)
    }

    /// [`LedgerReader::stats`] by one pass over every matching record (exact durations; what the
    /// rollups are checked against).
    pub fn stats_by_scan(
        &self,
        filter: &CallFilter,
        bucket_us: Option<i64>,
    ) -> Result<Stats, LedgerStoreError> {
        let tx = self.conn.unchecked_transaction().at(self.path())?;
        let stats = self.scan_stats(filter, bucket_us)?;
        tx.commit().at(self.path())?;
        Ok(stats)
    }

    pub(crate) fn scan_stats(
        &self,
        filter: &CallFilter,
        bucket_us: Option<i64>,
    ) -> Result<Stats, LedgerStoreError> {
        let w = call_where(filter)?;
        let (min_at, max_at): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                &format!("SELECT min(r.at), max(r.at) FROM records r WHERE {}", w.sql),
                params_from_iter(w.params.iter()),
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .at(self.path())?;
        let mut grid = Grid::new(min_at, max_at, bucket_us)?;
        let mut tally = Tally::default();
        let mut times = HashMap::new();
        self.scan_into(filter, &mut tally, &mut times, |at, status, prompted| {
            if let Some(stack) = grid.at(at) {
                stack.add(status, prompted, 1);
            }
        })?;
        let (durations, durations_exact) = tool_durations(times);
        self.assemble(filter, tally, grid, durations, durations_exact, StatsSource::Scan)
    }

    /// One pass over the records a filter selects: counts into `tally`, durations into `times`, and each
    /// call's time, status and whether it was prompted to `each`.
    pub(crate) fn scan_into(
        &self,
        filter: &CallFilter,
        tally: &mut Tally,
        times: &mut HashMap<String, ToolTimes>,
        mut each: impl FnMut(i64, &str, bool),
    ) -> Result<(), LedgerStoreError> {
        let path = self.path();
        let w = call_where(filter)?;
        let sql = format!(
            "SELECT r.tool, coalesce(r.status, 'running'), r.reason, r.decided_by, r.at, r.duration_us,
                    r.decided_rule, r.policy_decision, r.owner
             FROM records r WHERE {}",
            w.sql
        );
        let mut stmt = self.conn.prepare_cached(&sql).at(path)?;
        let mut rows = stmt.query(params_from_iter(w.params.iter())).at(path)?;
        while let Some(row) = rows.next().at(path)? {
            let call = CallDims {
                tool: text(row, 0, path)?.unwrap_or_default(),
                status: text(row, 1, path)?.unwrap_or_default(),
                reason: text(row, 2, path)?,
                decided_by: text(row, 3, path)?.unwrap_or_default(),
                rule: text(row, 6, path)?,
                policy_decision: text(row, 7, path)?,
                owner: text(row, 8, path)?.unwrap_or_default(),
            };
            tally.add(&call, 1);
            let at: i64 = row.get(4).at(path)?;
            each(at, call.status, call.policy_decision == Some("prompt"));
            if let Some(d) = row.get::<_, Option<i64>>(5).at(path)? {
                match times.get_mut(call.tool) {
                    Some(t) => t.push(d),
                    None => {
                        let mut t = ToolTimes::default();
                        t.push(d);
                        times.insert(call.tool.to_owned(), t);
                    }
                }
            }
        }
        Ok(())
    }

    /// The finished [`Stats`]: counts sorted, buckets, and the filter's sessions and refusals.
    pub(crate) fn assemble(
        &self,
        filter: &CallFilter,
        tally: Tally,
        grid: Grid,
        durations: Vec<ToolDurations>,
        durations_exact: bool,
        source: StatsSource,
    ) -> Result<Stats, LedgerStoreError> {
        let sessions = self.session_counts(&SessionFilter {
            id: filter.session.clone(),
            since: filter.since,
            until: filter.until,
        })?;
        let refusals = self.refusal_counts(&RefusalFilter { since: filter.since, until: filter.until })?;
        Ok(Stats {
            total: tally.total,
            by_tool: sorted(tally.by_tool),
            by_status: sorted(tally.by_status),
            by_reason: sorted(tally.by_reason),
            by_decided_by: sorted(tally.by_decided_by),
            by_rule: sorted(tally.by_rule),
            by_owner: sorted(tally.by_owner),
            by_policy_decision: sorted(tally.by_policy_decision),
            bucket_us: grid.width,
            buckets: grid.into_buckets(),
            durations,
            durations_exact,
            source,
            by_host: Vec::new(),
            by_user: Vec::new(),
            by_hub: Vec::new(),
            sessions,
            refusals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_widths_are_round() {
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

    #[test]
    fn a_grid_refuses_too_many_buckets_and_bad_widths() {
        assert!(Grid::new(Some(0), Some(10), Some(0)).is_err());
        assert!(Grid::new(Some(0), Some(MAX_BUCKETS as i64 * 10), Some(1)).is_err());
        let mut grid = Grid::new(Some(15), Some(95), Some(10)).unwrap();
        assert_eq!(grid.origin, 10);
        grid.at(15).unwrap().add("finished", true, 2);
        grid.at(95).unwrap().add("blocked", false, 1);
        assert!(grid.at(5).is_none(), "before the origin");
        let buckets = grid.into_buckets();
        assert_eq!(buckets.len(), 2);
        assert_eq!((buckets[0].count, buckets[0].finished, buckets[0].prompted), (2, 2, 2));
        assert_eq!((buckets[1].start, buckets[1].blocked), (Timestamp(90), 1));
    }

    #[test]
    fn durations_are_exact_without_histograms() {
        let mut times = HashMap::new();
        let mut a = ToolTimes::default();
        for d in [5, 1, 9] {
            a.push(d);
        }
        times.insert("a".to_owned(), a);
        let (durations, exact) = tool_durations(times);
        assert!(exact);
        assert_eq!((durations[0].p50_us, durations[0].p95_us, durations[0].max_us), (5, 9, 9));

        let mut b = ToolTimes::default();
        b.histogram().add(1000);
        b.see(1000);
        b.push(2000);
        let (durations, exact) = tool_durations(HashMap::from([("b".to_owned(), b)]));
        assert!(!exact);
        assert_eq!((durations[0].count, durations[0].max_us), (2, 2000));
        assert!((durations[0].p95_us - 2000).abs() <= 89, "{durations:?}");
    }

    #[test]
    fn stats_read_without_the_new_fields() {
        let old = r#"{"total":1,"by_tool":[],"by_status":[],"by_reason":[],"by_decided_by":[],"bucket_us":1,
            "buckets":[{"start":0,"count":1}],"durations":[],"sessions":{"total":0,"open":0,"closed":0,"cut":0},
            "refusals":{"requests":0,"by_code":[]}}"#;
        let stats: Stats = serde_json::from_str(old).unwrap();
        assert!(stats.durations_exact);
        assert_eq!(stats.source, StatsSource::Scan);
        assert_eq!(stats.buckets[0].finished, 0);
        assert_eq!(serde_json::to_value(StatsSource::Rollup).unwrap(), "rollup");
    }
}
