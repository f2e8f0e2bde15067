//! Helpers that build the coding tools' [`ToolError`]s (their codes are the workspace's `CallErrorCode`).

use portcullis_harness::CallErrorCode;
use portcullis_harness::ToolError;
use std::io;
use std::path::Path;

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
