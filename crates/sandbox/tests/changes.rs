//! A command's copy-on-write layer on a real overlay, through the launcher binary: the command sees its
//! own writes, the real tree sees none until the commit, and the change set read afterwards says what
//! each change is; the commit brings what was kept, by rename, through no link of the real tree.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use portcullis_sandbox::LaunchReport;
use portcullis_sandbox::changes::{self, Kind};
use portcullis_sandbox::overlay::{self, Layer};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod common;
use common::*;

/// Whether the kernel refused the overlay (then the test says so and stops).
fn overlay_refused(reports: &[LaunchReport]) -> bool {
    let refused = reports.iter().any(|r| {
        matches!(r, LaunchReport::Failed { step, message }
            if step == "a copy-on-write layer" && message.contains("the kernel refused the overlay"))
    });
    if refused {
        eprintln!("SKIPPED: this kernel refuses an overlay in a user namespace: {reports:?}");
    }
    refused
}

/// Runs `script` through a launcher of its own, its changes left in its layer (named for the command's
/// own temporary folder): the reports, the output and the layer.
async fn run_fresh(w: &World, script: &str) -> (Vec<LaunchReport>, String, String, Layer) {
    let p = profile(w, false);
    let started = launcher().start(&p).unwrap();
    let layers = overlay::layers(&p, started.tmp.path());
    assert_eq!(layers.len(), 1);
    assert!(layers[0].folder.starts_with(w.project.join(".portcullis/changes")));
    let (reports, out, err) = run_uncommitted(started, w, p, script, None).await;
    (reports, out, err, layers[0].clone())
}

