//! The copy-on-write layer over each write root: a command writes to an overlay whose upper folder is
//! the hub's, on the root's own file system, so what it changed is a change set the hub reviews after it
//! ended (`changes` reads it) and commits by rename. Nothing a command writes in a root reaches the
//! real tree before that review: not a protected name that did not exist when it started either.

use crate::failure::Failure;
use nix::mount::{MsFlags, mount};
use portcullis_harness::SandboxProfile;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The folder inside a root's reserved (hidden) `.portcullis` folder that holds its change layers.
const IN_RESERVED: &str = ".portcullis/changes";
/// The folder beside a root (whose `.portcullis` the profile does not hide) holding its change layers.
const BESIDE: &str = ".portcullis-changes";
/// Where the layers of changes held for the operator are kept (inside the reserved folder, or beside).
const IN_RESERVED_HELD: &str = ".portcullis/held";
const BESIDE_HELD: &str = ".portcullis-held";
/// The names of a layer's folders: the overlay's upper and work folders.
const UPPER: &str = "upper";
const WORK: &str = "work";
/// Mount option characters overlayfs would read as separators in a path.
const SEPARATORS: &[char] = &[',', ':', '\\', '='];

/// One write root's copy-on-write layer: the root (the overlay's lower folder) and the hub's folder
/// holding its upper and work folders, named for the command's private temporary folder (one launcher,
/// one command, one layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub root: PathBuf,
    pub folder: PathBuf,
}

impl Layer {
    /// Where the command's changes are: created and changed files, whiteouts for deletions.
    pub fn upper(&self) -> PathBuf {
        self.folder.join(UPPER)
    }

    fn work(&self) -> PathBuf {
        self.folder.join(WORK)
    }
}

/// The layers of a command of `profile` whose private temporary folder is `private_tmp`: one per write
/// root that is a folder (a file granted alone is written in place: no name can be created there). The
/// hub and the launcher compute the same layers from the same two inputs.
pub fn layers(profile: &SandboxProfile, private_tmp: &Path) -> Vec<Layer> {
    // A command a rule lets write in place (a server, a watcher) has no layer: today's walls only.
    if profile.direct_writes.is_some() {
        return Vec::new();
    }
    let Some(name) = private_tmp.file_name() else { return Vec::new() };
    profile
        .write
        .iter()
        .filter(|root| std::fs::symlink_metadata(root).is_ok_and(|m| m.is_dir()))
        .map(|root| {
            let reserved = root.join(".portcullis");
            let folder = if profile.hidden.contains(&reserved) {
                root.join(IN_RESERVED).join(name)
            } else {
                let beside = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let parent = root.parent().unwrap_or(root);
                parent.join(BESIDE).join(format!("{beside}-{}", name.to_string_lossy()))
            };
            Layer { root: root.clone(), folder }
        })
        .collect()
}

/// Where the layer of the call `key` is kept while the operator decides on the changes it still holds:
/// beside the root's change layers (same file system: moved by rename), in a folder no sweep touches.
pub fn held_folder(layer: &Layer, key: &str) -> PathBuf {
    let changes = layer.folder.parent().unwrap_or(&layer.root);
    if changes.ends_with(IN_RESERVED) {
        layer.root.join(IN_RESERVED_HELD).join(key)
    } else {
        let beside = layer.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        changes.parent().unwrap_or(changes).join(BESIDE_HELD).join(format!("{beside}-{key}"))
    }
}

