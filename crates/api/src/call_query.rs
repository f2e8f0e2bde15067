//! Which calls, sessions or refusals a front end asks about, as a person typed it (statuses, blocked
//! reasons and times as words), turned into the ledger's filters in one place, so that every front end
//! reads `blocked`, `tool_denied` and `2h` alike and refuses the same words with the same codes.

use super::error::ApiError;
use super::ledger::{CallFilter, CallStatus, RefusalFilter, SessionFilter};
use super::times::parse_time;
use portcullis_harness::{BlockedReason, ChangeOutcome, Timestamp};
use portcullis_ledger::{LedgerStoreError, StoredPolicyDecision};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Which calls: each list means "any of these" (empty: any), the rest must all hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CallQuery {
    pub tools: Vec<String>,
    /// `finished`, `error`, `blocked`, `interrupted`, `running` (none: every ended call).
    pub statuses: Vec<String>,
    /// Blocked reasons: `guardrail_blocked`, `unknown_tool`, `tool_denied`, `invalid_arguments`,
    /// `permission_denied`, `validation_failed`, `execution_denied`.
    pub reasons: Vec<String>,
    /// What decided: the words of [`portcullis_harness::DeciderKind`] (`default`, `rule`,
    /// `protected_place`, `operator`, …).
    pub decided_by: Vec<String>,
    /// Only calls decided by this rule id.
    pub rule: Option<String>,
    /// What the policy said before any approval: `allow`, `prompt`, `forbidden`.
    pub policy_decisions: Vec<String>,
    /// Agents: the calls' owners (the client that made each).
    pub agents: Vec<String>,
    pub session: Option<String>,
    pub run: Option<String>,
    /// From this time on (as [`parse_time`] reads it).
    pub since: Option<String>,
    /// Before this time.
    pub until: Option<String>,
    /// Words that must all appear in the tool name, arguments, output or error.
    pub search: Option<String>,
    /// A team ledger's calls from these hosts, OS users or hubs (ledger ids) only.
    pub hosts: Vec<String>,
    pub users: Vec<String>,
    pub hubs: Vec<String>,
    /// What the calls' changes came to (their most serious outcome): `held`, `discarded`, `kept`.
    pub changes: Vec<String>,
    /// Calls that ran contained (`true`) or did not (`false`).
    pub contained: Option<bool>,
}

impl CallQuery {
    /// The ledger filter this query describes; `now` anchors ages such as `2h`. An unknown status or
    /// reason is `bad_filter`; a time that cannot be read is `bad_time`, with the field in `details`.
    pub fn filter(&self, now: Timestamp) -> Result<CallFilter, ApiError> {
        let statuses = self
            .statuses
            .iter()
            .map(|s| s.parse::<CallStatus>().map_err(ApiError::from))
            .collect::<Result<Vec<_>, _>>()?;
        let reasons = self.reasons.iter().map(|r| parse_reason(r)).collect::<Result<Vec<_>, _>>()?;
        let policy_decisions = self
            .policy_decisions
            .iter()
            .map(|d| {
                StoredPolicyDecision::parse(d).ok_or_else(|| {
                    ApiError::from(LedgerStoreError::BadFilter(format!(
                        "unknown policy decision {d:?}: expected one of allow, prompt, forbidden"
                    )))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let changes = self
            .changes
            .iter()
            .map(|c| {
                ChangeOutcome::parse(c).ok_or_else(|| {
                    ApiError::from(LedgerStoreError::BadFilter(format!(
                        "unknown changes {c:?}: expected one of held, discarded, kept"
                    )))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let decided_by = self
            .decided_by
            .iter()
            .map(|d| {
                portcullis_harness::DeciderKind::parse(d)
                    .map_err(|e| ApiError::from(LedgerStoreError::BadFilter(e)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let range = TimeRange { since: self.since.clone(), until: self.until.clone() };
        let (since, until) = range.bounds(now)?;
        Ok(CallFilter {
            session: self.session.clone(),
            run: self.run.clone(),
            tools: self.tools.clone(),
            statuses,
            reasons,
            decided_by,
            rule: self.rule.clone(),
            policy_decisions,
            owners: self.agents.clone(),
            since,
            until,
            search: self.search.clone(),
            hosts: self.hosts.clone(),
            users: self.users.clone(),
            hubs: self.hubs.clone(),
            changes,
            contained: self.contained,
        })
    }
}

/// A time range as typed: when sessions started, when refusals were first seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimeRange {
    pub since: Option<String>,
    pub until: Option<String>,
}

impl TimeRange {
    /// The range's two ends as instants (`since` read first); a time that cannot be read is
    /// `bad_time`, with the field (`since`, `until`) and the value in `details`.
    pub fn bounds(&self, now: Timestamp) -> Result<(Option<Timestamp>, Option<Timestamp>), ApiError> {
        let read = |field: &str, text: &Option<String>| {
            text.as_deref()
                .map(|t| {
                    parse_time(t, now)
                        .map_err(|e| ApiError::new(e.code, e.message, json!({ "field": field, "value": t })))
                })
                .transpose()
        };
        Ok((read("since", &self.since)?, read("until", &self.until)?))
    }

    /// The sessions started in this range.
    pub fn session_filter(&self, now: Timestamp) -> Result<SessionFilter, ApiError> {
        let (since, until) = self.bounds(now)?;
        Ok(SessionFilter { id: None, since, until })
    }

    /// The refusals first seen in this range.
    pub fn refusal_filter(&self, now: Timestamp) -> Result<RefusalFilter, ApiError> {
        let (since, until) = self.bounds(now)?;
        Ok(RefusalFilter { since, until })
    }
}

fn parse_reason(text: &str) -> Result<BlockedReason, ApiError> {
    BlockedReason::ALL.into_iter().find(|r| r.as_str() == text).ok_or_else(|| {
        let names: Vec<&str> = BlockedReason::ALL.iter().map(|r| r.as_str()).collect();
        ApiError::from(portcullis_ledger::LedgerStoreError::BadFilter(format!(
            "unknown reason {text:?}: expected one of {}",
            names.join(", ")
        )))
    })
}
