//! Policy hot reload: `notify` watches the folders that hold (or would hold) the policy files; changes
//! are debounced, then the policy is loaded and checked before it replaces the one in force. A broken
//! file leaves the previous policy running and emits `PolicyRejected` with file, line and column.

use crate::hub::Hub;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long changes settle before a reload (editors write in several steps).
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Keeps the watcher alive; dropping it stops watching.
pub struct PolicyWatcher {
    _watcher: Arc<Mutex<RecommendedWatcher>>,
}

/// Folders that hold (or would hold) the policy files and tool manifests, and their parents, so a folder
/// created later (`.portcullis`, `.portcullis/tools`) is noticed and watched in turn.
fn candidates(hub: &Hub) -> Vec<PathBuf> {
    let config = &hub.state.config;
    let mut dirs: Vec<PathBuf> = if config.policy_files.is_empty() {
        let mut d: Vec<PathBuf> = hub.user_config().into_iter().collect();
        d.push(hub.project().join(".portcullis"));
        d.push(hub.project().to_path_buf());
        d
    } else {
        config
            .policy_files
            .iter()
            .filter_map(|f| std::fs::canonicalize(f).ok().and_then(|f| f.parent().map(PathBuf::from)))
            .collect()
    };
    for manifests in hub.manifest_folders() {
        dirs.extend(manifests.parent().map(PathBuf::from));
        dirs.push(manifests);
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Watches every candidate folder that exists and is not watched yet; true when one was added.
fn watch_new(watcher: &Mutex<RecommendedWatcher>, watched: &Mutex<HashSet<PathBuf>>, hub: &Hub) -> bool {
    let mut added = false;
    let mut watcher = watcher.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut watched = watched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for dir in candidates(hub) {
        if !watched.contains(&dir) && dir.is_dir() {
            match watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    tracing::debug!(dir = %dir.display(), "watching for policy and manifest changes");
                    watched.insert(dir);
                    added = true;
                }
                Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "not watched"),
            }
        }
    }
    added
}

/// Starts watching; reloads run on the current tokio runtime.
pub fn watch(hub: &Hub) -> Result<PolicyWatcher, notify::Error> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut names: Vec<std::ffi::OsString> =
        hub.state.config.policy_files.iter().filter_map(|f| f.file_name().map(Into::into)).collect();
    if names.is_empty() {
        names = vec!["policy.json".into(), ".portcullis".into()];
    }
    let manifest_dirs = hub.manifest_folders();
    let (mtx, mrx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (ftx, frx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.kind.is_access() {
            return;
        }
        if event.paths.iter().any(|p| p.file_name().is_some_and(|n| names.iter().any(|w| w == n))) {
            let _ = tx.send(());
        }
        let manifest = |p: &std::path::Path| {
            p.extension().is_some_and(|e| e == "json")
                && p.parent().is_some_and(|d| manifest_dirs.iter().any(|m| m == d))
        };
        if event.paths.iter().any(|p| manifest(p)) {
            let _ = mtx.send(());
        }
        if event.kind.is_create() || event.kind.is_remove() {
            let _ = ftx.send(());
        }
    })?;
    let watcher = Arc::new(Mutex::new(watcher));
    let watched = Arc::new(Mutex::new(HashSet::new()));
    watch_new(&watcher, &watched, hub);
    let (policy_hub, manifest_hub, folder_hub) = (hub.clone(), hub.clone(), hub.clone());
    on_settled(rx, hub.shutdown_token(), move || {
        let _ = policy_hub.reload();
    });
    on_settled(mrx, hub.shutdown_token(), move || {
        let _ = manifest_hub.reload_manifests();
    });
    // A folder that appears (`.portcullis`, `tools`) is watched too; what it already holds is loaded.
    let (folder_watcher, folder_set) = (watcher.clone(), watched);
    on_settled(frx, hub.shutdown_token(), move || {
        if watch_new(&folder_watcher, &folder_set, &folder_hub) {
            let _ = folder_hub.reload();
            let _ = folder_hub.reload_manifests();
        }
    });
    Ok(PolicyWatcher { _watcher: watcher })
}

/// Runs `action` once changes stop arriving for [`DEBOUNCE`] (editors write in several steps), until the
/// hub shuts down.
fn on_settled(
    mut changes: tokio::sync::mpsc::UnboundedReceiver<()>,
    stop: tokio_util::sync::CancellationToken,
    action: impl Fn() + Send + 'static,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                got = changes.recv() => if got.is_none() { break },
            }
            loop {
                match tokio::time::timeout(DEBOUNCE, changes.recv()).await {
                    Ok(Some(())) => continue,
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            action();
        }
    });
}
