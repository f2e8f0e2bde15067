//! Connecting to a team ledger: plain or TLS by the URL's `sslmode`, the connection's driver task
//! spawned, and a failure said with the server's own words.

use crate::error::{TeamError, driver_text};
use crate::target::{TeamDb, TlsMode};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;
use tokio_postgres::Client;

/// A connected client (its connection runs on a task of its own until the client is dropped or the
/// server goes away).
pub async fn connect(db: &TeamDb) -> Result<Client, TeamError> {
    let unreachable =
        |e: tokio_postgres::Error| TeamError::Connect { url: db.to_string(), why: driver_text(&e) };
    match db.tls() {
        TlsMode::Disable => {
            let (client, connection) =
                db.config().connect(tokio_postgres::NoTls).await.map_err(unreachable)?;
            spawn_driver(db, connection);
            Ok(client)
        }
        TlsMode::Verified { roots, .. } => {
            let tls = tokio_postgres_rustls::MakeRustlsConnect::new(client_config(roots.as_deref())?);
            let (client, connection) = db.config().connect(tls).await.map_err(unreachable)?;
            spawn_driver(db, connection);
            Ok(client)
        }
    }
}

fn spawn_driver<S, T>(db: &TeamDb, connection: tokio_postgres::Connection<S, T>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let url = db.to_string();
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(%url, error = %driver_text(&e), "team ledger connection closed");
        }
    });
}

/// rustls trusting `roots` (a PEM file), else the system's roots.
fn client_config(roots: Option<&Path>) -> Result<rustls::ClientConfig, TeamError> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        Some(file) => {
            let bad = |why: String| TeamError::TlsRoots { file: file.to_owned(), why };
            let certs = CertificateDer::pem_file_iter(file)
                .map_err(|e| bad(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad("it holds no PEM certificate".into()));
            }
            for cert in certs {
                store.add(cert).map_err(|e| bad(e.to_string()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = store.add(cert);
            }
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TeamError::TlsRoots {
            file: roots.unwrap_or(Path::new("(system)")).to_owned(),
            why: e.to_string(),
        })?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(config)
}
