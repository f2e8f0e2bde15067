//! The closed set of what can decide a call, once for the workspace: the ledger's `decided_by` column,
//! the filters of file and team ledgers, and the front ends' decider all name these kinds and no others.

use crate::call::DecidedBy;
use serde::{Deserialize, Serialize};

/// The kinds of decider (the ledger's `decided_by`).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeciderKind {
    Default,
    Rule,
    ProtectedPlace,
    Operator,
    SessionGrant,
    ApprovalTimeout,
    Grants,
    Guardrail,
    Permission,
    Registry,
    Validator,
}

impl DeciderKind {
    /// Every kind, in the order front ends list them.
    pub const ALL: [DeciderKind; 11] = [
        DeciderKind::Default,
        DeciderKind::Rule,
        DeciderKind::ProtectedPlace,
        DeciderKind::Operator,
        DeciderKind::SessionGrant,
        DeciderKind::ApprovalTimeout,
        DeciderKind::Grants,
        DeciderKind::Guardrail,
        DeciderKind::Permission,
        DeciderKind::Registry,
        DeciderKind::Validator,
    ];

    /// As the ledger's `decided_by` column (and the JSON) spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            DeciderKind::Default => "default",
            DeciderKind::Rule => "rule",
            DeciderKind::ProtectedPlace => "protected_place",
            DeciderKind::Operator => "operator",
            DeciderKind::SessionGrant => "session_grant",
            DeciderKind::ApprovalTimeout => "approval_timeout",
            DeciderKind::Grants => "grants",
            DeciderKind::Guardrail => "guardrail",
            DeciderKind::Permission => "permission",
            DeciderKind::Registry => "registry",
            DeciderKind::Validator => "validator",
        }
    }

    /// What a person reads for this kind where a decider is shown in a hurry (the ledger browser's
    /// "Decided by" column, filter, stats and drawer): plain words, one table for every front end.
    pub fn words(self) -> &'static str {
        match self {
            DeciderKind::Default => "policy default",
            DeciderKind::Rule => "rule",
            DeciderKind::ProtectedPlace => "protected place",
            DeciderKind::Operator => "operator",
            DeciderKind::SessionGrant => "session grant",
            DeciderKind::ApprovalTimeout => "approval timed out",
            DeciderKind::Grants => "tool grants",
            DeciderKind::Guardrail => "guardrail",
            DeciderKind::Permission => "permission check",
            DeciderKind::Registry => "tool registry",
            DeciderKind::Validator => "argument check",
        }
    }

    /// The kind a column value or a filter word names; an unknown word is an error that lists them.
    pub fn parse(word: &str) -> Result<DeciderKind, String> {
        Self::ALL.into_iter().find(|k| k.as_str() == word).ok_or_else(|| {
            let known: Vec<&str> = Self::ALL.iter().map(|k| k.as_str()).collect();
            format!("unknown decider kind {word:?} (one of: {})", known.join(", "))
        })
    }
}

impl std::fmt::Display for DeciderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DeciderKind {
    type Err = String;
    fn from_str(word: &str) -> Result<Self, Self::Err> {
        DeciderKind::parse(word)
    }
}

impl DecidedBy {
    /// Which kind of decider this is.
    pub fn kind(&self) -> DeciderKind {
        match self {
            DecidedBy::Default { .. } => DeciderKind::Default,
            DecidedBy::Rule { .. } => DeciderKind::Rule,
            DecidedBy::ProtectedPlace { .. } => DeciderKind::ProtectedPlace,
            DecidedBy::Operator { .. } => DeciderKind::Operator,
            DecidedBy::SessionGrant { .. } => DeciderKind::SessionGrant,
            DecidedBy::ApprovalTimeout { .. } => DeciderKind::ApprovalTimeout,
            DecidedBy::Grants { .. } => DeciderKind::Grants,
            DecidedBy::Guardrail { .. } => DeciderKind::Guardrail,
            DecidedBy::Permission { .. } => DeciderKind::Permission,
            DecidedBy::Registry => DeciderKind::Registry,
            DecidedBy::Validator { .. } => DeciderKind::Validator,
        }
    }
}

#[cfg(any(test, feature = "testing"))]
impl DeciderKind {
    /// A decider of this kind, for tests that need one of each.
    pub fn example(self) -> DecidedBy {
        use crate::call::ProtectedKind;
        use crate::receipt::OperatorOutcome;
        let text = |s: &str| s.to_owned();
        match self {
            DeciderKind::Default => DecidedBy::DEFAULT,
            DeciderKind::Rule => DecidedBy::Rule { rule_id: text("no-push"), source: text("policy.json") },
            DeciderKind::ProtectedPlace => DecidedBy::ProtectedPlace {
                kind: ProtectedKind::Policy,
                place: text("policy file"),
                path: text("/p/.portcullis/policy.json"),
            },
            DeciderKind::Operator => DecidedBy::Operator {
                outcome: OperatorOutcome::ApprovedOnce,
                operator: Some(text("ada")),
                rule_written: None,
                receipt: None,
            },
            DeciderKind::SessionGrant => DecidedBy::SessionGrant { grant_id: text("g-1"), receipt: None },
            DeciderKind::ApprovalTimeout => DecidedBy::ApprovalTimeout { after_ms: 30_000 },
            DeciderKind::Grants => DecidedBy::Grants { scope: text("agents") },
            DeciderKind::Guardrail => DecidedBy::Guardrail { pack: text("secrets"), rule: text("aws-key") },
            DeciderKind::Permission => DecidedBy::Permission { permission: text("tool:shell:execute") },
            DeciderKind::Registry => DecidedBy::Registry,
            DeciderKind::Validator => DecidedBy::Validator { validator: text("schema") },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_word_and_its_json() {
        for kind in DeciderKind::ALL {
            assert_eq!(DeciderKind::parse(kind.as_str()), Ok(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for kind in DeciderKind::ALL {
            assert_eq!(kind.example().kind(), kind);
        }
        let unknown = DeciderKind::parse("wizard").unwrap_err();
        assert!(unknown.contains("protected_place"), "{unknown}");
    }

    #[test]
    fn every_kind_has_its_own_plain_words() {
        let mut seen = std::collections::HashSet::new();
        for kind in DeciderKind::ALL {
            let words = kind.words();
            assert!(!words.trim().is_empty(), "{kind} has no words");
            assert!(!words.contains('_'), "{kind}'s words read like a column value: {words:?}");
            assert!(seen.insert(words), "{kind}'s words {words:?} name another kind too");
        }
        assert_eq!(DeciderKind::ProtectedPlace.words(), "protected place");
    }
}