/// The held layers of `root`: each call's key and its layer.
pub fn held_layers(root: &Path) -> Vec<(String, Layer)> {
    let beside = root.file_name().map(|n| format!("{}-", n.to_string_lossy())).unwrap_or_default();
    let parent = root.parent().unwrap_or(root);
    let places = [(root.join(IN_RESERVED_HELD), String::new()), (parent.join(BESIDE_HELD), beside)];
    let mut found = Vec::new();
    for (dir, prefix) in places {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(key) = name.strip_prefix(&prefix).filter(|k| !k.is_empty()) {
                found.push((key.to_owned(), Layer { root: root.to_path_buf(), folder: entry.path() }));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Mounts the layers of `profile` over its write roots: the upper and work folders made (owner-only, on
/// the root's file system: checked), the overlay mounted (`userxattr`: unprivileged; no redirects, no
/// metadata-only copies), and the layer's folder covered by an empty mount, so the command sees none of
/// it. Before the hidden and read-only places go up, which then cover the overlay's view. Any step that
/// fails stops the command.
pub(crate) fn mount_layers(profile: &SandboxProfile, private_tmp: &Path) -> Result<(), Failure> {
    let step = "a copy-on-write layer";
    for layer in layers(profile, private_tmp) {
        let what = |e: &dyn std::fmt::Display| (step, format!("{}: {e}", layer.root.display()));
        let paths = [&layer.root, &layer.folder];
        if let Some(p) = paths.iter().find(|p| p.to_string_lossy().contains(SEPARATORS)) {
            return Err(what(&format!("{} holds a character overlayfs reads as a separator", p.display())));
        }
        if let Some(parent) = layer.folder.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent).map_err(|e| what(&e))?;
        }
        for dir in [layer.folder.clone(), layer.upper(), layer.work()] {
            std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(|e| what(&e))?;
        }
        // Made where it was named, through no link: else the layer would be somewhere else.
        if std::fs::canonicalize(&layer.folder).map_err(|e| what(&e))? != layer.folder {
            return Err(what(&format!("{} lies behind a link", layer.folder.display())));
        }
        let root_meta = std::fs::metadata(&layer.root).map_err(|e| what(&e))?;
        let root_dev = root_meta.dev();
        // The overlay's root shows the upper folder's mode: the root's own, so the command sees the
        // project as it is (the layer's folder, owner-only, keeps others out).
        let root_mode = std::fs::Permissions::from_mode(root_meta.mode() & 0o7777);
        std::fs::set_permissions(layer.upper(), root_mode).map_err(|e| what(&e))?;
        let upper_dev = std::fs::symlink_metadata(layer.upper()).map_err(|e| what(&e))?.dev();
        if root_dev != upper_dev {
            return Err(what(&format!(
                "{} is on another file system than the root: changes could not be committed by rename",
                layer.folder.display()
            )));
        }
        let options = format!(
            "lowerdir={},upperdir={},workdir={},userxattr,redirect_dir=nofollow,metacopy=off",
            layer.root.display(),
            layer.upper().display(),
            layer.work().display()
        );
        mount(Some("overlay"), &layer.root, Some("overlay"), MsFlags::MS_NOSUID, Some(options.as_str()))
            .map_err(|e| what(&format!("the kernel refused the overlay ({e})")))?;
        mount(
            Some("tmpfs"),
            &layer.folder,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,mode=000"),
        )
        .map_err(|e| what(&format!("hiding the layer's folder ({e})")))?;
    }
    Ok(())
}

/// Removes a layer's folder (the overlay leaves its work folder in mode 000: opened up first). Never
/// follows a link. The folder holding it stays (another command's layer may be made there now).
pub fn remove(layer: &Layer) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let inner = layer.work().join("work");
    if std::fs::symlink_metadata(&inner).is_ok_and(|m| m.is_dir()) {
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700))?;
    }
    match std::fs::remove_dir_all(&layer.folder) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes the layers in `parent` (a folder holding layers) whose command's private temporary folder is
/// gone: their launcher went without a review (a hub killed, a launcher started ahead and dropped).
/// What they held was never committed. Returns how many went.
pub fn sweep(parent: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else { return 0 };
    let tmp = std::env::temp_dir();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        // `portcullis-cmd-…` in a root's reserved folder, `<root>-portcullis-cmd-…` beside it.
        let Some(at) = text.find("portcullis-cmd-") else { continue };
        let gone = std::fs::symlink_metadata(tmp.join(&text[at..])).is_err();
        let folder = entry.file_type().is_ok_and(|t| t.is_dir());
        if gone && folder && remove(&Layer { root: PathBuf::new(), folder: entry.path() }).is_ok() {
            removed += 1;
        }
    }
    removed
}
