//! One line of a breakdown: a value (a tool, a status, a refusal's code, ...) and how many calls had it.
//! Its own leaf because the stats and the refusal counts both report in it, and the stats read the
//! refusals.

use serde::{Deserialize, Serialize};

/// A value and how many times it was counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Count {
    pub key: String,
    pub count: u64,
}
