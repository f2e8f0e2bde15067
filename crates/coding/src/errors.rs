//! Stable error codes of the coding tools and helpers that build [`ToolError`]s.

use portcullis_harness::CallErrorCode;
use portcullis_harness::ToolError;
use std::io;
use std::path::Path;

/// Stable `ToolError::code` values.
pub mod codes {
    /// The path is not the one the policy evaluated any more (a symlink or directory was swapped in).
    pub const PATH_CHANGED: &str = "path_changed";
    pub const NOT_FOUND: &str = "not_found";
    pub const TOO_LARGE: &str = "too_large";
    pub const NOT_UNIQUE: &str = "not_unique";
    pub const NO_MATCH: &str = "no_match";
    pub const TIMEOUT: &str = "timeout";
    pub const CANCELLED: &str = "cancelled";
    pub const INVALID_PATH: &str = "invalid_path";
    pub const INVALID_ARGUMENT: &str = "invalid_argument";
    /// A shell cwd outside the workspace root.
    pub const OUTSIDE_ROOT: &str = "outside_root";
    pub const NOT_A_FILE: &str = "not_a_file";
    pub const NOT_A_DIRECTORY: &str = "not_a_directory";
    pub const NOT_TEXT: &str = "not_text";
    /// An image the decoder refused (dimensions or allocation over the limits, or corrupt).
    pub const IMAGE_REFUSED: &str = "image_refused";
    pub const SPAWN_FAILED: &str = "spawn_failed";
    /// The sandbox a command must run in could not be built (or this hub has no launcher): it did not run.
    pub const SANDBOX_FAILED: &str = "sandbox_failed";
    pub const IO: &str = "io_error";
    /// The evaluated action is not one this tool can execute (no path, wrong kind).
    pub const BAD_ACTION: &str = "bad_action";
}

/// Maps an IO error on `path` to a tool error with a stable code.
pub fn io_error(path: &Path, err: &io::Error) -> ToolError {
    let shown = path.display();
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::new(CallErrorCode::NotFound, format!("{shown}: no such file")),
        io::ErrorKind::NotADirectory => {
            ToolError::new(CallErrorCode::NotFound, format!("{shown}: a parent is not a directory"))
        }
        io::ErrorKind::IsADirectory => {
            ToolError::new(CallErrorCode::NotAFile, format!("{shown} is a directory"))
        }
        _ if err.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) => path_changed(path),
        _ => ToolError::new(CallErrorCode::Io, format!("{shown}: {err}")),
    }
}

pub fn path_changed(path: &Path) -> ToolError {
    ToolError::new(
        CallErrorCode::PathChanged,
        format!(
            "{} changed since the policy evaluated it (symlink or directory swapped); refusing",
            path.display()
        ),
    )
}

pub fn too_large(what: &str, size: u64, limit: u64) -> ToolError {
    ToolError::new(
        CallErrorCode::TooLarge,
        format!("{what} is {size} bytes, over the limit of {limit} bytes"),
    )
    .with_details(serde_json::json!({ "size": size, "limit": limit }))
}

pub fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(CallErrorCode::InvalidArgument, message)
}

/// A blocking task that failed to join (panicked or was cancelled).
pub fn join_error(err: &tokio::task::JoinError) -> ToolError {
    ToolError::new(CallErrorCode::Io, format!("file task failed: {err}"))
}
