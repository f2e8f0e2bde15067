//! The workspace the coding tools share: its canonical root, bounds, environment pass-through and the
//! per-path write locks.

use crate::errors::io_error;
use crate::paths::{canonicalize_lenient, is_inside, resolve_path};
use portcullis_harness::CallErrorCode;
use portcullis_harness::{CallContext, ToolError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Hard cap on image bytes, whatever the configuration says.
pub const IMAGE_BYTES_HARD_CAP: u64 = 32 * 1024 * 1024;
/// Hard cap on a shell timeout, whatever the call or configuration asks.
pub const SHELL_TIMEOUT_HARD_CAP: Duration = Duration::from_secs(600);

/// Bounds of the coding tools. `Limits::default()` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Shell timeout when the call gives none (120 s).
    pub shell_timeout: Duration,
    /// Longest shell timeout a call may ask for (600 s; never above [`SHELL_TIMEOUT_HARD_CAP`]).
    pub shell_timeout_max: Duration,
    /// Bytes kept of each of stdout and stderr (64 KiB): head + tail, the middle counted.
    pub shell_output_bytes: usize,
    /// Time between SIGTERM and SIGKILL of the process group (1 s).
    pub shell_kill_grace: Duration,
    /// Bytes of text one read returns (256 KiB).
    pub read_text_bytes: usize,
    /// Lines one read returns when the call gives no limit (2000).
    pub read_default_lines: u64,
    /// Image bytes (file size, and base64 payload returned) (10,000,000; capped at 32 MiB).
    pub image_bytes: u64,
    /// Decoder limits used when an image is downscaled: width and height (16,384 each).
    pub image_max_side: u32,
    /// Images are downscaled to at most this many pixels on their longer side (the policy's
    /// `images.max_dimension`); a call's own `max_dimension` can only ask for less. None: no bound.
    pub image_max_dimension: Option<u32>,
    /// Decoder allocation limit (256 MiB).
    pub image_max_alloc: u64,
    /// Largest content `write` accepts (10 MiB).
    pub write_bytes: usize,
    /// Largest file `edit` reads or writes (10 MiB).
    pub edit_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            shell_timeout: Duration::from_secs(120),
            shell_timeout_max: SHELL_TIMEOUT_HARD_CAP,
            shell_output_bytes: 64 * 1024,
            shell_kill_grace: Duration::from_secs(1),
            read_text_bytes: 256 * 1024,
            read_default_lines: 2000,
            image_bytes: 10_000_000,
            image_max_side: 16_384,
            image_max_dimension: None,
            image_max_alloc: 256 * 1024 * 1024,
            write_bytes: 10 * 1024 * 1024,
            edit_bytes: 10 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The image byte bound in force (configured, capped).
    pub fn image_bytes_bound(&self) -> u64 {
        self.image_bytes.min(IMAGE_BYTES_HARD_CAP)
    }

    pub fn shell_timeout_cap(&self) -> Duration {
        self.shell_timeout_max.min(SHELL_TIMEOUT_HARD_CAP)
    }
}

/// Environment names the shell always passes through (when set); `LC_*` is passed as a prefix.
pub const DEFAULT_ENV_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TERM",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TZ",
    "COLORTERM",
    "NO_COLOR",
];

/// The project the tools work in.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    pub limits: Limits,
    /// Extra environment variable names the shell passes through (exact names).
    pub env_passthrough: Vec<String>,
    /// The launcher that runs commands inside their sandbox; none: a confined profile cannot run.
    pub sandbox: Option<portcullis_sandbox::SandboxLauncher>,
    /// Where what copy-on-write commits replaced is kept for an undo (none: not kept).
    pub undo_store: Option<PathBuf>,
    locks: PathLocks,
}

impl Workspace {
    /// A workspace rooted at `root` (must exist; it is canonicalized).
    pub fn new(root: impl AsRef<Path>) -> Result<Self, ToolError> {
        let root = root.as_ref();
        let root = std::fs::canonicalize(root).map_err(|e| io_error(root, &e))?;
        if !root.is_dir() {
            return Err(ToolError::new(
                CallErrorCode::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(Workspace {
            root,
            limits: Limits::default(),
            env_passthrough: Vec::new(),
            sandbox: None,
            undo_store: None,
            locks: PathLocks::default(),
        })
    }

    /// Keeps what copy-on-write commits replace in `store`, for an undo.
    pub fn with_undo_store(mut self, store: Option<PathBuf>) -> Self {
        self.undo_store = store;
        self
    }

    /// Where the commit of a call's changes keeps what it replaced.
    pub fn undo_target(
        &self,
        call: &portcullis_harness::CallContext,
    ) -> Option<portcullis_sandbox::undo::UndoTarget> {
        let store = self.undo_store.as_ref()?;
        Some(portcullis_sandbox::undo::UndoTarget::new(store, &call.session_id, &call.call_id))
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs confined commands through `launcher`.
    pub fn with_sandbox(mut self, launcher: Option<portcullis_sandbox::SandboxLauncher>) -> Self {
        self.sandbox = launcher;
        self
    }

    /// Names of extra environment variables the shell inherits (for example `CARGO_HOME`).
    pub fn with_env_passthrough<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.env_passthrough.extend(names.into_iter().map(Into::into));
        self
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where relative paths of this call resolve: the call's cwd when it is inside the root, else the root.
    pub fn base_dir(&self, call: &CallContext) -> PathBuf {
        call.cwd
            .as_deref()
            .filter(|cwd| cwd.is_absolute())
            .and_then(|cwd| canonicalize_lenient(cwd).ok())
            .filter(|cwd| is_inside(&self.root, cwd))
            .unwrap_or_else(|| self.root.clone())
    }

    /// Resolves a path argument of this call to its canonical form (see [`crate::paths`]).
    pub fn resolve(&self, input: &str, call: &CallContext) -> Result<PathBuf, ToolError> {
        resolve_path(&self.base_dir(call), input)
    }

    pub fn is_inside(&self, canonical: &Path) -> bool {
        is_inside(&self.root, canonical)
    }

    /// The async mutex serializing writes to one canonical path.
    pub fn lock_for(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        self.locks.get(path)
    }
}

/// Per-path async mutexes, dropped when nobody holds them.
#[derive(Debug, Default)]
struct PathLocks {
    map: Mutex<HashMap<PathBuf, Weak<tokio::sync::Mutex<()>>>>,
}

impl PathLocks {
    fn get(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(lock) = map.get(path).and_then(Weak::upgrade) {
            return lock;
        }
        if map.len() >= 1024 {
            map.retain(|_, weak| weak.strong_count() > 0);
        }
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        map.insert(path.to_path_buf(), Arc::downgrade(&lock));
        lock
    }
}
