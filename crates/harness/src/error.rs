//! One error type for hosts that want a single `Result` over the harness, with a stable code per
//! variant so a UI can branch on `code()` instead of parsing messages.

use crate::disclosure::DisclosureError;
use crate::ledger::LedgerError;
use crate::name::NameError;
use crate::registry::RegistryError;
use crate::schema::{LimitError, SchemaError};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HarnessError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Disclosure(#[from] DisclosureError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl HarnessError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            HarnessError::Registry(RegistryError::Duplicate(_)) => "duplicate_tool",
            HarnessError::Registry(RegistryError::Unknown(_)) => "unknown_tool",
            HarnessError::Registry(RegistryError::InvalidName(_)) | HarnessError::Name(_) => {
                "invalid_tool_name"
            }
            HarnessError::Limit(_) => "limit_out_of_range",
            HarnessError::Schema(_) => "schema_rejected",
            HarnessError::Disclosure(DisclosureError::QueryTooLong { .. }) => "query_too_long",
            HarnessError::Disclosure(DisclosureError::IndexTooLarge) => "index_too_large",
            HarnessError::Ledger(_) => "ledger_error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let e: HarnessError = RegistryError::Duplicate("x".into()).into();
        assert_eq!((e.code(), e.to_string().as_str()), ("duplicate_tool", "Duplicate tool: x"));
        let e: HarnessError = RegistryError::Unknown("y".into()).into();
        assert_eq!((e.code(), e.to_string().as_str()), ("unknown_tool", "Unknown tool: y"));
        let e: HarnessError = SchemaError::TooDeep { limit: 64 }.into();
        assert_eq!(e.code(), "schema_rejected");
    }
}
