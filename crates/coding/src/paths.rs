//! Path resolution for the coding tools: argument checks, then the harness's canonical resolver
//! (`portcullis_harness::paths`), the same one the policy judges with.

use crate::errors::io_error;
use portcullis_harness::CallErrorCode;
use portcullis_harness::ToolError;
use portcullis_harness::paths::{self as harness_paths, PathError};
use std::path::{Path, PathBuf};

/// Resolves `input` against `base` (used when `input` is relative) to a canonical absolute path.
pub fn resolve_path(base: &Path, input: &str) -> Result<PathBuf, ToolError> {
    if input.is_empty() {
        return Err(ToolError::new(CallErrorCode::InvalidPath, "the path is empty"));
    }
    if input.contains('\0') {
        return Err(ToolError::new(CallErrorCode::InvalidPath, "the path contains a NUL byte"));
    }
    if input.starts_with('~') {
        // Taken literally, `~/.bashrc` would be a folder named `~` in the project; the caller meant the
        // home folder, which the tools do not guess.
        return Err(ToolError::new(
            CallErrorCode::InvalidPath,
            format!(
                "{input:?}: `~` is not expanded here; give a path inside the project, or an absolute path"
            ),
        ));
    }
    let joined = if Path::new(input).is_absolute() { PathBuf::from(input) } else { base.join(input) };
    canonicalize_lenient(&joined)
}

/// Canonicalizes an absolute path whose tail may not exist (the harness's resolver, as a tool error).
pub fn canonicalize_lenient(path: &Path) -> Result<PathBuf, ToolError> {
    harness_paths::canonicalize_lenient(path).map_err(|e| match e {
        PathError::Io { path, source } => io_error(&path, &source),
        other => ToolError::new(CallErrorCode::InvalidPath, other.to_string()),
    })
}

/// Whether the canonical `path` is `root` or inside it (both canonical).
pub fn is_inside(root: &Path, path: &Path) -> bool {
    harness_paths::is_inside(path, root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `~` is never taken literally (a folder named `~` in the project) nor guessed (a home folder).
    #[test]
    fn a_leading_tilde_is_refused() {
        let base = std::env::temp_dir();
        for input in ["~", "~/.bashrc", "~root/.ssh/id_rsa", "~backup"] {
            let e = resolve_path(&base, input).unwrap_err();
            assert_eq!(e.code, CallErrorCode::InvalidPath, "{input}");
            assert!(e.message.contains("not expanded"), "{input}: {}", e.message);
        }
        assert!(resolve_path(&base, "notes~").is_ok());
        assert!(resolve_path(&base, "a/~b").is_ok());
    }
}
