//! Where a team ledger lives: a `postgres://` URL, its password from the environment or a file (never
//! from the URL, which ends up in logs, shell histories and process lists), and how TLS is checked.
//! What is shown of it (logs, errors, the app) is the URL without any secret.

use crate::error::TeamError;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use tokio_postgres::config::SslMode;

/// The environment variable a team ledger's password is read from (libpq's own).
pub const PASSWORD_ENV: &str = "PGPASSWORD";

/// How long a connection may take to open, unless the URL says (`connect_timeout=SECONDS`).
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How the connection is secured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsMode {
    /// `sslmode=disable`: plain TCP (or a Unix socket).
    Disable,
    /// `sslmode=prefer` (the default), `require`, `verify-ca`, `verify-full`: TLS whose certificate is
    /// always verified, against `sslrootcert` or the system's roots. `prefer` falls back to plain TCP
    /// only when the server offers no TLS at all; a certificate that does not verify is an error.
    Verified { required: bool, roots: Option<PathBuf> },
}

/// A team ledger's database, ready to connect to.
#[derive(Clone)]
pub struct TeamDb {
    config: tokio_postgres::Config,
    tls: TlsMode,
    shown: Arc<str>,
    password: Option<Arc<str>>,
}

impl std::fmt::Debug for TeamDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamDb").field("url", &self.shown).field("tls", &self.tls).finish_non_exhaustive()
    }
}

impl std::fmt::Display for TeamDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl TeamDb {
    /// Parses `url` (`postgres://user@host:port/db?sslmode=…&sslrootcert=FILE`); the password comes
    /// from `password_file` if given (owner-only, first line), else from `$PGPASSWORD`, else none.
    pub fn parse(url: &str, password_file: Option<&Path>) -> Result<TeamDb, TeamError> {
        let bad = |why: String| TeamError::BadUrl { url: shown_of(url), why };
        let Some(rest) = url.strip_prefix("postgres://").or_else(|| url.strip_prefix("postgresql://")) else {
            return Err(bad("a team ledger is named by a postgres:// URL".into()));
        };
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let authority = before_query.split('/').next().unwrap_or("");
        if authority.rsplit_once('@').is_some_and(|(userinfo, _)| userinfo.contains(':')) {
            return Err(bad(format!(
                "the URL holds a password: URLs end up in logs and process lists; put the password in ${PASSWORD_ENV} or a file (--ship-password-file)"
            )));
        }
        let mut ssl = None;
        let mut roots = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "sslmode" => ssl = Some(value.to_owned()),
                "sslrootcert" => roots = Some(PathBuf::from(percent_decoded(value))),
                "password" => {
                    return Err(bad(format!(
                        "the URL holds a password: put it in ${PASSWORD_ENV} or a file"
                    )));
                }
                _ => kept.push(pair),
            }
        }
        let tls = match ssl.as_deref().unwrap_or("prefer") {
            "disable" => TlsMode::Disable,
            "prefer" => TlsMode::Verified { required: false, roots },
            "require" | "verify-ca" | "verify-full" => TlsMode::Verified { required: true, roots },
            other => {
                return Err(bad(format!(
                    "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
                )));
            }
        };
        let mut plain = format!("postgres://{before_query}");
        if !kept.is_empty() {
            plain.push('?');
            plain.push_str(&kept.join("&"));
        }
        let mut config = tokio_postgres::Config::from_str(&plain).map_err(|e| bad(e.to_string()))?;
        config.ssl_mode(match &tls {
            TlsMode::Disable => SslMode::Disable,
            TlsMode::Verified { required: false, .. } => SslMode::Prefer,
            TlsMode::Verified { required: true, .. } => SslMode::Require,
        });
        if config.get_application_name().is_none() {
            config.application_name("portcullis");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let password = match password_file {
            Some(file) => Some(read_password_file(file)?),
            None => std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()),
        };
        if let Some(password) = &password {
            config.password(password.as_bytes());
        }
        Ok(TeamDb { config, tls, shown: shown_of(url).into(), password: password.map(Into::into) })
    }

    /// The driver's configuration (password included).
    pub fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    pub fn tls(&self) -> &TlsMode {
        &self.tls
    }

    /// The password, for the hub's redactor (never shown).
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }
}