fn kind_of(set: &changes::ChangeSet, path: &str) -> Option<(Kind, bool, u32)> {
    set.changes.iter().find(|c| c.path == Path::new(path)).map(|c| (c.kind, c.existed, c.mode))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_set_says_what_the_command_changed_and_the_commit_brings_what_was_kept() {
    let w = world();
    let p = &w.project;
    std::fs::write(p.join("keep.txt"), "old\n").unwrap();
    std::fs::write(p.join("gone.txt"), "gone\n").unwrap();
    std::fs::create_dir(p.join("replace")).unwrap();
    std::fs::write(p.join("replace/x"), "x").unwrap();
    std::fs::write(p.join("mode.sh"), "echo\n").unwrap();
    let script = "mkdir src && echo 'fn main() {}' > src/new.rs && cat src/new.rs; \
                  rm gone.txt; rm -r replace; mkdir replace; echo y > replace/y; chmod 700 mode.sh; \
                  ln -s /etc/passwd link; mkfifo fifo; mkdir -p sub/.claude; echo '{}' > sub/.claude/settings.json; \
                  echo changed > keep.txt; ls -A .portcullis 2>/dev/null | wc -l";
    let (reports, out, err, layer) = run_fresh(&w, script).await;
    if overlay_refused(&reports) {
        return;
    }
    assert_eq!(ended(&reports).0, Some(0), "{reports:?} {err}");
    // The command saw its own writes; nothing of the layer's folder (`.portcullis` is empty inside).
    assert_eq!(out, "fn main() {}\n0\n", "{err}");
    // Nothing reached the real tree.
    assert!(!p.join("src").exists() && p.join("gone.txt").exists() && p.join("replace/x").exists());
    assert_eq!(std::fs::read_to_string(p.join("keep.txt")).unwrap(), "old\n");

    let set = changes::read(&layer).unwrap();
    assert!(set.over_bound.is_none());
    assert_eq!(kind_of(&set, "src"), Some((Kind::Folder { replaced: false }, false, 0o755)));
    assert_eq!(kind_of(&set, "src/new.rs").map(|k| (k.0, k.1)), Some((Kind::File, false)));
    assert_eq!(kind_of(&set, "gone.txt").map(|k| k.0), Some(Kind::Deleted));
    assert_eq!(kind_of(&set, "replace").map(|k| (k.0, k.1)), Some((Kind::Folder { replaced: true }, true)));
    assert_eq!(kind_of(&set, "replace/y").map(|k| k.0), Some(Kind::File));
    assert_eq!(kind_of(&set, "mode.sh"), Some((Kind::File, true, 0o700)));
    assert_eq!(kind_of(&set, "link").map(|k| k.0), Some(Kind::Symlink));
    assert_eq!(kind_of(&set, "fifo").map(|k| k.0), Some(Kind::Special("a FIFO")));
    assert_eq!(kind_of(&set, "sub/.claude/settings.json").map(|k| k.0), Some(Kind::File));
    assert_eq!(kind_of(&set, "keep.txt").map(|k| (k.0, k.1)), Some((Kind::File, true)));
    // A folder that holds changes but did not change itself is no change.
    assert_eq!(kind_of(&set, "."), None);
    // Parents come before what they hold.
    let at = |path: &str| set.changes.iter().position(|c| c.path == Path::new(path)).unwrap();
    assert!(at("src") < at("src/new.rs") && at("sub") < at("sub/.claude") && at("replace") < at("replace/y"));

    let verdicts: Vec<Option<String>> = set
        .changes
        .iter()
        .map(|c| (c.path == Path::new("sub/.claude")).then(|| "agent settings".to_owned()))
        .collect();
    let done = changes::commit(&set, &verdicts, None);
    assert_eq!(std::fs::read_to_string(p.join("src/new.rs")).unwrap(), "fn main() {}\n");
    assert!(!p.join("gone.txt").exists());
    assert!(!p.join("replace/x").exists() && p.join("replace/y").is_file());
    assert_eq!(std::fs::metadata(p.join("mode.sh")).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(p.join("link").symlink_metadata().unwrap().file_type().is_symlink());
    assert!(p.join("fifo").symlink_metadata().is_err());
    assert!(p.join("sub").is_dir() && !p.join("sub/.claude").exists());
    assert_eq!(std::fs::read_to_string(p.join("keep.txt")).unwrap(), "changed\n");
    let discarded: Vec<(&str, &str)> =
        done.discarded.iter().map(|(p, why)| (p.to_str().unwrap(), why.as_str())).collect();
    assert!(discarded.contains(&("sub/.claude", "agent settings")), "{discarded:?}");
    assert!(discarded.iter().any(|(p, why)| *p == "sub/.claude/settings.json" && why.contains("inside")));
    assert!(discarded.iter().any(|(p, why)| *p == "fifo" && why.contains("FIFO")), "{discarded:?}");
    assert!(
        done.kept.contains(&PathBuf::from("src/new.rs")) && done.kept.contains(&PathBuf::from("gone.txt"))
    );

    overlay::remove(&layer).unwrap();
    assert!(!layer.folder.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commit_goes_through_no_link_of_the_real_tree() {
    let w = world();
    std::fs::create_dir(w.project.join("a")).unwrap();
    let (reports, _, err, layer) = run_fresh(&w, "echo planted > a/f").await;
    if overlay_refused(&reports) {
        return;
    }
    assert_eq!(ended(&reports).0, Some(0), "{reports:?} {err}");
    // Between the command and the commit, the folder becomes a link out of the root.
    std::fs::remove_dir(w.project.join("a")).unwrap();
    std::os::unix::fs::symlink(&w.outside, w.project.join("a")).unwrap();
    let set = changes::read(&layer).unwrap();
    let done = changes::commit(&set, &vec![None; set.changes.len()], None);
    assert!(!w.outside.join("f").exists());
    assert!(done.kept.is_empty(), "{done:?}");
    assert!(done.discarded.iter().any(|(p, why)| p == Path::new("a") && why.contains("link")), "{done:?}");
    assert!(done.discarded.iter().any(|(p, _)| p == Path::new("a/f")), "{done:?}");
    assert!(w.project.join("a").symlink_metadata().unwrap().file_type().is_symlink());
    overlay::remove(&layer).unwrap();

    // The same between reading the set and committing it: the folder held no change of its own.
    std::fs::create_dir(w.project.join("b")).unwrap();
    let (reports, _, err, layer) = run_fresh(&w, "echo planted > b/g").await;
    assert_eq!(ended(&reports).0, Some(0), "{reports:?} {err}");
    let set = changes::read(&layer).unwrap();
    assert_eq!(set.changes.iter().map(|c| c.path.to_str().unwrap()).collect::<Vec<_>>(), ["b/g"]);
    std::fs::remove_dir(w.project.join("b")).unwrap();
    std::os::unix::fs::symlink(&w.outside, w.project.join("b")).unwrap();
    let done = changes::commit(&set, &[None], None);
    assert!(!w.outside.join("g").exists());
    assert!(done.discarded.iter().any(|(p, why)| p == Path::new("b/g") && why.contains("link")), "{done:?}");
    overlay::remove(&layer).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_set_past_its_bound_says_so() {
    let w = world();
    let count = changes::MAX_CHANGES + 1;
    let script = format!("mkdir many && cd many && seq {count} | xargs touch");
    let (reports, _, err, layer) = run_fresh(&w, &script).await;
    if overlay_refused(&reports) {
        return;
    }
    assert_eq!(ended(&reports).0, Some(0), "{reports:?} {err}");
    let set = changes::read(&layer).unwrap();
    assert!(
        set.over_bound.as_deref().is_some_and(|b| b.contains("more than the review takes")),
        "{:?}",
        set.over_bound
    );
    overlay::remove(&layer).unwrap();
    assert!(!w.project.join("many").exists());
}

/// A file someone else changed (or made) in the real tree while the command ran is theirs: the
/// command's change to it is not committed, and everything else is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_in_the_real_tree_meanwhile_is_never_overwritten() {
    let w = world();
    let p = &w.project;
    std::fs::write(p.join("edited.txt"), "before\n").unwrap();
    std::fs::write(p.join("untouched.txt"), "before\n").unwrap();
    for folder in ["docs/deep", "old/deep", "out/deep"] {
        std::fs::create_dir_all(p.join(folder)).unwrap();
        std::fs::write(p.join(folder).join("a.md"), "before\n").unwrap();
    }
    let since = std::time::SystemTime::now();
    let script = "echo agent > edited.txt; echo agent > untouched.txt; echo agent > made.txt; echo agent > new.txt; \
                  rm -r docs old; rm -r out && mkdir out && echo agent > out/new.md";
    let (reports, _, err, layer) = run_fresh(&w, script).await;
    if overlay_refused(&reports) {
        return;
    }
    assert_eq!(ended(&reports).0, Some(0), "{reports:?} {err}");
    // Meanwhile, the operator's editor saved one file and made another the command also made.
    std::fs::write(p.join("edited.txt"), "the operator's\n").unwrap();
    std::fs::write(p.join("made.txt"), "the operator's\n").unwrap();
    // ...and a file deep in a folder the command deletes, and in one it replaces.
    std::fs::write(p.join("docs/deep/a.md"), "the operator's\n").unwrap();
    std::fs::write(p.join("out/deep/a.md"), "the operator's\n").unwrap();
    let set = changes::read(&layer).unwrap();
    let done = changes::commit(&set, &vec![None; set.changes.len()], Some(since));
    for (file, content) in [
        ("edited.txt", "the operator's\n"),
        ("made.txt", "the operator's\n"),
        ("untouched.txt", "agent\n"),
        ("new.txt", "agent\n"),
        ("docs/deep/a.md", "the operator's\n"),
        ("out/deep/a.md", "the operator's\n"),
    ] {
        assert_eq!(std::fs::read_to_string(p.join(file)).unwrap(), content, "{file}");
    }
    let conflicts: Vec<&str> = done
        .discarded
        .iter()
        .filter(|(_, why)| why == changes::CONFLICT)
        .map(|(p, _)| p.to_str().unwrap())
        .collect();
    assert_eq!(conflicts, ["docs", "edited.txt", "made.txt", "out"], "{done:?}");
    // A folder nobody touched meanwhile is deleted as the command asked.
    assert!(!p.join("old").exists());
    overlay::remove(&layer).unwrap();
}

/// The names of the `user.overlay.*` attributes on `path` (the overlay's own: never committed).
fn overlay_attributes(path: &Path) -> Vec<String> {
    let mut names = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(path, &mut names[..]).unwrap_or(0);
    names[..n]
        .split(|b| *b == 0)
        .filter(|n| n.starts_with(b"user.overlay."))
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

/// A folder the command made, kept whole, is committed by one rename (an `npm install`'s
/// `node_modules`); one holding a held change, a file the overlay marked (moved in from the real tree),
/// or whose name the real tree took meanwhile is committed change by change, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_made_and_kept_whole_is_committed_by_one_rename() {
    let w = world();
    let p = &w.project;
    std::fs::write(p.join("moved.txt"), "from the real tree\n").unwrap();
    let script = "mkdir -p nm/a/b held/x taken moved && echo 1 > nm/a/b/index.js && echo 2 > nm/a/top.js && \
                  ln -s a/top.js nm/link && chmod 750 nm/a && echo k > held/keep && echo h > held/x/no && \
                  echo t > taken/t && mv moved.txt moved/m.txt";
    let (reports, _, err, layer) = run_fresh(&w, script).await;
    if overlay_refused(&reports) {
        return;
    }
    assert_eq!(ended(&reports).0, Some(0), "{reports:?} {err}");
    let set = changes::read(&layer).unwrap();
    let marked: Vec<&str> =
        set.changes.iter().filter(|c| c.marked).map(|c| c.path.to_str().unwrap()).collect();
    assert!(marked.contains(&"moved/m.txt"), "{marked:?}");
    // Meanwhile, the real tree gets a folder where the command made `taken`.
    std::fs::create_dir(p.join("taken")).unwrap();
    std::fs::write(p.join("taken/theirs"), "theirs\n").unwrap();
    let verdicts: Vec<Option<String>> = set
        .changes
        .iter()
        .map(|c| (c.path == Path::new("held/x/no")).then(|| "held for the operator".to_owned()))
        .collect();
    let done = changes::commit(&set, &verdicts, None);

    // Whole: everything there, with its modes and link; the upper layer no longer holds it.
    assert_eq!(std::fs::read_to_string(p.join("nm/a/b/index.js")).unwrap(), "1\n");
    assert_eq!(std::fs::read_link(p.join("nm/link")).unwrap(), Path::new("a/top.js"));
    assert_eq!(std::fs::metadata(p.join("nm/a")).unwrap().permissions().mode() & 0o777, 0o750);
    assert!(!layer.upper().join("nm").exists());
    for kept in ["nm", "nm/a", "nm/a/b", "nm/a/b/index.js", "nm/a/top.js", "nm/link"] {
        assert!(done.kept.contains(&PathBuf::from(kept)), "{kept}: {done:?}");
    }
    // A held change inside: the rest of its folder is kept, the held one is not.
    assert_eq!(std::fs::read_to_string(p.join("held/keep")).unwrap(), "k\n");
    assert!(p.join("held/x").is_dir() && !p.join("held/x/no").exists());
    assert!(done.discarded.iter().any(|(d, _)| d == Path::new("held/x/no")), "{done:?}");
    // A name taken meanwhile: merged change by change, what is there left alone.
    assert_eq!(std::fs::read_to_string(p.join("taken/t")).unwrap(), "t\n");
    assert_eq!(std::fs::read_to_string(p.join("taken/theirs")).unwrap(), "theirs\n");
    // A file the overlay marked: committed without the overlay's attributes.
    assert_eq!(std::fs::read_to_string(p.join("moved/m.txt")).unwrap(), "from the real tree\n");
    assert_eq!(overlay_attributes(&p.join("moved/m.txt")), Vec::<String>::new());
    assert_eq!(overlay_attributes(&p.join("moved")), Vec::<String>::new());
    overlay::remove(&layer).unwrap();
}
