//! Where a hub ships its ledger for the team: `--ship postgres://…` (with `--ship-password-file`), else
//! the user's `team-ledger.json` in the config folder (`{"url": "postgres://…", "password_file": "…"}`),
//! else nowhere. The password file is the hub's secret (agents can neither read nor write it) and the
//! password a value the redactor knows.

use crate::error::HubError;
use portcullis_team::{PostgresSink, TeamDb};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file in the user's config folder that names the team ledger.
pub const SETTINGS_FILE: &str = "team-ledger.json";

/// Which team ledger a hub ships to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TeamLedgerChoice {
    /// The one the user's `team-ledger.json` names, if any.
    #[default]
    UserSetting,
    Named(TeamLedgerSetting),
    /// None: a short-lived hub (the hook's own) leaves its records to the next hub that ships this
    /// ledger, which takes them from where shipping stopped.
    Off,
}

/// A team ledger to ship to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamLedgerSetting {
    /// `postgres://user@host:port/db?sslmode=…&sslrootcert=…`, without a password.
    pub url: String,
    /// An owner-only file whose first line is the password; none: `$PGPASSWORD`.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
}

impl TeamLedgerSetting {
    /// The setting in `dir/team-ledger.json`, if the file is there.
    pub fn in_config_dir(dir: &Path) -> Result<Option<TeamLedgerSetting>, HubError> {
        let file = dir.join(SETTINGS_FILE);
        match std::fs::read(&file) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| HubError::Config(format!("{}: {e}", file.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HubError::Config(format!("{}: {e}", file.display()))),
        }
    }

    /// The database it names, its password read (a bad URL or password file stops the hub: shipping
    /// that silently never happens is worse than a hub that says why it did not start).
    pub fn team_db(&self) -> Result<TeamDb, HubError> {
        TeamDb::parse(&self.url, self.password_file.as_deref()).map_err(|e| HubError::Config(e.to_string()))
    }
}

/// The sink shipping to the team ledger `setting` names.
pub fn sink_of(setting: Option<&TeamLedgerSetting>) -> Result<Option<Arc<PostgresSink>>, HubError> {
    setting.map(|s| s.team_db().map(|db| Arc::new(PostgresSink::new(db)))).transpose()
}
