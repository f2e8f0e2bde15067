//! The hub's end of one command's way out: a Unix socket in an owner-only folder of its own with a name
//! nobody can guess, opened before the command starts and closed when it ends. The launcher's relay
//! (inside the command's network namespace) opens one stream to it per connection the command makes,
//! tagged as a TCP stream (served by the proxy under this command's rules) or a DNS question (refused,
//! and recorded). Every connection ends as one [`Connection`], which [`OpenGate::close`] returns for the
//! call's record.

use super::proxy::{EgressRules, Resolver, serve_connection};
use super::{TAG_DNS, TAG_STREAM};
use portcullis_harness::{Connection, ConnectionKind};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Connections served at once for one command (more wait their turn).
const AT_ONCE: usize = 256;
/// Connections kept for the record; past this only a count (a command looping on connects must not grow
/// the record without bound).
pub const KEPT: usize = 1000;
/// How long closing waits for connections still relaying (the command has ended: they end with it).
const DRAIN: Duration = Duration::from_secs(2);
/// The longest DNS name reported (a name is at most 253 characters).
const MAX_NAME: usize = 255;

/// How a gate is opened: the rules and the resolver of the proxy behind it.
#[derive(Debug, Clone)]
pub struct EgressGate {
    pub rules: EgressRules,
    pub resolver: Resolver,
}

/// A gate waiting for the command's connections.
#[derive(Debug)]
pub struct OpenGate {
    dir: PathBuf,
    socket: PathBuf,
    accepting: tokio::task::JoinHandle<()>,
    served: Arc<Mutex<Served>>,
}

#[derive(Debug, Default)]
struct Served {
    kept: Vec<Connection>,
    /// Connections past [`KEPT`], counted only.
    dropped: u64,
    tasks: Option<JoinSet<()>>,
}

/// What a command's connections were, once its gate closed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateRecord {
    pub connections: Vec<Connection>,
    /// Connections past the first [`KEPT`], not kept.
    pub dropped: u64,
}

impl EgressGate {
    /// Opens the socket under `parent` (the system's temporary folder when `None`). Call it within a
    /// tokio runtime.
    pub fn open(self, parent: Option<&Path>) -> std::io::Result<OpenGate> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let dir = unguessable_dir(&parent)?;
        let socket = dir.join("gate.sock");
        let listener = match UnixListener::bind(&socket) {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let served = Arc::new(Mutex::new(Served { tasks: Some(JoinSet::new()), ..Served::default() }));
        let rules = Arc::new(self.rules);
        let resolver = Arc::new(self.resolver);
        let room = Arc::new(Semaphore::new(AT_ONCE));
        let state = served.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (rules, resolver, state2, room) =
                    (rules.clone(), resolver.clone(), state.clone(), room.clone());
                let task = async move {
                    let Ok(_turn) = room.acquire_owned().await else { return };
                    if let Some(connection) = serve_tagged(stream, &rules, &resolver).await {
                        keep(&state2, connection);
                    }
                };
                let mut guard = state.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(tasks) = guard.tasks.as_mut() {
                    tasks.spawn(task);
                    // Finished tasks are let go as the command goes on, not only at the end.
                    while tasks.try_join_next().is_some() {}
                }
            }
        });
        Ok(OpenGate { dir, socket, accepting, served })
    }
}

impl OpenGate {
    /// The socket the relay connects to (handed to the launcher in the request).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stops accepting, waits (briefly) for the connections still open, and returns them all.
    pub async fn close(self) -> GateRecord {
        self.accepting.abort();
        let tasks = self.served.lock().unwrap_or_else(PoisonError::into_inner).tasks.take();
        if let Some(mut tasks) = tasks {
            let drained =
                tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} }).await;
            if drained.is_err() {
                tasks.abort_all();
                tracing::debug!("egress connections still open when the command's gate closed were cut");
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        GateRecord { connections: std::mem::take(&mut served.kept), dropped: served.dropped }
    }
}

