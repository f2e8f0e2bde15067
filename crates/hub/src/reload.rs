//! Policy hot reload: `notify` watches the folders that hold (or would hold) the policy files; changes
//! are debounced, then the policy is loaded and checked before it replaces the one in force. A broken
//! file leaves the previous policy running and emits `PolicyRejected` with file, line and column.

use crate::hub::Hub;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use portcullis_policy::discovery::user_config_dir;
use std::path::PathBuf;
use std::time::Duration;

/// How long changes settle before a reload (editors write in several steps).
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Keeps the watcher alive; dropping it stops watching.
pub struct PolicyWatcher {
    _watcher: RecommendedWatcher,
}

/// Folders to watch: those of the named files, else the user config folder and the project's
/// `.portcullis` folder (and the project itself, so a new `.portcullis` is seen).
fn folders(hub: &Hub) -> Vec<PathBuf> {
    let config = &hub.state.config;
    let mut dirs: Vec<PathBuf> = if config.policy_files.is_empty() {
        let mut d: Vec<PathBuf> = user_config_dir().into_iter().collect();
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
    dirs.sort();
    dirs.dedup();
    dirs.retain(|d| d.is_dir());
    dirs
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
    let manifest_dirs_seen = manifest_dirs.clone();
    let (mtx, mrx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            if event.kind.is_access() {
                return;
            }
            if event.paths.iter().any(|p| p.file_name().is_some_and(|n| names.iter().any(|w| w == n))) {
                let _ = tx.send(());
            }
            let manifest = |p: &std::path::Path| {
                p.extension().is_some_and(|e| e == "json")
                    && p.parent().is_some_and(|d| manifest_dirs_seen.iter().any(|m| m == d))
            };
            if event.paths.iter().any(|p| manifest(p)) {
                let _ = mtx.send(());
            }
        }
    })?;
    for dir in folders(hub) {
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        tracing::debug!(dir = %dir.display(), "watching for policy changes");
    }
    for dir in manifest_dirs.iter().filter(|d| d.is_dir()) {
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        tracing::debug!(dir = %dir.display(), "watching for tool manifest changes");
    }
    let (policy_hub, manifest_hub) = (hub.clone(), hub.clone());
    on_settled(rx, hub.shutdown_token(), move || {
        let _ = policy_hub.reload();
    });
    on_settled(mrx, hub.shutdown_token(), move || {
        let _ = manifest_hub.reload_manifests();
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
