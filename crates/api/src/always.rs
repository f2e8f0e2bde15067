//! The "always" sheet through the operator API: before an operator answers "always", the rule that
//! would be written (cut to the scope they chose), the policy file it goes to, the diff of that file,
//! whether the amended policy allows the call, and what the rule would have changed over the ledger.

use super::error::ApiError;
use super::line_diff::{DiffLine, line_diff};
use super::replay::{ReplayEvent, replay_policy};
use super::{ErrorCode, OperatorApi};
use portcullis_hub::{AlwaysOffer, BrokerError};
use portcullis_policy::host_approval::{asks_for_host, names_host};
use portcullis_policy::{Decision, RuleScope};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::atomic::AtomicBool;

/// Past calls a preview lists as examples of what the rule would have allowed.
pub const IMPACT_EXAMPLES: usize = 5;

/// What answering "always" with a scope would write and change.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlwaysPreview {
    pub approval_id: u64,
    /// The policy file the rules are appended to.
    pub file: String,
    /// Writing creates `file`: no policy file was in force (the built-in default was), so it starts as
    /// the default's rules plus these.
    pub creates: bool,
    pub rules: Vec<PreviewRule>,
    /// Read roots added (a file read outside every root).
    pub read_roots: Vec<String>,
    /// Hosts added to an existing rule's `network` list (a host prompt's "always"): `rule: host`.
    pub hosts: Vec<HostAdded>,
    /// The file's text before and after, as changed lines with context. (Written, each rule's
    /// justification also names the receipt of the answer that created it: `…; receipt <id>`.)
    pub diff: Vec<DiffLine>,
    /// The amended policy allows the waiting call.
    pub allows_call: bool,
    /// Over the hub's ledger; `None` when it could not be read (`impact_error` says why).
    pub impact: Option<LedgerImpact>,
    pub impact_error: Option<String>,
}

/// A host an "always" adds to a rule's `network` list.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostAdded {
    pub rule: String,
    /// Agent text (the host the command asked for).
    pub host: String,
}

/// One rule as it would be written.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewRule {
    pub id: String,
    /// The words the rule matches, in order.
    pub pattern: Vec<String>,
    /// No further words allowed after them.
    pub exact: bool,
    /// The whole command it was made from.
    pub example: String,
    /// How many words the command has (the widest exact scope).
    pub words_offered: u32,
}

/// What the amended policy would have decided differently for the calls the ledger holds.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerImpact {
    /// Calls read.
    pub calls: u64,
    /// Calls the policy then did not allow (prompt or forbidden) that it would now allow.
    pub would_allow: u64,
    /// Of those, the ones that did not run (an operator denied them, they timed out, were forbidden).
    pub were_refused: u64,
    /// A few of them: what was judged (one line each).
    pub examples: Vec<String>,
}

impl OperatorApi {
    /// What "always" would write for approval `id` with `scope` (one per offered rule; `None`: as
    /// offered, each the exact command), checked against an amended copy of the policy and replayed
    /// over the ledger. Nothing is written.
    pub fn always_preview(&self, id: u64, scope: Option<&[RuleScope]>) -> Result<AlwaysPreview, ApiError> {
        let pending = self.hub.broker().pending_one(id)?;
        let (file, creates, offered) = match &pending.always {
            AlwaysOffer::Yes { file, creates, amendment } => (file.clone(), *creates, amendment),
            AlwaysOffer::No { why } => {
                return Err(BrokerError::AlwaysNotOffered { id, why: why.clone() }.into());
            }
        };
        let amendment = match scope {
            Some(scope) => offered.scoped(scope).map_err(|why| BrokerError::BadScope { id, why })?,
            None => offered.clone(),
        };
        let live = self.hub.live_policy();
        let policy = live.current();
        let (amended, before, after) = policy.with_amendment(&file, &amendment).map_err(|why| {
            ApiError::new(
                ErrorCode::BadArgument,
                why.clone(),
                json!({ "id": id, "field": "scope", "why": why }),
            )
        })?;
        let ctx = live.context_for(pending.action.cwd.as_deref());
        let allows_call = if asks_for_host(&pending.action) {
            // A host prompt: the rule that asked names the host once amended.
            (pending.matched_rules.first().zip(pending.action.target.as_deref()))
                .is_some_and(|(rule, target)| names_host(&amended, rule, target))
        } else {
            amended.evaluate_action(&pending.action, &ctx).decision == Decision::Allow
        };
        let (impact, impact_error) = match self.impact(&amended) {
            Ok(impact) => (Some(impact), None),
            Err(e) => (None, Some(e.message)),
        };
        Ok(AlwaysPreview {
            approval_id: id,
            file,
            creates,
            rules: amendment
                .rules
                .iter()
                .zip(&offered.rules)
                .map(|(rule, offered)| PreviewRule {
                    id: rule.id.clone(),
                    pattern: rule.pattern.iter().map(super::approvals::pattern_word).collect(),
                    exact: rule.exact,
                    example: rule.examples.first().cloned().unwrap_or_default(),
                    words_offered: u32::try_from(offered.pattern.len()).unwrap_or(u32::MAX),
                })
                .collect(),
            read_roots: amendment.read_roots.iter().map(|r| r.path.clone()).collect(),
            hosts: (amendment.hosts.iter())
                .map(|h| HostAdded { rule: h.rule.clone(), host: h.host.clone() })
                .collect(),
            diff: line_diff(&before, &after),
            allows_call,
            impact,
            impact_error,
        })
    }

    /// The calls of the hub's ledger the `amended` policy would allow that were not allowed then.
    fn impact(&self, amended: &portcullis_policy::Policy) -> Result<LedgerImpact, ApiError> {
        let mut impact = LedgerImpact { calls: 0, would_allow: 0, were_refused: 0, examples: Vec::new() };
        let stop = AtomicBool::new(false);
        let (summary, _) = replay_policy(
            &super::ledger::LedgerAddress::File(self.hub.ledger_path().to_path_buf()),
            amended,
            self.hub.project(),
            self.hub.live_policy().sandbox_support(),
            &stop,
            &mut |event| {
                if let ReplayEvent::Change(change) = event
                    && change.after == Decision::Allow.as_str()
                {
                    impact.would_allow += 1;
                    if !change.ran {
                        impact.were_refused += 1;
                    }
                    if impact.examples.len() < IMPACT_EXAMPLES && !impact.examples.contains(&change.subject) {
                        impact.examples.push(change.subject.clone());
                    }
                }
                true
            },
        )?;
        impact.calls = summary.calls;
        Ok(impact)
    }
}
