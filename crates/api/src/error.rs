//! The operator API's one error type: a stable `code` a front end can branch on, a message a person can
//! read, and details for programs — never a string to parse.

use serde::Serialize;
use serde_json::Value;

/// What went wrong, as a front end branches on it: a closed set, serialized as its stable snake_case
/// code and generated into TypeScript as a union, so a view's error branch with a misspelt code does not
/// compile. The policy's and the ledger's errors each have their own codes here, mapped variant by
/// variant ([`ErrorCode::of_policy`], [`ErrorCode::of_ledger`]).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No approval with this id was ever asked.
    ApprovalUnknown,
    /// The approval was answered, timed out or withdrawn before this answer.
    ApprovalAnswered,
    /// "Always" is not offered for this approval (the reason is in the message).
    AlwaysNotOffered,
    /// The answer named other arguments (their `arguments_sha256`) than the waiting call's: it
    /// approved nothing and the call still waits (`details`: the approval's id, the digest given).
    ReceiptMismatch,
    /// No session grant with this id.
    GrantUnknown,
    /// The request itself is malformed (a field missing or of the wrong kind).
    BadRequest,
    /// No command (or stream) of this name in the command table.
    CommandUnknown,
    /// No call with this id in the ledger.
    CallNotFound,
    /// No upstream server with this id.
    ServerUnknown,
    /// No changed upstream tool definition with this server and name is waiting.
    ToolChangeUnknown,
    /// The server changed the tool again since the operator looked: the acceptance named another
    /// definition (`details`: the digest seen and the one offered now).
    ToolChangeMoved,
    /// No claimed effect with this agent and idempotency key.
    EffectUnknown,
    /// The effect's outcome is known (done, running or marked): only unknown outcomes are marked.
    EffectOutcomeKnown,
    /// No record of what the call's copy-on-write commit replaced: it changed no file that way, or its
    /// record is gone (the newest 64 commands are kept).
    NothingToUndo,
    /// The call's changes were undone already.
    UndoneAlready,
    /// What the call's commit replaced was over the undo budget or could not all be read: it cannot be
    /// put back.
    UndoIncomplete,
    /// A path the call's commit changed was changed again since: putting the old state back would lose
    /// that, so nothing was put back (`details.paths`: the paths).
    ChangedSinceCommit,
    /// The undo failed: its record cannot be read, or it stopped part way (`details.path`).
    UndoFailed,
    /// No changes of the call are held for the operator (kept or discarded already, or never held).
    NoHeldChanges,
    /// The held changes could not be kept or discarded (a file system error).
    HeldChangesFailed,
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
    /// The front end could not reach the API at all (its transport failed; set by front ends).
    BackendFailed,
    /// A policy file cannot be read.
    PolicyUnreadable,
    /// A policy file is not JSON of the policy's shape (`details`: file, line, column).
    PolicySyntax,
    /// A rule is wrong: its pattern, or an example it does not hold (`details`: file, line, rule).
    PolicyRule,
    /// A policy is not valid as a whole (grants, servers, roots...).
    PolicyInvalid,
    /// No ledger file there.
    LedgerMissing,
    /// The file is not a ledger.
    NotALedger,
    /// The ledger was written by a newer Portcullis.
    LedgerSchemaNewer,
    /// The ledger is older than this Portcullis reads (migrate it).
    LedgerSchemaOlder,
    /// Another process holds the ledger.
    LedgerLocked,
    /// The ledger's file could not be read or written.
    LedgerIo,
    /// SQLite failed.
    LedgerSqlite,
    /// The ledger's journal is damaged.
    LedgerJournalDamaged,
    /// A ledger filter the caller wrote cannot be read.
    BadFilter,
    /// The ledger's writer failed.
    LedgerWriterFailed,
    /// The ledger was closed.
    LedgerClosed,
    /// An export failed.
    ExportFailed,
    /// The browser console has no session for this request (none, ended, expired, or another hub's).
    NotLoggedIn,
    /// A login link's code that is not one: used already, expired, or never made by this hub.
    LoginRefused,
    /// A change that did not come from the console's own page (its header or Origin is missing).
    CrossSiteRefused,
    /// A team ledger's URL or password file that cannot be used.
    BadTeamLedger,
    /// The team ledger's database cannot be reached (or refused the login).
    TeamLedgerUnreachable,
    /// The database holds no team ledger (no hub has shipped to it yet).
    NotATeamLedger,
    /// The team ledger's database failed a query, or its schema is newer than this build.
    TeamLedgerFailed,
    /// What a hub's own ledger answers and a team ledger does not (a file's check, its refusals).
    NotOnTeamLedger,
    /// The key a ledger's checkpoints are verified against (or signed with) cannot be read or parsed.
    LedgerKeyUnusable,
}

