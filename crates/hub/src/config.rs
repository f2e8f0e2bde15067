//! Where the hub keeps things: the two bearer tokens, the agents' and the operator's (user config dir,
//! 0600, made on first start), the runtime file that tells `portcullis mcp` and `portcullis hook` a hub
//! is running, and the default ledger (user data dir).

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The environment variables the hub passes to programs it starts (upstream servers, process tools); they
/// inherit nothing else unless their configuration says.
pub const CHILD_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "TMPDIR", "USER"];

/// The user's config folder for Portcullis (the tokens', the runtime file's, the user policy's):
/// `$PORTCULLIS_CONFIG_DIR`, else `$XDG_CONFIG_HOME/portcullis`, else `~/.config/portcullis`.
pub use portcullis_policy::discovery::user_config_dir;

/// The default port of the gateway.
pub const DEFAULT_PORT: u16 = 7391;

/// The user's config folder, or an error naming what is missing.
pub fn config_dir() -> std::io::Result<PathBuf> {
    user_config_dir().ok_or_else(|| {
        std::io::Error::other("no config folder: set HOME, XDG_CONFIG_HOME or PORTCULLIS_CONFIG_DIR")
    })
}

/// The default ledger: `$PORTCULLIS_DATA_DIR`, `$XDG_DATA_HOME/portcullis` or `~/.local/share/portcullis`,
/// file `ledger.db`.
pub fn default_ledger_path() -> std::io::Result<PathBuf> {
    portcullis_policy::discovery::user_data_dir().map(|dir| dir.join("ledger.db")).ok_or_else(|| {
        std::io::Error::other("no data folder: set HOME, XDG_DATA_HOME or PORTCULLIS_DATA_DIR")
    })
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// The agents' bearer token (the gateway token) in `dir/token`: read if present (it must be owner-only),
/// else made from 32 random bytes and written owner-only. `portcullis mcp` and `portcullis hook` use it.
pub fn load_or_create_token(dir: &Path) -> std::io::Result<String> {
    load_or_create_secret(dir, "token", "gateway token")
}

/// The operator's bearer token in `dir/operator-token`, made like the gateway token. Only the operator's
/// routes (approvals, session grants) accept it, and they accept nothing else.
pub fn load_or_create_operator_token(dir: &Path) -> std::io::Result<String> {
    load_or_create_secret(dir, "operator-token", "operator token")
}

/// The file of the key that signs the ledger's checkpoints, in the config folder `dir` (agents may not
/// read the folder and the sandbox hides it); its public half is beside it (`ledger-key.pub`).
pub fn ledger_key_path(dir: &Path) -> PathBuf {
    dir.join("ledger-key")
}

/// The ledger key of the config folder `dir`, made on first use.
pub fn load_or_create_ledger_key(
    dir: &Path,
) -> Result<portcullis_ledger::LedgerKey, portcullis_ledger::KeyError> {
    private_dir(dir).map_err(|source| portcullis_ledger::KeyError::Io { path: dir.to_owned(), source })?;
    portcullis_ledger::LedgerKey::load_or_create(&ledger_key_path(dir))
}

/// The public key a ledger of this hub is verified against: the config folder's key's own public half
/// when the key can be read, else its `.pub` file.
pub fn ledger_public_key(
    dir: &Path,
) -> Result<portcullis_ledger::LedgerPublicKey, portcullis_ledger::KeyError> {
    let key = ledger_key_path(dir);
    match portcullis_ledger::LedgerKey::load(&key) {
        Ok(key) => Ok(key.public()),
        Err(_) => portcullis_ledger::LedgerPublicKey::read(
            &portcullis_ledger::key::public_path(&key).to_string_lossy(),
        ),
    }
}

/// Keeps the latest signed checkpoint of the ledger `db` as its witness in the config folder `dir`
/// (`portcullis_ledger::witness`): at start, after a seal on request, and at shutdown. A failure is
/// logged, never fatal (the ledger itself is intact either way).
pub fn keep_ledger_witness(dir: &Path, db: &Path) {
    if let Err(e) = portcullis_ledger::witness::Witness::record(db, dir) {
        tracing::warn!(error = %e, "the ledger's witness was not kept");
    }
}

/// The hub's two credentials. Their values are secrets the redactor knows, so a tool that prints a
/// token file shows neither agents nor the ledger the token.
#[derive(Clone)]
pub struct Credentials {
    /// Held by agents: `/mcp` and the Claude Code hook (the identity `default`).
    pub agent: String,
    /// Held by the operator: `/v1/approvals`, `/v1/session-grants`.
    pub operator: String,
    /// Named agents' tokens `(name, token)`: agents too, each its own identity (see
    /// [`named_agent_tokens`]).
    pub named_agents: Vec<(String, String)>,
}

impl Credentials {
    /// The tokens of the config folder `dir`, the gateway's and the operator's made on first use.
    pub fn load_or_create(dir: &Path) -> std::io::Result<Credentials> {
        Ok(Credentials {
            agent: load_or_create_token(dir)?,
            operator: load_or_create_operator_token(dir)?,
            named_agents: named_agent_tokens(dir)?,
        })
    }
}

/// The folder of named agents' tokens in the config folder `dir`.
pub fn agents_dir(dir: &Path) -> PathBuf {
    dir.join("agents")
}

/// The agent names the hub gives identities of its own, and why: a token file may not take one (its
/// agent would share that identity's idempotency keys and answers).
pub const RESERVED_AGENT_NAMES: &[(&str, &str)] = &[
    (portcullis_mcp::http::DEFAULT_AGENT, "the gateway token's own identity"),
    (
        crate::effects::LOCAL_AGENT,
        "the key namespace of calls that carry no agent (stdio, embedded, in-process)",
    ),
];

/// Why `name` is reserved for the hub's own use, if it is ([`RESERVED_AGENT_NAMES`]).
pub fn reserved_agent_name(name: &str) -> Option<&'static str> {
    RESERVED_AGENT_NAMES.iter().find(|(reserved, _)| reserved.eq_ignore_ascii_case(name)).map(|(_, why)| *why)
}

