//! Login links for the browser console: an operator front end (the app, the CLI's `operator link`, a
//! console session) asks the hub for a one-time link that logs one operator in. The link carries a
//! code, never a token, in its fragment; the code works once, for minutes (the `console` module).

use super::{ApiError, ErrorCode, OperatorApi};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A one-time login link to the browser console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConsoleLink {
    /// Open it in a browser: it logs in once, then stops working.
    pub url: String,
    /// Whom it logs in: answers given in that session are recorded as `<operator> (browser)`.
    pub operator: String,
    /// When it stops working unused, in milliseconds since the epoch.
    pub expires_at_ms: u64,
}

/// A login to the browser console: who, until when (what `/console/v1/me` and the login answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConsoleSession {
    /// The operator's name; answers given in this login are recorded as `<operator> (browser)`.
    pub operator: String,
    /// When the login ends at the latest, in milliseconds since the epoch.
    pub expires_at_ms: u64,
}

/// The operator a link names when none is given: the local user, else `operator`.
pub fn default_operator_name() -> String {
    std::env::var("USER")
        .ok()
        .filter(|user| portcullis_hub::check_operator_name(user).is_ok())
        .unwrap_or_else(|| "operator".to_owned())
}

impl OperatorApi {
    /// A one-time login link for `operator` (default: the local user). `bad_argument` when the hub
    /// serves no console or the name is not a short printable one; `hub_unavailable` while it does not
    /// listen.
    pub fn console_link(&self, operator: Option<&str>) -> Result<ConsoleLink, ApiError> {
        let state = &self.hub.state;
        if !state.config.console.enabled {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                "this hub serves no browser console (it was started with --no-console)",
                json!({}),
            ));
        }
        let addr = state.served_at.get().ok_or_else(|| {
            ApiError::new(
                ErrorCode::HubUnavailable,
                "the hub does not listen: no console to log in to",
                json!({}),
            )
        })?;
        let name = operator.map(str::to_owned).unwrap_or_else(default_operator_name);
        let code = state.console_codes.mint(&name).map_err(|why| {
            ApiError::new(ErrorCode::BadArgument, why, json!({ "operator": super::visible(&name) }))
        })?;
        let host =
            if addr.ip().is_unspecified() { format!("127.0.0.1:{}", addr.port()) } else { addr.to_string() };
        Ok(ConsoleLink {
            url: format!("{}://{host}/login#code={}", state.scheme(), code.code),
            operator: code.operator,
            expires_at_ms: code.expires_at_ms,
        })
    }
}