impl ErrorCode {
    /// The stable code, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ApprovalUnknown => "approval_unknown",
            ErrorCode::ApprovalAnswered => "approval_answered",
            ErrorCode::AlwaysNotOffered => "always_not_offered",
            ErrorCode::ReceiptMismatch => "receipt_mismatch",
            ErrorCode::GrantUnknown => "grant_unknown",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::CommandUnknown => "command_unknown",
            ErrorCode::BadArgument => "bad_argument",
            ErrorCode::BadTime => "bad_time",
            ErrorCode::OutputFailed => "output_failed",
            ErrorCode::PolicyChanged => "policy_changed",
            ErrorCode::CallNotFound => "call_not_found",
            ErrorCode::ServerUnknown => "server_unknown",
            ErrorCode::ToolChangeUnknown => "tool_change_unknown",
            ErrorCode::ToolChangeMoved => "tool_change_moved",
            ErrorCode::EffectUnknown => "effect_unknown",
            ErrorCode::EffectOutcomeKnown => "effect_outcome_known",
            ErrorCode::NothingToUndo => "nothing_to_undo",
            ErrorCode::UndoneAlready => "undone_already",
            ErrorCode::UndoIncomplete => "undo_incomplete",
            ErrorCode::ChangedSinceCommit => "changed_since_commit",
            ErrorCode::UndoFailed => "undo_failed",
            ErrorCode::NoHeldChanges => "no_held_changes",
            ErrorCode::HeldChangesFailed => "held_changes_failed",
            ErrorCode::HubUnavailable => "hub_unavailable",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::BackendFailed => "backend_failed",
            ErrorCode::PolicyUnreadable => "policy_unreadable",
            ErrorCode::PolicySyntax => "policy_syntax",
            ErrorCode::PolicyRule => "policy_rule",
            ErrorCode::PolicyInvalid => "policy_invalid",
            ErrorCode::LedgerMissing => "ledger_missing",
            ErrorCode::NotALedger => "not_a_ledger",
            ErrorCode::LedgerSchemaNewer => "ledger_schema_newer",
            ErrorCode::LedgerSchemaOlder => "ledger_schema_older",
            ErrorCode::LedgerLocked => "ledger_locked",
            ErrorCode::LedgerIo => "ledger_io",
            ErrorCode::LedgerSqlite => "ledger_sqlite",
            ErrorCode::LedgerJournalDamaged => "ledger_journal_damaged",
            ErrorCode::BadFilter => "bad_filter",
            ErrorCode::LedgerWriterFailed => "ledger_writer_failed",
            ErrorCode::LedgerClosed => "ledger_closed",
            ErrorCode::ExportFailed => "export_failed",
            ErrorCode::NotLoggedIn => "not_logged_in",
            ErrorCode::LoginRefused => "login_refused",
            ErrorCode::CrossSiteRefused => "cross_site_refused",
            ErrorCode::BadTeamLedger => "bad_team_ledger",
            ErrorCode::TeamLedgerUnreachable => "team_ledger_unreachable",
            ErrorCode::NotATeamLedger => "not_a_team_ledger",
            ErrorCode::TeamLedgerFailed => "team_ledger_failed",
            ErrorCode::NotOnTeamLedger => "not_on_team_ledger",
            ErrorCode::LedgerKeyUnusable => "ledger_key_unusable",
        }
    }

    /// The code of a policy error, variant by variant.
    pub fn of_policy(e: &portcullis_policy::PolicyError) -> ErrorCode {
        use portcullis_policy::PolicyError;
        match e {
            PolicyError::Io { .. } => ErrorCode::PolicyUnreadable,
            PolicyError::Syntax { .. } => ErrorCode::PolicySyntax,
            PolicyError::Rule { .. } => ErrorCode::PolicyRule,
            PolicyError::Invalid { .. } => ErrorCode::PolicyInvalid,
        }
    }

    /// The code of a ledger error, variant by variant.
    pub fn of_ledger(e: &portcullis_ledger::LedgerStoreError) -> ErrorCode {
        use portcullis_ledger::LedgerStoreError;
        match e {
            LedgerStoreError::Missing { .. } => ErrorCode::LedgerMissing,
            LedgerStoreError::NotALedger { .. } => ErrorCode::NotALedger,
            LedgerStoreError::NewerSchema { .. } => ErrorCode::LedgerSchemaNewer,
            LedgerStoreError::OlderSchema { .. } => ErrorCode::LedgerSchemaOlder,
            LedgerStoreError::Locked { .. } => ErrorCode::LedgerLocked,
            LedgerStoreError::Io { .. } => ErrorCode::LedgerIo,
            LedgerStoreError::Sqlite { .. } => ErrorCode::LedgerSqlite,
            LedgerStoreError::Journal { .. } => ErrorCode::LedgerJournalDamaged,
            LedgerStoreError::BadFilter(_) => ErrorCode::BadFilter,
            LedgerStoreError::Writer(_) => ErrorCode::LedgerWriterFailed,
            LedgerStoreError::Closed => ErrorCode::LedgerClosed,
            LedgerStoreError::Export(_) => ErrorCode::ExportFailed,
        }
    }

    /// The HTTP status the operator API over HTTP answers this error with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::ApprovalUnknown
            | ErrorCode::CommandUnknown
            | ErrorCode::GrantUnknown
            | ErrorCode::CallNotFound
            | ErrorCode::ServerUnknown
            | ErrorCode::ToolChangeUnknown
            | ErrorCode::EffectUnknown
            | ErrorCode::NothingToUndo
            | ErrorCode::NoHeldChanges => 404,
            ErrorCode::ApprovalAnswered
            | ErrorCode::AlwaysNotOffered
            | ErrorCode::ReceiptMismatch
            | ErrorCode::PolicyChanged
            | ErrorCode::ToolChangeMoved
            | ErrorCode::EffectOutcomeKnown
            | ErrorCode::UndoneAlready
            | ErrorCode::UndoIncomplete
            | ErrorCode::ChangedSinceCommit
            | ErrorCode::Cancelled
            | ErrorCode::LedgerLocked => 409,
            ErrorCode::BadRequest
            | ErrorCode::BadArgument
            | ErrorCode::BadTime
            | ErrorCode::PolicyUnreadable
            | ErrorCode::PolicySyntax
            | ErrorCode::PolicyRule
            | ErrorCode::PolicyInvalid
            // What the caller wrote: a filter.
            | ErrorCode::BadFilter => 400,
            // What the caller named: a file that is missing or not a ledger (of this version).
            ErrorCode::BadTeamLedger | ErrorCode::NotATeamLedger | ErrorCode::NotOnTeamLedger => 422,
            ErrorCode::TeamLedgerUnreachable => 503,
            ErrorCode::TeamLedgerFailed | ErrorCode::LedgerKeyUnusable => 500,
            ErrorCode::LedgerMissing
            | ErrorCode::NotALedger
            | ErrorCode::LedgerSchemaNewer
            | ErrorCode::LedgerSchemaOlder => 422,
            ErrorCode::LedgerIo
            | ErrorCode::LedgerSqlite
            | ErrorCode::LedgerJournalDamaged
            | ErrorCode::LedgerWriterFailed
            | ErrorCode::LedgerClosed
            | ErrorCode::ExportFailed
            | ErrorCode::OutputFailed
            | ErrorCode::UndoFailed
            | ErrorCode::HeldChangesFailed => 500,
            ErrorCode::HubUnavailable | ErrorCode::BackendFailed => 503,
            ErrorCode::NotLoggedIn | ErrorCode::LoginRefused => 401,
            ErrorCode::CrossSiteRefused => 403,
        }
    }
}

