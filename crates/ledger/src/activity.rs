//! What the policy's rules did lately, for the policy editor: how many calls each rule decided in the
//! last day and week (the rule the policy cited, whatever the operator answered), and the shell commands
//! the policy prompted for most (candidates for a rule). Read from the calls' terminal records over the
//! `calls_at` index, so the cost grows with the week's calls, not the ledger's.

use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use serde::{Deserialize, Serialize};

/// Calls a rule decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleHits {
    /// The rule's id (ids of different files are counted together).
    pub rule: String,
    pub day: u64,
    pub week: u64,
}

/// A shell command the policy prompted for, and how often.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptedCommand {
    /// The command as recorded (redacted).
    pub command: String,
    pub calls: u64,
}

impl LedgerReader {
    /// Calls each rule decided since `week_start`, and of them since `day_start` (microseconds).
    pub fn rule_hits(&self, day_start: i64, week_start: i64) -> Result<Vec<RuleHits>, LedgerStoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT policy_rule, sum(at >= ?1), count(*) FROM records
                 WHERE status IS NOT NULL AND at >= ?2 AND policy_rule IS NOT NULL
                 GROUP BY policy_rule ORDER BY count(*) DESC, policy_rule",
            )
            .at(self.path())?;
        let rows = stmt
            .query_map([day_start, week_start], |r| {
                Ok(RuleHits {
                    rule: r.get(0)?,
                    day: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    week: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                })
            })
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        Ok(rows)
    }

    /// The `limit` shell commands the policy prompted for most since `since` (microseconds).
    pub fn prompted_commands(
        &self,
        since: i64,
        limit: usize,
    ) -> Result<Vec<PromptedCommand>, LedgerStoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT json_extract(body, '$.arguments.command') AS command, count(*) FROM records
                 WHERE status IS NOT NULL AND at >= ?1 AND policy_decision = 'prompt' AND tool = 'shell'
                   AND command IS NOT NULL
                 GROUP BY command ORDER BY count(*) DESC, command LIMIT ?2",
            )
            .at(self.path())?;
        let rows = stmt
            .query_map([since, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                Ok(PromptedCommand {
                    command: r.get(0)?,
                    calls: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                })
            })
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        Ok(rows)
    }
}
