//! The key that signs a ledger's checkpoints: ed25519, its 32-byte seed in hex in a file of its own
//! (owner-only, in the hub's config folder, which agents may not read and the sandbox hides), its public
//! half beside it (`<file>.pub`) for whoever verifies a ledger or an export.

use ed25519_dalek::{Signer, Verifier};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a key could not be loaded, made or parsed.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: the ledger key file is readable by others (mode {mode:o}); run chmod 600 on it")]
    Open { path: PathBuf, mode: u32 },
    #[error("{what}: not a ledger key ({why})")]
    Malformed { what: String, why: String },
}

impl KeyError {
    pub fn code(&self) -> &'static str {
        match self {
            KeyError::Io { .. } => "ledger_key_io",
            KeyError::Open { .. } => "ledger_key_open",
            KeyError::Malformed { .. } => "ledger_key_malformed",
        }
    }
}

/// The signing key.
pub struct LedgerKey {
    signing: ed25519_dalek::SigningKey,
}

impl std::fmt::Debug for LedgerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LedgerKey({})", self.public())
    }
}

/// A public key that checks checkpoint signatures.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LedgerPublicKey {
    key: ed25519_dalek::VerifyingKey,
}

impl std::fmt::Display for LedgerPublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&portcullis_harness::receipt::hex(self.key.as_bytes()))
    }
}

impl std::fmt::Debug for LedgerPublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LedgerPublicKey({self})")
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io { path: path.to_owned(), source }
}

/// Parses exactly `N` bytes of hex (whitespace around it ignored).
fn parse_hex<const N: usize>(text: &str, what: &str) -> Result<[u8; N], KeyError> {
    let text = text.trim();
    let malformed = |why: String| KeyError::Malformed { what: what.to_owned(), why };
    if text.len() != N * 2 {
        return Err(malformed(format!("expected {} hex digits, found {}", N * 2, text.len())));
    }
    portcullis_harness::receipt::unhex(text).ok_or_else(|| malformed("not hex digits".into()))
}

impl LedgerKey {
    /// A key from its 32-byte seed.
    pub fn from_seed(seed: [u8; 32]) -> LedgerKey {
        LedgerKey { signing: ed25519_dalek::SigningKey::from_bytes(&seed) }
    }

    /// A new key from the OS's random bytes.
    pub fn generate() -> std::io::Result<LedgerKey> {
        let mut seed = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut seed)?;
        Ok(LedgerKey::from_seed(seed))
    }

    /// Reads the key at `path` (it must be owner-only), or makes one there (0600, in a 0700 folder) and
    /// its public half at `<path>.pub`. Two processes starting at once keep the first key made.
    pub fn load_or_create(path: &Path) -> Result<LedgerKey, KeyError> {
        match LedgerKey::load(path) {
            Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            loaded => return loaded,
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let key = LedgerKey::generate().map_err(io(path))?;
        let temp = path.with_extension(format!("new.{}", std::process::id()));
        let written = (|| {
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temp)?;
            out.write_all(portcullis_harness::receipt::hex(key.signing.as_bytes()).as_bytes())?;
            out.write_all(b"\n")?;
            out.sync_all()
        })();
        written.map_err(io(&temp))?;
        let linked = std::fs::hard_link(&temp, path);
        let _ = std::fs::remove_file(&temp);
        match linked {
            Ok(()) => {
                tracing::info!(file = %path.display(), "made the ledger's signing key");
                let key = key;
                key.write_public(path)?;
                Ok(key)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => LedgerKey::load(path),
            Err(e) => Err(KeyError::Io { path: path.to_owned(), source: e }),
        }
    }

    /// Reads the key at `path`; refuses a file others may read.
    pub fn load(path: &Path) -> Result<LedgerKey, KeyError> {
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        let mode = std::fs::metadata(path).map_err(io(path))?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Open { path: path.to_owned(), mode });
        }
        let key = LedgerKey::from_seed(parse_hex::<32>(&text, &path.display().to_string())?);
        // The public half is made again if it is missing (never trusted from the file for signing).
        let public = public_path(path);
        if !public.exists()
            && let Err(e) = key.write_public(path)
        {
            // Only a convenience for whoever verifies elsewhere: the key itself is what signs.
            tracing::warn!(error = %e, "the ledger key's public half could not be written");
        }
        Ok(key)
    }

    fn write_public(&self, path: &Path) -> Result<(), KeyError> {
        let public = public_path(path);
        std::fs::write(&public, format!("{}\n", self.public())).map_err(io(&public))?;
        std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o644)).map_err(io(&public))
    }

    pub fn public(&self) -> LedgerPublicKey {
        LedgerPublicKey { key: self.signing.verifying_key() }
    }

    /// Signs `message` (a checkpoint's seal message, which `seal.rs` builds).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.signing.sign(message).to_bytes()
    }
}

