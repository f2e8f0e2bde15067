//! The operator API's one error type: a stable `code` a front end can branch on, a message a person can
//! read, and details for programs — never a string to parse.

use serde::Serialize;
use serde_json::Value;

/// What went wrong, as a front end branches on it; serialized as its stable code ([`ErrorCode::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// No approval with this id was ever asked.
    ApprovalUnknown,
    /// The approval was answered, timed out or withdrawn before this answer.
    ApprovalAnswered,
    /// "Always" is not offered for this approval (the reason is in the message).
    AlwaysNotOffered,
    /// No session grant with this id.
    GrantUnknown,
    /// The request itself is malformed (a field missing or of the wrong kind).
    BadRequest,
    /// No call with this id in the ledger.
    CallNotFound,
    /// No upstream server with this id.
    ServerUnknown,
    /// No changed upstream tool definition with this server and name is waiting.
    ToolChangeUnknown,
    /// The server changed the tool again since the operator looked: the acceptance named another
    /// definition (`details`: the digest seen and the one offered now).
    ToolChangeMoved,
    /// The policy file changed on disk since the editor read it: reload, then edit again.
    PolicyChanged,
    /// An argument names something that cannot be used (a folder, a file not among the policies...).
    BadArgument,
    /// A time that cannot be read (`details`: the field, when there is one, and the value).
    BadTime,
    /// Writing the output a front end asked for (an export file) failed.
    OutputFailed,
    /// The operator stopped the work (an export) before it ended; nothing partial was left behind.
    Cancelled,
    /// No hub runs behind this front end (it did not start: another one holds the port or ledger).
    HubUnavailable,
    /// A policy did not load or is not valid: the policy crate's own code (`policy_parse`...).
    Policy(&'static str),
    /// The ledger failed or is not one: the ledger crate's own code (`not_a_ledger`...).
    Ledger(&'static str),
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl ErrorCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ApprovalUnknown => "approval_unknown",
            ErrorCode::ApprovalAnswered => "approval_answered",
            ErrorCode::AlwaysNotOffered => "always_not_offered",
            ErrorCode::GrantUnknown => "grant_unknown",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::BadArgument => "bad_argument",
            ErrorCode::BadTime => "bad_time",
            ErrorCode::OutputFailed => "output_failed",
            ErrorCode::PolicyChanged => "policy_changed",
            ErrorCode::CallNotFound => "call_not_found",
            ErrorCode::ServerUnknown => "server_unknown",
            ErrorCode::ToolChangeUnknown => "tool_change_unknown",
            ErrorCode::ToolChangeMoved => "tool_change_moved",
            ErrorCode::HubUnavailable => "hub_unavailable",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Policy(code) | ErrorCode::Ledger(code) => code,
        }
    }

    /// The HTTP status the operator API over HTTP answers this error with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::ApprovalUnknown
            | ErrorCode::GrantUnknown
            | ErrorCode::CallNotFound
            | ErrorCode::ServerUnknown
            | ErrorCode::ToolChangeUnknown => 404,
            ErrorCode::ApprovalAnswered
            | ErrorCode::AlwaysNotOffered
            | ErrorCode::PolicyChanged
            | ErrorCode::ToolChangeMoved
            | ErrorCode::Cancelled => 409,
            ErrorCode::BadRequest | ErrorCode::BadArgument | ErrorCode::BadTime | ErrorCode::Policy(_) => 400,
            // What the caller named: a filter it wrote, a file that is missing or not a ledger.
            ErrorCode::Ledger("bad_filter") => 400,
            ErrorCode::Ledger(
                "ledger_missing" | "not_a_ledger" | "ledger_schema_newer" | "ledger_schema_older",
            ) => 422,
            ErrorCode::Ledger("ledger_locked") => 409,
            ErrorCode::Ledger(_) | ErrorCode::OutputFailed => 500,
            ErrorCode::HubUnavailable => 503,
        }
    }
}

