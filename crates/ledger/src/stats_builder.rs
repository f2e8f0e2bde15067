//! Stats assembled from calls counted elsewhere: a team ledger's grouped rows (whole calls) and its
//! per-dimension rollups (each dimension apart), added into the same tallies and time grid a hub's own
//! ledger makes, so both read alike.

use crate::error::LedgerStoreError;
use crate::refusals::RefusalCounts;
use crate::sessions::SessionCounts;
use crate::stats::{CallDims, Grid, Stats, StatsSource, Tally, ToolDurations, bump, sorted};
use std::collections::HashMap;

/// One dimension stats count calls by, as a team ledger's per-dimension rollups name it (their `dim`
/// column). Counts by each are kept apart there: summing them needs no row per combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsDim {
    Tool,
    Status,
    Reason,
    DecidedBy,
    Rule,
    PolicyDecision,
    Owner,
    Hub,
    Host,
    User,
}

impl StatsDim {
    pub const ALL: [StatsDim; 10] = [
        StatsDim::Tool,
        StatsDim::Status,
        StatsDim::Reason,
        StatsDim::DecidedBy,
        StatsDim::Rule,
        StatsDim::PolicyDecision,
        StatsDim::Owner,
        StatsDim::Hub,
        StatsDim::Host,
        StatsDim::User,
    ];

    /// Its name in a rollup's `dim` column.
    pub fn name(self) -> &'static str {
        match self {
            StatsDim::Tool => "tool",
            StatsDim::Status => "status",
            StatsDim::Reason => "reason",
            StatsDim::DecidedBy => "decided_by",
            StatsDim::Rule => "rule",
            StatsDim::PolicyDecision => "policy_decision",
            StatsDim::Owner => "owner",
            StatsDim::Hub => "hub",
            StatsDim::Host => "host",
            StatsDim::User => "user",
        }
    }

    pub fn from_name(name: &str) -> Option<StatsDim> {
        StatsDim::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// Builds a [`Stats`] from calls counted elsewhere (a team ledger's grouped rows): the same tallies,
/// time grid and duration percentiles a hub's own ledger makes.
#[derive(Debug)]
pub struct StatsBuilder {
    tally: Tally,
    grid: Grid,
    by_host: HashMap<String, u64>,
    by_user: HashMap<String, u64>,
    by_hub: HashMap<String, u64>,
}

impl StatsBuilder {
    /// A builder for calls from `min_at` to `max_at`, in buckets of `bucket_us` (default: about 60).
    pub fn new(
        min_at: Option<i64>,
        max_at: Option<i64>,
        bucket_us: Option<i64>,
    ) -> Result<Self, LedgerStoreError> {
        Ok(StatsBuilder {
            tally: Tally::default(),
            grid: Grid::new(min_at, max_at, bucket_us)?,
            by_host: HashMap::new(),
            by_user: HashMap::new(),
            by_hub: HashMap::new(),
        })
    }

    /// The width of its time buckets, microseconds.
    pub fn width(&self) -> i64 {
        self.grid.width
    }

    /// Counts `n` calls under `dims`, run by hub `origin` (its ledger id, host and user).
    pub fn add_calls(&mut self, dims: &CallDims<'_>, origin: [&str; 3], n: u64) {
        self.tally.add(dims, n);
        let [hub, host, user] = origin;
        bump(&mut self.by_hub, hub, n);
        bump(&mut self.by_host, host, n);
        bump(&mut self.by_user, user, n);
    }

    /// Counts `n` calls under `value` of one dimension alone (from per-dimension rollups: every call is
    /// counted once under each dimension, and its status counts it in the total).
    pub fn add_dim(&mut self, dim: StatsDim, value: &str, n: u64) {
        let t = &mut self.tally;
        let map = match dim {
            StatsDim::Tool => &mut t.by_tool,
            StatsDim::Status => {
                t.total += n;
                &mut t.by_status
            }
            StatsDim::Reason => &mut t.by_reason,
            StatsDim::DecidedBy => &mut t.by_decided_by,
            StatsDim::Rule => &mut t.by_rule,
            StatsDim::PolicyDecision => &mut t.by_policy_decision,
            StatsDim::Owner => &mut t.by_owner,
            StatsDim::Hub => &mut self.by_hub,
            StatsDim::Host => &mut self.by_host,
            StatsDim::User => &mut self.by_user,
        };
        bump(map, value, n);
    }

    /// Counts `n` calls ending in the bucket of `at` with `status`, prompted or not.
    pub fn add_at(&mut self, at: i64, status: &str, prompted: bool, n: u64) {
        if let Some(stack) = self.grid.at(at) {
            stack.add(status, prompted, n);
        }
    }

    /// The stats, with per-tool `durations` computed where the calls are (exact, busiest tool first).
    pub fn finish(
        self,
        durations: Vec<ToolDurations>,
        sessions: SessionCounts,
        refusals: RefusalCounts,
    ) -> Stats {
        let tally = self.tally;
        Stats {
            total: tally.total,
            by_tool: sorted(tally.by_tool),
            by_status: sorted(tally.by_status),
            by_reason: sorted(tally.by_reason),
            by_decided_by: sorted(tally.by_decided_by),
            by_rule: sorted(tally.by_rule),
            by_owner: sorted(tally.by_owner),
            by_policy_decision: sorted(tally.by_policy_decision),
            bucket_us: self.grid.width,
            buckets: self.grid.into_buckets(),
            durations,
            durations_exact: true,
            source: StatsSource::Scan,
            by_host: sorted(self.by_host),
            by_user: sorted(self.by_user),
            by_hub: sorted(self.by_hub),
            sessions,
            refusals,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn dimension_names_read_back() {
        for dim in StatsDim::ALL {
            assert_eq!(StatsDim::from_name(dim.name()), Some(dim));
        }
        assert_eq!(StatsDim::from_name("nope"), None);
    }

    #[test]
    fn counts_by_dimension_add_up_like_whole_calls() {
        let dims = CallDims {
            tool: "shell",
            status: "finished",
            reason: None,
            decided_by: "rule",
            rule: Some("r1"),
            policy_decision: Some("allow"),
            owner: "agent",
        };
        let mut joint = StatsBuilder::new(Some(0), Some(10), None).unwrap();
        joint.add_calls(&dims, ["hub1", "host1", "user1"], 3);
        let mut apart = StatsBuilder::new(Some(0), Some(10), None).unwrap();
        for (dim, value) in [
            (StatsDim::Tool, "shell"),
            (StatsDim::Status, "finished"),
            (StatsDim::DecidedBy, "rule"),
            (StatsDim::Rule, "r1"),
            (StatsDim::PolicyDecision, "allow"),
            (StatsDim::Owner, "agent"),
            (StatsDim::Hub, "hub1"),
            (StatsDim::Host, "host1"),
            (StatsDim::User, "user1"),
        ] {
            apart.add_dim(dim, value, 3);
        }
        let none = || (Vec::new(), SessionCounts::default(), RefusalCounts::default());
        let (d, s, r) = none();
        let joint = joint.finish(d, s, r);
        let (d, s, r) = none();
        let apart = apart.finish(d, s, r);
        assert_eq!(serde_json::to_value(&joint).unwrap(), serde_json::to_value(&apart).unwrap());
        assert_eq!(apart.total, 3);
    }
}
