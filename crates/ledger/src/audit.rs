//! What an auditor asks of a ledger besides counts: the shell commands the policy prompted for or
//! refused most (with the same filter as the calls table), and how approvals went — how long the
//! operator took to answer, how many prompts timed out.

use crate::error::{AtPath, LedgerStoreError};
use crate::query::{CallFilter, call_where};
use crate::reader::LedgerReader;
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;
use serde::{Deserialize, Serialize};

/// Which shell commands [`LedgerReader::top_commands`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum CommandOutcome {
    /// The policy asked the operator (whatever the answer).
    Prompted,
    /// The call was blocked (by a rule, the operator, a timeout, a grant…).
    Blocked,
}

/// A shell command and how many of the selected calls ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CommandCount {
    /// The command as recorded (redacted).
    pub command: String,
    pub calls: u64,
}

/// How the approvals asked in a time range went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ApprovalSummary {
    /// Prompts asked.
    pub asked: u64,
    pub approved: u64,
    pub denied: u64,
    pub timed_out: u64,
    /// The call stopped waiting before an answer.
    pub withdrawn: u64,
    /// Not answered (yet, or the hub stopped first).
    pub unanswered: u64,
    /// How long the operator took, over the answered prompts (approved or denied), microseconds.
    pub wait_p50_us: i64,
    pub wait_p90_us: i64,
    pub wait_max_us: i64,
}

impl ApprovalSummary {
    /// Counts one prompt by its outcome (as the ledger writes it), and the operator's wait when it was
    /// answered (approved or denied) into `waits`.
    pub fn add(&mut self, outcome: Option<&str>, wait: Option<i64>, waits: &mut Vec<i64>) {
        self.asked += 1;
        let answered = match outcome {
            Some("approved_once" | "approved_for_session" | "approved_always") => {
                self.approved += 1;
                true
            }
            Some("denied") => {
                self.denied += 1;
                true
            }
            Some("timed_out") => {
                self.timed_out += 1;
                false
            }
            Some("withdrawn") => {
                self.withdrawn += 1;
                false
            }
            _ => {
                self.unanswered += 1;
                false
            }
        };
        if answered && let Some(wait) = wait {
            waits.push(wait.max(0));
        }
    }

    /// The operator's waits' percentiles, from every wait [`ApprovalSummary::add`] kept.
    pub fn finish_waits(&mut self, mut waits: Vec<i64>) {
        waits.sort_unstable();
        self.wait_p50_us = nearest_rank(&waits, 0.5);
        self.wait_p90_us = nearest_rank(&waits, 0.9);
        self.wait_max_us = waits.last().copied().unwrap_or(0);
    }

    /// Timed-out prompts over prompts that ended (answered, timed out or withdrawn), 0 when none did.
    pub fn timeout_rate(&self) -> f64 {
        let ended = self.approved + self.denied + self.timed_out + self.withdrawn;
        if ended == 0 { 0.0 } else { self.timed_out as f64 / ended as f64 }
    }
}

/// The value at quantile `q` of sorted data (nearest rank), 0 for none.
fn nearest_rank(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl LedgerReader {
    /// The `limit` shell commands run most often by the calls `filter` selects that were prompted for
    /// (or blocked), most first.
    pub fn top_commands(
        &self,
        filter: &CallFilter,
        outcome: CommandOutcome,
        limit: usize,
    ) -> Result<Vec<CommandCount>, LedgerStoreError> {
        let w = call_where(filter)?;
        let which = match outcome {
            CommandOutcome::Prompted => "r.policy_decision = 'prompt'",
            CommandOutcome::Blocked => "r.status = 'blocked'",
        };
        let sql = format!(
            "SELECT json_extract(r.body, '$.arguments.command') AS command, count(*) FROM records r
             WHERE {} AND r.tool = 'shell' AND {which} AND command IS NOT NULL
             GROUP BY command ORDER BY count(*) DESC, command LIMIT ?",
            w.sql
        );
        let mut params = w.params;
        params.push(Sql::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        let mut stmt = self.conn.prepare(&sql).at(self.path())?;
        let rows = stmt
            .query_map(params_from_iter(params.iter()), |r| {
                Ok(CommandCount {
                    command: r.get(0)?,
                    calls: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                })
            })
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        Ok(rows)
    }

    /// How the approvals went that were asked in the filter's time range, for its tools and session
    /// (the other parts of a call filter say nothing about prompts and are not applied).
    pub fn approval_summary(&self, filter: &CallFilter) -> Result<ApprovalSummary, LedgerStoreError> {
        let mut sql = String::from(
            "SELECT outcome, resolved_at - requested_at FROM approvals WHERE requested_at >= ? AND requested_at < ?",
        );
        let mut params = vec![
            Sql::Integer(filter.since.map_or(i64::MIN, |t| t.0)),
            Sql::Integer(filter.until.map_or(i64::MAX, |t| t.0)),
        ];
        if let Some(session) = &filter.session {
            sql.push_str(" AND session_id = ?");
            params.push(Sql::Text(session.clone()));
        }
        if !filter.tools.is_empty() {
            sql.push_str(&format!(" AND tool IN ({})", vec!["?"; filter.tools.len()].join(",")));
            params.extend(filter.tools.iter().map(|t| Sql::Text(t.clone())));
        }
        let mut stmt = self.conn.prepare(&sql).at(self.path())?;
        let mut rows = stmt.query(params_from_iter(params.iter())).at(self.path())?;
        let mut summary = ApprovalSummary::default();
        let mut waits = Vec::new();
        while let Some(row) = rows.next().at(self.path())? {
            let outcome: Option<String> = row.get(0).at(self.path())?;
            let wait: Option<i64> = row.get(1).at(self.path())?;
            summary.add(outcome.as_deref(), wait, &mut waits);
        }
        summary.finish_waits(waits);
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_rate_counts_ended_prompts_only() {
        let s = ApprovalSummary {
            asked: 10,
            approved: 5,
            denied: 2,
            timed_out: 2,
            withdrawn: 1,
            unanswered: 0,
            ..Default::default()
        };
        assert!((s.timeout_rate() - 0.2).abs() < 1e-9);
        assert_eq!(ApprovalSummary::default().timeout_rate(), 0.0);
    }

    #[test]
    fn nearest_rank_of_waits() {
        assert_eq!(nearest_rank(&[], 0.5), 0);
        assert_eq!(nearest_rank(&[3], 0.9), 3);
        let v: Vec<i64> = (1..=10).collect();
        assert_eq!(nearest_rank(&v, 0.5), 5);
        assert_eq!(nearest_rank(&v, 0.9), 9);
    }
}