/// Whether `text` names a team ledger (rather than a ledger file).
pub fn is_team_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// `url` as it may be shown: any password (there should be none) and every query value but `sslmode`
/// masked.
pub fn shown_of(url: &str) -> String {
    let (before_query, query) = url.split_once('?').unwrap_or((url, ""));
    let mut shown = match before_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let user = userinfo.split(':').next().unwrap_or("");
                    let masked = if userinfo.contains(':') { ":***" } else { "" };
                    format!("{user}{masked}@{host}")
                }
                None => authority.to_owned(),
            };
            if path.is_empty() && !rest.contains('/') {
                format!("{scheme}://{authority}")
            } else {
                format!("{scheme}://{authority}/{path}")
            }
        }
        None => "(not a URL)".to_owned(),
    };
    let params: Vec<String> = (query.split('&'))
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key @ ("sslmode" | "sslrootcert" | "connect_timeout" | "application_name"), value)) => {
                format!("{key}={value}")
            }
            Some((key, _)) => format!("{key}=***"),
            None => pair.to_owned(),
        })
        .collect();
    if !params.is_empty() {
        shown.push('?');
        shown.push_str(&params.join("&"));
    }
    shown
}

/// The first line of an owner-only password file (libpq refuses a `.pgpass` others can read; so do we).
fn read_password_file(file: &Path) -> Result<String, TeamError> {
    let io = |source| TeamError::PasswordFile { file: file.to_owned(), why: format!("{source}") };
    let meta = std::fs::metadata(file).map_err(io)?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(TeamError::PasswordFile {
            file: file.to_owned(),
            why: format!(
                "others can read it (mode {:o}): make it owner-only (chmod 600)",
                meta.permissions().mode() & 0o777
            ),
        });
    }
    let text = std::fs::read_to_string(file).map_err(io)?;
    let line = text.lines().next().unwrap_or("").to_owned();
    if line.is_empty() {
        return Err(TeamError::PasswordFile { file: file.to_owned(), why: "its first line is empty".into() });
    }
    Ok(line)
}

fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn urls_and_what_they_become() {
        // (url, Ok(shown, tls) or Err(words the error holds))
        type Want<'a> = Result<(&'a str, TlsMode), &'a str>;
        let rows: [(&str, Want); 8] = [
            (
                "postgres://team@db.example:5433/audit",
                Ok((
                    "postgres://team@db.example:5433/audit",
                    TlsMode::Verified { required: false, roots: None },
                )),
            ),
            (
                "postgresql://team@db/audit?sslmode=disable",
                Ok(("postgresql://team@db/audit?sslmode=disable", TlsMode::Disable)),
            ),
            (
                "postgres://team@db/audit?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
                Ok((
                    "postgres://team@db/audit?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
                    TlsMode::Verified { required: true, roots: Some("/etc/ca.pem".into()) },
                )),
            ),
            ("postgres://team:hunter2@db/audit", Err("holds a password")),
            ("postgres://team@db/audit?password=hunter2", Err("holds a password")),
            ("postgres://team@db/audit?sslmode=allow", Err("sslmode=allow")),
            ("mysql://team@db/audit", Err("postgres:// URL")),
            ("postgres://team@db/audit?bogus=1", Err("bogus")),
        ];
        for (url, want) in rows {
            match (TeamDb::parse(url, None), want) {
                (Ok(db), Ok((shown, tls))) => {
                    assert_eq!(db.to_string(), shown, "{url}");
                    assert_eq!(db.tls(), &tls, "{url}");
                }
                (Err(e), Err(words)) => {
                    let text = e.to_string();
                    assert!(text.contains(words), "{url}: {text}");
                    assert!(!text.contains("hunter2"), "the error shows the password: {text}");
                }
                (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_password_file_must_be_owner_only_and_is_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "s3cret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = TeamDb::parse("postgres://team@db/audit", Some(&file)).unwrap_err().to_string();
        assert!(e.contains("owner-only"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let db = TeamDb::parse("postgres://team@db/audit", Some(&file)).unwrap();
        assert_eq!(db.password(), Some("s3cret"));
        assert!(!format!("{db:?} {db}").contains("s3cret"));
    }
}
