//! The head of a call: the fields a stored record (`row::StoredRecord`) and a listing row
//! (`query::CallRow`) share, kept once so the two shapes (and their readers) cannot drift. Both flatten
//! it, so their JSON keeps these fields at the top level. It sits below both (they import it, not the
//! reverse).

use portcullis_harness::{BlockedReason, CallErrorCode, PolicyDecision, Timestamp};
use serde::{Deserialize, Serialize};

/// The columns a [`CallHead`] is read from, in its fields' order (the same names in a hub's `records`
/// table and a team ledger's): `concat!` them into a longer list.
macro_rules! head_columns {
    () => {
        "session_id, run_id, call_id, owner, tool, at, started_at, duration_us, reason, error_code, \
         redacted, policy_decision, policy_rule"
    };
}
pub(crate) use head_columns;

/// How many columns [`head_columns!`] names.
pub(crate) const HEAD_COLUMN_COUNT: usize = 13;

/// What the execution policy said about a call before any approval, in the words policies use: the
/// `policy_decision` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum StoredPolicyDecision {
    Allow,
    /// The operator was to be asked (whatever became of the call: answered, timed out, withdrawn).
    Prompt,
    Forbidden,
}

impl StoredPolicyDecision {
    pub const ALL: [StoredPolicyDecision; 3] =
        [StoredPolicyDecision::Allow, StoredPolicyDecision::Prompt, StoredPolicyDecision::Forbidden];

    pub fn as_str(self) -> &'static str {
        match self {
            StoredPolicyDecision::Allow => "allow",
            StoredPolicyDecision::Prompt => "prompt",
            StoredPolicyDecision::Forbidden => "forbidden",
        }
    }

    pub fn parse(s: &str) -> Option<StoredPolicyDecision> {
        StoredPolicyDecision::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

impl From<PolicyDecision> for StoredPolicyDecision {
    fn from(decision: PolicyDecision) -> Self {
        match decision {
            PolicyDecision::Allow => StoredPolicyDecision::Allow,
            // The column (and its CHECK, and the chain over it) predates containment: a contained call
            // is stored as allowed, which it is; its action's walls (`sandbox.contained`, in the body)
            // say it ran contained.
            PolicyDecision::Contain => StoredPolicyDecision::Allow,
            PolicyDecision::Ask => StoredPolicyDecision::Prompt,
            PolicyDecision::Deny => StoredPolicyDecision::Forbidden,
        }
    }
}

/// Who made a call, where, which tool, when, and how it was judged: what every shape of a call carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallHead {
    pub session_id: String,
    pub run_id: String,
    pub call_id: String,
    pub owner: String,
    pub tool: String,
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_us: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<BlockedReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<CallErrorCode>,
    pub redacted: bool,
    /// What the execution policy said before any approval: allow, prompt or forbidden (absent when the
    /// call was refused before the policy stage, or recorded before the ledger kept it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_decision: Option<StoredPolicyDecision>,
    /// The rule that gave the policy's decision, when a rule did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_rule: Option<String>,
}

impl CallHead {
    /// A call's head as it starts: who, where, which tool and when; nothing judged or measured yet.
    pub fn new(
        session_id: impl Into<String>,
        run_id: impl Into<String>,
        call_id: impl Into<String>,
        owner: impl Into<String>,
        tool: impl Into<String>,
        at: Timestamp,
    ) -> CallHead {
        CallHead {
            session_id: session_id.into(),
            run_id: run_id.into(),
            call_id: call_id.into(),
            owner: owner.into(),
            tool: tool.into(),
            at,
            started_at: None,
            duration_us: None,
            reason: None,
            error_code: None,
            redacted: false,
            policy_decision: None,
            policy_rule: None,
        }
    }

