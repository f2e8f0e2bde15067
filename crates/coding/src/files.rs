//! Opening and replacing files exactly at the evaluated canonical path: `O_NOFOLLOW` on the final
//! component, dev/ino and re-resolution checks, atomic replace (temp file in the same folder, fsync,
//! rename). Blocking functions: call them from `spawn_blocking`.

use crate::errors::{codes, io_error, path_changed};
use crate::paths::canonicalize_lenient;
use nix::fcntl::OFlag;
use portcullis_harness::{ActionKind, ExecutionAction, ToolError};
use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The single canonical path of an evaluated file action.
pub fn action_path(action: &ExecutionAction, kind: ActionKind) -> Result<PathBuf, ToolError> {
    match (action.kind == kind, action.paths.as_slice()) {
        (true, [path]) => Ok(path.clone()),
        _ => Err(ToolError::new(codes::BAD_ACTION, "the evaluated action does not name exactly one path")),
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
        return Err(ToolError::new(codes::NOT_A_FILE, format!("{} is not a regular file", path.display())));
    }
    Ok((file, meta))
}

/// Creates the missing folders of `dir`, one component at a time, never following a symlink.
fn create_parents(dir: &Path) -> Result<(), ToolError> {
    let mut prefix = PathBuf::from("/");
    for part in dir.components().skip(1) {
        prefix.push(part);
        match std::fs::symlink_metadata(&prefix) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(path_changed(&prefix)),
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(ToolError::new(
                    codes::NOT_A_DIRECTORY,
                    format!("{} is not a directory", prefix.display()),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(&prefix) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let meta = std::fs::symlink_metadata(&prefix).map_err(|e| io_error(&prefix, &e))?;
                    if !meta.is_dir() {
                        return Err(path_changed(&prefix));
                    }
                }
                Err(e) => return Err(io_error(&prefix, &e)),
            },
            Err(e) => return Err(io_error(&prefix, &e)),
        }
    }
    Ok(())
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// What `atomic_write` expects to find at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever is there (a regular file or nothing).
    Any,
    /// The file with this dev/ino (an edit replaces the file it read).
    Identity(u64, u64),
}

/// Replaces the evaluated canonical `target` with `data`: creates missing parents (only when
/// `create_parents` is true), checks the parent still resolves to itself and the target is not a
/// symlink (or another file than expected), writes a temp file in the same folder (`O_EXCL` +
/// `O_NOFOLLOW`), fsyncs it, re-checks, renames it over the target and fsyncs the folder.
/// An existing target's permissions are kept.
pub fn atomic_write(
    target: &Path,
    data: &[u8],
    create_missing: bool,
    expect: Expect,
) -> Result<(), ToolError> {
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(ToolError::new(codes::INVALID_PATH, format!("{} has no file name", target.display())));
    };
    if create_missing {
        create_parents(parent)?;
    }
    check_parent(parent)?;
    let permissions = match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(path_changed(target)),
        Ok(meta) if !meta.is_file() => {
            return Err(ToolError::new(
                codes::NOT_A_FILE,
                format!("{} is not a regular file", target.display()),
            ));
        }
        Ok(meta) => {
            if let Expect::Identity(dev, ino) = expect
                && identity(&meta) != (dev, ino)
            {
                return Err(path_changed(target));
            }
            Some(meta.permissions())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if matches!(expect, Expect::Identity(..)) {
                return Err(path_changed(target));
            }
            None
        }
        Err(e) => return Err(io_error(target, &e)),
    };
    let temp = parent.join(format!(
        ".{}.portcullis-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_temp_and_rename(&temp, target, parent, data, permissions);
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn write_temp_and_rename(
    temp: &Path,
    target: &Path,
    parent: &Path,
    data: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> Result<(), ToolError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(temp)
        .map_err(|e| io_error(temp, &e))?;
    file.write_all(data).map_err(|e| io_error(temp, &e))?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions).map_err(|e| io_error(temp, &e))?;
    }
    file.sync_all().map_err(|e| io_error(temp, &e))?;
    drop(file);
    check_parent(parent)?;
    if std::fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(path_changed(target));
    }
    std::fs::rename(temp, target).map_err(|e| io_error(target, &e))?;
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The parent folder must still be the evaluated one: resolving it again gives itself.
fn check_parent(parent: &Path) -> Result<(), ToolError> {
    if canonicalize_lenient(parent)? != parent {
        return Err(path_changed(parent));
    }
    match std::fs::symlink_metadata(parent) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => {
            Err(ToolError::new(codes::NOT_A_DIRECTORY, format!("{} is not a directory", parent.display())))
        }
        Err(e) => Err(io_error(parent, &e)),
    }
}
