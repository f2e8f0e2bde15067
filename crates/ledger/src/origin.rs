//! Where a team ledger's call or session came from. Its own leaf because the call listing (`query.rs`)
//! and the session listing (`sessions.rs`) both carry it, and the call listing reads sessions.

use serde::{Deserialize, Serialize};

/// Where a call of a team ledger came from: the hub's ledger, its host and its OS user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallOrigin {
    pub ledger_id: String,
    pub host: String,
    pub user: String,
}
