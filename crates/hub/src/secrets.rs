//! Which environment variables hold secrets, and which part of their value is the secret: one table
//! the hub's redactor is seeded from (a `DATABASE_URL`'s password was stored in clear because only a
//! few name markers were known).

use portcullis_harness::redaction::{MIN_SECRET_BYTES, url_passwords};

/// How a row matches a variable name (compared upper-cased).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameMatch {
    /// The whole name.
    Exact(&'static str),
    /// A `_`-separated part of the name contains this (`GITHUB_TOKEN`, `TOKENS`, `MYTOKEN_FILE`).
    Part(&'static str),
    /// The name ends with this.
    Suffix(&'static str),
    /// Every variable.
    Any,
}

/// Which part of a matched variable's value is secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretPart {
    /// The whole value (at least [`MIN_ENV_SECRET_BYTES`] long).
    Value,
    /// The password of each `scheme://user:password@host` in the value (raw and percent-decoded).
    UrlPassword,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretName {
    pub name: NameMatch,
    pub part: SecretPart,
}

const fn row(name: NameMatch, part: SecretPart) -> SecretName {
    SecretName { name, part }
}

use NameMatch::{Any, Exact, Part, Suffix};
use SecretPart::{UrlPassword, Value};

/// The secret-bearing variable names, first match wins. Whole values come first; any other variable
/// still gives up the passwords of URLs it holds (`HTTPS_PROXY=http://user:pass@proxy`).
pub const SECRET_NAMES: &[SecretName] = &[
    row(Exact("PGPASSWORD"), Value),
    row(Exact("AWS_SECRET_ACCESS_KEY"), Value),
    row(Part("TOKEN"), Value),
    row(Part("SECRET"), Value),
    row(Part("PASSWORD"), Value),
    row(Part("PASSWD"), Value),
    row(Part("PASSPHRASE"), Value),
    row(Suffix("_PWD"), Value),
    row(Part("APIKEY"), Value),
    row(Suffix("_KEY"), Value),
    row(Suffix("KEY_ID"), Value),
    row(Part("CREDENTIAL"), Value),
    row(Part("AUTH"), Value),
    row(Part("PRIVATE"), Value),
    row(Part("COOKIE"), Value),
    row(Part("WEBHOOK"), Value),
    row(Suffix("_PAT"), Value),
    row(Suffix("_URL"), UrlPassword),
    row(Suffix("_DSN"), UrlPassword),
    row(Suffix("_URI"), UrlPassword),
    row(Any, UrlPassword),
];

/// Names that match a row but hold no secret (socket and display paths).
const NOT_SECRET_NAMES: &[&str] = &["SSH_AUTH_SOCK", "XAUTHORITY"];
/// Name parts that contain a marker but name no secret (`GIT_AUTHOR_NAME` is not an `AUTH`).
const NOT_SECRET_PARTS: &[&str] = &["AUTHOR", "AUTHORS", "AUTHORITY"];

/// Whole values shorter than this are not taken as secrets (they would redact ordinary words).
pub const MIN_ENV_SECRET_BYTES: usize = 8;

impl NameMatch {
    fn matches(self, upper: &str) -> bool {
        match self {
            Exact(name) => upper == name,
            Part(marker) => {
                upper.split('_').any(|part| part.contains(marker) && !NOT_SECRET_PARTS.contains(&part))
            }
            Suffix(suffix) => upper.len() > suffix.len() && upper.ends_with(suffix),
            Any => true,
        }
    }
}

/// The first row that matches the variable `name`.
pub fn secret_row(name: &str) -> Option<&'static SecretName> {
    let upper = name.to_ascii_uppercase();
    if NOT_SECRET_NAMES.contains(&upper.as_str()) {
        return None;
    }
    SECRET_NAMES.iter().find(|row| row.name.matches(&upper))
}

/// The secrets one variable holds, as its row says.
pub fn secrets_of(name: &str, value: &str) -> Vec<String> {
    match secret_row(name).map(|row| row.part) {
        Some(Value) if value.len() >= MIN_ENV_SECRET_BYTES => vec![value.to_owned()],
        Some(Value) | None => Vec::new(),
        Some(UrlPassword) => {
            let mut found = Vec::new();
            for password in url_passwords(value) {
                if let Some(decoded) = percent_decoded(password)
                    && decoded != password
                    && decoded.len() >= MIN_SECRET_BYTES
                {
                    found.push(decoded);
                }
                if password.len() >= MIN_SECRET_BYTES {
                    found.push(password.to_owned());
                }
            }
            found
        }
    }
}

/// Values of the environment's variables that hold secrets (see [`SECRET_NAMES`]).
pub fn environment_secrets() -> Vec<String> {
    std::env::vars().flat_map(|(name, value)| secrets_of(&name, &value)).collect()
}

/// `%XX` decoded, when that gives UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One case (or more) per row: a variable, its value, the secrets taken, and the row that decided.
    const CASES: &[(&str, &str, &[&str], Option<NameMatch>)] = &[
        ("PGPASSWORD", "pg-password-1", &["pg-password-1"], Some(Exact("PGPASSWORD"))),
        (
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG",
            &["wJalrXUtnFEMI/K7MDENG"],
            Some(Exact("AWS_SECRET_ACCESS_KEY")),
        ),
        ("GITHUB_TOKEN", "gh-token-value", &["gh-token-value"], Some(Part("TOKEN"))),
        ("AWS_SESSION_TOKEN", "session-token-value", &["session-token-value"], Some(Part("TOKEN"))),
        ("CLIENT_SECRET", "client-secret-1", &["client-secret-1"], Some(Part("SECRET"))),
        ("DB_PASSWORD", "db-password-1", &["db-password-1"], Some(Part("PASSWORD"))),
        ("FTP_PASSWD", "ftp-passwd-1", &["ftp-passwd-1"], Some(Part("PASSWD"))),
        ("GPG_PASSPHRASE", "a long phrase", &["a long phrase"], Some(Part("PASSPHRASE"))),
        ("MYSQL_PWD", "mysql-pwd-1", &["mysql-pwd-1"], Some(Suffix("_PWD"))),
        ("SENDGRID_APIKEY", "SG.abcdefgh", &["SG.abcdefgh"], Some(Part("APIKEY"))),
        ("OPENAI_API_KEY", "openai-key-1", &["openai-key-1"], Some(Suffix("_KEY"))),
        ("STRIPE_KEY", "stripe-key-1", &["stripe-key-1"], Some(Suffix("_KEY"))),
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE1", &["AKIAEXAMPLE1"], Some(Suffix("KEY_ID"))),
        ("GOOGLE_APPLICATION_CREDENTIALS_JSON", "{\"k\": 1}", &["{\"k\": 1}"], Some(Part("CREDENTIAL"))),
        ("NPM_AUTH", "npm-auth-value", &["npm-auth-value"], Some(Part("AUTH"))),
        ("BASIC_AUTHENTICATION", "dXNlcjpwYXNz", &["dXNlcjpwYXNz"], Some(Part("AUTH"))),
        ("SSH_PRIVATE", "-----BEGIN", &["-----BEGIN"], Some(Part("PRIVATE"))),
        ("SESSION_COOKIE", "cookie-value-1", &["cookie-value-1"], Some(Part("COOKIE"))),
        (
            "SLACK_WEBHOOK",
            "https://hooks.slack.com/services/T0/B0/x",
            &["https://hooks.slack.com/services/T0/B0/x"],
            Some(Part("WEBHOOK")),
        ),
        ("GITLAB_PAT", "glpat-value-1", &["glpat-value-1"], Some(Suffix("_PAT"))),
        (
            "DATABASE_URL",
            "postgres://app:s3cr%40t-pw@db:5432/app",
            &["s3cr@t-pw", "s3cr%40t-pw"],
            Some(Suffix("_URL")),
        ),
        ("API_URL", "https://api.example.com/v1", &[], Some(Suffix("_URL"))),
        ("SENTRY_DSN", "https://key:dsn-secret@o1.ingest.sentry.io/1", &["dsn-secret"], Some(Suffix("_DSN"))),
        ("MONGO_URI", "mongodb://root:mongo-pass@mongo/admin", &["mongo-pass"], Some(Suffix("_URI"))),
        ("HTTPS_PROXY", "http://user:proxy-pass@proxy:3128", &["proxy-pass"], Some(Any)),
        ("HOME", "/home/someone", &[], Some(Any)),
        // Too short to be taken whole; names that only look like markers.
        ("GITHUB_TOKEN", "short", &[], Some(Part("TOKEN"))),
        ("GIT_AUTHOR_NAME", "Ada Lovelace", &[], Some(Any)),
        ("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.1", &[], None),
        ("XAUTHORITY", "/run/user/1000/xauth", &[], None),
        ("PWD", "/home/someone/project", &[], Some(Any)),
        ("KEY", "not-a-suffix-match", &[], Some(Any)),
    ];

    #[test]
    fn each_row_takes_what_it_says() {
        for (name, value, want, row) in CASES {
            assert_eq!(secret_row(name).map(|r| r.name), *row, "{name}");
            let mut got = secrets_of(name, value);
            got.sort();
            let mut want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
            want.sort();
            assert_eq!(got, want, "{name}={value}");
        }
    }

    #[test]
    fn every_row_has_a_case() {
        for row in SECRET_NAMES {
            assert!(
                CASES
                    .iter()
                    .any(|(name, _, _, decided)| *decided == Some(row.name) && secret_row(name) == Some(row)),
                "no case decided by {row:?}"
            );
        }
    }

    #[test]
    fn lower_case_names_match_too() {
        assert_eq!(secrets_of("database_url", "mysql://u:lower-pass@h/db"), vec!["lower-pass".to_owned()]);
        assert_eq!(secrets_of("my_token", "token-value-1"), vec!["token-value-1".to_owned()]);
    }
}
