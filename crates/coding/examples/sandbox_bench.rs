//! What the sandbox adds to a command: `true` run by the shell tool's runner directly, then inside a
//! profile (namespaces, Landlock, limits, the private /tmp), N times each, alternating; prints the
//! median and p90 of each and the difference. This binary is its own launcher (`entry_point` first).
//! Each timed run of the alternating part starts after a 20 ms pause (as an agent's commands come, a
//! model's turn apart), so the launcher for the next command has started and settled and no run pays for
//! another's; the back-to-back part has no pause.
//!
//! `cargo run --release -p portcullis-coding --example sandbox_bench -- 500 [open|closed|egress] [launcher]`
//! (`egress`: a rule names a host, so the command's egress gate is opened, and its relay, loopback and
//! stub resolver set up, though `true` makes no connection).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use portcullis_coding::shell::{RunSpec, run_command};
use portcullis_harness::SandboxProfile;
use std::time::{Duration, Instant};

/// The pause before each timed run of the alternating part.
const SETTLE: Duration = Duration::from_millis(20);

fn main() {
    if let Some(code) = portcullis_sandbox::entry_point() {
        std::process::exit(code);
    }
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let project = std::env::temp_dir().join(format!("portcullis-sandbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(&project).unwrap();
    let project = std::fs::canonicalize(&project).unwrap();
    // The dedicated launcher when given (`target/release/portcullis-sandbox`), else this binary.
    let launcher = match std::env::args().nth(3) {
        Some(path) => portcullis_sandbox::SandboxLauncher::new(path),
        None => portcullis_sandbox::this_binary().expect("entry_point was called"),
    };
    let mut profile = portcullis_sandbox::system_only(vec![project.clone()]);
    // `open` as the second argument: the profile of a command a network rule allows (no network
    // namespace, no TCP rules).
    profile.network = std::env::args().nth(2).is_some_and(|a| a == "open");
    if std::env::args().nth(2).is_some_and(|a| a == "egress") {
        profile.egress = Some(portcullis_harness::EgressScope {
            hosts: vec!["registry.npmjs.org".into()],
            by: "rule `bench` (bench)".into(),
            ask: None,
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let spec = |sandbox: Option<(portcullis_sandbox::SandboxLauncher, SandboxProfile)>| RunSpec {
        command: "true".into(),
        cwd: project.clone(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        timeout: Duration::from_secs(10),
        output_bytes: 4096,
        kill_grace: Duration::from_millis(100),
        sandbox,
        asks: None,
        tee: None,
        undo: None,
    };
    let (mut direct, mut confined) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    runtime.block_on(async {
        for _ in 0..runs {
            tokio::time::sleep(SETTLE).await;
            let t = Instant::now();
            let out = run_command(spec(None), &cancel).await.unwrap();
            direct.push(t.elapsed());
            assert!(out.joined_text().contains("[exit code: 0]"));
            tokio::time::sleep(SETTLE).await;
            let t = Instant::now();
            let out = run_command(spec(Some((launcher.clone(), profile.clone()))), &cancel).await.unwrap();
            confined.push(t.elapsed());
            assert!(out.joined_text().contains("[exit code: 0]"), "{}", out.joined_text());
        }
    });
    // Back to back: the launcher started ahead for the next command may not be ready yet.
    let mut burst = Vec::with_capacity(runs);
    runtime.block_on(async {
        for _ in 0..runs {
            let t = Instant::now();
            let out = run_command(spec(Some((launcher.clone(), profile.clone()))), &cancel).await.unwrap();
            burst.push(t.elapsed());
            assert!(out.joined_text().contains("[exit code: 0]"), "{}", out.joined_text());
        }
    });
    let stats = |v: &mut Vec<Duration>| {
        v.sort();
        (v[v.len() / 2], v[v.len() * 9 / 10])
    };
    let (d50, d90) = stats(&mut direct);
    let (c50, c90) = stats(&mut confined);
    println!("`true` through the shell runner, {runs} runs each (alternating)");
    println!("  direct:   median {:>8.2?}  p90 {:>8.2?}", d50, d90);
    println!("  confined: median {:>8.2?}  p90 {:>8.2?}", c50, c90);
    println!("  added:    median {:>8.2?}  p90 {:>8.2?}", c50.saturating_sub(d50), c90.saturating_sub(d90));
    let (b50, b90) = stats(&mut burst);
    println!("  confined back to back: median {:>8.2?}  p90 {:>8.2?}", b50, b90);
    let _ = std::fs::remove_dir_all(&project);
}
