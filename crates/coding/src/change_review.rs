//! The hub's review of what a confined command changed in its write roots, before anyone else sees it:
//! each change read from the command's copy-on-write layer is judged against the policy's protected
//! places — a file other programs execute (`.cargo/config.toml`, `.mcp.json`, a CI workflow), a folder
//! git would take as a repository, `.git`, `.claude`, `.portcullis` at any depth — and discarded with the
//! reason, or committed into the real tree. A protected place is kept only where the walls themselves
//! left it writable (the operator approved it, or git writes its own repository folder). Names that did
//! not exist when the command started are judged the same as those that did.

use crate::change_record::{self, DigestBudget};
use portcullis_harness::{ChangeRecord, SandboxProfile};
use portcullis_policy::sandbox::{KEPT_READ_ONLY, KEPT_READ_ONLY_IN_GIT};
use portcullis_policy::{LOOK_ALIKE, ProtectedPaths, repository_look_alike};
use portcullis_sandbox::changes::{self, Change, Kind};
use portcullis_sandbox::overlay;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Why every change of a command that did not end inside its walls is discarded.
pub const NOT_ENDED: &str = "the command did not end inside its walls (timed out, cancelled, or its launcher went): nothing it changed was reviewed or kept";

/// At most this many paths of each list go into the structured result and the text (the counts are
/// whole).
const SHOWN: usize = 20;

/// A change not committed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discarded {
    pub path: PathBuf,
    pub why: String,
}

/// What the review of a command's changes did: the paths now in the real tree (created, changed or
/// deleted there), those held for the operator (`portcullis held keep|discard`), and those discarded;
/// and the call's record of them all (with sizes and digests, see [`change_record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeReview {
    pub kept: Vec<PathBuf>,
    pub held: Vec<Discarded>,
    pub discarded: Vec<Discarded>,
    pub record: ChangeRecord,
}

/// The reason a change at `root`/`change.path` may not be committed, if any.
pub fn verdict(profile: &SandboxProfile, root: &Path, change: &Change) -> Option<String> {
    if let Kind::Special(what) = change.kind {
        return Some(format!("{what}: a command's special files are never kept"));
    }
    let path = root.join(&change.path);
    if let Some(place) = profile.hidden.iter().chain(&profile.read_only).find(|p| path.starts_with(p)) {
        return Some(format!("inside {}, which the walls keep hidden or read-only", place.display()));
    }
    // A protected place the walls left writable: it existed, and the profile did not keep it read-only
    // (the operator approved writing it, or the command is git writing its repository). Inside `.git`
    // the places git runs (hooks, config) are never kept, made now or not.
    let granted = KEPT_READ_ONLY.iter().map(|(rel, _)| (*rel, root.join(rel))).find(|(_, place)| {
        path.starts_with(place)
            && std::fs::symlink_metadata(place).is_ok()
            && !profile.read_only.contains(place)
    });
    if let Some((rel, _)) = granted {
        let in_git =
            KEPT_READ_ONLY_IN_GIT.iter().find(|(r, _)| rel == ".git" && path.starts_with(root.join(r)));
        return in_git.map(|(_, why)| (*why).to_owned());
    }
    if let Some(hit) = ProtectedPaths::default().find(&path) {
        return Some(format!("{} — a protected place: allowed programs would run what it holds", hit.what));
    }
    if repository_look_alike(&path) {
        return Some(LOOK_ALIKE.to_owned());
    }
    profile.contained.as_deref().and_then(|contained| contained_verdict(contained, &path, change))
}

/// What a contained command may not change without the operator: a path the policy's deny globs name,
/// and (where a deleting program's rule asks) what existed and it deleted or replaced.
fn contained_verdict(
    contained: &portcullis_harness::Containment,
    path: &Path,
    change: &Change,
) -> Option<String> {
    if let Some(glob) =
        contained.deny_globs.iter().find(|g| portcullis_policy::paths::glob_matches_path(g, path))
    {
        return Some(format!("the deny glob {glob:?} names it, and the command ran contained"));
    }
    let removes = matches!(change.kind, Kind::Deleted | Kind::Folder { replaced: true });
    match &contained.deletions_held_by {
        Some(by) if removes && change.existed => {
            Some(format!("deleted by a command that ran contained, and {by} for deletions"))
        }
        _ => None,
    }
}

