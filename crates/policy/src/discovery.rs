//! Where policies are found when none is named: the user's (config dir) first, then the project's
//! (the nearest `.portcullis/policy.json` at or above the working directory). With neither, the
//! built-in default policy applies. The folders it looks in and the one rule for where a policy's "."
//! points are `folders`' (re-exported here, where front ends have always found them).

pub use crate::folders::{anchored_where_applied, roots_anchor, user_config_dir, user_data_dir};
use crate::layer::{PolicyError, PolicyLayer};
use crate::policy::Policy;
use std::path::{Path, PathBuf};

/// The built-in default policy (`tool-manifests/policies/default.json`).
pub const DEFAULT_POLICY: &str = include_str!("../../../tool-manifests/policies/default.json");
/// How the built-in default is named in matched rules and errors.
pub const DEFAULT_POLICY_SOURCE: &str = "built-in default policy";

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
