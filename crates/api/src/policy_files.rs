//! Policy files through the operator API: the layered policy with each layer's file, a draft's text
//! checked without saving (with the line and column of what is wrong), and a save that is atomic and
//! refused when the file changed on disk since it was read — a broken or stale text never replaces the
//! working one.

use super::error::{ApiError, ErrorCode};
use super::types::{PolicyFile, PolicySummary};
use portcullis_policy::discovery::layers_for;
use portcullis_policy::{Policy, PolicyError, PolicyLayer};
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The version of a policy text: FNV-1a over its bytes, as hex (stable across builds and machines).
pub fn version_of(text: &str) -> String {
    format!("{:016x}", portcullis_harness::fnv::Fnv1a::of(text.as_bytes()))
}

/// The policy that applies in `cwd` (the named files, else the user's and the project's, else the
/// built-in default), each layer with its text and version.
pub fn policy_files(files: &[PathBuf], cwd: &Path) -> Result<Vec<PolicyFile>, ApiError> {
    let layers = layers_for(files, cwd)?;
    Ok(layers
        .into_iter()
        .enumerate()
        .map(|(layer, l)| {
            let text = l.text.unwrap_or_default();
            let editable = Path::new(&l.source).is_absolute() && Path::new(&l.source).is_file();
            PolicyFile { version: version_of(&text), source: l.source, layer, text, editable }
        })
        .collect())
}

/// Checks a draft of the policy file `path`, applied to `project`, without saving it: it parses, its
/// rules hold their examples, its servers and grants are valid. The error says where (`details`: file,
/// line, column, rule).
pub fn validate_policy(path: &Path, text: &str, project: &Path) -> Result<PolicySummary, ApiError> {
    let layer = parse_for(path, text, project)?;
    let summary = summary_of(&layer);
    Policy::from_layers(vec![layer]).map_err(located)?;
    Ok(summary)
}

/// Saves `text` as the policy file `path`, if it is valid and the file on disk is still the version
/// the editor read (`expected_version`; `None` for a file that must not exist yet). Written to a
/// temporary file beside it, flushed, then renamed over it: readers see the old or the new text,
/// never a part. Returns the new version.
pub fn save_policy(
    path: &Path,
    text: &str,
    expected_version: Option<&str>,
    project: &Path,
) -> Result<String, ApiError> {
    validate_policy(path, text, project)?;
    let current = match std::fs::read_to_string(path) {
        Ok(current) => Some(version_of(&current)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(path, "read", &e)),
    };
    if current.as_deref() != expected_version {
        return Err(ApiError::new(
            ErrorCode::PolicyChanged,
            format!(
                "{} changed on disk since it was read; reload it and apply the edit again",
                path.display()
            ),
            json!({ "file": path, "expected_version": expected_version, "version_on_disk": current }),
        ));
    }
    write_atomically(path, text).map_err(|e| io_error(path, "write", &e))?;
    Ok(version_of(text))
}

/// Writes a temporary file beside `path` (same permissions), flushes it, and renames it over `path`.
pub(super) fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.{}.saving", std::process::id()));
    let mode = std::fs::metadata(path).map(|m| m.permissions().mode()).unwrap_or(0o600);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// What a parsed policy file holds.
pub(super) fn summary_of(layer: &PolicyLayer) -> PolicySummary {
    let rules = &layer.document.commands.rules;
    PolicySummary {
        rules: rules.len(),
        examples: rules.iter().map(|r| r.examples.len() + r.not_match.len()).sum(),
        tests: layer.document.tests.len(),
        servers: layer.document.servers.len(),
    }
}

/// The draft `text` of the policy file `path` applied to `project`, its relative roots anchored by the
/// one rule ([`portcullis_policy::discovery::roots_anchor`]).
pub(super) fn parse_for(path: &Path, text: &str, project: &Path) -> Result<PolicyLayer, ApiError> {
    let root = portcullis_policy::discovery::roots_anchor(path, project);
    PolicyLayer::parse(&path.display().to_string(), text, root).map_err(located)
}

/// A policy error with where it is as details.
pub(super) fn located(e: PolicyError) -> ApiError {
    let details = match &e {
        PolicyError::Syntax { file, line, column, .. } => {
            json!({ "file": file, "line": line, "column": column })
        }
        PolicyError::Rule { file, line, column, rule, .. } => {
            json!({ "file": file, "line": line, "column": column, "rule": rule })
        }
        PolicyError::Invalid { file, .. } | PolicyError::Io { file, .. } => json!({ "file": file }),
    };
    ApiError::new(ErrorCode::of_policy(&e), e.to_string(), details)
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> ApiError {
    ApiError::new(
        ErrorCode::BadArgument,
        format!("cannot {what} {}: {e}", path.display()),
        json!({ "file": path }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_stable_and_differ_with_the_text() {
        assert_eq!(version_of(""), "cbf29ce484222325");
        assert_eq!(version_of("a"), "af63dc4c8601ec8c");
        assert_ne!(version_of("{}"), version_of("{ }"));
    }
}
