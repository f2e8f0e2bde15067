//! What the launcher's tests share: a project with a secret and an outside folder, a profile over it,
//! and a script run inside it through the launcher binary.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use portcullis_harness::SandboxProfile;
use portcullis_sandbox::{LaunchReport, LaunchRequest, SandboxLauncher, Started};
use std::path::PathBuf;
use tokio::io::AsyncReadExt;

pub struct World {
    pub _tmp: tempfile::TempDir,
    pub project: PathBuf,
    pub outside: PathBuf,
    pub private_tmp: PathBuf,
}

pub fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, outside, private_tmp) = (root.join("project"), root.join("outside"), root.join("tmp"));
    for dir in [project.join(".git/hooks"), project.join("secrets"), outside.clone(), private_tmp.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(project.join("secrets/key"), "sandbox-secret").unwrap();
    std::fs::write(outside.join("notes"), "outside").unwrap();
    World { _tmp: tmp, project, outside, private_tmp }
}

pub fn profile(w: &World, network: bool) -> SandboxProfile {
    let mut profile = portcullis_sandbox::system_only(vec![w.project.clone()]);
    profile.hidden = vec![w.project.join("secrets"), w.project.join(".portcullis")];
    profile.read_only = vec![w.project.join(".git/hooks")];
    profile.network = network;
    profile
}

/// Runs `script` with `sh -c` inside `profile`: the reports, stdout and stderr.
pub async fn run(
    launcher: &SandboxLauncher,
    w: &World,
    profile: SandboxProfile,
    script: &str,
) -> (Vec<LaunchReport>, String, String) {
    run_with_gate(launcher, w, profile, script, None).await
}

/// [`run`], the command's egress gate at `gate`.
pub async fn run_with_gate(
    launcher: &SandboxLauncher,
    w: &World,
    profile: SandboxProfile,
    script: &str,
    gate: Option<PathBuf>,
) -> (Vec<LaunchReport>, String, String) {
    let started = launcher.start(&profile).unwrap();
    run_started(started, w, profile, script, gate).await
}

/// [`run_with_gate`] through a launcher already taken; what the command changed in its write roots is
/// committed afterwards, all of it, as a hub with no review would.
pub async fn run_started(
    started: Started,
    w: &World,
    profile: SandboxProfile,
    script: &str,
    gate: Option<PathBuf>,
) -> (Vec<LaunchReport>, String, String) {
    let tmp = started.tmp.path().to_path_buf();
    let layers = portcullis_sandbox::overlay::layers(&profile, &tmp);
    let ran = run_uncommitted(started, w, profile, script, gate).await;
    for layer in layers {
        let set = portcullis_sandbox::changes::read(&layer).unwrap();
        portcullis_sandbox::changes::commit(&set, &vec![None; set.changes.len()], None);
        portcullis_sandbox::overlay::remove(&layer).unwrap();
    }
    ran
}

/// [`run_started`], what the command changed left in its layers.
pub async fn run_uncommitted(
    started: Started,
    w: &World,
    profile: SandboxProfile,
    script: &str,
    gate: Option<PathBuf>,
) -> (Vec<LaunchReport>, String, String) {
    let mut child = started.child;
    let request = LaunchRequest {
        profile,
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: w.project.clone(),
        private_tmp: started.tmp.path().to_path_buf(),
        stdin: None,
        gate,
    };
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (reports, _, _, _) = tokio::join!(
        started.conversation.run(&request),
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err),
        child.wait()
    );
    (reports, out, err)
}

pub fn launcher() -> SandboxLauncher {
    SandboxLauncher::new(env!("CARGO_BIN_EXE_portcullis-sandbox"))
}

pub fn ended(reports: &[LaunchReport]) -> (Option<i32>, Option<String>) {
    reports
        .iter()
        .find_map(|r| match r {
            LaunchReport::Ended { exit_code, limit, .. } => Some((*exit_code, limit.clone())),
            _ => None,
        })
        .expect("an Ended report")
}
