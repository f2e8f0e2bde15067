//! The closed set of a failed call's error codes, once for the workspace: the pipeline's refusals, the
//! coding tools' and the upstream servers' failures. The ledger stores the word, the front ends get the
//! words as a generated list, and a code this build does not know (an older or newer ledger's) is kept
//! as it was written, never dropped.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A failed call's stable code (the `code` of a `CallError` and of a `ToolError`).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallErrorCode {
    // The pipeline's refusals.
    UnknownTool,
    ToolDenied,
    InvalidArguments,
    /// The caller's arguments were not parseable JSON (for example a broken streamed tool call).
    InvalidJsonArguments,
    PermissionDenied,
    ValidationFailed,
    ExecutionDenied,
    GuardrailBlocked,
    /// The tool returned an error without a code of its own.
    ToolError,
    /// The tool panicked; the panic was contained.
    ToolPanicked,
    /// The run was cancelled while the tool ran (or before it started).
    Cancelled,
    /// A batch stopped (cancellation or failure) before this call was claimed.
    #[serde(rename = "tool_call_not_dispatched")]
    NotDispatched,
    /// The `started` record could not be written: the call does not execute unaudited.
    LedgerUnavailable,
    /// A retry of a call with the same idempotency key and arguments: answered with the first call's
    /// result, never run again.
    DuplicateEffect,
    /// An idempotency key already claimed by a call with other arguments.
    EffectConflict,
    /// An idempotency key whose first call's outcome is unknown (the hub stopped while it ran): refused
    /// until an operator says what happened.
    OutcomeUnknown,
    /// A retry of a call whose unknown outcome an operator said took effect: not run again.
    EffectMarkedDone,
    /// A retry of a call whose unknown outcome an operator said failed: not run again.
    EffectMarkedFailed,
    /// The call's own task ended without an answer.
    Internal,
    /// The hub stopped while the call ran (written when a ledger is recovered).
    Interrupted,
    // The coding tools' failures.
    /// The path is not the one the policy evaluated any more (a symlink or directory was swapped in).
    PathChanged,
    NotFound,
    TooLarge,
    NotUnique,
    NoMatch,
    Timeout,
    InvalidPath,
    InvalidArgument,
    /// A shell cwd outside the workspace root.
    OutsideRoot,
    NotAFile,
    NotADirectory,
    NotText,
    /// An image the decoder refused (dimensions or allocation over the limits, or corrupt).
    ImageRefused,
    SpawnFailed,
    /// The sandbox a command must run in could not be built (or this hub has no launcher): it did not run.
    SandboxFailed,
    #[serde(rename = "io_error")]
    Io,
    /// The evaluated action is not one this tool can execute (no path, wrong kind).
    BadAction,
    /// A tool search query that does not parse.
    InvalidQuery,
    // Tools the hub runs elsewhere (manifest processes, Claude Code's own runs).
    ProcessFailed,
    /// A manifest tool's process did not answer JSON.
    InvalidOutput,
    /// Another run holds what this one needs.
    Busy,
    /// Allowed, but the agent that runs it did not start it in time: it did not run.
    NotRun,
    /// Allowed, but the agent that ran it did not report how it ended.
    NotReported,
    // Upstream MCP servers and the agents behind them.
    UpstreamUnavailable,
    UpstreamTimeout,
    UpstreamResultTooLarge,
    UpstreamError,
    /// A question for the agent (sampling, elicitation, roots) that it did not declare it can answer.
    AgentCannotAnswer,
    AgentTimeout,
    AgentError,
    AgentGone,
    /// A code this build does not know: kept as written (older or newer ledgers).
    #[serde(untagged)]
    Unknown(String),
}

impl CallErrorCode {
    /// Every code this build knows, in the order front ends list them.
    pub const KNOWN: [CallErrorCode; 51] = [
        CallErrorCode::UnknownTool,
        CallErrorCode::ToolDenied,
        CallErrorCode::InvalidArguments,
        CallErrorCode::InvalidJsonArguments,
        CallErrorCode::PermissionDenied,
        CallErrorCode::ValidationFailed,
        CallErrorCode::ExecutionDenied,
        CallErrorCode::GuardrailBlocked,
        CallErrorCode::ToolError,
        CallErrorCode::ToolPanicked,
        CallErrorCode::Cancelled,
        CallErrorCode::NotDispatched,
        CallErrorCode::LedgerUnavailable,
        CallErrorCode::DuplicateEffect,
        CallErrorCode::EffectConflict,
        CallErrorCode::OutcomeUnknown,
        CallErrorCode::EffectMarkedDone,
        CallErrorCode::EffectMarkedFailed,
        CallErrorCode::Internal,
        CallErrorCode::Interrupted,
        CallErrorCode::PathChanged,
        CallErrorCode::NotFound,
        CallErrorCode::TooLarge,
        CallErrorCode::NotUnique,
        CallErrorCode::NoMatch,
        CallErrorCode::Timeout,
        CallErrorCode::InvalidPath,
        CallErrorCode::InvalidArgument,
        CallErrorCode::OutsideRoot,
        CallErrorCode::NotAFile,
        CallErrorCode::NotADirectory,
        CallErrorCode::NotText,
        CallErrorCode::ImageRefused,
        CallErrorCode::SpawnFailed,
        CallErrorCode::SandboxFailed,
        CallErrorCode::Io,
        CallErrorCode::BadAction,
        CallErrorCode::InvalidQuery,
        CallErrorCode::ProcessFailed,
        CallErrorCode::InvalidOutput,
        CallErrorCode::Busy,
        CallErrorCode::NotRun,
        CallErrorCode::NotReported,
        CallErrorCode::UpstreamUnavailable,
        CallErrorCode::UpstreamTimeout,
        CallErrorCode::UpstreamResultTooLarge,
        CallErrorCode::UpstreamError,
        CallErrorCode::AgentCannotAnswer,
        CallErrorCode::AgentTimeout,
        CallErrorCode::AgentError,
        CallErrorCode::AgentGone,
    ];

