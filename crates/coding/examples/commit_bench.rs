//! What reviewing and committing a command's copy-on-write changes costs, once the command ended: the
//! change set read from the upper layer, each change judged, what the commit will replace kept for an
//! undo, the commit by rename, the undo record written. For a command that changed 10 files (5 new, 5
//! over existing ones) and one that made 10,000 new files (an `npm install`). The upper layer is made by
//! hand the way overlayfs leaves it (no command runs: only the hub's work after the command is timed).
//! Then the call's record of the changes (each kept file's SHA-256 read back from the real tree, within
//! the digest bounds). Medians and 90th percentiles over the runs, in microseconds, one JSON object per
//! line.
//!
//! `cargo run --release -p portcullis-coding --example commit_bench -- 50`
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use portcullis_coding::change_record::{self, DigestBudget};
use portcullis_coding::change_review::verdict;
use portcullis_harness::ChangeRecord;
use portcullis_sandbox::changes;
use portcullis_sandbox::overlay::Layer;
use portcullis_sandbox::undo::{Before, UndoTarget};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The time of one run, whole and by phase (µs): the set read, the changes judged, the commit (with the
/// undo capture and record when kept), the call's record of the changes (with digests).
#[derive(Clone, Copy)]
struct Took {
    whole: u128,
    read: u128,
    judge: u128,
    commit: u128,
    record: u128,
}

fn once(base: &Path, new: usize, over: usize, made: bool, undo: bool, run: usize) -> Took {
    let root = base.join(format!("root-{run}"));
    let folder = base.join(format!("layer-{run}"));
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(folder.join("upper/src")).unwrap();
    std::fs::create_dir_all(folder.join("upper/made")).unwrap();
    for i in 0..over {
        std::fs::write(root.join(format!("src/f{i}.rs")), "old contents\n").unwrap();
        std::fs::write(folder.join(format!("upper/src/f{i}.rs")), "new contents\n").unwrap();
    }
    // New files in a folder the command made (committed by one rename of the folder), or in one that
    // existed (one rename each).
    let into = if made { "made" } else { "src" };
    for i in 0..new {
        std::fs::write(folder.join(format!("upper/{into}/n{i}.js")), "module.exports = 1;\n").unwrap();
    }
    let layer = Layer { root: root.clone(), folder };
    let profile = portcullis_sandbox::system_only(vec![root.clone()]);
    let target = UndoTarget::new(&base.join("undo"), "bench", &format!("c{run}"));
    let started = Instant::now();
    let set = changes::read(&layer).unwrap();
    let read = started.elapsed().as_micros();
    let verdicts: Vec<Option<String>> = set.changes.iter().map(|c| verdict(&profile, &root, c)).collect();
    let judged = started.elapsed().as_micros();
    let mut before = undo.then(|| Before::new(&target));
    if let Some(before) = before.as_mut() {
        let paths: Vec<PathBuf> = set.changes.iter().map(|c| c.path.clone()).collect();
        before.capture(&root, &paths);
    }
    let done = changes::commit(&set, &verdicts, Some(std::time::SystemTime::now()));
    if let Some(before) = before {
        before.finish().unwrap();
    }
    let committed = started.elapsed().as_micros();
    let mut record = ChangeRecord::default();
    change_record::add_committed(&mut record, &set, &done, |_| false, &mut DigestBudget::default());
    let whole = started.elapsed().as_micros();
    assert_eq!(done.kept.len(), new + over + 1, "{:?}", done.discarded);
    assert_eq!(record.kept as usize, new + over + 1);
    assert!(record.entries.iter().filter(|e| e.sha256.is_some()).count() >= (new + over).min(1_000));
    Took { whole, read, judge: judged - read, commit: committed - judged, record: whole - committed }
}

fn median(mut values: Vec<u128>) -> u128 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let base = std::env::temp_dir().join(format!("portcullis-commit-bench-{}", std::process::id()));
    for (name, new, over, made) in [
        ("10 files", 5, 5, true),
        ("10,000 new files in a new folder", 10_000, 0, true),
        ("10,000 new files in a folder that existed", 10_000, 0, false),
    ] {
        for undo in [false, true] {
            let took: Vec<Took> = (0..runs).map(|run| once(&base, new, over, made, undo, run)).collect();
            let _ = std::fs::remove_dir_all(&base);
            let mut times: Vec<u128> = took.iter().map(|t| t.whole).collect();
            times.sort_unstable();
            let read = median(took.iter().map(|t| t.read).collect());
            let judge = median(took.iter().map(|t| t.judge).collect());
            let commit = median(took.iter().map(|t| t.commit).collect());
            let record = median(took.iter().map(|t| t.record).collect());
            let p90 = times[(times.len() * 9 / 10).min(times.len() - 1)];
            println!(
                "{{\"bench\":\"commit\",\"changes\":\"{name}\",\"undo_kept\":{undo},\"runs\":{runs},\"median_us\":{},\"p90_us\":{p90},\"read_us\":{read},\"judge_us\":{judge},\"commit_us\":{commit},\"record_us\":{record}}}",
                times[times.len() / 2]
            );
        }
    }
}
