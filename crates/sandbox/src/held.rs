//! Changes a review did not commit, held for the operator: the command's layer, whose upper folder still
//! holds them, is moved aside (same file system, by rename) with a note of why each was held. The
//! operator keeps them (committed as any change is, never over a file the real tree changed since the
//! command started) or discards them (the layer goes). A held layer lives in the root's reserved folder,
//! hidden from commands like the layers themselves.

use crate::changes;
use crate::overlay::{self, Layer};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The note's name in a held layer's folder.
const NOTE: &str = "held.json";
/// The most held layers a root keeps: past it the oldest are discarded (an agent that clones
/// repository after repository, each `.git` held, does not fill the disk while nobody answers).
pub const MAX_HELD: usize = 32;

/// Why each change of a held layer was held, and when its command started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeldNote {
    pub started_at_ns: u128,
    pub changes: Vec<HeldChange>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeldChange {
    /// Relative to the root.
    pub path: PathBuf,
    pub why: String,
}

/// Moves `layer` to its held folder for the call `key`, with a note of why each of `changes` (relative
/// paths, reasons) was held.
pub fn hold(
    layer: &Layer,
    key: &str,
    changes: &[(PathBuf, String)],
    since: std::time::SystemTime,
) -> std::io::Result<()> {
    let note = HeldNote {
        started_at_ns: since.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
        changes: changes
            .iter()
            .map(|(path, why)| HeldChange { path: path.clone(), why: why.clone() })
            .collect(),
    };
    let text = serde_json::to_vec_pretty(&note).map_err(std::io::Error::other)?;
    std::fs::write(layer.folder.join(NOTE), text)?;
    let to = overlay::held_folder(layer, key);
    if let Some(parent) = to.parent() {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(parent)?;
    }
    if to.exists() {
        return Err(std::io::Error::other(format!("{} is held already", to.display())));
    }
    std::fs::rename(&layer.folder, &to)?;
    prune(&layer.root);
    Ok(())
}

/// Discards the oldest held layers of `root` past [`MAX_HELD`].
fn prune(root: &Path) {
    let mut held: Vec<(std::time::SystemTime, Layer)> = overlay::held_layers(root)
        .into_iter()
        .filter_map(|(_, layer)| Some((std::fs::metadata(&layer.folder).ok()?.modified().ok()?, layer)))
        .collect();
    if held.len() <= MAX_HELD {
        return;
    }
    held.sort_by_key(|(at, _)| *at);
    for (_, layer) in held.iter().take(held.len() - MAX_HELD) {
        if let Err(e) = overlay::remove(layer) {
            tracing::warn!(%e, folder = %layer.folder.display(), "an old held layer could not be removed");
        }
    }
}

/// A held layer: its call's key, its root, and its note.
#[derive(Debug, Clone)]
pub struct Held {
    pub key: String,
    pub layer: Layer,
    pub note: HeldNote,
}

/// The held layers of `root`.
pub fn list(root: &Path) -> Vec<Held> {
    overlay::held_layers(root)
        .into_iter()
        .filter_map(|(key, layer)| {
            let text = std::fs::read(layer.folder.join(NOTE)).ok()?;
            let note = serde_json::from_slice(&text).ok()?;
            Some(Held { key, layer, note })
        })
        .collect()
}

/// Commits what `held` still holds into the real tree (the operator chose to keep it), except over a
/// file the real tree changed after its command started; then removes the layer. What was committed,
/// and what was not, with why.
pub fn keep(held: &Held) -> std::io::Result<changes::Committed> {
    let set = changes::read(&held.layer)?;
    if let Some(bound) = &set.over_bound {
        return Err(std::io::Error::other(format!("{bound}: nothing was kept")));
    }
    let since = std::time::UNIX_EPOCH
        + std::time::Duration::from_nanos(u64::try_from(held.note.started_at_ns).unwrap_or(u64::MAX));
    let verdicts: Vec<Option<String>> = set
        .changes
        .iter()
        .map(|c| match c.kind {
            changes::Kind::Special(what) => Some(format!("{what} is never committed")),
            _ => None,
        })
        .collect();
    let done = changes::commit(&set, &verdicts, Some(since));
    overlay::remove(&held.layer)?;
    Ok(done)
}

/// Discards what `held` holds: its layer goes.
pub fn discard(held: &Held) -> std::io::Result<()> {
    overlay::remove(&held.layer)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn past_its_bound_a_root_keeps_its_newest_held_layers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        for i in 0..MAX_HELD + 3 {
            let folder = root.join(".portcullis/held").join(format!("s__c{i:03}"));
            std::fs::create_dir_all(folder.join("upper")).unwrap();
            std::fs::write(folder.join(NOTE), r#"{"started_at_ns": 0, "changes": []}"#).unwrap();
            let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64);
            std::fs::File::open(&folder).unwrap().set_modified(at).unwrap();
        }
        prune(&root);
        let kept: Vec<String> = list(&root).into_iter().map(|h| h.key).collect();
        assert_eq!(kept.len(), MAX_HELD);
        assert_eq!(kept.first().map(String::as_str), Some("s__c003"), "the three oldest went");
    }
}
