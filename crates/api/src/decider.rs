//! Who decided a call, in the one form every front end reads — the live feed's steps, the ledger
//! browser's detail and timeline, the CLI's `ledger show` — made from the harness's `DecidedBy`: a kind
//! to branch on (the ledger's `decided_by` column), words a person reads, and the rule, its source and
//! the operator's answer where there are some (the ledger's other `decided_*` columns).

use portcullis_harness::{DecidedBy, OperatorOutcome};
use serde::{Deserialize, Serialize};

/// Who decided.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decider {
    pub kind: DeciderKind,
    /// `rule read-only (/home/dev/shop/.portcullis/policy.json)`, `alice (app): approved once`,
    /// `session grant g-3`... Rule ids, operators' and guardrails' names may be agent text.
    pub words: String,
    /// The rule (or grant, scope, guardrail rule, permission, validator, protected place) that decided.
    #[serde(default)]
    pub rule: Option<String>,
    /// Where that rule is: its policy file, the guardrail's pack, the protected place's path.
    #[serde(default)]
    pub source: Option<String>,
    /// The operator and their answer (`alice: approved_once`).
    #[serde(default)]
    pub operator: Option<String>,
}

pub use portcullis_harness::DeciderKind;

impl Decider {
    /// A decider known only by its kind and words (a guardrail's verdict in the feed).
    pub fn in_words(kind: DeciderKind, words: String) -> Decider {
        Decider { kind, words, rule: None, source: None, operator: None }
    }

    /// Who `decided_by` names.
    pub fn of(decided_by: &DecidedBy) -> Decider {
        let (kind, words) = match decided_by {
            DecidedBy::Default { detail: Some(detail) } => {
                (DeciderKind::Default, format!("default ({detail})"))
            }
            DecidedBy::Default { detail: None } => (DeciderKind::Default, "default".to_owned()),
            DecidedBy::Rule { rule_id, source } => (DeciderKind::Rule, format!("rule {rule_id} ({source})")),
            DecidedBy::ProtectedPlace { kind, place, path } => {
                (DeciderKind::ProtectedPlace, kind.describe(place, path))
            }
            DecidedBy::Operator { outcome, operator, rule_written, .. } => {
                let what = match outcome {
                    OperatorOutcome::ApprovedOnce => "approved once",
                    OperatorOutcome::ApprovedForSession => "approved for the session",
                    OperatorOutcome::ApprovedAlways => "approved always",
                    OperatorOutcome::Denied => "denied",
                };
                let who = operator.as_deref().unwrap_or("operator");
                let written =
                    rule_written.as_ref().map(|r| format!(", rule {} written", r.id)).unwrap_or_default();
                (DeciderKind::Operator, format!("{who}: {what}{written}"))
            }
            DecidedBy::SessionGrant { grant_id, .. } => {
                (DeciderKind::SessionGrant, format!("session grant {grant_id} (approved earlier)"))
            }
            DecidedBy::ApprovalTimeout { after_ms } => (
                DeciderKind::ApprovalTimeout,
                format!("nobody answered within {} s", after_ms.div_ceil(1000)),
            ),
            DecidedBy::Grants { scope } => (DeciderKind::Grants, format!("grants ({scope})")),
            DecidedBy::Guardrail { pack, rule } => {
                (DeciderKind::Guardrail, format!("guardrail {pack}/{rule}"))
            }
            DecidedBy::Permission { permission } => {
                (DeciderKind::Permission, format!("permission {permission}"))
            }
            DecidedBy::Registry => (DeciderKind::Registry, "no such tool".to_owned()),
            DecidedBy::Validator { validator } => (DeciderKind::Validator, format!("validator {validator}")),
        };
        // The rule, source and operator as the ledger's columns hold them: one derivation, not two.
        let portcullis_ledger::RowDecider { rule, source, operator, .. } =
            portcullis_ledger::RowDecider::of(decided_by);
        Decider { kind, words, rule, source, operator }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::{ProtectedKind, RuleRef};

    /// Every kind of `DecidedBy`, with the kind and words a person reads.
    fn table() -> Vec<(DecidedBy, DeciderKind, &'static str)> {
        vec![
            (DecidedBy::Default { detail: None }, DeciderKind::Default, "default"),
            (
                DecidedBy::Rule { rule_id: "r".into(), source: "p.json".into() },
                DeciderKind::Rule,
                "rule r (p.json)",
            ),
            (
                DecidedBy::ProtectedPlace {
                    kind: ProtectedKind::Policy,
                    place: "the user's policy".into(),
                    path: "/h/policy.json".into(),
                },
                DeciderKind::ProtectedPlace,
                "protected place (policy): the user's policy at /h/policy.json",
            ),
            (
                DecidedBy::Operator {
                    outcome: OperatorOutcome::ApprovedAlways,
                    operator: Some("alice (app)".into()),
                    rule_written: Some(Box::new(RuleRef {
                        id: "always-make".into(),
                        source: "p.json".into(),
                        decision: None,
                    })),
                    receipt: None,
                },
                DeciderKind::Operator,
                "alice (app): approved always, rule always-make written",
            ),
            (
                DecidedBy::SessionGrant { grant_id: "g-3".into(), receipt: Some("r-1".into()) },
                DeciderKind::SessionGrant,
                "session grant g-3 (approved earlier)",
            ),
            (
                DecidedBy::ApprovalTimeout { after_ms: 120_000 },
                DeciderKind::ApprovalTimeout,
                "nobody answered within 120 s",
            ),
            (DecidedBy::Grants { scope: "agents".into() }, DeciderKind::Grants, "grants (agents)"),
            (
                DecidedBy::Guardrail { pack: "p".into(), rule: "g".into() },
                DeciderKind::Guardrail,
                "guardrail p/g",
            ),
            (DecidedBy::Permission { permission: "net".into() }, DeciderKind::Permission, "permission net"),
            (DecidedBy::Registry, DeciderKind::Registry, "no such tool"),
            (DecidedBy::Validator { validator: "v".into() }, DeciderKind::Validator, "validator v"),
        ]
    }

    #[test]
    fn one_decider_per_kind_spelt_as_the_ledger_spells_it() {
        for (decided, kind, words) in table() {
            let decider = Decider::of(&decided);
            assert_eq!((decider.kind, decider.words.as_str()), (kind, words), "{decided:?}");
            let (column, rule, source, operator) = portcullis_ledger::row::decided_columns(&decided);
            assert_eq!(kind.as_str(), column);
            assert_eq!(serde_json::to_value(kind).unwrap(), column);
            assert_eq!(decider.rule.as_deref(), rule);
            assert_eq!(decider.source.as_deref(), source);
            assert_eq!(decider.operator, operator);
        }
    }
}
