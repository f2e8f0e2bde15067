//! Stats from the rollups (schema step 7, `rollup.rs`) instead of a scan of every record. The exact
//! form, behind [`LedgerReader::stats`]: whole days inside `[since, until)` from `call_days`, the whole
//! hours around them from `call_hours`, the partial hours at the edges from the records, so every count
//! and bucket equals the scan's, while duration percentiles come from the rollups' histograms. The
//! approximate form, [`LedgerReader::stats_approximate`]: whole hours only, and the parts of a filter
//! the rollups do not keep (session, run, search) dropped — for facet counts shown before the exact
//! ones arrive.

use crate::error::{AtPath, LedgerStoreError};
use crate::query::{CallFilter, CallStatus, call_where};
use crate::reader::LedgerReader;
use crate::rollup::{DAY_US, HOUR_US, day_of, hour_of};
use crate::stats::{
    CallDims, Grid, Stack, Stats, StatsSource, Tally, ToolTimes, text, tool_durations, within,
};
use rusqlite::params_from_iter;
use rusqlite::types::ValueRef;
use std::collections::HashMap;
use std::ops::Range;

/// Key ids beyond this (a table with huge gaps in its ids) make the rollups' answer fall back to a scan.
const MAX_KEY_ID: i64 = 1 << 24;

/// Up to this many selected calls, percentiles are computed from every duration (a few ms to read)
/// instead of the rollups' histograms: small ledgers and narrow filters get exact figures.
pub const EXACT_DURATIONS_UP_TO: u64 = 20_000;

/// A `call_keys` row: what its calls are counted under.
#[derive(Debug)]
struct Key {
    tool: String,
    status: String,
    reason: Option<String>,
    decided_by: String,
    rule: Option<String>,
    policy_decision: Option<String>,
    owner: String,
}

impl Key {
    fn dims(&self) -> CallDims<'_> {
        CallDims {
            tool: &self.tool,
            status: &self.status,
            reason: self.reason.as_deref(),
            decided_by: &self.decided_by,
            rule: self.rule.as_deref(),
            policy_decision: self.policy_decision.as_deref(),
            owner: &self.owner,
        }
    }

    fn prompted(&self) -> bool {
        self.policy_decision.as_deref() == Some("prompt")
    }

    /// Whether the filter selects this key's calls (`statuses`: the terminal ones asked for; empty: any).
    fn selected_by(&self, filter: &CallFilter, statuses: &[&str]) -> bool {
        let any = |list: &[String], value: &str| list.is_empty() || list.iter().any(|v| v == value);
        (statuses.is_empty() || statuses.contains(&self.status.as_str()))
            && any(&filter.tools, &self.tool)
            && (filter.reasons.is_empty()
                || self.reason.as_deref().is_some_and(|r| filter.reasons.iter().any(|x| x.as_str() == r)))
            && (filter.decided_by.is_empty()
                || filter.decided_by.iter().any(|k| k.as_str() == self.decided_by))
            && filter.rule.as_ref().is_none_or(|rule| self.rule.as_ref() == Some(rule))
            && (filter.policy_decisions.is_empty()
                || self
                    .policy_decision
                    .as_deref()
                    .is_some_and(|p| filter.policy_decisions.iter().any(|x| x.as_str() == p)))
            && any(&filter.owners, &self.owner)
    }
}

/// The keys a filter selects, and where each key id stands among them.
struct Selected {
    keys: Vec<Key>,
    /// Index into `keys` by key id.
    by_id: Vec<Option<u32>>,
    /// Per key: index into the distinct tools, and the stack of one of its calls.
    tool_of: Vec<usize>,
    unit: Vec<Stack>,
    tools: Vec<String>,
}

/// A time grain of the rollups: their table, read over a range of period starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grain {
    Hour,
    Day,
}

impl Grain {
    fn width(self) -> i64 {
        match self {
            Grain::Hour => HOUR_US,
            Grain::Day => DAY_US,
        }
    }

    fn sql(self) -> &'static str {
        match self {
            Grain::Hour => {
                "SELECT hour, key, calls, min_us, max_us, durations FROM call_hours
                 WHERE hour >= ?1 AND hour < ?2 ORDER BY hour"
            }
            Grain::Day => {
                "SELECT day, key, calls, min_us, max_us, durations FROM call_days
                 WHERE day >= ?1 AND day < ?2 ORDER BY day"
            }
        }
    }
}