    /// Reads a head from a SQLite row whose columns `first..first + HEAD_COLUMN_COUNT` are
    /// [`head_columns!`]. A reason or decision the ledger does not know reads as none.
    pub(crate) fn from_sqlite(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<CallHead> {
        Ok(CallHead {
            session_id: row.get(first)?,
            run_id: row.get(first + 1)?,
            call_id: row.get(first + 2)?,
            owner: row.get(first + 3)?,
            tool: row.get(first + 4)?,
            at: Timestamp(row.get(first + 5)?),
            started_at: row.get::<_, Option<i64>>(first + 6)?.map(Timestamp),
            duration_us: row.get(first + 7)?,
            reason: row.get::<_, Option<String>>(first + 8)?.and_then(|r| r.parse().ok()),
            error_code: row.get::<_, Option<String>>(first + 9)?.map(|c| CallErrorCode::parse(&c)),
            redacted: row.get(first + 10)?,
            policy_decision: row
                .get::<_, Option<String>>(first + 11)?
                .and_then(|d| StoredPolicyDecision::parse(&d)),
            policy_rule: row.get(first + 12)?,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::origin::CallOrigin;
    use crate::query::{CallRow, CallStatus};
    use crate::row::{RecordBody, StoredKind, StoredRecord};
    use crate::row_decider::RowDecider;
    use crate::snippet::{Snippet, SnippetPart};
    use portcullis_harness::{ChangeOutcome, DecidedBy, DeciderKind};
    use serde_json::Value;
    use std::sync::Arc;

    /// A head with every field given.
    fn full_head() -> CallHead {
        CallHead {
            started_at: Some(Timestamp(1000)),
            duration_us: Some(1000),
            reason: Some(BlockedReason::ToolDenied),
            error_code: Some(CallErrorCode::ToolDenied),
            redacted: true,
            policy_decision: Some(StoredPolicyDecision::Forbidden),
            policy_rule: Some("r1".into()),
            ..CallHead::new("s1", "run1", "c1", "agent", "shell", Timestamp(2000))
        }
    }

    /// A head with only what it must have.
    fn bare_head() -> CallHead {
        CallHead::new("s1", "run1", "c2", "agent", "read", Timestamp(3000))
    }

    fn body(arguments: Option<Value>) -> RecordBody {
        RecordBody {
            arguments: arguments.map(Arc::new),
            action: None,
            progress: None,
            output: None,
            error: None,
            matched_rules: Vec::new(),
            decided_by: DecidedBy::Rule { rule_id: "r1".into(), source: "p.toml".into() },
            policy_decided_by: None,
            cwd: None,
            files: Vec::new(),
            policy_version: None,
            mcp: None,
        }
    }

    /// `value` serializes to the same object as `old` (the JSON the shapes had before they shared a
    /// head, key for key: the keys stand in another order now), and `old` reads back as `value`.
    fn same_as_before<T>(value: &T, old: &str)
    where
        T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let old_value: Value = serde_json::from_str(old).unwrap();
        assert_eq!(serde_json::to_value(value).unwrap(), old_value);
        let keys = |v: &Value| {
            let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            keys
        };
        assert_eq!(keys(&serde_json::to_value(value).unwrap()), keys(&old_value));
        assert_eq!(&serde_json::from_str::<T>(old).unwrap(), value);
        let text = serde_json::to_string(value).unwrap();
        assert_eq!(&serde_json::from_str::<T>(&text).unwrap(), value);
    }

    #[test]
    fn a_stored_record_has_the_json_it_had() {
        let full = StoredRecord {
            id: 7,
            head: full_head(),
            kind: StoredKind::Blocked,
            body: body(Some(serde_json::json!({"command": "ls"}))),
        };
        same_as_before(
            &full,
            r#"{"id":7,"session_id":"s1","run_id":"run1","call_id":"c1","owner":"agent","tool":"shell","kind":"blocked","at":2000,"started_at":1000,"duration_us":1000,"reason":"tool_denied","error_code":"tool_denied","redacted":true,"policy_decision":"forbidden","policy_rule":"r1","arguments":{"command":"ls"},"decided_by":{"by":"rule","rule_id":"r1","source":"p.toml"}}"#,
        );
        let bare = StoredRecord { id: 8, head: bare_head(), kind: StoredKind::Started, body: body(None) };
        same_as_before(
            &bare,
            r#"{"id":8,"session_id":"s1","run_id":"run1","call_id":"c2","owner":"agent","tool":"read","kind":"started","at":3000,"redacted":false,"decided_by":{"by":"rule","rule_id":"r1","source":"p.toml"}}"#,
        );
    }

    #[test]
    fn a_call_row_has_the_json_it_had() {
        let full = CallRow {
            record_id: 7,
            head: full_head(),
            status: CallStatus::Blocked,
            decider: RowDecider {
                kind: DeciderKind::Rule,
                rule: Some("r1".into()),
                source: Some("p.toml".into()),
                operator: Some("alice: approved".into()),
            },
            summary: Some("ls".into()),
            snippet: Some(Snippet {
                parts: vec![SnippetPart { text: "ls".into(), hit: true }],
                cut_before: false,
                cut_after: true,
            }),
            origin: Some(CallOrigin { ledger_id: "L".into(), host: "h".into(), user: "u".into() }),
            changes: Some(ChangeOutcome::Held),
            contained: true,
        };
        same_as_before(
            &full,
            r#"{"record_id":7,"session_id":"s1","run_id":"run1","call_id":"c1","owner":"agent","tool":"shell","status":"blocked","at":2000,"started_at":1000,"duration_us":1000,"reason":"tool_denied","error_code":"tool_denied","decided_by":"rule","decided_rule":"r1","decided_source":"p.toml","decided_operator":"alice: approved","redacted":true,"policy_decision":"forbidden","policy_rule":"r1","summary":"ls","snippet":{"parts":[{"text":"ls","hit":true}],"cut_before":false,"cut_after":true},"origin":{"ledger_id":"L","host":"h","user":"u"},"changes":"held","contained":true}"#,
        );
        let bare =
            CallRow::new(8, bare_head(), CallStatus::Running, RowDecider::of_kind(DeciderKind::Default));
        same_as_before(
            &bare,
            r#"{"record_id":8,"session_id":"s1","run_id":"run1","call_id":"c2","owner":"agent","tool":"read","status":"running","at":3000,"decided_by":"default","redacted":false}"#,
        );
    }

    #[test]
    fn every_reason_is_the_string_the_column_holds() {
        for reason in BlockedReason::ALL {
            assert_eq!(serde_json::to_value(reason).unwrap(), Value::String(reason.as_str().into()));
        }
    }
}
