//! What a writer does on open for the writers before it that never closed (crashed, killed): their
//! calls still open get an `interrupted` record, sessions still open are ended as `cut`, and the writers
//! are marked closed. Split from `store.rs`, which keeps the writer itself.

use crate::schema;
use rusqlite::{Connection, params};
use std::collections::HashMap;

/// What opening a ledger for writing found left behind by writers that stopped without closing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Calls still open, now ended by an `interrupted` record.
    pub interrupted_calls: u64,
    /// Sessions still open, now ended as `cut`.
    pub cut_sessions: u64,
    /// Claimed effects still running, now `unknown` (set by the caller, see `effects.rs`).
    pub unknown_effects: u64,
}

/// Message of the records written for calls whose process stopped before they ended. What such a call
/// did is not known: a command may have run in part, or to its end, before its hub died (a confined one
/// dies with its hub, but not before it acted), so the record says so rather than only "interrupted".
pub const INTERRUPTED_MESSAGE: &str = "outcome unknown: the process writing this ledger stopped before the call ended; the call may have run in part or to its end";

/// Ends what writers that never closed (crashed, killed) left open: sessions become `cut`, calls get an
/// `interrupted` record; the writers are marked closed.
pub(crate) fn recover_crashed_writers(
    conn: &mut Connection,
    current: i64,
    now: i64,
) -> rusqlite::Result<Recovered> {
    let tx = conn.transaction()?;
    let crashed: Vec<i64> = {
        let mut stmt = tx.prepare("SELECT id FROM writers WHERE closed_at IS NULL AND id <> ?1")?;
        stmt.query_map([current], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
    };
    // Before the interrupted records are added: they would count as the sessions' last activity.
    let cut_sessions = cut_open_sessions(&tx, current)?;
    let mut interrupted_calls = 0u64;
    for writer in crashed {
        interrupted_calls += interrupt_open_calls(&tx, OpenCalls::OfWriter(writer), current, now)?;
        tx.execute("UPDATE writers SET closed_at = ?1 WHERE id = ?2", params![now, writer])?;
    }
    tx.commit()?;
    Ok(Recovered { interrupted_calls, cut_sessions, unknown_effects: 0 })
}

/// Ends every session still open as `cut`, at its last recorded activity (its last record, else its
/// start). The caller holds the exclusive writer lock, which every writer takes before it opens a
/// session, so no live process holds one of them: each was left by a writer that stopped without
/// closing it (a hub killed or crashed).
fn cut_open_sessions(tx: &Connection, current: i64) -> rusqlite::Result<u64> {
    let open: Vec<(String, i64)> = {
        let mut stmt = tx.prepare("SELECT id, started_at FROM sessions WHERE ended_at IS NULL")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?
    };
    if open.is_empty() {
        return Ok(0);
    }
    // Their records are those of the writers that never closed: one scan of that id range.
    let from: Option<i64> = tx.query_row(
        "SELECT min(first_record) FROM writers WHERE closed_at IS NULL AND id <> ?1",
        [current],
        |r| r.get(0),
    )?;
    let mut last: HashMap<String, i64> = HashMap::new();
    if let Some(from) = from {
        let mut stmt = tx.prepare(
            "SELECT session_id, max(at) FROM records
             WHERE id >= ?1 AND session_id IN (SELECT id FROM sessions WHERE ended_at IS NULL)
             GROUP BY session_id",
        )?;
        let rows = stmt.query_map([from], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (session, at) = row?;
            last.insert(session, at);
        }
    }
    let mut cut = tx.prepare("UPDATE sessions SET ended_at = ?1, end_reason = 'cut' WHERE id = ?2")?;
    for (id, started_at) in &open {
        let ended_at = last.get(id).copied().unwrap_or(*started_at).max(*started_at);
        cut.execute(params![ended_at, id])?;
        if let Some(sessions) = crate::side_chain::table("sessions") {
            crate::side_chain::chain_row(tx, sessions, id)?;
        }
    }
    Ok(open.len() as u64)
}

/// Which started records to close as interrupted.
pub(crate) enum OpenCalls<'a> {
    /// Every open call of a writer (its id range).
    OfWriter(i64),
    /// One call.
    Call { session_id: &'a str, call_id: &'a str },
}

/// Appends an `interrupted` record (its search document, its count in the rollups) for each started record
/// in scope that has no terminal record.
pub(crate) fn interrupt_open_calls(
    conn: &Connection,
    scope: OpenCalls<'_>,
    current: i64,
    now: i64,
) -> rusqlite::Result<u64> {
    let (clause, params): (&str, Vec<rusqlite::types::Value>) = match scope {
        OpenCalls::OfWriter(writer) => (
            "s.writer_id = ?4
             AND s.id >= (SELECT first_record FROM writers WHERE id = ?4)
             AND s.id < coalesce((SELECT min(first_record) FROM writers WHERE id > ?4), 9223372036854775807)",
            vec![writer.into()],
        ),
        OpenCalls::Call { session_id, call_id } => (
            "s.call_key = ?4 AND s.session_id = ?5 AND s.call_id = ?6",
            vec![schema::call_key(call_id).into(), session_id.to_owned().into(), call_id.to_owned().into()],
        ),
    };
    let sql = format!(
        "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, status, at,
             started_at, duration_us, reason, error_code, decided_by, decided_rule, decided_source,
             decided_operator, redacted, body, policy_decision, policy_rule)
         SELECT ?1, s.session_id, s.run_id, s.call_id, s.call_key, s.owner, s.tool, 'interrupted', 'interrupted',
             ?2, s.at, NULL, NULL, 'interrupted', s.decided_by, s.decided_rule, s.decided_source,
             s.decided_operator, s.redacted,
             json_object('decided_by', s.body -> '$.decided_by',
                         'error', json_object('code', 'interrupted', 'message', ?3)),
             s.policy_decision, s.policy_rule
         FROM records s
         WHERE {clause} AND s.kind = 'started'
           AND NOT EXISTS (SELECT 1 FROM records t WHERE t.call_key = s.call_key AND t.session_id = s.session_id
                           AND t.call_id = s.call_id AND t.status IS NOT NULL)"
    );
    let mut all: Vec<rusqlite::types::Value> =
        vec![current.into(), now.into(), INTERRUPTED_MESSAGE.to_owned().into()];
    all.extend(params);
    let first_new: i64 = conn.query_row("SELECT coalesce(max(id), 0) FROM records", [], |r| r.get(0))?;
    let n = conn.execute(&sql, rusqlite::params_from_iter(all.iter()))?;
    if n > 0 {
        // Their search documents: the arguments of the started record.
        conn.execute(
            "INSERT INTO records_fts(rowid, content)
             SELECT i.id, i.tool || ' ' || coalesce(json_extract(s.body, '$.arguments'), '') || ' interrupted'
             FROM records i JOIN records s ON s.call_key = i.call_key AND s.session_id = i.session_id
                  AND s.call_id = i.call_id AND s.kind = 'started'
             WHERE i.id > ?1 AND i.kind = 'interrupted'",
            [first_new],
        )?;
        // They are calls now: counted in the hourly rollups in the same transaction.
        crate::rollup::add_records_after(conn, first_new)?;
        // And links of the chain.
        let mut head = crate::chain::head(conn)?;
        crate::chain::chain_rows_after(conn, first_new, &mut head)?;
    }
    Ok(n as u64)
}
