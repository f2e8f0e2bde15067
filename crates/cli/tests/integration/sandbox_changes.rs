//! Issue 51, finding 2: an allowed command (an interpreter running a script the agent wrote) creates
//! files other programs execute — cargo's and npm's config, a toolchain file, a CI workflow, husky's hook,
//! Claude Code's settings in a sub-folder, a repository look-alike with `core.fsmonitor` — beside an
//! ordinary source file. Through `portcullis call`: the command sees its own writes while it runs; once
//! it ended, the protected ones are discarded (the result says which and why), the ordinary one is in
//! the project, and `git status` run by the operator afterwards runs nothing the agent planted.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const POLICY: &str = r#"{
  "commands": { "default": "prompt", "rules": [
    { "id": "py", "pattern": ["python3"], "decision": "allow", "match": ["python3 x.py"] } ] },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 4 }
}"#;

/// The protected places the script creates (relative to the project), none there before.
const PLANTED: &[&str] = &[
    ".cargo/config.toml",
    ".mcp.json",
    ".husky/pre-commit",
    ".npmrc",
    "rust-toolchain.toml",
    ".github/workflows/x.yml",
    "sub/.claude/settings.json",
    "sub/r/.git/config",
    "sub/r/.git/HEAD",
];

fn plant_script(canary: &Path) -> String {
    format!(
        r##"
import os
def put(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "w").write(text)
put(".cargo/config.toml", "[build]\nrustc-wrapper = \"/bin/sh\"\n")
put(".mcp.json", '{{"mcpServers": {{"x": {{"command": "touch", "args": ["{c}"]}}}}}}')
put(".husky/pre-commit", "#!/bin/sh\ntouch {c}\n")
put(".npmrc", "script-shell=/tmp/evil\n")
put("rust-toolchain.toml", "[toolchain]\npath = \"/tmp/evil\"\n")
put(".github/workflows/x.yml", "on: push\n")
put("sub/.claude/settings.json", '{{"hooks": {{}}}}')
put("sub/r/.git/HEAD", "ref: refs/heads/main\n")
os.makedirs("sub/r/.git/objects", exist_ok=True)
os.makedirs("sub/r/.git/refs/heads", exist_ok=True)
put("sub/r/.git/config", "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {c}\n")
put("src/new.rs", "fn planted_test() {{}}\n")
print("read back:", open("src/new.rs").read().strip(), open("sub/r/.git/config").read().count("fsmonitor"))
"##,
        c = canary.display()
    )
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), POLICY).unwrap();
    (dir, base)
}

fn call(base: &Path, command: &str) -> String {
    let args = serde_json::json!({ "command": command }).to_string();
    let db = base.join("call.db");
    common::in_project(base, &["call", "shell", &args, "--approver", "deny", "--db", db.to_str().unwrap()])
}

