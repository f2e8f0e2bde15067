//! The ledger browser's half of the operator API: a ledger file held open read-only for a window that
//! pages, filters, searches and audits it — the hub's own while it writes, or any other a person opens.
//! Short queries (pages, one call, the tail) and long ones (stats, facets, a session) run on separate
//! connections, so a slow aggregate never holds up scrolling. What a front end shows of one call (its
//! timings, what decided it, its output's parts) is computed here, once, for every front end.

pub use super::call_detail::{CallDetail, CallTimings, OutputPart, RecordStep};
use super::error::{ApiError, ErrorCode};
use super::ledger::{LedgerAddress, LedgerView};
use super::ledger_address::open_reader;
use portcullis_harness::Timestamp;
use portcullis_ledger::stats::Count;
use portcullis_ledger::{
    ApprovalSummary, CallFilter, CallPage, CallRow, CommandCount, CommandOutcome, Cursor, ExportFormat,
    LedgerRead, SessionFilter, SessionRow, Stats,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Most calls a session timeline holds (the rest are counted, not listed).
pub const SESSION_TIMELINE_MAX: usize = 5000;

/// Which way a page of calls runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum CallOrder {
    #[default]
    NewestFirst,
    OldestFirst,
}

/// What a ledger holds, at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LedgerSummary {
    pub path: String,
    /// The database file and its write-ahead log.
    pub bytes: u64,
    pub schema_version: i64,
    /// Calls that ended.
    pub calls: u64,
    pub first_at: Option<Timestamp>,
    pub last_at: Option<Timestamp>,
}

/// A ledger opened for browsing: a hub's own file, or a team ledger in PostgreSQL.
pub struct BrowsedLedger {
    address: LedgerAddress,
    /// What the ledger is called where a person reads it: the file's path, or the team ledger's URL
    /// (without a password).
    shown: String,
    rows: Mutex<Box<dyn LedgerRead>>,
    aggregates: OnDemand,
    /// The facet counts (one or more stats each): never queued before the stats the view shows.
    facets: OnDemand,
    /// The slow audit queries (commands and approvals read from bodies): never in the stats' way.
    audit: OnDemand,
}

