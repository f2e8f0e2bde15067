//! Where policies are found when none is named: the user's (config dir) first, then the project's
//! (the nearest `.portcullis/policy.json` at or above the working directory). With neither, the
//! built-in default policy applies. And the one rule for where a policy's "." points.

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

/// Where "." points in each of `layers` that names a relative root (`.`, `src`; not `/abs` or `~/x`):
/// its source and that folder, for front ends to say (a policy kept in `~/policies` roots at the
/// project it guards, which a user should see, not guess).
pub fn relative_root_anchors(layers: &[PolicyLayer]) -> Vec<(String, PathBuf)> {
    (layers.iter())
        .filter(|l| {
            (l.document.paths.roots.iter())
                .any(|r| !r.path.starts_with('~') && Path::new(&r.path).is_relative())
        })
        .map(|l| (l.source.clone(), l.project_root.clone()))
        .collect()
}

/// Whether the "." of the policy named `source` is the project it is applied to (see
/// [`roots_anchor`]), so a replay anchors it at each recorded call's project.
pub fn anchored_where_applied(source: &str) -> bool {
    own_project(Path::new(source)).is_none()
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
    discover_with(cwd, user_config_dir().as_deref())
}

/// The policy files that apply in `cwd` for a user whose config folder is `config`, user first.
pub fn discover_with(cwd: &Path, config: Option<&Path>) -> Vec<PathBuf> {
    let user = config.map(|d| d.join("policy.json")).filter(|f| f.is_file());
    user.into_iter().chain(project_policy_file(cwd)).collect()
}

/// Loads the policy that applies in `cwd` (the project it is applied to): the named files if any, else
/// the discovered ones, else the built-in default. Also returns the sources used, in layer order.
pub fn load_for(files: &[PathBuf], cwd: &Path) -> Result<(Policy, Vec<String>), PolicyError> {
    let layers = layers_for(files, cwd)?;
    let sources = layers.iter().map(|l| l.source.clone()).collect();
    Ok((Policy::from_layers(layers)?, sources))
}

/// The layers [`load_for`] would load, parsed but not yet checked.
pub fn layers_for(files: &[PathBuf], cwd: &Path) -> Result<Vec<PolicyLayer>, PolicyError> {
    layers_for_user(files, cwd, user_config_dir().as_deref())
}

/// [`layers_for`] for a user whose config folder is `config` (a hub given its own).
pub fn layers_for_user(
    files: &[PathBuf],
    cwd: &Path,
    config: Option<&Path>,
) -> Result<Vec<PolicyLayer>, PolicyError> {
    let files = if files.is_empty() { discover_with(cwd, config) } else { files.to_vec() };
    if files.is_empty() {
        return Ok(vec![PolicyLayer::parse(DEFAULT_POLICY_SOURCE, DEFAULT_POLICY, cwd.to_path_buf())?]);
    }
    files.iter().map(|f| PolicyLayer::read(f, cwd)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per kind of policy file: where its "." points when applied to /srv/app.
    #[test]
    fn the_one_rule_for_dot() {
        let project = Path::new("/srv/app");
        let rows = [
            ("/srv/app/.portcullis/policy.json", "/srv/app", false),
            ("/srv/other/.portcullis/policy.json", "/srv/other", false),
            ("/home/u/.config/portcullis/policy.json", "/srv/app", true),
            ("/home/u/policies/strict.json", "/srv/app", true),
            ("/srv/app/draft.json", "/srv/app", true),
        ];
        for (file, anchor, where_applied) in rows {
            assert_eq!(roots_anchor(Path::new(file), project), Path::new(anchor), "{file}");
            assert_eq!(anchored_where_applied(file), where_applied, "{file}");
        }
        assert!(anchored_where_applied(DEFAULT_POLICY_SOURCE));
    }
}
