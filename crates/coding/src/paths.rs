//! Path resolution for the coding tools: argument checks, then the harness's canonical resolver
//! (`portcullis_harness::paths`), the same one the policy judges with.

use crate::errors::{codes, io_error};
use portcullis_harness::ToolError;
use portcullis_harness::paths::{self as harness_paths, PathError};
use std::path::{Path, PathBuf};

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

/// Canonicalizes an absolute path whose tail may not exist (the harness's resolver, as a tool error).
pub fn canonicalize_lenient(path: &Path) -> Result<PathBuf, ToolError> {
    harness_paths::canonicalize_lenient(path).map_err(|e| match e {
        PathError::Io { path, source } => io_error(&path, &source),
        other => ToolError::new(codes::INVALID_PATH, other.to_string()),
    })
}

/// Whether the canonical `path` is `root` or inside it (both canonical).
pub fn is_inside(root: &Path, path: &Path) -> bool {
    harness_paths::is_inside(path, root)
}