/// A failed operator API call.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The stable code: one of a closed set ([`ErrorCode`]).
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
        ApiError::new(ErrorCode::of_policy(&e), e.to_string(), Value::Null)
    }
}

impl From<portcullis_team::TeamError> for ApiError {
    fn from(e: portcullis_team::TeamError) -> Self {
        use portcullis_team::TeamError;
        let code = match &e {
            TeamError::BadUrl { .. } | TeamError::PasswordFile { .. } | TeamError::TlsRoots { .. } => {
                ErrorCode::BadTeamLedger
            }
            TeamError::Connect { .. } => ErrorCode::TeamLedgerUnreachable,
            TeamError::NotATeamLedger { .. } => ErrorCode::NotATeamLedger,
            TeamError::Database { .. }
            | TeamError::NewerSchema { .. }
            | TeamError::OlderSchema { .. }
            | TeamError::BadRow(_) => ErrorCode::TeamLedgerFailed,
            TeamError::BadFilter(_) => ErrorCode::BadFilter,
            TeamError::Export(_) => ErrorCode::ExportFailed,
        };
        ApiError::new(code, e.to_string(), Value::Null)
    }
}

impl From<portcullis_ledger::ReadError> for ApiError {
    fn from(e: portcullis_ledger::ReadError) -> Self {
        match e {
            portcullis_ledger::ReadError::File(e) => e.into(),
            other => {
                let code = serde_json::from_value(Value::String(other.code().to_owned()))
                    .unwrap_or(ErrorCode::BackendFailed);
                ApiError::new(code, other.to_string(), Value::Null)
            }
        }
    }
}

