//! Claimed effects (recoverable calls, SEP-3182's `idempotencyKey`): which agent's key a call claimed
//! before its side effect, with the arguments' digest, and how it ended. A hub keeps the live view in
//! memory (its compare-and-set); this table is what survives the hub: it goes through the journal like
//! every other row, so a claim is durable before the effect runs. On open, a claim still `running` was
//! left by a writer that stopped mid-call: its outcome is `unknown` until an operator marks it.

use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use portcullis_harness::Timestamp;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

/// Where a claimed effect stands.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectState {
    /// Claimed; the call runs.
    Running,
    /// The call ended (finished or failed as a call): its answer is kept.
    Done,
    /// The hub stopped while the call ran: whether the effect happened is not known.
    Unknown,
    /// An operator said an unknown outcome happened.
    MarkedDone,
    /// An operator said an unknown outcome did not happen, or failed.
    MarkedFailed,
}

impl EffectState {
    pub const ALL: [EffectState; 5] = [
        EffectState::Running,
        EffectState::Done,
        EffectState::Unknown,
        EffectState::MarkedDone,
        EffectState::MarkedFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EffectState::Running => "running",
            EffectState::Done => "done",
            EffectState::Unknown => "unknown",
            EffectState::MarkedDone => "marked_done",
            EffectState::MarkedFailed => "marked_failed",
        }
    }

    fn parse(text: &str) -> EffectState {
        EffectState::ALL.into_iter().find(|s| s.as_str() == text).unwrap_or(EffectState::Unknown)
    }
}

/// What an operator says about an effect whose outcome is unknown.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectMarkOutcome {
    /// It happened: a retry gets an answer saying so, and does not run.
    Done,
    /// It did not happen or failed: a retry gets an error saying so, and does not run.
    Failed,
    /// Run it again: the key is free, the next call with it runs.
    Retryable,
}

impl EffectMarkOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            EffectMarkOutcome::Done => "done",
            EffectMarkOutcome::Failed => "failed",
            EffectMarkOutcome::Retryable => "retryable",
        }
    }
}

/// One claimed key.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRow {
    /// The agent identity the key is scoped to (a token's name).
    pub agent: String,
    /// The idempotency key, as the agent sent it.
    pub key: String,
    /// The tool the claiming call named.
    pub tool: String,
    /// What the claiming call does in one line (its command, path…; redacted), for the operator who
    /// decides about an unknown outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// SHA-256 (hex) of the tool and its canonical arguments.
    pub digest: String,
    /// The call that claimed the key, and its session.
    pub call_id: String,
    pub session_id: String,
    pub state: EffectState,
    pub claimed_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// After this the key is free again (an `unknown` one stays until an operator marks it).
    pub expires_at: Timestamp,
    /// The answer the claiming call got (`done`: a `ToolCallResult` as JSON, as redacted as the
    /// ledger's records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Who marked it, when, and why (marked states only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marked_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An operator's decision on an effect, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectMark {
    pub at: Timestamp,
    pub agent: String,
    pub key: String,
    /// The call whose outcome was unknown.
    pub call_id: String,
    pub outcome: EffectMarkOutcome,
    pub operator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A change to the effects table, journaled like every row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum EffectChange {
    /// A key claimed (again, once free: the row is replaced).
    Claimed(EffectRow),
    /// The claiming call ended with this answer.
    Ended { agent: String, key: String, call_id: String, at: Timestamp, result: String },
    /// The claiming call never ran (refused by the pipeline): the key is free.
    Released { agent: String, key: String, call_id: String },
    /// An operator's decision.
    Marked(EffectMark),
}

/// Applies a change inside the indexer's transaction.
/// Returns the id of the effect mark it wrote, if it wrote one (the side chain's key of it).
pub(crate) fn write(tx: &Connection, change: &EffectChange) -> rusqlite::Result<Option<i64>> {
    let mut mark_id = None;
    match change {
        EffectChange::Claimed(row) => {
            tx.prepare_cached(
                "INSERT OR REPLACE INTO effects (agent, key, tool, digest, call_id, session_id, state,
                     claimed_at, ended_at, expires_at, result, operator, marked_at, note, summary)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?
            .execute(params![
                row.agent,
                row.key,
                row.tool,
                row.digest,
                row.call_id,
                row.session_id,
                row.state.as_str(),
                row.claimed_at.0,
                row.ended_at.map(|t| t.0),
                row.expires_at.0,
                row.result,
                row.operator,
                row.marked_at.map(|t| t.0),
                row.note,
                row.summary,
            ])?;
        }
        EffectChange::Ended { agent, key, call_id, at, result } => {
            tx.prepare_cached(
                "UPDATE effects SET state = 'done', ended_at = ?1, result = ?2
                 WHERE agent = ?3 AND key = ?4 AND call_id = ?5",
            )?
            .execute(params![at.0, result, agent, key, call_id])?;
        }
        EffectChange::Released { agent, key, call_id } => {
            tx.prepare_cached("DELETE FROM effects WHERE agent = ?1 AND key = ?2 AND call_id = ?3")?
                .execute(params![agent, key, call_id])?;
        }
        EffectChange::Marked(mark) => {
            tx.prepare_cached(
                "INSERT INTO effect_marks (at, agent, key, call_id, outcome, operator, note)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                mark.at.0,
                mark.agent,
                mark.key,
                mark.call_id,
                mark.outcome.as_str(),
                mark.operator,
                mark.note
            ])?;
            mark_id = Some(tx.last_insert_rowid());
            match mark.outcome {
                EffectMarkOutcome::Retryable => {
                    tx.prepare_cached("DELETE FROM effects WHERE agent = ?1 AND key = ?2 AND call_id = ?3")?
                        .execute(params![mark.agent, mark.key, mark.call_id])?;
                }
                EffectMarkOutcome::Done | EffectMarkOutcome::Failed => {
                    let state = if mark.outcome == EffectMarkOutcome::Done {
                        EffectState::MarkedDone
                    } else {
                        EffectState::MarkedFailed
                    };
                    tx.prepare_cached(
                        "UPDATE effects SET state = ?1, operator = ?2, marked_at = ?3, note = ?4
                         WHERE agent = ?5 AND key = ?6 AND call_id = ?7",
                    )?
                    .execute(params![
                        state.as_str(),
                        mark.operator,
                        mark.at.0,
                        mark.note,
                        mark.agent,
                        mark.key,
                        mark.call_id
                    ])?;
                }
            }
        }
    }
    Ok(mark_id)
}