impl Drop for OpenGate {
    fn drop(&mut self) {
        self.accepting.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn keep(state: &Mutex<Served>, connection: Connection) {
    let mut served = state.lock().unwrap_or_else(PoisonError::into_inner);
    if served.kept.len() < KEPT {
        served.kept.push(connection);
    } else {
        served.dropped += 1;
    }
}

/// Serves one stream from the relay by its tag.
async fn serve_tagged(
    mut stream: UnixStream,
    rules: &EgressRules,
    resolver: &Resolver,
) -> Option<Connection> {
    let tag = stream.read_u8().await.ok()?;
    match tag {
        TAG_STREAM => serve_connection(stream, rules, resolver).await,
        TAG_DNS => {
            let mut line = Vec::new();
            let mut reader = BufReader::new(stream).take(MAX_NAME as u64 + 1);
            reader.read_until(b'\n', &mut line).await.ok()?;
            let name: String =
                String::from_utf8_lossy(&line).trim_end_matches('\n').chars().take(MAX_NAME).collect();
            Some(dns_refusal(name, rules))
        }
        _ => None,
    }
}

/// The record of a DNS question: always refused (the proxy resolves the names it lets through), with
/// what the command should do instead.
pub fn dns_refusal(name: String, rules: &EgressRules) -> Connection {
    let why = if rules.allows(&name, 443) || rules.allows(&name, 80) {
        format!(
            "DNS lookup of {name} refused: the command has no resolver; {name} is reached through the proxy (HTTPS_PROXY), which resolves it"
        )
    } else {
        format!("DNS lookup of {name} refused: the command has no resolver, and {}", rules.allowed_words())
    };
    Connection::refused(ConnectionKind::Dns, name, 53, why)
}

/// A new owner-only folder under `parent` with a random name (a name made in advance is never reused).
fn unguessable_dir(parent: &Path) -> std::io::Result<PathBuf> {
    use std::hash::{BuildHasher, Hasher};
    let mut last = None;
    for _ in 0..8 {
        let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
        let dir = parent.join(format!("portcullis-egress-{}-{random:016x}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no folder for the egress gate")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::HostPattern;
    use tokio::io::AsyncWriteExt;

    fn gate() -> EgressGate {
        EgressGate {
            rules: EgressRules {
                hosts: vec![HostPattern::parse("registry.test").unwrap()],
                by: "rule `npm-install` (policy.json)".into(),
                ask: None,
            },
            resolver: Resolver::Map(Default::default()),
        }
    }

    #[tokio::test]
    async fn streams_and_dns_questions_are_recorded_and_the_folder_goes_with_the_gate() {
        let open = gate().open(None).unwrap();
        let socket = open.socket().to_path_buf();
        let dir = socket.parent().unwrap().to_path_buf();
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&dir).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700);

        let mut s = UnixStream::connect(&socket).await.unwrap();
        s.write_all(b"TCONNECT paste.example:443 HTTP/1.1\r\n\r\n").await.unwrap();
        let mut back = String::new();
        s.read_to_string(&mut back).await.unwrap();
        assert!(
            back.starts_with("HTTP/1.1 403") && back.contains("network to paste.example:443 refused"),
            "{back}"
        );

        for name in ["exfil-c2VjcmV0.paste.example", "registry.test"] {
            let mut s = UnixStream::connect(&socket).await.unwrap();
            s.write_all(format!("D{name}\n").as_bytes()).await.unwrap();
            drop(s);
        }
        // An unknown tag is dropped without a record.
        let mut s = UnixStream::connect(&socket).await.unwrap();
        s.write_all(b"Xwhatever").await.unwrap();
        drop(s);
        tokio::time::sleep(Duration::from_millis(100)).await;

        let record = open.close().await;
        assert!(!dir.exists(), "the gate's folder is removed when it closes");
        let mut c = record.connections;
        c.sort_by(|a, b| a.host.cmp(&b.host));
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!((c[0].kind, c[0].port, c[0].allowed), (ConnectionKind::Dns, 53, false));
        assert!(c[0].why.contains("allows registry.test"), "{}", c[0].why);
        assert_eq!(c[1].kind, ConnectionKind::Tcp);
        assert!(c[2].why.contains("reached through the proxy"), "{}", c[2].why);
    }
}
