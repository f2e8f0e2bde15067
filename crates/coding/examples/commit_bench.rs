//! What reviewing and committing a command's copy-on-write changes costs, once the command ended: the
//! change set read from the upper layer, each change judged, what the commit will replace kept for an
//! undo, the commit by rename, the undo record written. For a command that changed 10 files (5 new, 5
//! over existing ones) and one that made 10,000 new files (an `npm install`). The upper layer is made by
//! hand the way overlayfs leaves it (no command runs: only the hub's work after the command is timed).
//! Medians and 90th percentiles over the runs, in microseconds, one JSON object per line.
//!
//! `cargo run --release -p portcullis-coding --example commit_bench -- 50`
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use portcullis_coding::change_review::verdict;
use portcullis_sandbox::changes;
use portcullis_sandbox::overlay::Layer;
use portcullis_sandbox::undo::{Before, UndoTarget};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn once(base: &Path, new: usize, over: usize, undo: bool, run: usize) -> u128 {
    let root = base.join(format!("root-{run}"));
    let folder = base.join(format!("layer-{run}"));
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(folder.join("upper/src")).unwrap();
    std::fs::create_dir_all(folder.join("upper/made")).unwrap();
    for i in 0..over {
        std::fs::write(root.join(format!("src/f{i}.rs")), "old contents\n").unwrap();
        std::fs::write(folder.join(format!("upper/src/f{i}.rs")), "new contents\n").unwrap();
    }
    for i in 0..new {
        std::fs::write(folder.join(format!("upper/made/n{i}.js")), "module.exports = 1;\n").unwrap();
    }
    let layer = Layer { root: root.clone(), folder };
    let profile = portcullis_sandbox::system_only(vec![root.clone()]);
    let target = UndoTarget::new(&base.join("undo"), "bench", &format!("c{run}"));
    let started = Instant::now();
    let set = changes::read(&layer).unwrap();
    let verdicts: Vec<Option<String>> = set.changes.iter().map(|c| verdict(&profile, &root, c)).collect();
    let mut before = undo.then(|| Before::new(&target));
    if let Some(before) = before.as_mut() {
        let paths: Vec<PathBuf> = set.changes.iter().map(|c| c.path.clone()).collect();
        before.capture(&root, &paths);
    }
    let done = changes::commit(&set, &verdicts, Some(std::time::SystemTime::now()));
    if let Some(before) = before {
        before.finish().unwrap();
    }
    let took = started.elapsed().as_micros();
    assert_eq!(done.kept.len(), new + over + 1, "{:?}", done.discarded);
    took
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let base = std::env::temp_dir().join(format!("portcullis-commit-bench-{}", std::process::id()));
    for (name, new, over) in [("10 files", 5, 5), ("10,000 new files", 10_000, 0)] {
        for undo in [false, true] {
            let mut times: Vec<u128> = (0..runs).map(|run| once(&base, new, over, undo, run)).collect();
            let _ = std::fs::remove_dir_all(&base);
            times.sort_unstable();
            let p90 = times[(times.len() * 9 / 10).min(times.len() - 1)];
            println!(
                "{{\"bench\":\"commit\",\"changes\":\"{name}\",\"undo_kept\":{undo},\"runs\":{runs},\"median_us\":{},\"p90_us\":{p90}}}",
                times[times.len() / 2]
            );
        }
    }
}
