//! What the ledger keeps besides call records: agent sessions and approval prompts, as the writer takes
//! them and readers return them.

use portcullis_harness::Timestamp;
use serde::{Deserialize, Serialize};

/// An agent session as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: String,
    #[serde(default)]
    pub client_name: Option<String>,
    #[serde(default)]
    pub client_version: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub policy_hash: Option<String>,
    pub started_at: Timestamp,
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
}

/// How an approval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalOutcome {
    ApprovedOnce,
    ApprovedForSession,
    ApprovedAlways,
    Denied,
    TimedOut,
    /// The call stopped waiting (its caller went away, its run was cancelled) before an answer.
    Withdrawn,
}

impl ApprovalOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalOutcome::ApprovedOnce => "approved_once",
            ApprovalOutcome::ApprovedForSession => "approved_for_session",
            ApprovalOutcome::ApprovedAlways => "approved_always",
            ApprovalOutcome::Denied => "denied",
            ApprovalOutcome::TimedOut => "timed_out",
            ApprovalOutcome::Withdrawn => "withdrawn",
        }
    }
}

/// One approval prompt: when it was asked, how and when it was answered, by whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    pub requested_at: Timestamp,
    #[serde(default)]
    pub resolved_at: Option<Timestamp>,
    #[serde(default)]
    pub outcome: Option<ApprovalOutcome>,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    /// The rule written by an "always allow" answer.
    #[serde(default)]
    pub rule_written: Option<String>,
}