    /// The code as stored and shown (`tool_denied`).
    pub fn as_str(&self) -> &str {
        use CallErrorCode as C;
        match self {
            C::UnknownTool => "unknown_tool",
            C::ToolDenied => "tool_denied",
            C::InvalidArguments => "invalid_arguments",
            C::InvalidJsonArguments => "invalid_json_arguments",
            C::PermissionDenied => "permission_denied",
            C::ValidationFailed => "validation_failed",
            C::ExecutionDenied => "execution_denied",
            C::GuardrailBlocked => "guardrail_blocked",
            C::ToolError => "tool_error",
            C::ToolPanicked => "tool_panicked",
            C::Cancelled => "cancelled",
            C::NotDispatched => "tool_call_not_dispatched",
            C::LedgerUnavailable => "ledger_unavailable",
            C::DuplicateEffect => "duplicate_effect",
            C::EffectConflict => "effect_conflict",
            C::OutcomeUnknown => "outcome_unknown",
            C::EffectMarkedDone => "effect_marked_done",
            C::EffectMarkedFailed => "effect_marked_failed",
            C::Internal => "internal",
            C::Interrupted => "interrupted",
            C::PathChanged => "path_changed",
            C::NotFound => "not_found",
            C::TooLarge => "too_large",
            C::NotUnique => "not_unique",
            C::NoMatch => "no_match",
            C::Timeout => "timeout",
            C::InvalidPath => "invalid_path",
            C::InvalidArgument => "invalid_argument",
            C::OutsideRoot => "outside_root",
            C::NotAFile => "not_a_file",
            C::NotADirectory => "not_a_directory",
            C::NotText => "not_text",
            C::ImageRefused => "image_refused",
            C::SpawnFailed => "spawn_failed",
            C::SandboxFailed => "sandbox_failed",
            C::Io => "io_error",
            C::BadAction => "bad_action",
            C::InvalidQuery => "invalid_query",
            C::ProcessFailed => "process_failed",
            C::InvalidOutput => "invalid_output",
            C::Busy => "busy",
            C::NotRun => "not_run",
            C::NotReported => "not_reported",
            C::UpstreamUnavailable => "upstream_unavailable",
            C::UpstreamTimeout => "upstream_timeout",
            C::UpstreamResultTooLarge => "upstream_result_too_large",
            C::UpstreamError => "upstream_error",
            C::AgentCannotAnswer => "agent_cannot_answer",
            C::AgentTimeout => "agent_timeout",
            C::AgentError => "agent_error",
            C::AgentGone => "agent_gone",
            C::Unknown(word) => word,
        }
    }

    /// The code a stored word names; a word this build does not know is kept as [`CallErrorCode::Unknown`].
    pub fn parse(word: &str) -> CallErrorCode {
        CallErrorCode::KNOWN
            .iter()
            .find(|code| code.as_str() == word)
            .cloned()
            .unwrap_or_else(|| CallErrorCode::Unknown(word.to_owned()))
    }
}

impl fmt::Display for CallErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_code_reads_back_as_itself_through_its_word_and_json() {
        let mut words = std::collections::HashSet::new();
        for code in CallErrorCode::KNOWN {
            let word = code.as_str().to_owned();
            assert!(words.insert(word.clone()), "{word} is named twice");
            assert_eq!(CallErrorCode::parse(&word), code, "{word}");
            let json = serde_json::to_value(&code).unwrap();
            assert_eq!(json, serde_json::Value::String(word.clone()), "serde and as_str agree on {word}");
            assert_eq!(serde_json::from_value::<CallErrorCode>(json).unwrap(), code, "{word}");
        }
    }

    #[test]
    fn every_variant_is_known() {
        // `as_str`'s match is exhaustive; each of its arms but `Unknown` must be in `KNOWN`.
        let source = include_str!("error_code.rs");
        let arms =
            source.lines().filter(|l| l.trim_start().starts_with("C::") && l.contains(" => \"")).count();
        assert_eq!(arms, CallErrorCode::KNOWN.len(), "a variant is missing from KNOWN");
    }

    #[test]
    fn a_code_this_build_does_not_know_is_kept_as_written() {
        let old = CallErrorCode::parse("quota_exceeded");
        assert_eq!(old, CallErrorCode::Unknown("quota_exceeded".into()));
        assert_eq!(serde_json::to_string(&old).unwrap(), "\"quota_exceeded\"");
        let read: CallErrorCode = serde_json::from_str("\"quota_exceeded\"").unwrap();
        assert_eq!(read, old);
        assert_eq!(old.as_str(), "quota_exceeded");
    }
}