impl From<portcullis_ledger::LedgerStoreError> for ApiError {
    fn from(e: portcullis_ledger::LedgerStoreError) -> Self {
        ApiError::new(ErrorCode::of_ledger(&e), e.to_string(), Value::Null)
    }
}

impl From<portcullis_hub::BrokerError> for ApiError {
    fn from(e: portcullis_hub::BrokerError) -> Self {
        use portcullis_hub::BrokerError;
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
            BrokerError::ReceiptMismatch { id, given } => (
                ErrorCode::ReceiptMismatch,
                serde_json::json!({ "id": id, "field": "arguments_sha256", "given": given }),
            ),
        };
        ApiError::new(code, e.to_string(), details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A team ledger's failure read through `LedgerRead` gets the code it gets directly.
    #[test]
    fn a_team_failure_read_through_the_trait_keeps_its_code() {
        use portcullis_team::TeamError;
        let url = || "postgres://team".to_owned();
        for e in [
            TeamError::BadUrl { url: url(), why: "x".into() },
            TeamError::Connect { url: url(), why: "x".into() },
            TeamError::NotATeamLedger { url: url() },
            TeamError::BadFilter("x".into()),
            TeamError::BadRow("x".into()),
        ] {
            let read = portcullis_ledger::ReadError::Other { code: e.code(), message: e.to_string() };
            assert_eq!(ApiError::from(read).code, ApiError::from(e).code);
        }
    }

    /// What only a hub's own file holds, asked of another ledger, is `not_on_team_ledger` with the
    /// ledger's name in its words.
    #[test]
    fn a_question_the_ledger_does_not_hold_is_not_on_team_ledger() {
        let e = portcullis_ledger::ReadError::NotHeld {
            what: "a check",
            ledger: "the team ledger postgres://team".into(),
        };
        let api = ApiError::from(e);
        assert_eq!(api.code, ErrorCode::NotOnTeamLedger);
        assert_eq!(
            api.message,
            "a check is asked of a hub's own ledger file, not of the team ledger postgres://team"
        );
    }

    /// Each code's stable name is what serde writes, and each has its HTTP status.
    #[test]
    fn codes_are_stable_and_serialize_as_named() {
        let table = [
            (ErrorCode::ApprovalUnknown, "approval_unknown", 404),
            (ErrorCode::ApprovalAnswered, "approval_answered", 409),
            (ErrorCode::AlwaysNotOffered, "always_not_offered", 409),
            (ErrorCode::ReceiptMismatch, "receipt_mismatch", 409),
            (ErrorCode::GrantUnknown, "grant_unknown", 404),
            (ErrorCode::BadRequest, "bad_request", 400),
            (ErrorCode::CommandUnknown, "command_unknown", 404),
            (ErrorCode::BadArgument, "bad_argument", 400),
            (ErrorCode::BadTime, "bad_time", 400),
            (ErrorCode::OutputFailed, "output_failed", 500),
            (ErrorCode::PolicyChanged, "policy_changed", 409),
            (ErrorCode::CallNotFound, "call_not_found", 404),
            (ErrorCode::ServerUnknown, "server_unknown", 404),
            (ErrorCode::HubUnavailable, "hub_unavailable", 503),
            (ErrorCode::Cancelled, "cancelled", 409),
            (ErrorCode::PolicySyntax, "policy_syntax", 400),
            (ErrorCode::NotALedger, "not_a_ledger", 422),
            (ErrorCode::LedgerSchemaNewer, "ledger_schema_newer", 422),
            (ErrorCode::BadFilter, "bad_filter", 400),
            (ErrorCode::LedgerLocked, "ledger_locked", 409),
            (ErrorCode::LedgerSqlite, "ledger_sqlite", 500),
            (ErrorCode::BackendFailed, "backend_failed", 503),
            (ErrorCode::BadTeamLedger, "bad_team_ledger", 422),
            (ErrorCode::TeamLedgerUnreachable, "team_ledger_unreachable", 503),
            (ErrorCode::NotATeamLedger, "not_a_team_ledger", 422),
            (ErrorCode::TeamLedgerFailed, "team_ledger_failed", 500),
            (ErrorCode::NotOnTeamLedger, "not_on_team_ledger", 422),
            (ErrorCode::LedgerKeyUnusable, "ledger_key_unusable", 500),
            (ErrorCode::NothingToUndo, "nothing_to_undo", 404),
            (ErrorCode::UndoneAlready, "undone_already", 409),
            (ErrorCode::UndoIncomplete, "undo_incomplete", 409),
            (ErrorCode::ChangedSinceCommit, "changed_since_commit", 409),
            (ErrorCode::UndoFailed, "undo_failed", 500),
            (ErrorCode::NoHeldChanges, "no_held_changes", 404),
            (ErrorCode::HeldChangesFailed, "held_changes_failed", 500),
        ];
        for (code, name, status) in table {
            assert_eq!(code.as_str(), name);
            assert_eq!(serde_json::to_value(code).unwrap(), name);
            assert_eq!(serde_json::from_value::<ErrorCode>(name.into()).unwrap(), code);
            assert_eq!(code.http_status(), status, "{name}");
        }
    }

    /// The policy's and the ledger's own codes are the API's, variant by variant (no second spelling).
    #[test]
    fn the_crates_codes_are_the_apis() {
        use portcullis_ledger::LedgerStoreError as L;
        use portcullis_policy::PolicyError as P;
        let file = || "p.json".to_owned();
        let policy = [
            P::Io { file: file(), source: std::io::Error::other("x") },
            P::Syntax { file: file(), line: 1, column: 1, message: "x".into() },
            P::Rule { file: file(), line: 1, column: 1, rule: "r".into(), message: "x".into() },
            P::Invalid { file: file(), message: "x".into() },
        ];
        for e in &policy {
            assert_eq!(ErrorCode::of_policy(e).as_str(), e.code(), "{e}");
        }
        let path = || std::path::PathBuf::from("l.db");
        let ledger = [
            L::Missing { path: path() },
            L::NotALedger { path: path(), why: "x".into() },
            L::NewerSchema { path: path(), found: 9, supported: 8 },
            L::OlderSchema { path: path(), found: 1, current: 8 },
            L::Locked { path: path() },
            L::Io { path: path(), source: std::io::Error::other("x") },
            L::Journal { path: path(), why: "x".into() },
            L::BadFilter("x".into()),
            L::Writer("x".into()),
            L::Closed,
            L::Export("x".into()),
        ];
        for e in &ledger {
            let code = ErrorCode::of_ledger(e);
            assert_eq!(code.as_str(), e.code(), "{e}");
            assert_eq!(serde_json::to_value(code).unwrap(), e.code());
        }
    }

    #[test]
    fn an_error_is_code_message_and_details() {
        let e = ApiError::from(portcullis_hub::BrokerError::Unknown(7));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"code": "approval_unknown", "message": "no pending approval 7", "details": {"id": 7}})
        );
    }
}
