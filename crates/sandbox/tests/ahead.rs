//! Launchers started ahead for a profile: the next command of that profile runs behind walls built
//! before it came, and only such a command does (another profile, another folder, or a hidden or
//! read-only place replaced since the walls went up: the command does not run there). What a command
//! leaves running is gone by its `Ended` report.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_harness::SandboxProfile;
use portcullis_sandbox::{LaunchReport, LaunchRequest, PrivateTmp, Walls};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;
use common::*;

/// Long enough for a launcher started ahead to have built its walls (two `exec`s and the mounts).
const SETTLE: Duration = Duration::from_millis(500);

const WALLS_SCRIPT: &str = "cat secrets/key 2>/dev/null || echo hidden; \
    echo hook > .git/hooks/pre-commit 2>/dev/null || echo hooks-read-only; \
    cat ../outside/notes 2>/dev/null || echo no-read-outside; \
    echo escape > ../outside/escaped 2>/dev/null || echo no-write-outside";

fn request(w: &World, profile: SandboxProfile, tmp: &PrivateTmp, script: &str) -> LaunchRequest {
    LaunchRequest {
        profile,
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: w.project.clone(),
        private_tmp: tmp.path().to_path_buf(),
        stdin: None,
        gate: None,
    }
}

/// A launcher sent `walls` ahead, then (after `between`) `request`: its reports and output.
async fn walls_then_request(
    walls: Walls,
    between: impl FnOnce(),
    request: &LaunchRequest,
) -> (Vec<LaunchReport>, String) {
    let (mut command, mut conversation) = launcher().command().unwrap();
    command.stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    drop(command);
    conversation.send_walls(&walls).await.unwrap();
    tokio::time::sleep(SETTLE).await;
    between();
    let mut stdout = child.stdout.take().unwrap();
    let mut out = String::new();
    let (reports, _) = tokio::join!(
        conversation.run(request),
        tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut out)
    );
    let _ = child.wait().await;
    (reports, out)
}