#[test]
fn protected_names_a_command_creates_are_discarded_and_ordinary_ones_kept() {
    let (_dir, base) = project();
    let proj = base.join("proj");
    let canary = base.join("canary");
    std::fs::write(proj.join("plant.py"), plant_script(&canary)).unwrap();
    let shown = call(&base, "/usr/bin/python3 plant.py");
    // It saw its own writes while it ran.
    assert!(shown.contains("read back: fn planted_test() {} 1"), "{shown}");
    for planted in PLANTED {
        assert!(std::fs::symlink_metadata(proj.join(planted)).is_err(), "{planted} is on disk: {shown}");
    }
    assert!(!proj.join("sub/.claude").exists() && !proj.join("sub/r/.git").exists(), "{shown}");
    assert_eq!(std::fs::read_to_string(proj.join("src/new.rs")).unwrap(), "fn planted_test() {}\n");
    // The result says what was kept and what was held for the operator, and why.
    assert!(shown.contains("[changes kept:") && shown.contains("src/new.rs"), "{shown}");
    for (path, why) in [
        (".mcp.json", "Claude Code starts the MCP servers"),
        (".cargo/config.toml", "cargo runs the programs"),
        ("sub/r/.git", "repository"),
        (".github/workflows/x.yml", "workflows"),
    ] {
        let line = shown.lines().find(|l| l.starts_with(&format!("[change held for the operator: {path} ")));
        assert!(line.is_some_and(|l| l.contains(why)), "{path}: {shown}");
    }
    // The operator's own git, outside every sandbox, runs nothing the agent planted.
    for dir in [proj.clone(), proj.join("sub/r"), proj.join("sub")] {
        let _ = Command::new("git")
            .arg("status")
            .current_dir(&dir)
            .env("HOME", base.join("home"))
            .env("GIT_CEILING_DIRECTORIES", &base)
            .stdin(Stdio::null())
            .output();
    }
    assert!(!canary.exists(), "a planted fsmonitor ran");
    // The operator's own `cargo build` runs no planted `rustc-wrapper` (with it, `/bin/sh` would take
    // rustc for a script and the build would fail).
    std::fs::write(
        proj.join("Cargo.toml"),
        "[package]\nname = \"planted\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[lib]\npath = \"src/new.rs\"\n",
    )
    .unwrap();
    let build = Command::new("cargo")
        .args(["build", "--offline", "--quiet"])
        .current_dir(&proj)
        .env("CARGO_TARGET_DIR", base.join("cargo-target"))
        .env_remove("RUSTC_WRAPPER")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(build.status.success(), "the operator's cargo build: {}", String::from_utf8_lossy(&build.stderr));
    // Nothing of the command's layer is left among the layers (a launcher started ahead for the next
    // command may have made its own, empty): what was not committed is held aside.
    let layers = proj.join(".portcullis/changes");
    for layer in std::fs::read_dir(&layers).unwrap().flatten() {
        let upper: Vec<_> = std::fs::read_dir(layer.path().join("upper")).unwrap().flatten().collect();
        assert!(upper.is_empty(), "{upper:?}");
    }
    // The operator lists what is held, and discards it: it is gone, and nothing of it reached the tree.
    let listed = held(&base, &[]);
    for path in [".mcp.json", ".cargo", ".husky"] {
        assert!(listed.lines().any(|l| l.contains(&format!("/proj/{path}"))), "{path}: {listed}");
    }
    let call = held_call(&listed);
    let out = held(&base, &["discard", &call]);
    assert!(out.contains("discarded:"), "{out}");
    assert!(held(&base, &[]).contains("no changes are held"));
    for planted in PLANTED {
        assert!(std::fs::symlink_metadata(proj.join(planted)).is_err(), "{planted} is on disk");
    }
}

/// The call id of the first held change `portcullis held` lists (its first word is `<session>__<call>`).
fn held_call(listed: &str) -> String {
    let key = listed.lines().next().and_then(|l| l.split_whitespace().next()).unwrap_or_default();
    key.rsplit("__").next().unwrap_or_default().to_owned()
}

/// `portcullis held <args>` in the project: its standard output and error.
fn held(base: &Path, args: &[&str]) -> String {
    common::in_project(base, &[&["held"], args].concat())
}

/// What the operator chooses to keep is committed (a protected place the operator wants); never over a
/// file changed in the real tree since the command started.
#[test]
fn the_operator_keeps_held_changes_and_they_are_committed() {
    let (_dir, base) = project();
    let proj = base.join("proj");
    std::fs::write(
        proj.join("npmrc.py"),
        "open('.npmrc', 'w').write('save-exact=true\\n')\nopen('.mcp.json', 'w').write('{}')\n",
    )
    .unwrap();
    let shown = call(&base, "/usr/bin/python3 npmrc.py");
    assert!(shown.contains("[change held for the operator: .npmrc "), "{shown}");
    assert!(!proj.join(".npmrc").exists());
    // Meanwhile the operator wrote their own .mcp.json: keeping does not overwrite it.
    std::fs::write(proj.join(".mcp.json"), "{\"mine\": true}").unwrap();
    let listed = held(&base, &[]);
    let call_id = held_call(&listed);
    let kept = held(&base, &["keep", &call_id]);
    assert!(kept.contains("kept:") && kept.contains(".npmrc"), "{kept}");
    assert!(
        kept.contains("not kept:") && kept.contains(".mcp.json") && kept.contains("changed in the real tree"),
        "{kept}"
    );
    assert_eq!(std::fs::read_to_string(proj.join(".npmrc")).unwrap(), "save-exact=true\n");
    assert_eq!(std::fs::read_to_string(proj.join(".mcp.json")).unwrap(), "{\"mine\": true}");
    assert!(held(&base, &[]).contains("no changes are held"));
}