fn lock(reader: &Mutex<Box<dyn LedgerRead>>) -> MutexGuard<'_, Box<dyn LedgerRead>> {
    reader.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connection of its own, opened the first time it is asked: a ledger that is only listed (the
/// command line's `ledger query`) never opens it, and a team ledger makes no database connection for it.
#[derive(Default)]
struct OnDemand(Mutex<Option<Box<dyn LedgerRead>>>);

impl OnDemand {
    /// `ask` of this connection, opened on `address` first if it is not yet.
    fn with<T>(
        &self,
        address: &LedgerAddress,
        ask: impl FnOnce(&dyn LedgerRead) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let reader = match slot.take() {
            Some(reader) => reader,
            None => open_reader(address)?,
        };
        let answer = ask(reader.as_ref());
        *slot = Some(reader);
        answer
    }
}

impl BrowsedLedger {
    /// Opens `path` read-only (one connection now; aggregates, facets and audit queries each get their own
    /// when first asked). Refused, with the
    /// ledger's code and the file untouched, when it is missing, not a ledger, damaged, or of another
    /// schema version.
    pub fn open(path: &Path) -> Result<Self, ApiError> {
        BrowsedLedger::open_at(LedgerAddress::File(path.to_owned()))
    }

    /// Opens the ledger `address` names (its other connections open when first asked).
    pub fn open_at(address: LedgerAddress) -> Result<Self, ApiError> {
        if let LedgerAddress::File(path) = &address
            && path.is_dir()
        {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("{} is a folder, not a ledger file", path.display()),
                json!({ "file": path }),
            ));
        }
        let rows = open_reader(&address)?;
        // A damaged file can open and fail only when a page is read: read one now.
        rows.calls(&CallFilter::default(), None, 1)?;
        let shown = rows.shown();
        Ok(BrowsedLedger {
            rows: Mutex::new(rows),
            aggregates: OnDemand::default(),
            facets: OnDemand::default(),
            audit: OnDemand::default(),
            address,
            shown,
        })
    }

    /// The ledger's file, or none for a team ledger.
    pub fn path(&self) -> Option<&Path> {
        match &self.address {
            LedgerAddress::File(path) => Some(path),
            LedgerAddress::Team { .. } => None,
        }
    }

    /// The chain and checkpoints of the ledger file checked against `key` and the witness kept in the
    /// config folder `witnesses` (a team ledger: `not_on_team_ledger`; its rows carry the chain,
    /// verified from an export).
    pub fn verify(
        &self,
        key: &portcullis_ledger::LedgerPublicKey,
        witnesses: Option<&Path>,
    ) -> Result<portcullis_ledger::VerifyReport, ApiError> {
        self.audit.with(&self.address, |reader| Ok(reader.verify_with(key, witnesses)?))
    }

    /// Size, schema, how many calls and over which time.
    pub fn summary(&self) -> Result<LedgerSummary, ApiError> {
        let (bytes, schema_version) = match &self.address {
            LedgerAddress::File(path) => (
                [path.clone(), wal_of(path)]
                    .iter()
                    .filter_map(|p| std::fs::metadata(p).ok())
                    .map(|m| m.len())
                    .sum(),
                portcullis_ledger::schema::SCHEMA_VERSION,
            ),
            LedgerAddress::Team { .. } => (0, i64::from(portcullis_team::schema::SCHEMA_VERSION)),
        };
        let (calls, first_at, last_at) = lock(&self.rows).extent()?;
        Ok(LedgerSummary { path: self.shown.clone(), bytes, schema_version, calls, first_at, last_at })
    }

    /// The requests the hub refused (counted per kind and minute) first seen in `[since, until)`, newest
    /// first.
    pub fn refusals(
        &self,
        since: Option<Timestamp>,
        until: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<portcullis_ledger::RefusalRow>, ApiError> {
        let filter = portcullis_ledger::RefusalFilter { since, until };
        self.audit.with(&self.address, |r| Ok(r.refusals(&filter, limit.clamp(1, super::ledger::MAX_PAGE))?))
    }

    /// The file's integrity and shape: schema version, counts, calls left open, unreadable bodies.
    pub fn check(&self) -> Result<portcullis_ledger::CheckReport, ApiError> {
        self.audit.with(&self.address, |r| Ok(r.check()?))
    }

    /// How far behind the file's record sinks are (none for a team ledger: it is a sink itself).
    pub fn shipping(&self) -> Result<Vec<portcullis_ledger::SinkLag>, ApiError> {
        self.audit.with(&self.address, |r| Ok(r.sink_lags()?))
    }

    /// One page of the calls `filter` selects, by key: newest first after `cursor` (older calls), or
    /// oldest first after it (newer calls — the live tail asks this from its newest call).
    pub fn page(
        &self,
        filter: &CallFilter,
        order: CallOrder,
        cursor: Option<Cursor>,
        limit: usize,
    ) -> Result<CallPage, ApiError> {
        let rows = lock(&self.rows);
        let limit = limit.clamp(1, super::ledger::MAX_PAGE);
        Ok(match order {
            CallOrder::NewestFirst => rows.calls(filter, cursor, limit)?,
            CallOrder::OldestFirst => rows.calls_oldest_first(filter, cursor, limit)?,
        })
    }

    /// How many calls `filter` selects.
    pub fn count(&self, filter: &CallFilter) -> Result<u64, ApiError> {
        self.aggregates.with(&self.address, |reader| Ok(reader.count(filter)?))
    }

    /// One call as the detail view shows it.
    pub fn call(&self, call_id: &str, session: &str) -> Result<CallDetail, ApiError> {
        let (timeline, origin) = lock(&self.rows).timeline(call_id, Some(session))?;
        let detail = CallDetail::of(timeline.records, timeline.approvals);
        detail.map(|d| d.ran_on(origin)).ok_or_else(|| {
            ApiError::new(
                ErrorCode::CallNotFound,
                format!("no call {call_id} of session {session} in {}", self.shown),
                json!({ "call_id": call_id, "session": session }),
            )
        })
    }

    /// Every session's detail of call `call_id` (a call id may recur across sessions), in the order
    /// the sessions first recorded it; only `session`'s when it is named; on a team ledger, the newest
    /// such call's, with the hub it ran on. `call_not_found` when none.
    pub fn details(&self, call_id: &str, session: Option<&str>) -> Result<Vec<CallDetail>, ApiError> {
        let (timeline, origin) = lock(&self.rows).timeline(call_id, session)?;
        let mut sessions: Vec<&str> = Vec::new();
        for record in &timeline.records {
            if !sessions.contains(&record.head.session_id.as_str()) {
                sessions.push(&record.head.session_id);
            }
        }
        let details: Vec<CallDetail> = sessions
            .iter()
            .filter_map(|s| {
                let records = timeline.records.iter().filter(|r| r.head.session_id == *s).cloned().collect();
                let approvals = timeline.approvals.iter().filter(|a| a.session_id == *s).cloned().collect();
                CallDetail::of(records, approvals).map(|d| d.ran_on(origin.clone()))
            })
            .collect();
        if details.is_empty() {
            let within = session.map(|s| format!(" of session {s}")).unwrap_or_default();
            return Err(ApiError::new(
                ErrorCode::CallNotFound,
                format!("no call {call_id}{within} in {}", self.shown),
                json!({ "call_id": call_id, "session": session }),
            ));
        }
        Ok(details)
    }

    /// Aggregates over the calls `filter` selects.
    pub fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ApiError> {
        self.aggregates.with(&self.address, |reader| Ok(reader.stats(filter, bucket_us)?))
    }

    /// The counts beside each filter chip: for every dimension, the calls each of its values would
    /// select with the rest of the filter kept (a dimension's own selection left out, so its other values
    /// count too). `exact: false` answers from the writer's hourly aggregates only (search, session
    /// and the partial hours at the ends left out): fast, and marked approximate.
    pub fn facets(&self, filter: &CallFilter, exact: bool) -> Result<Facets, ApiError> {
        self.facets.with(&self.address, |reader| self.facets_of(reader, filter, exact))
    }

    fn facets_of(
        &self,
        reader: &dyn LedgerRead,
        filter: &CallFilter,
        exact: bool,
    ) -> Result<Facets, ApiError> {
        let stats = |f: &CallFilter| -> Result<Stats, ApiError> {
            Ok(if exact { reader.stats(f, None)? } else { reader.stats_approximate(f, None)? })
        };
        let all = stats(filter)?;
        let without = |f: CallFilter, pick: fn(Stats) -> Vec<Count>| -> Result<Vec<Count>, ApiError> {
            Ok(pick(stats(&f)?))
        };
        let tools = if filter.tools.is_empty() {
            all.by_tool.clone()
        } else {
            without(CallFilter { tools: Vec::new(), ..filter.clone() }, |s| s.by_tool)?
        };
        let statuses = if filter.statuses.is_empty() {
            all.by_status.clone()
        } else {
            without(CallFilter { statuses: Vec::new(), ..filter.clone() }, |s| s.by_status)?
        };
        let reasons = if filter.reasons.is_empty() {
            all.by_reason.clone()
        } else {
            without(CallFilter { reasons: Vec::new(), ..filter.clone() }, |s| s.by_reason)?
        };
        let decided_by = if filter.decided_by.is_empty() {
            all.by_decided_by.clone()
        } else {
            without(CallFilter { decided_by: Vec::new(), ..filter.clone() }, |s| s.by_decided_by)?
        };
        let rules = if filter.rule.is_none() {
            all.by_rule.clone()
        } else {
            without(CallFilter { rule: None, ..filter.clone() }, |s| s.by_rule)?
        };
        let owners = if filter.owners.is_empty() {
            all.by_owner.clone()
        } else {
            without(CallFilter { owners: Vec::new(), ..filter.clone() }, |s| s.by_owner)?
        };
        let policy_decisions = if filter.policy_decisions.is_empty() {
            all.by_policy_decision.clone()
        } else {
            without(CallFilter { policy_decisions: Vec::new(), ..filter.clone() }, |s| s.by_policy_decision)?
        };
        let hosts = if filter.hosts.is_empty() {
            all.by_host.clone()
        } else {
            without(CallFilter { hosts: Vec::new(), ..filter.clone() }, |s| s.by_host)?
        };
        let users = if filter.users.is_empty() {
            all.by_user.clone()
        } else {
            without(CallFilter { users: Vec::new(), ..filter.clone() }, |s| s.by_user)?
        };
        let hubs = if filter.hubs.is_empty() {
            all.by_hub.clone()
        } else {
            without(CallFilter { hubs: Vec::new(), ..filter.clone() }, |s| s.by_hub)?
        };
        let approximate =
            !exact && (filter.search.is_some() || filter.session.is_some() || filter.run.is_some());
        Ok(Facets {
            total: all.total,
            tools,
            statuses,
            reasons,
            decided_by,
            rules,
            owners,
            policy_decisions,
            hosts,
            users,
            hubs,
            approximate,
        })
    }

    /// How the approvals asked in the filter's time range (its tools, its session) went.
    pub fn approvals(&self, filter: &CallFilter) -> Result<ApprovalSummary, ApiError> {
        self.audit.with(&self.address, |reader| Ok(reader.approval_summary(filter)?))
    }

    /// The shell commands the selected calls prompted for (or were blocked for) most.
    pub fn top_commands(
        &self,
        filter: &CallFilter,
        outcome: CommandOutcome,
        limit: usize,
    ) -> Result<Vec<CommandCount>, ApiError> {
        self.audit
            .with(&self.address, |reader| Ok(reader.top_commands(filter, outcome, limit.clamp(1, 100))?))
    }

    /// Sessions started in `[since, until)`, newest first.
    pub fn sessions(
        &self,
        since: Option<Timestamp>,
        until: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, ApiError> {
        let filter = SessionFilter { id: None, since, until };
        self.aggregates.with(&self.address, |reader| {
            Ok(reader.session_rows(&filter, limit.clamp(1, super::ledger::MAX_PAGE))?)
        })
    }

    /// One session's calls over time, oldest first, each on a lane so that calls that overlap (run
    /// concurrently) sit on different lanes.
    pub fn session_timeline(&self, session: &str) -> Result<SessionTimeline, ApiError> {
        self.aggregates.with(&self.address, |reader| self.session_timeline_of(reader, session))
    }

    fn session_timeline_of(
        &self,
        reader: &dyn LedgerRead,
        session: &str,
    ) -> Result<SessionTimeline, ApiError> {
        let row = reader
            .session_rows(&SessionFilter { id: Some(session.to_owned()), since: None, until: None }, 1)?
            .into_iter()
            .next();
        let filter = CallFilter { session: Some(session.to_owned()), ..CallFilter::default() };
        let mut calls = Vec::new();
        let mut cursor = None;
        loop {
            let page = reader.calls_oldest_first(&filter, cursor, super::ledger::MAX_PAGE)?;
            let ended = page.calls.len() < super::ledger::MAX_PAGE;
            calls.extend(page.calls);
            cursor = page.next;
            if ended || calls.len() >= SESSION_TIMELINE_MAX {
                break;
            }
        }
        let total =
            if calls.len() >= SESSION_TIMELINE_MAX { reader.count(&filter)? } else { calls.len() as u64 };
        calls.truncate(SESSION_TIMELINE_MAX);
        if row.is_none() && calls.is_empty() {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("no session {session} in {}", self.shown),
                json!({ "session": session }),
            ));
        }
        Ok(SessionTimeline::of(row, calls, total))
    }

    /// Writes every record of the calls `filter` selects to `out` (see [`LedgerView::export_to_file`]),
    /// on a connection of its own; `stop` set ends it with `cancelled` and no file left behind.
    pub fn export(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &Path,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ApiError> {
        let view = LedgerView::open_at(&self.address)?;
        let mut report = |done: u64, total: u64| progress(done, total);
        let written = view.export_to_file_until(filter, format, out, stop, &mut report);
        if stop.load(Ordering::Relaxed) {
            return Err(ApiError::new(
                ErrorCode::Cancelled,
                format!("export to {} stopped; no file was left", out.display()),
                json!({ "file": out }),
            ));
        }
        written
    }
}