fn failed_step(reports: &[LaunchReport]) -> Option<(String, String)> {
    reports.iter().find_map(|r| match r {
        LaunchReport::Failed { step, message } => Some((step.clone(), message.clone())),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_command_of_a_profile_runs_behind_walls_built_ahead() {
    let w = world();
    let launcher = launcher();
    let p = profile(&w, false);
    let (reports, _, _) = run(&launcher, &w, p.clone(), "true").await;
    assert_eq!(ended(&reports).0, Some(0), "{reports:?}");
    // Once that command ended, a launcher was started ahead for its profile.
    tokio::time::sleep(SETTLE).await;
    let started = launcher.start(&p).unwrap();
    assert!(started.built_ahead());
    let (reports, out, err) = run_started(started, &w, p.clone(), WALLS_SCRIPT, None).await;
    assert!(matches!(reports.first(), Some(LaunchReport::Confined { .. })), "{reports:?} {err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["hidden", "hooks-read-only", "no-read-outside", "no-write-outside"]
    );
    assert!(!w.outside.join("escaped").exists());
    // A command of another profile does not get it: its own walls are built with its request.
    tokio::time::sleep(SETTLE).await;
    let mut other = p.clone();
    other.write.push(w.outside.clone());
    let started = launcher.start(&other).unwrap();
    assert!(!started.built_ahead());
    let (_, out, _) =
        run_started(started, &w, other, "echo out > ../outside/written && echo wrote", None).await;
    assert_eq!(out.trim(), "wrote");
    // The first profile's launcher still waits, and its walls still hold.
    let started = launcher.start(&p).unwrap();
    assert!(started.built_ahead());
    let (_, out, _) =
        run_started(started, &w, p, "echo again > ../outside/written || echo refused", None).await;
    assert!(out.contains("refused"), "{out}");
    assert_eq!(std::fs::read_to_string(w.outside.join("written")).unwrap(), "out\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_launcher_with_walls_built_ahead_runs_no_request_for_other_walls() {
    let w = world();
    let p = profile(&w, false);
    let mut wider = p.clone();
    wider.write.push(w.outside.clone());
    let mut open = p.clone();
    open.network = true;
    let script = "echo escape > ../outside/escaped; echo ran";
    for (profile, same) in [(wider, true), (open, true), (p.clone(), false)] {
        // A folder for each launcher: its copy-on-write layers are named for it.
        let (tmp, elsewhere) = (PrivateTmp::new().unwrap(), PrivateTmp::new().unwrap());
        let folder = if same { &tmp } else { &elsewhere };
        let walls = Walls { profile: p.clone(), private_tmp: tmp.path().to_path_buf() };
        let (reports, out) = walls_then_request(walls, || {}, &request(&w, profile, folder, script)).await;
        let (step, _) = failed_step(&reports).unwrap_or_else(|| panic!("{reports:?} {out}"));
        assert_eq!(step, "walls built ahead");
        assert!(!out.contains("ran"), "{out}");
        assert!(!w.outside.join("escaped").exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_or_read_only_place_replaced_after_the_walls_went_up_stops_the_command() {
    let w = world();
    let p = profile(&w, false);
    let secrets = w.project.join("secrets");
    let hooks = w.project.join(".git/hooks");
    let replace_secrets = || {
        std::fs::rename(&secrets, w.project.join("secrets.old")).unwrap();
        std::fs::create_dir(&secrets).unwrap();
        std::fs::write(secrets.join("key"), "replaced-secret").unwrap();
    };
    let replace_hooks = || {
        std::fs::rename(&hooks, w.project.join(".git/hooks.old")).unwrap();
        std::fs::create_dir(&hooks).unwrap();
    };
    let script = "cat secrets/key; echo hook > .git/hooks/pre-commit && echo hook-written";
    let replacements: [&dyn Fn(); 2] = [&replace_secrets, &replace_hooks];
    for replace in replacements {
        let tmp = PrivateTmp::new().unwrap();
        let walls = Walls { profile: p.clone(), private_tmp: tmp.path().to_path_buf() };
        let (reports, out) = walls_then_request(walls, replace, &request(&w, p.clone(), &tmp, script)).await;
        // Stopped, or run behind the place as it was: the copy-on-write layer over the project keeps
        // the view the walls were built on (the mounts cover the overlay's files, which a rename on the
        // host does not move).
        if let Some((step, message)) = failed_step(&reports) {
            assert_eq!(step, "walls built ahead");
            assert!(message.contains("replaced since the walls were built"), "{message}");
        }
        assert!(!out.contains("replaced-secret") && !out.contains("hook-written"), "{out}");
        assert!(!hooks.join("pre-commit").exists());
    }
    // The hub does not take a launcher whose places were replaced: the command gets walls of its own.
    let launcher = launcher();
    let _ = run(&launcher, &w, p.clone(), "true").await;
    tokio::time::sleep(SETTLE).await;
    std::fs::remove_dir_all(&secrets).unwrap();
    std::fs::create_dir(&secrets).unwrap();
    std::fs::write(secrets.join("key"), "replaced-again").unwrap();
    let started = launcher.start(&p).unwrap();
    assert!(!started.built_ahead());
    let (_, out, _) = run_started(started, &w, p, "cat secrets/key 2>/dev/null || echo hidden", None).await;
    assert_eq!(out.trim(), "hidden");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_a_command_left_running_outlives_its_ended_report() {
    let w = world();
    let launcher = launcher();
    let p = profile(&w, false);
    for _ in 0..2 {
        let t = Instant::now();
        let script = "(sleep 1; echo late > late.txt) & (setsid sh -c 'sleep 1; echo late > later.txt' &); echo started";
        let (reports, out, _) = run(&launcher, &w, p.clone(), script).await;
        assert_eq!(out.trim(), "started");
        assert_eq!(ended(&reports).0, Some(0));
        assert!(t.elapsed() < Duration::from_millis(900), "{:?}", t.elapsed());
        tokio::time::sleep(SETTLE).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!w.project.join("late.txt").exists() && !w.project.join("later.txt").exists());
}