/// Reviews and commits (or discards) what the command of `profile` whose private temporary folder is
/// `private_tmp` changed, then removes its layers. `ended`: the command ended inside its walls (its last
/// process is gone); otherwise nothing is kept. `since`: when it started (a file changed in the real tree
/// after that is not overwritten). Blocking: file system work.
pub fn review(
    profile: &SandboxProfile,
    private_tmp: &Path,
    ended: bool,
    since: std::time::SystemTime,
    undo: Option<&portcullis_sandbox::undo::UndoTarget>,
) -> ChangeReview {
    let mut review = ChangeReview::default();
    // What the commits replace, kept for an undo (read before each commit, written after the last).
    let mut before = undo.map(portcullis_sandbox::undo::Before::new);
    let mut budget = DigestBudget::default();
    for layer in overlay::layers(profile, private_tmp) {
        let root = layer.root.clone();
        let listed_from = review.record.entries.len();
        let mut held_in_layer = 0;
        let discard_all = |review: &mut ChangeReview, changes: &[Change], why: &str| {
            review
                .discarded
                .extend(changes.iter().map(|c| Discarded { path: root.join(&c.path), why: why.into() }));
        };
        match changes::read(&layer) {
            Err(e) => {
                let why = format!("the command's changes here could not be read ({e}): none was kept");
                change_record::add_root(&mut review.record, &root, &why);
                review.discarded.push(Discarded { path: root.clone(), why });
            }
            Ok(set) if !ended => {
                discard_all(&mut review, &set.changes, NOT_ENDED);
                change_record::add_discarded(&mut review.record, &root, &set.changes, NOT_ENDED);
            }
            Ok(set) => match &set.over_bound {
                Some(bound) => {
                    let why = format!("{bound}: none was kept");
                    change_record::add_root(&mut review.record, &root, &why);
                    review.discarded.push(Discarded { path: root.clone(), why });
                }
                None => {
                    let verdicts: Vec<Option<String>> =
                        set.changes.iter().map(|c| verdict(profile, &root, c)).collect();
                    if let Some(before) = before.as_mut() {
                        let paths: Vec<PathBuf> = set
                            .changes
                            .iter()
                            .zip(&verdicts)
                            .filter(|(_, v)| v.is_none())
                            .map(|(c, _)| c.path.clone())
                            .collect();
                        before.capture(&root, &paths);
                    }
                    let done = changes::commit(&set, &verdicts, Some(since));
                    review.kept.extend(done.kept.iter().map(|p| root.join(p)));
                    // What was not committed stays in the layer: held for the operator, who keeps or
                    // discards it; a special file is never kept, so never held.
                    let specials: Vec<&Path> = set
                        .changes
                        .iter()
                        .filter(|c| matches!(c.kind, Kind::Special(_)))
                        .map(|c| c.path.as_path())
                        .collect();
                    let held = |p: &Path| undo.is_some() && !specials.contains(&p);
                    // Digests of held files are read here, from the layer, before it is moved aside.
                    held_in_layer =
                        change_record::add_committed(&mut review.record, &set, &done, held, &mut budget);
                    for (p, why) in done.discarded {
                        let entry = Discarded { path: root.join(&p), why };
                        if held(&p) {
                            review.held.push(entry);
                        } else {
                            review.discarded.push(entry);
                        }
                    }
                }
            },
        }
        let held_here: Vec<&Discarded> = review.held.iter().filter(|d| d.path.starts_with(&root)).collect();
        let held = match undo {
            Some(target) if !held_here.is_empty() => {
                let entries: Vec<(PathBuf, String)> = held_here
                    .iter()
                    .map(|d| (d.path.strip_prefix(&root).unwrap_or(&d.path).to_path_buf(), d.why.clone()))
                    .collect();
                portcullis_sandbox::held::hold(&layer, &target.key, &entries, since).map(|()| true)
            }
            _ => Ok(false),
        };
        match held {
            Ok(true) => {}
            Ok(false) => {
                if let Err(e) = overlay::remove(&layer) {
                    tracing::warn!(%e, folder = %layer.folder.display(), "a command's change layer could not be removed");
                }
            }
            Err(e) => {
                tracing::warn!(%e, folder = %layer.folder.display(), "a command's held changes could not be kept: discarded");
                change_record::unhold(&mut review.record, listed_from, held_in_layer, &e.to_string());
                let moved: Vec<Discarded> =
                    review.held.extract_if(.., |d| d.path.starts_with(&root)).collect();
                review.discarded.extend(moved.into_iter().map(|d| Discarded {
                    why: format!("{} (it could not be held for the operator: {e})", d.why),
                    ..d
                }));
                let _ = overlay::remove(&layer);
            }
        }
        // The layers of launchers that went without a review (a hub killed): never committed.
        if let Some(parent) = layer.folder.parent() {
            overlay::sweep(parent);
        }
    }
    if let Some(before) = before
        && let Err(e) = before.finish()
    {
        tracing::warn!(%e, "what a command's commit replaced was not kept for an undo");
    }
    for d in &review.discarded {
        tracing::info!(path = %d.path.display(), why = %d.why, "a confined command's change was discarded");
    }
    review
}

/// A path as the agent reads it: relative to the command's folder where inside it, control characters
/// escaped (a name is the agent's text).
fn shown(path: &Path, cwd: &Path) -> String {
    let relative = path.strip_prefix(cwd).ok().filter(|p| !p.as_os_str().is_empty()).unwrap_or(path);
    relative.display().to_string().escape_debug().to_string()
}

