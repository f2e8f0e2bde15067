//! The rollups of calls that stats read instead of scanning every record (schema step 7): for each hour
//! (`call_hours`) and each UTC day (`call_days`, so long spans read few rows) and each distinct
//! combination of the dimensions the ledger browser filters on (a `call_keys` row), how many calls
//! ended, the shortest and longest duration and a log-scale histogram of durations. Whoever adds
//! terminal records keeps them exact in the same transaction: the writer (one upsert per hour and key,
//! and per day and key, per batch), crash recovery and clean close (their `interrupted` records), and
//! the migration that made them (backfill).

use crate::durations::{self, Histogram};
use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, params};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

/// One hour, in µs: the rollups' finer time grain.
pub const HOUR_US: i64 = 3_600_000_000;

/// One day, in µs: the rollups' coarser time grain (UTC days).
pub const DAY_US: i64 = 24 * HOUR_US;

/// The SQL function the upsert merges duration histograms with (registered on writing connections).
pub(crate) const MERGE_FUNCTION: &str = "portcullis_merge_durations";

/// Most `call_keys` ids a writer remembers (beyond: it forgets them all and looks them up again).
const MAX_CACHED_KEYS: usize = 100_000;

/// The start of the hour holding `at` (saturating at the far past, where no ledger has records).
pub fn hour_of(at: i64) -> i64 {
    at.saturating_sub(at.rem_euclid(HOUR_US))
}

/// The start of the (UTC) day holding `at`, saturating like [`hour_of`].
pub fn day_of(at: i64) -> i64 {
    at.saturating_sub(at.rem_euclid(DAY_US))
}

/// The upsert of one period and key into `table` (`call_hours` or `call_days`, keyed `hour` or `day`).
fn upsert_sql(table: &str, period: &str) -> String {
    format!(
        "INSERT INTO {table} ({period}, key, calls, min_us, max_us, durations) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT ({period}, key) DO UPDATE SET calls = calls + excluded.calls,
             min_us = min(coalesce(min_us, excluded.min_us), coalesce(excluded.min_us, min_us)),
             max_us = max(coalesce(max_us, excluded.max_us), coalesce(excluded.max_us, max_us)),
             durations = CASE WHEN excluded.durations IS NULL THEN durations
                              WHEN durations IS NULL THEN excluded.durations
                              ELSE {MERGE_FUNCTION}(durations, excluded.durations) END"
    )
}

/// Registers the function the rollup upsert needs on a connection that writes.
pub(crate) fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        MERGE_FUNCTION,
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let blob = |i: usize| match ctx.get_raw(i) {
                ValueRef::Blob(b) => Some(b),
                _ => None,
            };
            Ok(durations::merge_encoded(blob(0), blob(1)))
        },
    )
}

/// The dimensions a call is counted under: one `call_keys` row.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Dims<'a> {
    pub tool: Cow<'a, str>,
    pub status: Cow<'a, str>,
    pub reason: Option<Cow<'a, str>>,
    pub decided_by: Cow<'a, str>,
    pub rule: Option<Cow<'a, str>>,
    pub policy_decision: Option<Cow<'a, str>>,
    pub owner: Cow<'a, str>,
}

impl Dims<'_> {
    fn to_static(&self) -> Dims<'static> {
        let own = |s: &Cow<'_, str>| Cow::Owned(s.as_ref().to_owned());
        Dims {
            tool: own(&self.tool),
            status: own(&self.status),
            reason: self.reason.as_ref().map(own),
            decided_by: own(&self.decided_by),
            rule: self.rule.as_ref().map(own),
            policy_decision: self.policy_decision.as_ref().map(own),
            owner: own(&self.owner),
        }
    }
}

/// What one period and key add up to in a batch.
#[derive(Debug, Default)]
struct Cell {
    calls: u64,
    min_us: Option<i64>,
    max_us: Option<i64>,
    durations: Histogram,
}

