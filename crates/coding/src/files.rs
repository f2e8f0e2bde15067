//! Opening files exactly at the evaluated canonical path: `O_NOFOLLOW` on the final component, dev/ino
//! and re-resolution checks. Replacing them is [`crate::replace`]'s (re-exported here). Blocking
//! functions: call them from `spawn_blocking`.

use crate::errors::{io_error, path_changed};
use crate::paths::canonicalize_lenient;
use nix::fcntl::OFlag;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{ActionKind, ExecutionAction, ToolError};
use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use crate::replace::{ExecBits, Expect, atomic_write};

/// The single canonical path of an evaluated file action.
pub fn action_path(action: &ExecutionAction, kind: ActionKind) -> Result<PathBuf, ToolError> {
    match (action.kind == kind, action.paths.as_slice()) {
        (true, [path]) => Ok(path.clone()),
        _ => Err(ToolError::new(
            CallErrorCode::BadAction,
            "the evaluated action does not name exactly one path",
        )),
    }
}

/// A file's identity (device and inode).
pub fn identity(meta: &Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// Opens the evaluated canonical `path` for reading and proves it is the evaluated file: the final
/// component is opened with `O_NOFOLLOW` (a symlink swapped in fails), the path still resolves to
/// itself (no directory swapped for a symlink), and the opened file's dev/ino is the path's.
/// Returns the file and its metadata; refuses anything but a regular file.
pub fn open_evaluated(path: &Path) -> Result<(File, Metadata), ToolError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(path)
        .map_err(|e| io_error(path, &e))?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    if canonicalize_lenient(path)? != path {
        return Err(path_changed(path));
    }
    let now = std::fs::symlink_metadata(path).map_err(|_| path_changed(path))?;
    if identity(&now) != identity(&meta) {
        return Err(path_changed(path));
    }
    if !meta.is_file() {
        return Err(ToolError::new(
            CallErrorCode::NotAFile,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok((file, meta))
}
