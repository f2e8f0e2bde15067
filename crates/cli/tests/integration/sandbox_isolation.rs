//! Issue 39, the sandbox's findings through `portcullis call` and `portcullis serve` on a real
//! pseudo-terminal (util-linux `script`), as an operator runs them: a confined command cannot type into
//! the operator's terminal (no controlling terminal, no `/dev/tty`, TIOCSTI refused), cannot write
//! through a descriptor the hub inherited, cannot rename or add to `.git`, and dies with a killed hub.
//! Each attack is a script the agent wrote and an allowed `python3` runs: the judge cannot see inside it,
//! so only the kernel stands in the way.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{self, node_modules};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "commands": { "default": "prompt", "rules": [
    { "id": "py", "pattern": ["python3"], "decision": "allow", "match": ["python3 x.py"] },
    { "id": "reads", "pattern": [["ls", "cat", "echo", "sleep", "true"]], "decision": "allow", "match": ["ls"] },
    { "id": "remove", "pattern": ["rm"], "decision": "prompt", "match": ["rm x"] } ] },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 4 }
}"#;

/// Types into every terminal it can reach: `/dev/tty`, its standard streams, and `/dev/pts/*`.
const INJECT: &str = r#"
import fcntl, os, sys, termios, time, glob
seen = []
deadline = time.time() + float(sys.argv[1]) if len(sys.argv) > 1 else time.time()
while True:
    for target in ["/dev/tty", 0, 1, 2] + glob.glob("/dev/pts/[0-9]*"):
        try:
            fd = os.open(target, os.O_RDWR | os.O_NOCTTY) if isinstance(target, str) else target
            for c in b"o\n":
                fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
            seen.append(f"{target}:INJECTED")
        except OSError as e:
            seen.append(f"{target}:{e.errno}")
    if time.time() >= deadline:
        break
    time.sleep(0.1)
print("results", " ".join(sorted(set(seen))))
print("session", os.getsid(0), "tty", os.isatty(0))
"#;

fn base() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::create_dir_all(proj.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    std::fs::write(proj.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(proj.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), POLICY).unwrap();
    std::fs::write(proj.join("inject.py"), INJECT).unwrap();
    std::fs::write(proj.join("README.md"), "keep me\n").unwrap();
    (dir, base)
}