impl Cell {
    fn absorb(&mut self, other: &Cell) {
        self.calls += other.calls;
        self.min_us = match (self.min_us, other.min_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.max_us = match (self.max_us, other.max_us) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.durations.merge(&other.durations);
    }

    fn upsert(
        &self,
        stmt: &mut rusqlite::CachedStatement<'_>,
        period: i64,
        key: i64,
    ) -> rusqlite::Result<()> {
        let histogram = (!self.durations.is_empty()).then(|| self.durations.encode());
        stmt.execute(params![
            period,
            key,
            i64::try_from(self.calls).unwrap_or(i64::MAX),
            self.min_us,
            self.max_us,
            histogram
        ])?;
        Ok(())
    }
}

/// Terminal records of one transaction, summed per hour and key before they are written.
#[derive(Debug, Default)]
pub(crate) struct Pending<'a> {
    cells: HashMap<(i64, Dims<'a>), Cell>,
}

impl<'a> Pending<'a> {
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Counts one terminal record ended at `at`, with its duration when it ran.
    pub fn add(&mut self, at: i64, dims: Dims<'a>, duration_us: Option<i64>) {
        let cell = self.cells.entry((hour_of(at), dims)).or_default();
        cell.calls += 1;
        if let Some(d) = duration_us {
            cell.min_us = Some(cell.min_us.map_or(d, |m| m.min(d)));
            cell.max_us = Some(cell.max_us.map_or(d, |m| m.max(d)));
            cell.durations.add(d);
        }
    }

    /// One upsert per hour and key, then one per day and key. `keys` must be forgotten if the
    /// transaction does not commit.
    pub fn write(self, conn: &Connection, keys: &mut KeyCache) -> rusqlite::Result<()> {
        let mut hours = conn.prepare_cached(&upsert_sql("call_hours", "hour"))?;
        let mut days: HashMap<(i64, i64), Cell> = HashMap::new();
        for ((hour, dims), cell) in self.cells {
            let key = keys.id(conn, &dims)?;
            cell.upsert(&mut hours, hour, key)?;
            match days.get_mut(&(day_of(hour), key)) {
                Some(day) => day.absorb(&cell),
                None => {
                    days.insert((day_of(hour), key), cell);
                }
            }
        }
        let mut upsert = conn.prepare_cached(&upsert_sql("call_days", "day"))?;
        for ((day, key), cell) in days {
            cell.upsert(&mut upsert, day, key)?;
        }
        Ok(())
    }
}

/// The writer's memory of `call_keys` ids (looked up, or inserted, on a miss), by the hash of their
/// dimensions, so a hit allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct KeyCache {
    hasher: RandomState,
    ids: HashMap<u64, Vec<(Dims<'static>, i64)>>,
    len: usize,
}

impl KeyCache {
    /// Forgets every id (after a transaction that may have inserted some rolled back).
    pub fn forget(&mut self) {
        self.ids.clear();
        self.len = 0;
    }