/// Whole periods of `[lo, hi)` (both on hours), in time order: whole days from `call_days`, the hours
/// before and after them from `call_hours`.
fn pieces(lo: i64, hi: i64) -> Vec<(Grain, Range<i64>)> {
    if lo >= hi {
        return Vec::new();
    }
    let first_day = if lo == i64::MIN { Some(lo) } else { ceil_to(lo, DAY_US) };
    let end_day = if hi == i64::MAX { hi } else { day_of(hi) };
    match first_day {
        Some(d0) if d0 < end_day => {
            let mut pieces = Vec::new();
            if lo < d0 {
                pieces.push((Grain::Hour, lo..d0));
            }
            pieces.push((Grain::Day, d0..end_day));
            if end_day < hi {
                pieces.push((Grain::Hour, end_day..hi));
            }
            pieces
        }
        _ => vec![(Grain::Hour, lo..hi)],
    }
}

/// What the rollups hold for the selected keys.
struct Rolled {
    /// Calls per selected key.
    calls: Vec<u64>,
    /// Per period with calls (its start and width), in time order.
    periods: Vec<(i64, i64, Stack)>,
    /// Durations per distinct tool (as `Selected::tools`).
    times: Vec<ToolTimes>,
}

impl Rolled {
    fn new(selected: &Selected) -> Rolled {
        Rolled {
            calls: vec![0; selected.keys.len()],
            periods: Vec::new(),
            times: selected.tools.iter().map(|_| ToolTimes::default()).collect(),
        }
    }
}

/// The start of the first whole `unit` at or after `at` (`None` past the end of time).
fn ceil_to(at: i64, unit: i64) -> Option<i64> {
    match at.rem_euclid(unit) {
        0 => Some(at),
        r => at.checked_add(unit - r),
    }
}

/// The start of the first whole hour at or after `at`.
fn ceil_hour(at: i64) -> Option<i64> {
    ceil_to(at, HOUR_US)
}

/// Calls at `at` with a status and a prompt flag, as the edges of a range are scanned.
type EdgeRow = (i64, Stack);