fn wal_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// The counts beside the filter chips (see [`BrowsedLedger::facets`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Facets {
    /// Calls the whole filter selects.
    pub total: u64,
    pub tools: Vec<Count>,
    pub statuses: Vec<Count>,
    /// Why calls were refused (blocked calls only): a retry answered from its first call
    /// (`duplicate_effect`), a key reused with other arguments, an outcome unknown, a denial…
    pub reasons: Vec<Count>,
    pub decided_by: Vec<Count>,
    pub rules: Vec<Count>,
    pub owners: Vec<Count>,
    pub policy_decisions: Vec<Count>,
    /// A team ledger's hosts, OS users and hubs (ledger ids); empty for a hub's own ledger.
    pub hosts: Vec<Count>,
    pub users: Vec<Count>,
    pub hubs: Vec<Count>,
    /// Counted without the search, session or partial hours: the exact counts follow.
    pub approximate: bool,
}

/// A call on a session's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimelineCall {
    pub call: CallRow,
    /// From when execution began (or the call was refused) to its end.
    pub from: Timestamp,
    pub to: Timestamp,
    /// The row it is drawn on: calls that overlap in time are on different lanes.
    pub lane: u32,
}

/// One session's calls over time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionTimeline {
    pub session: Option<SessionRow>,
    pub calls: Vec<TimelineCall>,
    /// Calls of the session in all (more than listed when over [`SESSION_TIMELINE_MAX`]).
    pub total: u64,
    /// Lanes used: the most calls that ran at once.
    pub lanes: u32,
}