    fn id(&mut self, conn: &Connection, dims: &Dims<'_>) -> rusqlite::Result<i64> {
        let hash = self.hasher.hash_one(dims);
        if let Some(id) = self.ids.get(&hash).and_then(|same| same.iter().find(|(d, _)| d == dims)) {
            return Ok(id.1);
        }
        let values = params![
            dims.tool.as_ref(),
            dims.status.as_ref(),
            dims.reason.as_deref(),
            dims.decided_by.as_ref(),
            dims.rule.as_deref(),
            dims.policy_decision.as_deref(),
            dims.owner.as_ref()
        ];
        let found: Option<i64> = conn
            .prepare_cached(
                "SELECT id FROM call_keys WHERE tool = ?1 AND status = ?2 AND reason IS ?3 AND decided_by = ?4
                 AND decided_rule IS ?5 AND policy_decision IS ?6 AND owner = ?7",
            )?
            .query_row(values, |r| r.get(0))
            .optional()?;
        let id = match found {
            Some(id) => id,
            None => {
                conn.prepare_cached(
                    "INSERT INTO call_keys (tool, status, reason, decided_by, decided_rule, policy_decision,
                         owner) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(values)?;
                conn.last_insert_rowid()
            }
        };
        if self.len >= MAX_CACHED_KEYS {
            self.forget();
        }
        self.ids.entry(hash).or_default().push((dims.to_static(), id));
        self.len += 1;
        Ok(id)
    }
}

/// Adds the terminal records with an id above `after_id` to the rollups (recovery's `interrupted`
/// records; every record, for the backfill of schema step 7). Returns how many were added. The
/// connection must have [`register_functions`] done.
pub(crate) fn add_records_after(conn: &Connection, after_id: i64) -> rusqlite::Result<u64> {
    let mut stmt = conn.prepare_cached(
        "SELECT tool, status, reason, decided_by, decided_rule, policy_decision, owner, at, duration_us
         FROM records WHERE id > ?1 AND status IS NOT NULL",
    )?;
    let mut rows = stmt.query([after_id])?;
    let mut pending = Pending::default();
    let mut added = 0u64;
    while let Some(row) = rows.next()? {
        let dims = Dims {
            tool: text(row, 0)?.unwrap_or_default(),
            status: text(row, 1)?.unwrap_or_default(),
            reason: text(row, 2)?,
            decided_by: text(row, 3)?.unwrap_or_default(),
            rule: text(row, 4)?,
            policy_decision: text(row, 5)?,
            owner: text(row, 6)?.unwrap_or_default(),
        };
        pending.add(row.get(7)?, dims, row.get(8)?);
        added += 1;
    }
    drop(rows);
    if !pending.is_empty() {
        pending.write(conn, &mut KeyCache::default())?;
    }
    Ok(added)
}

fn text(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<Cow<'static, str>>> {
    Ok(row.get::<_, Option<String>>(i)?.map(Cow::Owned))
}

/// Schema step 7's backfill: every terminal record already in the file.
pub(crate) fn backfill(conn: &Connection) -> rusqlite::Result<()> {
    let added = add_records_after(conn, 0)?;
    if added > 0 {
        tracing::info!(calls = added, "ledger rollups backfilled");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_floor_toward_the_past() {
        assert_eq!(day_of(DAY_US + 5), DAY_US);
        assert_eq!(day_of(-1), -DAY_US);
        assert_eq!(day_of(i64::MIN), i64::MIN, "saturates");
    }

    #[test]
    fn cells_absorb_each_other() {
        let mut a = Cell { calls: 2, ..Cell::default() };
        let mut b = Cell { calls: 1, min_us: Some(4), max_us: Some(9), ..Cell::default() };
        b.durations.add(4);
        a.absorb(&b);
        assert_eq!((a.calls, a.min_us, a.max_us), (3, Some(4), Some(9)));
        b.min_us = Some(1);
        a.absorb(&b);
        assert_eq!((a.calls, a.min_us, a.max_us), (4, Some(1), Some(9)));
    }

    #[test]
    fn hours_floor_toward_the_past() {
        assert_eq!(hour_of(0), 0);
        assert_eq!(hour_of(HOUR_US - 1), 0);
        assert_eq!(hour_of(HOUR_US), HOUR_US);
        assert_eq!(hour_of(-1), -HOUR_US);
        assert_eq!(hour_of(i64::MIN), i64::MIN, "saturates");
    }

    #[test]
    fn a_batch_sums_per_hour_and_key() {
        let dims = |tool: &'static str| Dims {
            tool: Cow::Borrowed(tool),
            status: Cow::Borrowed("finished"),
            reason: None,
            decided_by: Cow::Borrowed("default"),
            rule: None,
            policy_decision: None,
            owner: Cow::Borrowed("agent"),
        };
        let mut pending = Pending::default();
        pending.add(10, dims("a"), Some(5));
        pending.add(20, dims("a"), Some(50));
        pending.add(HOUR_US + 1, dims("a"), None);
        pending.add(30, dims("b"), None);
        assert_eq!(pending.cells.len(), 3);
        let cell = &pending.cells[&(0, dims("a"))];
        assert_eq!((cell.calls, cell.min_us, cell.max_us), (2, Some(5), Some(50)));
        let later = &pending.cells[&(HOUR_US, dims("a"))];
        assert_eq!((later.calls, later.max_us, later.durations.is_empty()), (1, None, true));
    }
}
