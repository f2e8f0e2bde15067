//! TLS for a hub that listens beyond this machine: the operator's certificate and key files, or a
//! self-signed certificate the hub makes once (kept owner-only in its config folder, reused while it
//! still names the hub's addresses) and whose SHA-256 fingerprint `serve` prints, so the operator can
//! check it in the browser or pin it. rustls with the aws-lc-rs provider the gateway's HTTP client
//! already uses.

use crate::error::HubError;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest as _, Sha256};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the hub's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSource {
    /// PEM files the operator gives (a chain, then its key).
    Files { cert: PathBuf, key: PathBuf },
    /// A self-signed certificate for the hub's names, made once and kept in `<config>/tls/`.
    SelfSigned,
}

/// The TLS a hub serves with: the acceptor, the certificate's file and its fingerprint.
#[derive(Clone)]
pub struct ServedTls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    /// The certificate file (clients of this machine trust it: `portcullis api`, the attached app).
    pub cert_file: PathBuf,
    /// `AB:CD:…`: SHA-256 of the leaf certificate, as browsers show it.
    pub fingerprint: String,
}

impl std::fmt::Debug for ServedTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedTls")
            .field("cert_file", &self.cert_file)
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

fn tls_error(what: impl std::fmt::Display) -> HubError {
    HubError::Config(format!("TLS: {what}"))
}

/// The SHA-256 fingerprint of a DER certificate, colon-separated upper-case hex.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der).iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
}

/// The TLS `source` says, for a hub answering to `names` (host names and addresses), its self-signed
/// files (if any) kept under `config_dir`.
pub fn load(source: &TlsSource, config_dir: &Path, names: &[String]) -> Result<ServedTls, HubError> {
    let (cert_file, key_file) = match source {
        TlsSource::Files { cert, key } => (cert.clone(), key.clone()),
        TlsSource::SelfSigned => self_signed(config_dir, names)?,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_file)
        .map_err(|e| tls_error(format!("{}: {e}", cert_file.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| tls_error(format!("{}: {e}", cert_file.display())))?;
    let Some(leaf) = chain.first() else {
        return Err(tls_error(format!("{}: no certificate in it", cert_file.display())));
    };
    let fingerprint = fingerprint(leaf.as_ref());
    let key = PrivateKeyDer::from_pem_file(&key_file)
        .map_err(|e| tls_error(format!("{}: {e}", key_file.display())))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| tls_error(format!("{} and {}: {e}", cert_file.display(), key_file.display())))?;
    let mut config = config;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ServedTls { acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)), cert_file, fingerprint })
}

/// The self-signed certificate and key in `<config>/tls/`, made (owner-only) when missing or when they
/// do not name every one of `names` (recorded beside them).
fn self_signed(config_dir: &Path, names: &[String]) -> Result<(PathBuf, PathBuf), HubError> {
    let dir = config_dir.join("tls");
    let (cert, key, named) = (dir.join("hub-cert.pem"), dir.join("hub-key.pem"), dir.join("hub-names.txt"));
    let wanted = names.join("\n");
    if cert.is_file() && key.is_file() && std::fs::read_to_string(&named).is_ok_and(|n| n == wanted) {
        return Ok((cert, key));
    }
    std::fs::create_dir_all(&dir).map_err(|e| tls_error(format!("{}: {e}", dir.display())))?;
    let made = rcgen::generate_simple_self_signed(names.to_vec()).map_err(tls_error)?;
    write_private(&key, made.signing_key.serialize_pem().as_bytes())?;
    write_private(&cert, made.cert.pem().as_bytes())?;
    write_private(&named, wanted.as_bytes())?;
    tracing::info!(file = %cert.display(), "made a self-signed certificate for {}", names.join(", "));
    Ok((cert, key))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), HubError> {
    use std::io::Write as _;
    let temp = path.with_extension(format!("tmp.{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| tls_error(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_certificate_is_made_once_for_the_names_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["127.0.0.1".to_owned(), "devbox.example".to_owned()];
        let first = load(&TlsSource::SelfSigned, dir.path(), &names).unwrap();
        assert_eq!(first.fingerprint.split(':').count(), 32);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.path().join("tls/hub-key.pem")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o077, 0, "the key is the owner's only");
        let again = load(&TlsSource::SelfSigned, dir.path(), &names).unwrap();
        assert_eq!(first.fingerprint, again.fingerprint, "kept while the names are the same");
        let other = load(&TlsSource::SelfSigned, dir.path(), &["10.0.0.2".to_owned()]).unwrap();
        assert_ne!(first.fingerprint, other.fingerprint, "made again for other names");
    }

    #[test]
    fn files_that_are_not_a_certificate_and_key_say_which() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, "not a certificate").unwrap();
        let source = TlsSource::Files { cert: cert.clone(), key: dir.path().join("missing.pem") };
        let e = load(&source, dir.path(), &[]).unwrap_err().to_string();
        assert!(e.contains("cert.pem"), "{e}");
    }
}