/// On open, after the journal's replay: every claim still `running` was left by a writer that stopped
/// mid-call (the writer lock says no live process holds it). Returns how many became `unknown`.
pub(crate) fn mark_unknown_on_open(conn: &Connection) -> rusqlite::Result<u64> {
    let n = conn.execute("UPDATE effects SET state = 'unknown' WHERE state = 'running'", [])?;
    Ok(n as u64)
}

const COLUMNS: &str = "agent, key, tool, digest, call_id, session_id, state, claimed_at, ended_at, \
                       expires_at, result, operator, marked_at, note, summary";

/// [`COLUMNS`] without the answers (`result` read as NULL): a list a person reads, polled by the app,
/// never needs the answers' JSON, which may be large.
const LISTED_COLUMNS: &str = "agent, key, tool, digest, call_id, session_id, state, claimed_at, ended_at, \
                              expires_at, NULL, operator, marked_at, note, summary";

fn row_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<EffectRow> {
    let state: String = r.get(6)?;
    Ok(EffectRow {
        agent: r.get(0)?,
        key: r.get(1)?,
        tool: r.get(2)?,
        digest: r.get(3)?,
        call_id: r.get(4)?,
        session_id: r.get(5)?,
        state: EffectState::parse(&state),
        claimed_at: Timestamp(r.get(7)?),
        ended_at: r.get::<_, Option<i64>>(8)?.map(Timestamp),
        expires_at: Timestamp(r.get(9)?),
        result: r.get(10)?,
        operator: r.get(11)?,
        marked_at: r.get::<_, Option<i64>>(12)?.map(Timestamp),
        note: r.get(13)?,
        summary: r.get(14)?,
    })
}

impl LedgerReader {
    /// The claimed effects in `states` (every state when empty), newest claim first, at most `limit`;
    /// without their answers (`result` is `None`: [`LedgerReader::live_effects`] reads them).
    pub fn effects(&self, states: &[EffectState], limit: usize) -> Result<Vec<EffectRow>, LedgerStoreError> {
        let wanted: Vec<&str> = if states.is_empty() {
            EffectState::ALL.iter().map(|s| s.as_str()).collect()
        } else {
            states.iter().map(|s| s.as_str()).collect()
        };
        let marks = vec!["?"; wanted.len()].join(", ");
        let sql = format!(
            "SELECT {LISTED_COLUMNS} FROM effects WHERE state IN ({marks}) ORDER BY claimed_at DESC LIMIT {}",
            i64::try_from(limit).unwrap_or(i64::MAX)
        );
        let mut stmt = self.conn.prepare(&sql).at(self.path())?;
        let rows = stmt.query_map(rusqlite::params_from_iter(wanted), row_of).at(self.path())?;
        rows.collect::<Result<Vec<_>, _>>().at(self.path())
    }

    /// The effects a hub keeps at start: unknown outcomes (kept until marked) and every other whose
    /// window has not passed at `now`.
    pub fn live_effects(&self, now: Timestamp) -> Result<Vec<EffectRow>, LedgerStoreError> {
        let sql =
            format!("SELECT {COLUMNS} FROM effects WHERE state IN ('unknown', 'running') OR expires_at > ?1");
        let mut stmt = self.conn.prepare(&sql).at(self.path())?;
        let rows = stmt.query_map([now.0], row_of).at(self.path())?;
        rows.collect::<Result<Vec<_>, _>>().at(self.path())
    }

    /// The operators' decisions on effects, oldest first (at most `limit`, the newest kept).
    pub fn effect_marks(&self, limit: usize) -> Result<Vec<EffectMark>, LedgerStoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT at, agent, key, call_id, outcome, operator, note FROM
                   (SELECT * FROM effect_marks ORDER BY id DESC LIMIT ?1) ORDER BY id",
            )
            .at(self.path())?;
        let rows = stmt
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                let outcome: String = r.get(4)?;
                Ok(EffectMark {
                    at: Timestamp(r.get(0)?),
                    agent: r.get(1)?,
                    key: r.get(2)?,
                    call_id: r.get(3)?,
                    outcome: match outcome.as_str() {
                        "done" => EffectMarkOutcome::Done,
                        "failed" => EffectMarkOutcome::Failed,
                        _ => EffectMarkOutcome::Retryable,
                    },
                    operator: r.get(5)?,
                    note: r.get(6)?,
                })
            })
            .at(self.path())?;
        rows.collect::<Result<Vec<_>, _>>().at(self.path())
    }
}