impl ChangeReview {
    /// The lines added to the command's text: what was kept (a count and the first paths), each
    /// discarded change with why (the first few, then a count).
    pub fn lines(&self, cwd: &Path) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.kept.is_empty() {
            let first: Vec<String> = self.kept.iter().take(SHOWN).map(|p| shown(p, cwd)).collect();
            let more = self.kept.len().saturating_sub(SHOWN);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            lines.push(format!("[changes kept: {} ({}{more})]", self.kept.len(), first.join(", ")));
        }
        for d in self.held.iter().take(SHOWN) {
            lines.push(format!("[change held for the operator: {} — {}]", shown(&d.path, cwd), d.why));
        }
        if self.held.len() > SHOWN {
            lines.push(format!("[{} more changes held for the operator]", self.held.len() - SHOWN));
        }
        for d in self.discarded.iter().take(SHOWN) {
            lines.push(format!("[change discarded: {} — {}]", shown(&d.path, cwd), d.why));
        }
        if self.discarded.len() > SHOWN {
            lines.push(format!("[{} more changes discarded]", self.discarded.len() - SHOWN));
        }
        lines
    }

    /// The `changes` member of the command's structured result (the lists bounded, the counts whole).
    pub fn value(&self) -> Value {
        json!({
            "kept_count": self.kept.len(),
            "kept": self.kept.iter().take(SHOWN).map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "held_count": self.held.len(),
            "held": self.held.iter().take(SHOWN)
                .map(|d| json!({ "path": d.path.display().to_string(), "why": d.why }))
                .collect::<Vec<_>>(),
            "discarded_count": self.discarded.len(),
            "discarded": self.discarded.iter().take(SHOWN)
                .map(|d| json!({ "path": d.path.display().to_string(), "why": d.why }))
                .collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn change(path: &str, kind: Kind) -> Change {
        Change { path: PathBuf::from(path), kind, existed: false, mode: 0o644, size: 1, marked: false }
    }

    #[test]
    fn protected_names_are_discarded_at_any_depth_and_ordinary_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let profile = portcullis_sandbox::system_only(vec![root.clone()]);
        let discarded = [
            ".cargo/config.toml",
            ".mcp.json",
            ".husky/pre-commit",
            ".npmrc",
            "rust-toolchain.toml",
            ".github/workflows/x.yml",
            "sub/.claude/settings.json",
            "sub/r/.git/config",
            "sub/r/HEAD",
            ".portcullis/policy.json",
            "deep/a/b/.vscode/tasks.json",
            "deep/.cursor/mcp.json",
        ];
        for path in discarded {
            assert!(verdict(&profile, &root, &change(path, Kind::File)).is_some(), "{path}");
        }
        for path in ["src/new.rs", "README.md", "config.toml", "docs/HEADER.md", "target/debug/x"] {
            assert_eq!(verdict(&profile, &root, &change(path, Kind::File)), None, "{path}");
        }
        let fifo = verdict(&profile, &root, &change("pipe", Kind::Special("a FIFO"))).unwrap();
        assert!(fifo.contains("FIFO"), "{fifo}");
        // A deletion of a protected place is discarded too (the file stays).
        assert!(verdict(&profile, &root, &change(".npmrc", Kind::Deleted)).is_some());
    }

    #[test]
    fn a_protected_place_the_walls_left_writable_is_kept_but_never_the_places_git_runs() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join(".npmrc"), "").unwrap();
        // A command that writes the repository: `.git` is not kept read-only (git's own places are, where
        // they exist; here none does).
        let profile = portcullis_sandbox::system_only(vec![root.clone()]);
        for path in [".git/objects/ab/cdef", ".git/index", ".git/logs/HEAD", ".npmrc"] {
            assert_eq!(verdict(&profile, &root, &change(path, Kind::File)), None, "{path}");
        }
        for path in [".git/hooks/pre-commit", ".git/config", ".git/info/attributes", ".git/modules/x/HEAD"] {
            assert!(verdict(&profile, &root, &change(path, Kind::File)).is_some(), "{path}");
        }
        // Kept read-only by the walls: nothing under it is kept.
        let mut kept = profile.clone();
        kept.read_only = vec![root.join(".git"), root.join(".npmrc")];
        for path in [".git/objects/ab/cdef", ".npmrc"] {
            assert!(verdict(&kept, &root, &change(path, Kind::File)).is_some(), "{path}");
        }
    }

    #[test]
    fn what_the_agent_reads_is_bounded_and_escaped() {
        let review = ChangeReview {
            kept: (0..30).map(|i| PathBuf::from(format!("/p/f{i}"))).collect(),
            held: Vec::new(),
            discarded: vec![Discarded { path: PathBuf::from("/p/a\n[exit code: 0]"), why: "why".into() }],
            record: ChangeRecord::default(),
        };
        let lines = review.lines(Path::new("/p"));
        assert!(lines[0].starts_with("[changes kept: 30 (f0, f1,") && lines[0].ends_with("and 10 more)]"));
        assert_eq!(lines[1], "[change discarded: a\\n[exit code: 0] — why]");
        assert_eq!(review.value()["kept"].as_array().unwrap().len(), SHOWN);
    }
}