/// A failed operator API call.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The stable code ([`ErrorCode::as_str`]): one of a known set, plus the policy's and the ledger's own.
    #[cfg_attr(feature = "specta", specta(type = String))]
    pub code: ErrorCode,
    pub message: String,
    /// For programs: the ids, paths or positions the message names.
    pub details: Value,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>, details: Value) -> Self {
        ApiError { code, message: message.into(), details }
    }

    /// The field of the request this error is about, when `details` names one (`since`, `until`).
    pub fn field(&self) -> Option<&str> {
        self.details.get("field").and_then(Value::as_str)
    }
}

impl From<portcullis_policy::PolicyError> for ApiError {
    fn from(e: portcullis_policy::PolicyError) -> Self {
        ApiError::new(ErrorCode::Policy(e.code()), e.to_string(), Value::Null)
    }
}

impl From<portcullis_ledger::LedgerStoreError> for ApiError {
    fn from(e: portcullis_ledger::LedgerStoreError) -> Self {
        ApiError::new(ErrorCode::Ledger(e.code()), e.to_string(), Value::Null)
    }
}

impl From<crate::broker::BrokerError> for ApiError {
    fn from(e: crate::broker::BrokerError) -> Self {
        use crate::broker::BrokerError;
        let (code, details) = match &e {
            BrokerError::Unknown(id) => (ErrorCode::ApprovalUnknown, serde_json::json!({ "id": id })),
            BrokerError::AlreadyAnswered(id) => {
                (ErrorCode::ApprovalAnswered, serde_json::json!({ "id": id }))
            }
            BrokerError::AlwaysNotOffered { id, why } => {
                (ErrorCode::AlwaysNotOffered, serde_json::json!({ "id": id, "why": why }))
            }
            BrokerError::BadScope { id, why } => {
                (ErrorCode::BadArgument, serde_json::json!({ "id": id, "field": "scope", "why": why }))
            }
        };
        ApiError::new(code, e.to_string(), details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each code's stable name is what serde writes, and each has its HTTP status.
    #[test]
    fn codes_are_stable_and_serialize_as_named() {
        let table = [
            (ErrorCode::ApprovalUnknown, "approval_unknown", 404),
            (ErrorCode::ApprovalAnswered, "approval_answered", 409),
            (ErrorCode::AlwaysNotOffered, "always_not_offered", 409),
            (ErrorCode::GrantUnknown, "grant_unknown", 404),
            (ErrorCode::BadRequest, "bad_request", 400),
            (ErrorCode::BadArgument, "bad_argument", 400),
            (ErrorCode::BadTime, "bad_time", 400),
            (ErrorCode::OutputFailed, "output_failed", 500),
            (ErrorCode::PolicyChanged, "policy_changed", 409),
            (ErrorCode::CallNotFound, "call_not_found", 404),
            (ErrorCode::ServerUnknown, "server_unknown", 404),
            (ErrorCode::HubUnavailable, "hub_unavailable", 503),
            (ErrorCode::Cancelled, "cancelled", 409),
            (ErrorCode::Policy("policy_parse"), "policy_parse", 400),
            (ErrorCode::Ledger("not_a_ledger"), "not_a_ledger", 422),
            (ErrorCode::Ledger("ledger_schema_newer"), "ledger_schema_newer", 422),
            (ErrorCode::Ledger("bad_filter"), "bad_filter", 400),
            (ErrorCode::Ledger("ledger_locked"), "ledger_locked", 409),
            (ErrorCode::Ledger("ledger_sqlite"), "ledger_sqlite", 500),
        ];
        for (code, name, status) in table {
            assert_eq!(code.as_str(), name);
            assert_eq!(serde_json::to_value(code).unwrap(), name);
            assert_eq!(code.http_status(), status, "{name}");
        }
    }

    #[test]
    fn an_error_is_code_message_and_details() {
        let e = ApiError::from(crate::broker::BrokerError::Unknown(7));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"code": "approval_unknown", "message": "no pending approval 7", "details": {"id": 7}})
        );
    }
}