/// Where the public half of the key at `path` is written.
pub fn public_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

impl LedgerPublicKey {
    /// A public key from 64 hex digits.
    pub fn parse(text: &str) -> Result<LedgerPublicKey, KeyError> {
        LedgerPublicKey::from_bytes(&parse_hex::<32>(text, "public key")?)
    }

    pub fn from_bytes(bytes: &[u8; 32]) -> Result<LedgerPublicKey, KeyError> {
        ed25519_dalek::VerifyingKey::from_bytes(bytes)
            .map(|key| LedgerPublicKey { key })
            .map_err(|e| KeyError::Malformed { what: "public key".into(), why: e.to_string() })
    }

    /// A public key given as a file holding its hex, or as the hex itself. An argument that names a
    /// file (it holds a `/`) and does not exist is that file's error, never read as hex.
    pub fn read(arg: &str) -> Result<LedgerPublicKey, KeyError> {
        let path = Path::new(arg);
        if path.exists() || arg.contains('/') {
            let text = std::fs::read_to_string(path).map_err(io(path))?;
            return LedgerPublicKey::parse(&text).map_err(|e| match e {
                KeyError::Malformed { why, .. } => {
                    KeyError::Malformed { what: path.display().to_string(), why }
                }
                other => other,
            });
        }
        LedgerPublicKey::parse(arg)
    }

    /// The public key of the ledger key kept at `key_file`: its own public half when the key can be
    /// read, else its `.pub` file beside it; `None` when neither file exists (a ledger another user's
    /// hub, or `portcullis call --db`, wrote).
    pub fn find(key_file: &Path) -> Result<Option<LedgerPublicKey>, KeyError> {
        match LedgerKey::load(key_file) {
            Ok(key) => return Ok(Some(key.public())),
            Err(e) if key_file.exists() && !public_path(key_file).exists() => return Err(e),
            Err(_) => {}
        }
        let public = public_path(key_file);
        if !public.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&public).map_err(io(&public))?;
        LedgerPublicKey::parse(&text).map(Some).map_err(|e| match e {
            KeyError::Malformed { why, .. } => {
                KeyError::Malformed { what: public.display().to_string(), why }
            }
            other => other,
        })
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        self.key.as_bytes()
    }

    /// Whether `signature` is this key's over `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(bytes) = <[u8; 64]>::try_from(signature) else { return false };
        self.key.verify(message, &ed25519_dalek::Signature::from_bytes(&bytes)).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_owner_only_and_read_back_with_its_public_half() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf/ledger-key");
        let key = LedgerKey::load_or_create(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let again = LedgerKey::load_or_create(&path).unwrap();
        assert_eq!(key.public(), again.public());
        let public = std::fs::read_to_string(public_path(&path)).unwrap();
        assert_eq!(LedgerPublicKey::parse(&public).unwrap(), key.public());
        assert_eq!(LedgerPublicKey::read(public_path(&path).to_str().unwrap()).unwrap(), key.public());
        let signature = key.sign(b"message");
        assert!(key.public().verifies(b"message", &signature));
        assert!(!key.public().verifies(b"messagf", &signature));
        assert!(!LedgerKey::generate().unwrap().public().verifies(b"message", &signature));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(LedgerKey::load(&path), Err(KeyError::Open { .. })));
    }

    #[test]
    fn a_missing_key_file_is_found_missing_not_read_as_hex() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf/ledger-key");
        assert!(LedgerPublicKey::find(&path).unwrap().is_none());
        let missing = public_path(&path);
        let e = LedgerPublicKey::read(missing.to_str().unwrap()).unwrap_err();
        assert!(
            matches!(&e, KeyError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
            "{e}"
        );
        let key = LedgerKey::load_or_create(&path).unwrap();
        assert_eq!(LedgerPublicKey::find(&path).unwrap(), Some(key.public()));
        // Only the public half left (the key itself elsewhere): still found.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(LedgerPublicKey::find(&path).unwrap(), Some(key.public()));
        std::fs::write(public_path(&path), "abc").unwrap();
        assert!(matches!(LedgerPublicKey::find(&path), Err(KeyError::Malformed { .. })));
    }

    #[test]
    fn malformed_keys_say_what_is_wrong() {
        for bad in ["", "abc", &"zz".repeat(32), &"00".repeat(33), &format!("+{}", "0".repeat(63))] {
            let e = LedgerPublicKey::parse(bad).unwrap_err();
            assert!(matches!(e, KeyError::Malformed { .. }), "{bad}: {e}");
        }
    }
}
