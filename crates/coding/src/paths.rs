//! Path resolution: canonical through the deepest existing ancestor, `..` collapsed, symlinks resolved.
//!
//! Unlike `std::fs::canonicalize`, a path whose tail does not exist yet (a new file in new nested
//! folders) still resolves: the existing prefix is resolved component by component (following every
//! symlink, dangling ones included), and the missing tail is appended lexically.

use crate::errors::{codes, io_error};
use portcullis_harness::ToolError;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Most symlinks followed while resolving one path (as Linux's `MAXSYMLINKS`).
pub const MAX_SYMLINKS: usize = 40;

/// Resolves `input` against `base` (used when `input` is relative) to a canonical absolute path.
pub fn resolve_path(base: &Path, input: &str) -> Result<PathBuf, ToolError> {
    if input.is_empty() {
        return Err(ToolError::new(codes::INVALID_PATH, "the path is empty"));
    }
    if input.contains('\0') {
        return Err(ToolError::new(codes::INVALID_PATH, "the path contains a NUL byte"));
    }
    let joined = if Path::new(input).is_absolute() { PathBuf::from(input) } else { base.join(input) };
    canonicalize_lenient(&joined)
}

/// Canonicalizes an absolute path whose tail may not exist.
pub fn canonicalize_lenient(path: &Path) -> Result<PathBuf, ToolError> {
    if !path.is_absolute() {
        return Err(ToolError::new(codes::INVALID_PATH, format!("{} is not absolute", path.display())));
    }
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, path, false);
    let mut out = PathBuf::from("/");
    let mut missing = false;
    let mut links = 0usize;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            out.pop();
            continue;
        }
        out.push(&part);
        if missing {
            continue;
        }
        match std::fs::symlink_metadata(&out) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(ToolError::new(
                        codes::INVALID_PATH,
                        format!("{}: too many levels of symbolic links", path.display()),
                    ));
                }
                let target = std::fs::read_link(&out).map_err(|e| io_error(&out, &e))?;
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_components(&mut pending, &target, true);
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                missing = true;
            }
            Err(e) => return Err(io_error(&out, &e)),
        }
    }
    Ok(out)
}

/// Queues the normal and `..` components of `path` (at the front when `front`, keeping their order).
fn push_components(pending: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    if front {
        for part in parts.into_iter().rev() {
            pending.push_front(part);
        }
    } else {
        pending.extend(parts);
    }
}

/// Whether the canonical `path` is `root` or inside it (both canonical).
pub fn is_inside(root: &Path, path: &Path) -> bool {
    path.starts_with(root)
}
