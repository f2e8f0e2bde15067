//! The projects a hub judges hook calls in. One hub serves every Claude Code session of its user, and
//! each session runs in a folder of its own: a call is judged by the policy of the project its `cwd` is
//! in (that project's `.portcullis/policy.json` layered under the user's), not by the hub's own project.
//! A folder in no project is judged by the user's policy alone, anchored at the hub's project, and the
//! reason says so. Policies are loaded on first use and again when one of their files changes; a policy
//! that no longer loads leaves the last one that did in force, as a reload of the hub's own does.

use crate::hub_config::{HubConfig, policy_of_layers};
use portcullis_policy::discovery;
use portcullis_policy::{LivePolicy, PolicyLayer};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

/// Where a call's folder belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectKind {
    /// The hub's own project: judged by the hub's live policy (reloads and the workbench apply).
    Hub,
    /// Another project: its folder holds `.portcullis/policy.json` or a `.git`.
    Other,
    /// No project at or above the folder.
    None,
}

/// The policy a hook call is judged by, and where it comes from.
#[derive(Clone)]
pub struct ProjectPolicy {
    /// The project's root (the hub's project for a folder in none).
    pub root: PathBuf,
    pub kind: ProjectKind,
    pub live: Arc<LivePolicy>,
    /// The policy files in layer order.
    pub sources: Vec<String>,
}

impl ProjectPolicy {
    /// What the card and the ledger say about where the call was judged.
    pub fn described(&self) -> String {
        match self.kind {
            ProjectKind::Hub => format!("project {}", self.root.display()),
            ProjectKind::Other => format!("project {} ({})", self.root.display(), self.sources.join(", ")),
            ProjectKind::None => format!(
                "no project (no .portcullis/policy.json or .git at or above the folder): the user's policy \
                 alone, its \".\" at the hub's project {}",
                self.root.display()
            ),
        }
    }
}

/// The nearest folder at or above `cwd` that is a project: one holding `.portcullis/policy.json`, else
/// the nearest holding `.git` (a repository without a policy of its own).
pub fn project_root(cwd: &Path) -> Option<PathBuf> {
    let with_policy = cwd.ancestors().find(|d| d.join(".portcullis").join("policy.json").is_file());
    let repository = cwd.ancestors().find(|d| d.join(".git").exists());
    // The nearer of the two: a repository nested in a project with a policy is judged by that policy
    // (discovery walks up from the folder the same way), unless it has one of its own.
    match (with_policy, repository) {
        (Some(p), _) => Some(p.to_path_buf()),
        (None, Some(r)) => Some(r.to_path_buf()),
        (None, None) => None,
    }
}

/// A file's identity for the cache: a changed, created or removed policy file is a different key.
type Stamp = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

struct Cached {
    stamp: Stamp,
    policy: ProjectPolicy,
}

/// The loaded policies of the projects hook calls came from.
#[derive(Default)]
pub struct ProjectPolicies {
    cache: Mutex<HashMap<PathBuf, Cached>>,
}

/// How many projects' policies are kept (the least recently loaded go first past it).
const MAX_PROJECTS: usize = 64;

/// The hub's own project, as the projects' policies are judged beside it.
pub struct HubProject<'a> {
    pub project: &'a Path,
    pub config: &'a HubConfig,
    pub live: &'a Arc<LivePolicy>,
    pub sources: &'a RwLock<Vec<String>>,
}