/// Whether `name` may name an agent: 1 to 64 of `a-z 0-9 . _ -`, not starting with `.`, and not one of
/// the hub's own identities ([`RESERVED_AGENT_NAMES`]).
pub fn valid_agent_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && reserved_agent_name(name).is_none()
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Named agents' tokens: one owner-only file per agent in `dir/agents/`, its name the agent's identity
/// (each agent's idempotency keys and results are its own). Files with other names are skipped, a
/// reserved name ([`RESERVED_AGENT_NAMES`]) with a warning; a token file others may read is an error,
/// like the gateway token's.
pub fn named_agent_tokens(dir: &Path) -> std::io::Result<Vec<(String, String)>> {
    let folder = agents_dir(dir);
    let entries = match std::fs::read_dir(&folder) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        read => read?,
    };
    let mut agents = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if let Some(why) = reserved_agent_name(&name) {
            tracing::warn!(
                file = %entry.path().display(),
                "agent token refused: {name:?} is reserved ({why}); rename the file to admit the agent"
            );
            continue;
        }
        if !valid_agent_name(&name) {
            continue;
        }
        if !entry.file_type()?.is_file() {
            continue;
        }
        agents.push((name.clone(), read_secret(&entry.path(), &format!("token of agent {name}"))?));
    }
    agents.sort();
    Ok(agents)
}

/// Makes (or reads) the token of the agent `name` in `dir/agents/`; a running hub admits it after its
/// next start. Returns the token's file.
pub fn create_named_agent(dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    if let Some(why) = reserved_agent_name(name) {
        return Err(std::io::Error::other(format!(
            "{name:?} cannot name an agent: the hub uses it itself ({why}); choose another name"
        )));
    }
    if !valid_agent_name(name) {
        return Err(std::io::Error::other(format!(
            "{name:?} cannot name an agent: use 1 to 64 of a-z 0-9 . _ - (not starting with a dot)"
        )));
    }
    private_dir(dir)?;
    let folder = agents_dir(dir);
    load_or_create_secret(&folder, name, &format!("token of agent {name}"))?;
    Ok(folder.join(name))
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials { .. }")
    }
}

fn load_or_create_secret(dir: &Path, file: &str, what: &str) -> std::io::Result<String> {
    let path = dir.join(file);
    match read_secret(&path, what) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        read => return read,
    }
    private_dir(dir)?;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    // Written whole under a temporary name, then linked into place: a process that starts at the same
    // time reads either no file or the whole token, and the first one made is the one kept.
    let temp = dir.join(format!(".{file}.{}", std::process::id()));
    let mut out =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temp)?;
    out.write_all(token.as_bytes())?;
    out.sync_all()?;
    let linked = std::fs::hard_link(&temp, &path);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => {
            tracing::info!(file = %path.display(), "generated the {what}");
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_secret(&path, what),
        Err(e) => Err(e),
    }
}

