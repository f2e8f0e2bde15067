//! Where policies are found when none is named: the user's (config dir) first, then the project's
//! (the nearest `.portcullis/policy.json` at or above the working directory). With neither, the
//! built-in default policy applies, rooted at the working directory.

use crate::policy::{Policy, PolicyError, PolicyLayer};
use std::path::{Path, PathBuf};

/// The built-in default policy (`tool-manifests/policies/default.json`).
pub const DEFAULT_POLICY: &str = include_str!("../../../tool-manifests/policies/default.json");
/// How the built-in default is named in matched rules and errors.
pub const DEFAULT_POLICY_SOURCE: &str = "built-in default policy";

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

/// The user's policy file, if it exists.
pub fn user_policy_file() -> Option<PathBuf> {
    user_config_dir().map(|d| d.join("policy.json")).filter(|f| f.is_file())
}

/// The nearest project policy at or above `cwd`.
pub fn project_policy_file(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors().map(|d| d.join(".portcullis").join("policy.json")).find(|f| f.is_file())
}

/// The policy files that apply in `cwd`, user first.
pub fn discover(cwd: &Path) -> Vec<PathBuf> {
    user_policy_file().into_iter().chain(project_policy_file(cwd)).collect()
}

/// Loads the policy that applies in `cwd`: the named files if any, else the discovered ones, else the
/// built-in default rooted at `cwd`. Also returns the sources used, in layer order.
pub fn load_for(files: &[PathBuf], cwd: &Path) -> Result<(Policy, Vec<String>), PolicyError> {
    let layers = layers_for(files, cwd)?;
    let sources = layers.iter().map(|l| l.source.clone()).collect();
    Ok((Policy::from_layers(layers)?, sources))
}

/// The layers [`load_for`] would load, parsed but not yet checked.
pub fn layers_for(files: &[PathBuf], cwd: &Path) -> Result<Vec<PolicyLayer>, PolicyError> {
    let files = if files.is_empty() { discover(cwd) } else { files.to_vec() };
    if files.is_empty() {
        return Ok(vec![PolicyLayer::parse(DEFAULT_POLICY_SOURCE, DEFAULT_POLICY, cwd.to_path_buf())?]);
    }
    files.iter().map(|f| PolicyLayer::read(f)).collect()
}