impl ProjectPolicies {
    /// The policy a call in `cwd` (canonical) is judged by.
    pub fn for_folder(&self, state: HubProject<'_>, cwd: &Path) -> Result<ProjectPolicy, String> {
        let root = project_root(cwd);
        let hub_project = state.project;
        let in_hub = match &root {
            // The hub's project, or a folder of it with no nearer project of its own.
            Some(root) => {
                root == hub_project || (cwd.starts_with(hub_project) && hub_project.starts_with(root))
            }
            None => cwd.starts_with(hub_project),
        };
        if in_hub {
            return Ok(ProjectPolicy {
                root: hub_project.to_path_buf(),
                kind: ProjectKind::Hub,
                live: state.live.clone(),
                sources: state.sources.read().map(|s| s.clone()).unwrap_or_default(),
            });
        }
        let (anchor, kind) = match root {
            Some(root) => (root, ProjectKind::Other),
            None => (hub_project.to_path_buf(), ProjectKind::None),
        };
        let config = state.config;
        let user = config.user_config();
        let files: Vec<PathBuf> = match kind {
            _ if !config.policy_files.is_empty() => config.policy_files.clone(),
            // The user's policy alone: the folder is in no project.
            ProjectKind::None => user.iter().map(|d| d.join("policy.json")).filter(|f| f.is_file()).collect(),
            _ => discovery::discover_with(&anchor, user.as_deref()),
        };
        let stamp: Stamp = files
            .iter()
            .map(|f| {
                let meta = std::fs::metadata(f).ok();
                (f.clone(), meta.and_then(|m| Some((m.modified().ok()?, m.len()))))
            })
            .collect();
        let key = match kind {
            ProjectKind::None => PathBuf::new(),
            _ => anchor.clone(),
        };
        let mut cache = self.cache.lock().map_err(|_| "the project policies' lock is poisoned".to_owned())?;
        if let Some(cached) = cache.get(&key)
            && cached.stamp == stamp
        {
            return Ok(cached.policy.clone());
        }
        let layers = if files.is_empty() {
            PolicyLayer::parse(discovery::DEFAULT_POLICY_SOURCE, discovery::DEFAULT_POLICY, anchor.clone())
                .map(|layer| vec![layer])
        } else {
            files.iter().map(|f| PolicyLayer::read(f, &anchor)).collect()
        };
        let loaded = layers
            .map_err(crate::error::HubError::from)
            .and_then(|layers| policy_of_layers(config, layers))
            .map_err(|e| e.to_string());
        let (policy, sources) = match loaded {
            Ok(loaded) => loaded,
            Err(why) => {
                return match cache.get(&key) {
                    Some(cached) => {
                        tracing::error!(project = %anchor.display(), error = %why, "a project's changed policy did not load; the previous one stays in force");
                        Ok(cached.policy.clone())
                    }
                    None => Err(format!("the policy of {} does not load: {why}", anchor.display())),
                };
            }
        };
        let mut live = LivePolicy::new(policy, anchor.clone())
            .with_sandbox_support(state.live.sandbox_support().clone());
        if let Some(home) = &config.home {
            live = live.with_home(Some(home.clone()));
        }
        let policy = ProjectPolicy { root: anchor, kind, live: Arc::new(live), sources };
        if cache.len() >= MAX_PROJECTS && !cache.contains_key(&key) {
            cache.clear();
        }
        cache.insert(key, Cached { stamp, policy: policy.clone() });
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_project_is_a_policy_folder_then_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let with_policy = base.join("a");
        std::fs::create_dir_all(with_policy.join(".portcullis")).unwrap();
        std::fs::write(with_policy.join(".portcullis/policy.json"), "{}").unwrap();
        let repo = base.join("b");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        let nested = with_policy.join("vendor/lib");
        std::fs::create_dir_all(nested.join(".git")).unwrap();
        let nowhere = base.join("c");
        std::fs::create_dir_all(&nowhere).unwrap();
        // (folder, the project it is in)
        let rows: [(&Path, Option<&Path>); 5] = [
            (&with_policy, Some(&with_policy)),
            (&repo.join("src"), Some(&repo)),
            (&repo, Some(&repo)),
            // A repository inside a project with a policy: the policy's project.
            (&nested, Some(&with_policy)),
            (&nowhere, None),
        ];
        for (folder, project) in rows {
            assert_eq!(project_root(folder).as_deref(), project, "{}", folder.display());
        }
    }
}
