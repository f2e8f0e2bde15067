//! Canonical paths for `ExecutionAction`s: one resolver that tools (which describe actions) and policies
//! (which judge them) both call, so the path approved is the path the tool resolves.
//!
//! Unlike `std::fs::canonicalize`, a path whose tail does not exist yet (a new file in new nested
//! folders) still resolves: the existing prefix is resolved component by component, following every
//! symlink (dangling ones included: writing through one creates its target), and the missing tail is
//! appended lexically.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use thiserror::Error;

/// Most symlinks followed while resolving one path (as Linux's `MAXSYMLINKS`).
pub const MAX_SYMLINKS: usize = 40;

#[derive(Debug, Error)]
pub enum PathError {
    #[error("{0} is not absolute")]
    NotAbsolute(PathBuf),
    #[error("{0}: too many levels of symbolic links")]
    TooManyLinks(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// What one look at a path (its `lstat`, and `readlink` for a link) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A symbolic link, with its target as written.
    Link(PathBuf),
    /// Something that is not a link (a file, a folder ...).
    Present,
    /// Nothing there (`ENOENT`, or a component before it is not a folder: `ENOTDIR`).
    Missing,
}

/// Looks at `path` itself (a final link not followed): the one lookup the resolver makes per component.
/// An error other than a missing path is returned as it is.
pub fn look(path: &Path) -> io::Result<Found> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(path).map(Found::Link),
        Ok(_) => Ok(Found::Present),
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
            Ok(Found::Missing)
        }
        Err(e) => Err(e),
    }
}

/// Canonicalizes an absolute path whose tail may not exist.
pub fn canonicalize_lenient(path: &Path) -> Result<PathBuf, PathError> {
    canonicalize_lenient_with(path, &mut look)
}

/// [`canonicalize_lenient`] with the lookup of each component given (e.g. one that remembers what an
/// evaluation already looked at); `look` must answer as [`look`] does.
pub fn canonicalize_lenient_with(
    path: &Path,
    look: &mut dyn FnMut(&Path) -> io::Result<Found>,
) -> Result<PathBuf, PathError> {
    if !path.is_absolute() {
        return Err(PathError::NotAbsolute(path.to_owned()));
    }
    resolve_from(PathBuf::from("/"), path, path, look)
}

/// Canonicalizes `relative` against `base`, which must already be canonical (its components are not
/// looked at again: one `lstat` per component of `relative` instead of one per component of the whole
/// path). An absolute `relative` is canonicalized from the root.
pub fn canonicalize_lenient_under(base: &Path, relative: &Path) -> Result<PathBuf, PathError> {
    canonicalize_lenient_under_with(base, relative, &mut look)
}

/// [`canonicalize_lenient_under`] with the lookup of each component given (see
/// [`canonicalize_lenient_with`]).
pub fn canonicalize_lenient_under_with(
    base: &Path,
    relative: &Path,
    look: &mut dyn FnMut(&Path) -> io::Result<Found>,
) -> Result<PathBuf, PathError> {
    if relative.is_absolute() {
        return canonicalize_lenient_with(relative, look);
    }
    if !base.is_absolute() {
        return Err(PathError::NotAbsolute(base.to_owned()));
    }
    resolve_from(base.to_path_buf(), relative, &base.join(relative), look)
}

fn resolve_from(
    start: PathBuf,
    path: &Path,
    shown: &Path,
    look: &mut dyn FnMut(&Path) -> io::Result<Found>,
) -> Result<PathBuf, PathError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, path, false);
    let mut out = start;
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
        match look(&out) {
            Ok(Found::Link(target)) => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(PathError::TooManyLinks(shown.to_owned()));
                }
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_components(&mut pending, &target, true);
            }
            Ok(Found::Present) => {}
            Ok(Found::Missing) => missing = true,
            Err(source) => return Err(PathError::Io { path: out, source }),
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
pub fn is_inside(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_a_canonical_base_matches_the_whole_resolution() {
        let dir = std::env::temp_dir().join(format!("portcullis-under-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("real/sub")).unwrap();
        let _ = std::fs::remove_file(dir.join("link"));
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        let base = canonicalize_lenient(&dir).unwrap();
        for rel in ["link/sub/x", "real/../link/new/y", "../outside", "missing/../../z", "link"] {
            assert_eq!(
                canonicalize_lenient_under(&base, Path::new(rel)).unwrap(),
                canonicalize_lenient(&base.join(rel)).unwrap(),
                "{rel}"
            );
        }
        assert_eq!(
            canonicalize_lenient_under(&base, Path::new("/etc/../tmp")).unwrap(),
            PathBuf::from("/tmp")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_tails_and_dotdot() {
        let p = canonicalize_lenient(Path::new("/definitely/not/here/a/../b/./c")).unwrap();
        assert_eq!(p, PathBuf::from("/definitely/not/here/b/c"));
        assert_eq!(canonicalize_lenient(Path::new("/definitely/../../..")).unwrap(), PathBuf::from("/"));
        assert!(matches!(canonicalize_lenient(Path::new("rel")), Err(PathError::NotAbsolute(_))));
    }

    #[test]
    fn symlink_loops_are_refused() {
        let dir = std::env::temp_dir().join(format!("portcullis-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.join("b"), dir.join("a")).unwrap();
            std::os::unix::fs::symlink(dir.join("a"), dir.join("b")).unwrap();
            assert!(matches!(canonicalize_lenient(&dir.join("a/x")), Err(PathError::TooManyLinks(_))));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