impl SessionTimeline {
    fn of(session: Option<SessionRow>, rows: Vec<CallRow>, total: u64) -> SessionTimeline {
        let mut calls: Vec<TimelineCall> = rows
            .into_iter()
            .map(|call| {
                let from = call.head.started_at.unwrap_or(call.head.at).min(call.head.at);
                TimelineCall { to: call.head.at, from, call, lane: 0 }
            })
            .collect();
        calls.sort_by_key(|c| (c.from, c.to));
        // Greedy interval partitioning: each call takes the lowest lane free at its start.
        let mut lane_ends: Vec<Timestamp> = Vec::new();
        for call in &mut calls {
            let free = lane_ends.iter().position(|end| *end <= call.from);
            let lane = match free {
                Some(i) => i,
                None => {
                    lane_ends.push(call.to);
                    lane_ends.len() - 1
                }
            };
            lane_ends[lane] = call.to;
            call.lane = u32::try_from(lane).unwrap_or(u32::MAX);
        }
        SessionTimeline { session, calls, total, lanes: u32::try_from(lane_ends.len()).unwrap_or(u32::MAX) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_ledger::{CallHead, CallStatus};

    fn row(id: i64, started: Option<i64>, at: i64) -> CallRow {
        let head = CallHead {
            started_at: started.map(Timestamp),
            ..CallHead::new("s", "r", format!("c{id}"), "agent", "shell", Timestamp(at))
        };
        CallRow::new(
            id,
            head,
            CallStatus::Finished,
            portcullis_ledger::RowDecider::of_kind(portcullis_harness::DeciderKind::Rule),
        )
    }

    #[test]
    fn overlapping_calls_take_separate_lanes_and_lanes_are_reused() {
        // c1 [0,10), c2 [5,15) overlaps c1, c3 [10,20) reuses c1's lane, c4 blocked at 30 (no start).
        let t = SessionTimeline::of(
            None,
            vec![row(1, Some(0), 10), row(2, Some(5), 15), row(3, Some(10), 20), row(4, None, 30)],
            4,
        );
        let lanes: Vec<(String, u32)> =
            t.calls.iter().map(|c| (c.call.head.call_id.clone(), c.lane)).collect();
        assert_eq!(lanes, [("c1".into(), 0), ("c2".into(), 1), ("c3".into(), 0), ("c4".into(), 0)]);
        assert_eq!(t.lanes, 2);
        assert_eq!(t.calls[3].from, Timestamp(30));
    }
}