fn read_secret(path: &Path, what: &str) -> std::io::Result<String> {
    let token = std::fs::read_to_string(path)?;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{}: the {what} file is readable by others (mode {mode:o}); run chmod 600 on it",
            path.display()
        )));
    }
    let token = token.trim().to_owned();
    if token.len() < 32 {
        return Err(std::io::Error::other(format!("{}: the {what} is too short", path.display())));
    }
    Ok(token)
}

/// What a running hub tells other processes (`dir/hub.json`, owner-only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// The gateway's MCP endpoint.
    pub mcp_url: String,
    /// The hub's API root (`/v1`).
    pub api_url: String,
    pub pid: u32,
    pub ledger: String,
    /// The hub's TLS certificate when it serves HTTPS (this machine's clients trust it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<String>,
}

impl RuntimeInfo {
    pub fn new(addr: SocketAddr, ledger: &Path) -> Self {
        RuntimeInfo {
            mcp_url: format!("http://{addr}/mcp"),
            api_url: format!("http://{addr}/v1"),
            pid: std::process::id(),
            ledger: ledger.display().to_string(),
            tls_cert: None,
        }
    }

    /// The same hub served over HTTPS with the certificate in `cert`.
    pub fn with_tls(self, cert: &Path) -> Self {
        RuntimeInfo {
            mcp_url: self.mcp_url.replacen("http://", "https://", 1),
            api_url: self.api_url.replacen("http://", "https://", 1),
            tls_cert: Some(cert.display().to_string()),
            ..self
        }
    }

    pub fn path(dir: &Path) -> PathBuf {
        dir.join("hub.json")
    }

    /// Writes the file atomically (temporary file, then rename).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        private_dir(dir)?;
        let temp = dir.join(format!(".hub.json.{}", std::process::id()));
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, Self::path(dir))
    }

    /// The running hub's file, if there is one and its process is alive.
    pub fn read(dir: &Path) -> Option<RuntimeInfo> {
        let info: RuntimeInfo = serde_json::from_str(&std::fs::read_to_string(Self::path(dir)).ok()?).ok()?;
        Path::new(&format!("/proc/{}", info.pid)).exists().then_some(info)
    }

    /// Removes the file if it is this process's.
    pub fn remove(dir: &Path) {
        if Self::read(dir).is_some_and(|i| i.pid == std::process::id()) {
            let _ = std::fs::remove_file(Self::path(dir));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// One row of [`RESERVED_AGENT_NAMES`]: refused as a name, refused by `add-agent` naming why, and a
    /// hand-made token file of that name is not admitted at start (while a good name beside it is).
    fn row_is_refused(name: &str, why: &str) {
        assert!(!valid_agent_name(name), "{name}");
        assert_eq!(reserved_agent_name(name), Some(why), "{name}");
        let dir = tempfile::tempdir().unwrap();
        let err = create_named_agent(dir.path(), name).unwrap_err().to_string();
        assert!(err.contains("the hub uses it itself") && err.contains(why), "{name}: {err}");
        assert!(!agents_dir(dir.path()).join(name).exists(), "{name}: no file made");
        create_named_agent(dir.path(), "alice").unwrap();
        let file = agents_dir(dir.path()).join(name);
        std::fs::write(&file, "f".repeat(64)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let admitted: Vec<String> =
            named_agent_tokens(dir.path()).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(admitted, ["alice"], "{name}: a hand-made file is refused at start");
    }

    #[test]
    fn default_the_gateway_tokens_identity_is_reserved() {
        assert_eq!(RESERVED_AGENT_NAMES[0].0, portcullis_mcp::http::DEFAULT_AGENT);
        row_is_refused("default", RESERVED_AGENT_NAMES[0].1);
    }

    #[test]
    fn local_the_key_namespace_of_calls_without_an_agent_is_reserved() {
        assert_eq!(RESERVED_AGENT_NAMES[1].0, crate::effects::LOCAL_AGENT);
        row_is_refused("local", RESERVED_AGENT_NAMES[1].1);
    }

    #[test]
    fn every_reserved_name_has_its_own_test() {
        let tested = ["default", "local"];
        let names: Vec<&str> = RESERVED_AGENT_NAMES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, tested, "a row added to RESERVED_AGENT_NAMES needs a test above");
    }

    #[test]
    fn ordinary_names_are_agents() {
        for good in ["alice", "ci-bot", "a.b_c", "locale", "defaults", "local2"] {
            assert!(valid_agent_name(good), "{good}");
        }
        for bad in ["", ".hidden", "Alice", "a b", &"n".repeat(65)] {
            assert!(!valid_agent_name(bad), "{bad:?}");
        }
    }
}
