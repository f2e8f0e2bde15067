//! The folders Portcullis keeps its files in (the user's config and data folders) and the one rule
//! for where a policy's "." points. A leaf of paths alone: a layer read from a file (`layer`), the
//! protected places and discovery all ask it, and it asks none of them.

use std::path::{Path, PathBuf};

/// The user's config folder for Portcullis: `$PORTCULLIS_CONFIG_DIR`, else
/// `$XDG_CONFIG_HOME/portcullis`, else `~/.config/portcullis`.
pub fn user_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PORTCULLIS_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("portcullis"));
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".config/portcullis"))
}

/// The user's data folder for Portcullis (the default ledger's): `$PORTCULLIS_DATA_DIR`, else
/// `$XDG_DATA_HOME/portcullis`, else `~/.local/share/portcullis`.
pub fn user_data_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PORTCULLIS_DATA_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("portcullis"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".local/share/portcullis"))
}

/// Where the relative roots of the policy `file` ("." and the like) point when it is applied to
/// `project`: a file in a project's `.portcullis` folder belongs to that project, so its "." is that
/// project; any other file (the user's, one kept elsewhere and named by `--policy`, the built-in
/// default) belongs to no project, so its "." is the project it is applied to. Every front end and
/// replay use this rule.
pub fn roots_anchor(file: &Path, project: &Path) -> PathBuf {
    let absolute = if file.is_relative() {
        std::env::current_dir().map(|d| d.join(file)).unwrap_or_else(|_| file.to_path_buf())
    } else {
        file.to_path_buf()
    };
    match own_project(&absolute) {
        Some(own) => own.to_path_buf(),
        None => project.to_path_buf(),
    }
}

/// The project the policy file `file` belongs to: the folder holding its `.portcullis` folder.
fn own_project(file: &Path) -> Option<&Path> {
    let folder = file.parent()?;
    if folder.file_name()? == ".portcullis" { folder.parent() } else { None }
}

/// Whether the "." of the policy named `source` is the project it is applied to (see
/// [`roots_anchor`]), so a replay anchors it at each recorded call's project.
pub fn anchored_where_applied(source: &str) -> bool {
    own_project(Path::new(source)).is_none()
}