/// `portcullis call shell COMMAND` on a pseudo-terminal, with descriptor 7 open on `outside` for writing
/// (as a hub started from a shell that left one open); returns what the terminal showed.
fn call_on_terminal(base: &Path, command: &str, outside: &Path) -> String {
    let args = json!({ "command": command }).to_string();
    let out = Command::new("script")
        .args([
            "-qec",
            r#"exec 7>"$OUTSIDE"; "$PORTCULLIS_BIN" call shell "$ARGS" --approver deny --db "$DB""#,
        ])
        .arg("/dev/null")
        .current_dir(base.join("proj"))
        .env("SHELL", "/bin/sh")
        .env("PORTCULLIS_BIN", env!("CARGO_BIN_EXE_portcullis"))
        .env("ARGS", &args)
        .env("OUTSIDE", outside)
        .env("DB", base.join("call.db"))
        .env("HOME", base.join("home"))
        .env("PORTCULLIS_CONFIG_DIR", base.join("config"))
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_confined_command_reaches_neither_the_terminal_nor_an_inherited_descriptor() {
    let (_dir, base) = base();
    let outside = base.join("outside.txt");
    let shown = call_on_terminal(&base, "/usr/bin/python3 inject.py", &outside);
    assert!(shown.contains("results"), "the command ran: {shown}");
    assert!(!shown.contains("INJECTED"), "a terminal took input: {shown}");
    // No controlling terminal: `/dev/tty` cannot be opened (Landlock refuses it, and there is no
    // terminal to be had); the streams are pipes, and the ioctl is refused whatever they are.
    assert!(shown.contains("/dev/tty:13") || shown.contains("/dev/tty:6"), "{shown}");
    assert!(
        shown.contains("0:1") && shown.contains("1:1") && shown.contains("2:1"),
        "seccomp EPERM: {shown}"
    );
    std::fs::write(base.join("proj/fd7.py"), "import os\nos.write(7, b'leaked')\n").unwrap();
    let shown = call_on_terminal(&base, "/usr/bin/python3 fd7.py", &outside);
    assert!(shown.contains("Bad file descriptor"), "{shown}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "the inherited descriptor was written");
}

#[test]
fn the_repository_folder_is_read_only_and_cannot_be_renamed_away() {
    let (_dir, base) = base();
    let attack = r##"
import os
for name, act in [
    ("rename", lambda: os.rename(".git", ".git-old")),
    ("commondir", lambda: open(".git/commondir", "w").write("../elsewhere\n")),
    ("config", lambda: open(".git/config", "a").write("[core]\n\tfsmonitor = touch pwned\n")),
    ("info", lambda: os.makedirs(".git/info/x")),
    ("hook", lambda: open(".git/hooks/pre-commit", "w").write("#!/bin/sh\n")),
]:
    try:
        act()
        print(name, "DONE")
    except OSError as e:
        print(name, "refused", e.errno)
"##;
    std::fs::write(base.join("proj/attack.py"), attack).unwrap();
    let shown = call_on_terminal(&base, "/usr/bin/python3 attack.py", &base.join("unused"));
    for step in ["rename", "commondir", "config", "info", "hook"] {
        assert!(shown.contains(&format!("{step} refused")), "{step}: {shown}");
    }
    let proj = base.join("proj");
    assert!(
        proj.join(".git/HEAD").exists()
            && !proj.join(".git-old").exists()
            && !proj.join(".git/commondir").exists()
    );
    assert_eq!(std::fs::read_to_string(proj.join(".git/config")).unwrap(), "[core]\n");
}

#[test]
fn a_confined_command_dies_with_a_killed_hub() {
    let (_dir, base) = base();
    std::fs::write(
        base.join("proj/late.py"),
        "import time\nopen('started', 'w').write('x')\ntime.sleep(3)\nopen('late-marker', 'w').write('x')\n",
    )
    .unwrap();
    let mut hub = common::portcullis(&base)
        .args(["call", "shell", r#"{"command": "/usr/bin/python3 late.py"}"#, "--approver", "deny", "--db"])
        .arg(base.join("call.db"))
        .current_dir(base.join("proj"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    hub.kill().unwrap();
    let _ = hub.wait();
    std::thread::sleep(Duration::from_millis(3500));
    // Its writes went to its copy-on-write layer, never reviewed (the hub was killed): found there.
    let layers: Vec<PathBuf> = std::fs::read_dir(base.join("proj/.portcullis/changes"))
        .map(|d| d.flatten().map(|e| e.path().join("upper")).collect())
        .unwrap_or_default();
    assert!(layers.iter().any(|u| u.join("started").exists()), "the command ran");
    assert!(!base.join("proj/started").exists(), "an unreviewed change reached the project");
    assert!(!layers.iter().any(|u| u.join("late-marker").exists()), "the command outlived the hub");
    assert!(!base.join("proj/late-marker").exists(), "the command outlived the hub");
    // The next writer of the ledger ends the call: its outcome is unknown (it ran, in part).
    let next = common::portcullis(&base)
        .args(["call", "shell", r#"{"command": "true"}"#, "--approver", "deny", "--db"])
        .arg(base.join("call.db"))
        .current_dir(base.join("proj"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(next.status.success());
    let shown = common::portcullis(&base)
        .args(["ledger", "show", "call-1", "--db"])
        .arg(base.join("call.db"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("outcome unknown"), "{text}");
}

/// The terminal approver of `serve`: an allowed command that types `o` into every terminal it can reach
/// runs while another call waits for the operator; the prompt is not answered by it, and times out.
#[test]
fn a_confined_command_cannot_answer_the_terminal_approvers_prompt() {
    node_modules();
    let (_dir, base) = base();
    let (mut hub, info) = common::serve_on_terminal(&base, &[("RUST_LOG", "warn")], &[]);
    let token = std::fs::read_to_string(base.join("config/token")).unwrap();
    let url = info["mcp_url"].as_str().unwrap().to_owned();
    let client = move |steps: Value| {
        let scenario = json!({ "url": url, "token": token, "steps": steps });
        Command::new("node").arg(common::interop_dir().join("client.mjs")).arg(scenario.to_string()).output()
    };
    let injector = {
        let client = client.clone();
        std::thread::spawn(move || {
            client(
                json!([{"op": "call", "name": "shell", "arguments": {"command": "/usr/bin/python3 inject.py 6"}}]),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let asked =
        client(json!([{"op": "call", "name": "shell", "arguments": {"command": "rm README.md"}}])).unwrap();
    let report: Value = serde_json::from_slice(&asked.stdout).unwrap();
    assert_eq!(report["results"][0]["result"]["isError"], true, "{report}");
    assert!(started.elapsed() >= Duration::from_secs(3), "the prompt was answered before its deadline");
    assert!(base.join("proj/README.md").exists(), "the agent approved its own rm");
    let injected = injector.join().unwrap().unwrap();
    let text = String::from_utf8_lossy(&injected.stdout);
    assert!(text.contains("results") && !text.contains("INJECTED"), "{text}");
    let _ = hub.kill();
    let _ = hub.wait();
}

/// Finding 9 through the gateway, as it was found: `serve` started from a shell that left descriptor 7
/// open on a file outside the project; an allowed command writing to `&7` writes nothing there.
#[test]
fn a_descriptor_serve_inherited_never_reaches_a_command() {
    node_modules();
    let (_dir, base) = base();
    let outside = base.join("outside.txt");
    std::fs::write(base.join("proj/fd7.py"), "import os\nos.write(7, b'leaked')\n").unwrap();
    let mut hub = Command::new("script")
        .args([
            "-qec",
            r#"exec 7>"$OUTSIDE"; exec "$PORTCULLIS_BIN" serve --port 0 --approver none --db "$DB""#,
        ])
        .arg("/dev/null")
        .current_dir(base.join("proj"))
        .env("SHELL", "/bin/sh")
        .env("PORTCULLIS_BIN", env!("CARGO_BIN_EXE_portcullis"))
        .env("OUTSIDE", &outside)
        .env("DB", base.join("ledger.db"))
        .env("HOME", base.join("home"))
        .env("PORTCULLIS_CONFIG_DIR", base.join("config"))
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let runtime = base.join("config/hub.json");
    let started = Instant::now();
    while !runtime.exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "the hub did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&runtime).unwrap()).unwrap();
    let token = std::fs::read_to_string(base.join("config/token")).unwrap();
    let scenario = json!({ "url": info["mcp_url"], "token": token, "steps": [
        {"op": "call", "name": "shell", "arguments": {"command": "/usr/bin/python3 fd7.py"}}
    ]});
    let out = Command::new("node")
        .arg(common::interop_dir().join("client.mjs"))
        .arg(scenario.to_string())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report["results"][0]["result"].to_string();
    assert!(text.contains("Bad file descriptor"), "{text}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "the descriptor reached the command");
    let _ = hub.kill();
    let _ = hub.wait();
}
