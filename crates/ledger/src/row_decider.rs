//! Who decided a call as a listing row holds it: one value for the ledger's four `decided_*` columns
//! (the kind, and the rule, its source and the operator's answer where there are some), so a row never
//! carries them as loose strings. Its JSON keeps the columns' names, flattened into the row.

use portcullis_harness::{DecidedBy, DeciderKind};
use serde::{Deserialize, Serialize};

/// Who decided, as the ledger's columns hold it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RowDecider {
    #[serde(rename = "decided_by")]
    pub kind: DeciderKind,
    /// The rule (or grant, scope, guardrail rule, permission, validator, protected place) that decided.
    #[serde(rename = "decided_rule", default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where that rule is: its policy file, the guardrail's pack, the protected place's path.
    #[serde(rename = "decided_source", default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The operator and their answer (`alice: approved_once`).
    #[serde(rename = "decided_operator", default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
}

impl RowDecider {
    /// A decider known by its kind alone.
    pub fn of_kind(kind: DeciderKind) -> RowDecider {
        RowDecider { kind, rule: None, source: None, operator: None }
    }

    /// The columns `decided_by` is stored as.
    pub fn of(decided_by: &DecidedBy) -> RowDecider {
        let (_, rule, source, operator) = crate::row::decided_columns(decided_by);
        RowDecider {
            kind: decided_by.kind(),
            rule: rule.map(str::to_owned),
            source: source.map(str::to_owned),
            operator,
        }
    }

    /// Reads the four columns from a SQLite row at `first..first + 4`. A kind this build does not know
    /// is an error naming it: a row is never shown as decided by someone else.
    pub(crate) fn from_sqlite(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<RowDecider> {
        let word: String = row.get(first)?;
        let kind = DeciderKind::parse(&word).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(first, rusqlite::types::Type::Text, e.into())
        })?;
        Ok(RowDecider {
            kind,
            rule: row.get(first + 1)?,
            source: row.get(first + 2)?,
            operator: row.get(first + 3)?,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_kind_of_decider_reads_back_from_its_columns_json() {
        for decided_by in DeciderKind::ALL.map(DeciderKind::example) {
            let row = RowDecider::of(&decided_by);
            assert_eq!(row.kind, decided_by.kind());
            let json = serde_json::to_value(&row).unwrap();
            assert_eq!(json["decided_by"], decided_by.kind().as_str(), "{json}");
            assert_eq!(serde_json::from_value::<RowDecider>(json).unwrap(), row);
        }
    }
}
