//! The launcher binary (`portcullis-sandbox`) on its own: a request goes in over the socket, the command
//! runs inside the profile's walls, the reports come back. Real namespaces, real Landlock.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_sandbox::LaunchReport;

mod common;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_walls_hold_what_the_profile_says() {
    let w = world();
    let launcher = launcher();
    let script = format!(
        "echo inside > made.txt && echo made; \
         echo escape > {o}/escaped 2>/dev/null || echo no-write-outside; \
         cat {o}/notes 2>/dev/null || echo no-read-outside; \
         cat secrets/key 2>/dev/null || echo hidden; \
         echo hook > .git/hooks/pre-commit 2>/dev/null || echo hooks-read-only; \
         mkdir -p .portcullis/tools 2>/dev/null || echo policy-folder-reserved; \
         echo $TMPDIR; ls /proc | grep -c '^[0-9]'",
        o = w.outside.display()
    );
    let (reports, out, err) = run(&launcher, &w, profile(&w, false), &script).await;
    assert!(matches!(reports.first(), Some(LaunchReport::Confined { .. })), "{reports:?} {err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        &lines[..6],
        [
            "made",
            "no-write-outside",
            "no-read-outside",
            "hidden",
            "hooks-read-only",
            "policy-folder-reserved"
        ],
        "{out}{err}"
    );
    assert_eq!(std::fs::read_to_string(w.project.join("made.txt")).unwrap(), "inside\n");
    assert!(!w.outside.join("escaped").exists());
    assert!(!w.project.join(".git/hooks/pre-commit").exists());
    // The project had no `.portcullis`: the launcher made it, holding only the hub's change layers, so
    // nothing could be put there.
    assert!(w.project.join(".portcullis").is_dir());
    let names: Vec<_> =
        std::fs::read_dir(w.project.join(".portcullis")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["changes"]);
    // The project lies under /tmp here, so /tmp stays as it is and the command's own folder (made by
    // the hub for its launcher, removed with it) is its TMPDIR.
    let tmp = std::path::Path::new(lines[6]);
    assert!(tmp.starts_with(std::env::temp_dir()) && lines[6].contains("/portcullis-cmd-"), "{out}");
    assert!(!tmp.exists(), "{out}");
    // Its own PID namespace: the launcher's second stage, `sh`, `ls` and `grep` at most.
    let processes: usize = lines[7].parse().unwrap();
    assert!(processes <= 4, "{processes} processes visible");
    assert_eq!(ended(&reports).0, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launchers_started_ahead_serve_the_next_commands_with_and_without_network() {
    let w = world();
    let launcher = launcher();
    for network in [false, true, false, true] {
        let (reports, out, _) =
            run(&launcher, &w, profile(&w, network), "cat /proc/net/dev | grep -c :").await;
        let Some(LaunchReport::Confined { applied }) = reports.first() else { panic!("{reports:?}") };
        assert_eq!(applied.namespaces.contains(&"net".to_owned()), !network, "{applied:?}");
        // Without network only the loopback interface exists.
        let interfaces: usize = out.trim().parse().unwrap();
        if !network {
            assert_eq!(interfaces, 1, "{out}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_command_ends_at_the_process_limit() {
    let w = world();
    let mut p = profile(&w, false);
    p.limits.processes = 32;
    let (reports, _, _) =
        run(&launcher(), &w, p, "i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done; wait").await;
    assert_eq!(ended(&reports).1.as_deref(), Some("processes"), "{reports:?}");
}

#[test]
fn the_launcher_binary_says_what_it_is_for() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_portcullis-sandbox")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the hub starts this program"));
}