impl LedgerReader {
    /// The keys `selected` accepts (`None`: their ids are too sparse to index).
    fn select_keys(&self, selected: impl Fn(&Key) -> bool) -> Result<Option<Selected>, LedgerStoreError> {
        let path = self.path();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, tool, status, reason, decided_by, decided_rule, policy_decision, owner FROM call_keys",
            )
            .at(path)?;
        let mut rows = stmt.query([]).at(path)?;
        let mut out = Selected {
            keys: Vec::new(),
            by_id: Vec::new(),
            tool_of: Vec::new(),
            unit: Vec::new(),
            tools: Vec::new(),
        };
        let mut tool_index: HashMap<String, usize> = HashMap::new();
        while let Some(row) = rows.next().at(path)? {
            let id: i64 = row.get(0).at(path)?;
            let owned = |i: usize| -> Result<Option<String>, LedgerStoreError> {
                Ok(text(row, i, path)?.map(str::to_owned))
            };
            let key = Key {
                tool: owned(1)?.unwrap_or_default(),
                status: owned(2)?.unwrap_or_default(),
                reason: owned(3)?,
                decided_by: owned(4)?.unwrap_or_default(),
                rule: owned(5)?,
                policy_decision: owned(6)?,
                owner: owned(7)?.unwrap_or_default(),
            };
            if !selected(&key) {
                continue;
            }
            let Some(slot) = usize::try_from(id).ok().filter(|_| (0..MAX_KEY_ID).contains(&id)) else {
                return Ok(None);
            };
            if out.by_id.len() <= slot {
                out.by_id.resize(slot + 1, None);
            }
            out.by_id[slot] = u32::try_from(out.keys.len()).ok();
            let next = tool_index.len();
            let tool = *tool_index.entry(key.tool.clone()).or_insert(next);
            if tool == out.tools.len() {
                out.tools.push(key.tool.clone());
            }
            out.tool_of.push(tool);
            let mut unit = Stack::default();
            unit.add(&key.status, key.prompted(), 1);
            out.unit.push(unit);
            out.keys.push(key);
        }
        Ok(Some(out))
    }

    /// Adds the rollups of the selected keys over the periods of `grain` starting in `range` to `into`
    /// (their durations too when `durations`). `false`: a histogram did not decode (the caller scans
    /// instead).
    fn roll(
        &self,
        selected: &Selected,
        (grain, range): (Grain, Range<i64>),
        durations: bool,
        into: &mut Rolled,
    ) -> Result<bool, LedgerStoreError> {
        if selected.keys.is_empty() || range.is_empty() {
            return Ok(true);
        }
        let path = self.path();
        let mut stmt = self.conn.prepare_cached(grain.sql()).at(path)?;
        let mut rows = stmt.query([range.start, range.end]).at(path)?;
        let mut last_period = None;
        while let Some(row) = rows.next().at(path)? {
            let key: i64 = row.get(1).at(path)?;
            let Some(index) = usize::try_from(key)
                .ok()
                .and_then(|k| selected.by_id.get(k).copied().flatten())
                .map(|i| i as usize)
            else {
                continue;
            };
            let (Some(unit), Some(count)) = (selected.unit.get(index), into.calls.get_mut(index)) else {
                continue;
            };
            let n = u64::try_from(row.get::<_, i64>(2).at(path)?).unwrap_or(0);
            *count += n;
            let period: i64 = row.get(0).at(path)?;
            if last_period != Some(period) {
                into.periods.push((period, grain.width(), Stack::default()));
                last_period = Some(period);
            }
            if let Some((_, _, stack)) = into.periods.last_mut() {
                stack.add_times(unit, n);
            }
            if !durations {
                continue;
            }
            let Some(t) = selected.tool_of.get(index).and_then(|i| into.times.get_mut(*i)) else { continue };
            if let Some(min) = row.get::<_, Option<i64>>(3).at(path)? {
                t.see(min);
            }
            if let Some(max) = row.get::<_, Option<i64>>(4).at(path)? {
                t.see(max);
            }
            if let ValueRef::Blob(bytes) = row.get_ref(5).at(path)?
                && !t.histogram().add_encoded(bytes)
            {
                tracing::warn!(path = %path.display(), period, key, "a rollup histogram does not decode; scanning instead");
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Rolls every piece of `[lo, hi)` up (`None`: a histogram did not decode).
    fn roll_range(&self, selected: &Selected, lo: i64, hi: i64) -> Result<Option<Rolled>, LedgerStoreError> {
        let mut rolled = Rolled::new(selected);
        for piece in pieces(lo, hi) {
            if !self.roll(selected, piece, true, &mut rolled)? {
                return Ok(None);
            }
        }
        Ok(Some(rolled))
    }

    /// The hours with calls of the selected keys in `range` (counts only).
    fn hours_in(
        &self,
        selected: &Selected,
        range: Range<i64>,
    ) -> Result<Vec<(i64, i64, Stack)>, LedgerStoreError> {
        let mut rolled = Rolled::new(selected);
        self.roll(selected, (Grain::Hour, range), false, &mut rolled)?;
        Ok(rolled.periods)
    }

    /// The first and last call time a filter selects in `[from, to)`.
    fn min_max_between(
        &self,
        filter: &CallFilter,
        from: i64,
        to: i64,
    ) -> Result<(Option<i64>, Option<i64>), LedgerStoreError> {
        let w = call_where(&within(filter, Some(from), Some(to)))?;
        self.conn
            .query_row(
                &format!("SELECT min(r.at), max(r.at) FROM records r WHERE {}", w.sql),
                params_from_iter(w.params.iter()),
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .at(self.path())
    }

    /// The exact first (`first`) or last call time a filter selects in a rolled-up period: in its first
    /// or last hour with calls, found in `call_hours` when the period is a day.
    fn call_time_in(
        &self,
        filter: &CallFilter,
        selected: &Selected,
        (start, width): (i64, i64),
        first: bool,
    ) -> Result<Option<i64>, LedgerStoreError> {
        let hour = if width == HOUR_US {
            Some(start)
        } else {
            let hours = self.hours_in(selected, start..start.saturating_add(width))?;
            let pick = if first { hours.first() } else { hours.last() };
            pick.map(|(h, _, _)| *h)
        };
        let Some(hour) = hour else { return Ok(None) };
        let (min, max) = self.min_max_between(filter, hour, hour.saturating_add(HOUR_US))?;
        Ok(if first { min } else { max })
    }

    /// Scans the calls a filter selects in `[from, to)` into the counts, keeping each call's time and
    /// outcome for the buckets.
    fn scan_edge(
        &self,
        filter: &CallFilter,
        (from, to): (i64, i64),
        tally: &mut Tally,
        times: &mut HashMap<String, ToolTimes>,
    ) -> Result<Vec<EdgeRow>, LedgerStoreError> {
        let mut rows = Vec::new();
        self.scan_into(&within(filter, Some(from), Some(to)), tally, times, |at, status, prompted| {
            let mut stack = Stack::default();
            stack.add(status, prompted, 1);
            rows.push((at, stack));
        })?;
        Ok(rows)
    }

    /// Puts rolled-up periods into the buckets of a grid whose width is a whole number of hours: day
    /// periods as they are when it is a whole number of days, else their hours from `call_hours`.
    fn fill_from_rollups(
        &self,
        grid: &mut Grid,
        selected: &Selected,
        periods: &[(i64, i64, Stack)],
    ) -> Result<(), LedgerStoreError> {
        let mut days = Vec::new();
        for &(start, width, stack) in periods {
            if width == DAY_US && grid.width % DAY_US != 0 {
                days.push(start);
            } else if let Some(slot) = grid.at(start) {
                slot.merge(&stack);
            }
        }
        // Days are contiguous rows of `call_hours`: one read from the first to the last.
        if let (Some(first), Some(last)) = (days.first(), days.last()) {
            for (hour, _, stack) in self.hours_in(selected, *first..last.saturating_add(DAY_US))? {
                if days.binary_search(&day_of(hour)).is_ok()
                    && let Some(slot) = grid.at(hour)
                {
                    slot.merge(&stack);
                }
            }
        }
        Ok(())
    }

    /// The exact stats of a rollup-eligible filter (`None`: the rollups cannot help, e.g. no whole hour
    /// in the range; the caller scans).
    pub(crate) fn rollup_stats(
        &self,
        filter: &CallFilter,
        bucket_us: Option<i64>,
    ) -> Result<Option<Stats>, LedgerStoreError> {
        let lo = match filter.since {
            Some(since) => match ceil_hour(since.0) {
                Some(lo) => lo,
                None => return Ok(None),
            },
            None => i64::MIN,
        };
        let hi = filter.until.map_or(i64::MAX, |until| hour_of(until.0));
        if lo >= hi {
            return Ok(None);
        }
        let statuses: Vec<&str> = filter.statuses.iter().map(|s| s.as_str()).collect();
        let Some(selected) = self.select_keys(|k| k.selected_by(filter, &statuses))? else { return Ok(None) };
        let Some(rolled) = self.roll_range(&selected, lo, hi)? else { return Ok(None) };
        let mut tally = Tally::default();
        for (key, n) in selected.keys.iter().zip(&rolled.calls) {
            if *n > 0 {
                tally.add(&key.dims(), *n);
            }
        }
        let mut times: HashMap<String, ToolTimes> =
            selected.tools.iter().cloned().zip(rolled.times).collect();
        let left = match filter.since {
            Some(since) if since.0 < lo => self.scan_edge(filter, (since.0, lo), &mut tally, &mut times)?,
            _ => Vec::new(),
        };
        let right = match filter.until {
            Some(until) if hi < until.0 => self.scan_edge(filter, (hi, until.0), &mut tally, &mut times)?,
            _ => Vec::new(),
        };

        // The exact first and last call: at an edge, else in the first or last period rolled up.
        let edge_min = |rows: &[EdgeRow]| rows.iter().map(|(at, _)| *at).min();
        let edge_max = |rows: &[EdgeRow]| rows.iter().map(|(at, _)| *at).max();
        let period = |p: Option<&(i64, i64, Stack)>| p.map(|(start, width, _)| (*start, *width));
        let min_at = match (edge_min(&left), period(rolled.periods.first())) {
            (Some(at), _) => Some(at),
            (None, Some(first)) => self.call_time_in(filter, &selected, first, true)?,
            (None, None) => edge_min(&right),
        };
        let max_at = match (edge_max(&right), period(rolled.periods.last())) {
            (Some(at), _) => Some(at),
            (None, Some(last)) => self.call_time_in(filter, &selected, last, false)?,
            (None, None) => edge_max(&left),
        };

        let mut grid = Grid::new(min_at, max_at, bucket_us)?;
        if grid.width % HOUR_US == 0 {
            self.fill_from_rollups(&mut grid, &selected, &rolled.periods)?;
            for (at, stack) in left.iter().chain(&right) {
                if let Some(slot) = grid.at(*at) {
                    slot.merge(stack);
                }
            }
        } else {
            // Buckets finer than an hour (short spans, by default): the calls' times from the records.
            self.bucket_by_scan(filter, &mut grid)?;
        }
        let (mut durations, mut durations_exact) = tool_durations(times);
        if !durations_exact && tally.total <= EXACT_DURATIONS_UP_TO {
            // Few calls: their exact durations cost less than a frame to read.
            (durations, durations_exact) = tool_durations(self.durations_by_scan(filter)?);
        }
        self.assemble(filter, tally, grid, durations, durations_exact, StatsSource::Rollup).map(Some)
    }

    /// Every duration of the calls `filter` selects, by tool, read from the records.
    fn durations_by_scan(&self, filter: &CallFilter) -> Result<HashMap<String, ToolTimes>, LedgerStoreError> {
        let path = self.path();
        let w = call_where(filter)?;
        let sql = format!(
            "SELECT r.tool, r.duration_us FROM records r WHERE {} AND r.duration_us IS NOT NULL",
            w.sql
        );
        let mut stmt = self.conn.prepare_cached(&sql).at(path)?;
        let mut rows = stmt.query(params_from_iter(w.params.iter())).at(path)?;
        let mut times: HashMap<String, ToolTimes> = HashMap::new();
        while let Some(row) = rows.next().at(path)? {
            let tool: String = row.get(0).at(path)?;
            let duration: i64 = row.get(1).at(path)?;
            times.entry(tool).or_default().push(duration);
        }
        Ok(times)
    }

    /// Fills the buckets from the records: each selected call's time, status and policy decision.
    fn bucket_by_scan(&self, filter: &CallFilter, grid: &mut Grid) -> Result<(), LedgerStoreError> {
        let path = self.path();
        let w = call_where(filter)?;
        let sql = format!("SELECT r.at, r.status, r.policy_decision FROM records r WHERE {}", w.sql);
        let mut stmt = self.conn.prepare_cached(&sql).at(path)?;
        let mut rows = stmt.query(params_from_iter(w.params.iter())).at(path)?;
        while let Some(row) = rows.next().at(path)? {
            let at: i64 = row.get(0).at(path)?;
            let status = text(row, 1, path)?.unwrap_or_default();
            let prompted = text(row, 2, path)? == Some("prompt");
            if let Some(slot) = grid.at(at) {
                slot.add(status, prompted, 1);
            }
        }
        Ok(())
    }

    /// Cheap stats for facet counts shown first: from the rollups only, even for filters they cannot
    /// answer exactly. The session, run and search parts of the filter are dropped (and `running`: the
    /// rollups count ended calls); the time range is widened to whole hours; buckets are whole hours
    /// (a finer width is rounded up to one). Durations come from the histograms. Sessions and refusals
    /// are counted as [`LedgerReader::stats`] counts them.
    pub fn stats_approximate(
        &self,
        filter: &CallFilter,
        bucket_us: Option<i64>,
    ) -> Result<Stats, LedgerStoreError> {
        let terminal: Vec<CallStatus> =
            filter.statuses.iter().copied().filter(|s| *s != CallStatus::Running).collect();
        let none_ended = !filter.statuses.is_empty() && terminal.is_empty();
        let reduced =
            CallFilter { session: None, run: None, search: None, statuses: terminal, ..filter.clone() };
        call_where(&reduced)?;
        let tx = self.conn.unchecked_transaction().at(self.path())?;
        let lo = filter.since.map_or(i64::MIN, |s| hour_of(s.0));
        let hi = filter.until.map_or(i64::MAX, |u| ceil_hour(u.0).unwrap_or(i64::MAX));
        let statuses: Vec<&str> = reduced.statuses.iter().map(|s| s.as_str()).collect();
        let selected = self.select_keys(|k| !none_ended && k.selected_by(&reduced, &statuses))?;
        let rolled = match &selected {
            Some(selected) => self.roll_range(selected, lo, hi)?,
            None => None,
        };
        let (Some(selected), Some(rolled)) = (selected, rolled) else {
            let stats = self.scan_stats(&reduced, bucket_us);
            tx.commit().at(self.path())?;
            return stats;
        };
        let mut tally = Tally::default();
        for (key, n) in selected.keys.iter().zip(&rolled.calls) {
            if *n > 0 {
                tally.add(&key.dims(), *n);
            }
        }
        // Whole periods: the span from the first period's start to the last one's.
        let min_at = rolled.periods.first().map(|(start, _, _)| *start);
        let max_at = rolled.periods.last().map(|(start, _, _)| *start);
        let mut grid = Grid::new(min_at, max_at, bucket_us)?;
        if grid.width % HOUR_US != 0 {
            let whole = (grid.width / HOUR_US).saturating_add(1).saturating_mul(HOUR_US);
            grid = Grid::new(min_at, max_at, Some(whole))?;
        }
        self.fill_from_rollups(&mut grid, &selected, &rolled.periods)?;
        let times = selected.tools.iter().cloned().zip(rolled.times).collect();
        let (durations, durations_exact) = tool_durations(times);
        let stats = self.assemble(filter, tally, grid, durations, durations_exact, StatsSource::Rollup);
        tx.commit().at(self.path())?;
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_cut_into_days_and_the_hours_around_them() {
        let (h, d) = (HOUR_US, DAY_US);
        assert_eq!(pieces(5 * h, 5 * h), []);
        assert_eq!(pieces(5 * h, 20 * h), [(Grain::Hour, 5 * h..20 * h)]);
        assert_eq!(pieces(5 * h, d + 20 * h), [(Grain::Hour, 5 * h..d + 20 * h)], "no whole day");
        assert_eq!(
            pieces(5 * h, 3 * d + 2 * h),
            [(Grain::Hour, 5 * h..d), (Grain::Day, d..3 * d), (Grain::Hour, 3 * d..3 * d + 2 * h)]
        );
        assert_eq!(pieces(d, 2 * d), [(Grain::Day, d..2 * d)]);
        assert_eq!(pieces(i64::MIN, i64::MAX), [(Grain::Day, i64::MIN..i64::MAX)]);
        assert_eq!(pieces(i64::MIN, d + h), [(Grain::Day, i64::MIN..d), (Grain::Hour, d..d + h)]);
        assert_eq!(pieces(-h, i64::MAX), [(Grain::Hour, -h..0), (Grain::Day, 0..i64::MAX)]);
    }

    #[test]
    fn whole_hours_start_at_or_after() {
        assert_eq!(ceil_hour(0), Some(0));
        assert_eq!(ceil_hour(1), Some(HOUR_US));
        assert_eq!(ceil_hour(-1), Some(0));
        assert_eq!(ceil_hour(i64::MAX), None);
    }

    #[test]
    fn keys_are_selected_by_every_dimension() {
        use crate::call_head::StoredPolicyDecision;
        use portcullis_harness::BlockedReason;
        let key = Key {
            tool: "shell".into(),
            status: "blocked".into(),
            reason: Some("tool_denied".into()),
            decided_by: "rule".into(),
            rule: Some("r1".into()),
            policy_decision: Some("prompt".into()),
            owner: "claude".into(),
        };
        let all = CallFilter::default();
        assert!(key.selected_by(&all, &[]));
        assert!(key.prompted());
        assert!(!key.selected_by(&all, &["finished"]));
        let f = CallFilter {
            tools: vec!["shell".into(), "read".into()],
            reasons: vec![BlockedReason::ToolDenied],
            decided_by: vec![portcullis_harness::DeciderKind::Rule],
            rule: Some("r1".into()),
            policy_decisions: vec![StoredPolicyDecision::Prompt],
            owners: vec!["claude".into()],
            ..CallFilter::default()
        };
        assert!(key.selected_by(&f, &["blocked"]));
        for other in [
            CallFilter { tools: vec!["read".into()], ..f.clone() },
            CallFilter { reasons: vec![BlockedReason::UnknownTool], ..f.clone() },
            CallFilter { decided_by: vec![portcullis_harness::DeciderKind::Default], ..f.clone() },
            CallFilter { rule: Some("r2".into()), ..f.clone() },
            CallFilter { policy_decisions: vec![StoredPolicyDecision::Allow], ..f.clone() },
            CallFilter { owners: vec!["codex".into()], ..f.clone() },
        ] {
            assert!(!key.selected_by(&other, &[]), "{other:?}");
        }
        let bare = Key { reason: None, rule: None, policy_decision: None, ..key };
        assert!(
            !bare.selected_by(&CallFilter { reasons: vec![BlockedReason::ToolDenied], ..all.clone() }, &[])
        );
        assert!(!bare.selected_by(&CallFilter { rule: Some("r1".into()), ..all.clone() }, &[]));
        assert!(!bare.selected_by(
            &CallFilter { policy_decisions: vec![StoredPolicyDecision::Prompt], ..all.clone() },
            &[]
        ));
    }
}
