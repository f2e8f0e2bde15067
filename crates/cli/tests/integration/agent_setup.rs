//! `portcullis setup claude|codex` and `portcullis doctor` through the binary, on a fresh home of their
//! own: the entries land in the agents' files (merged, every other key kept), nothing is written without
//! `--yes`, `--undo` puts the files back byte for byte, and doctor passes against a running `serve` — or
//! names each missing piece and exits 1. The README's set-up commands are run as written.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{portcullis, serve};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

const POLICY: &str = r#"{
  "grants": [ { "name": "agent", "allow": ["shell", "read"] } ],
  "commands": { "default": "prompt", "rules": [] },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] }
}"#;

/// The folder of the binary under test: put first on `PATH`, so the agents' files say `portcullis`.
fn bin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_portcullis")).parent().unwrap().to_owned()
}

/// `portcullis` for `base` (home `base/home`, config `base/config`), run in `base/proj`, stdin not a
/// terminal, the binary on `PATH` or not.
fn run(base: &Path, args: &[&str], on_path: bool) -> Output {
    let path =
        if on_path { format!("{}:/usr/bin:/bin", bin_dir().display()) } else { "/usr/bin:/bin".into() };
    std::fs::create_dir_all(base.join("proj")).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    portcullis(base)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env("PATH", path)
        .args(args)
        .current_dir(base.join("proj"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs and expects exit `code`; returns stdout.
fn run_ok(base: &Path, args: &[&str], code: i32) -> String {
    let out = run(base, args, true);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The commands of the README's "Set-up in one command" block, as written.
fn readme_commands() -> Vec<Vec<String>> {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let start = readme.find("**Set-up in one command.**").expect("the README's set-up section");
    let block = &readme[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let commands: Vec<Vec<String>> =
        block.lines().map(|l| l.split_whitespace().skip(1).map(str::to_owned).collect()).collect();
    assert!(commands.len() >= 3, "{block}");
    commands
}

#[test]
fn the_readmes_commands_on_a_fresh_home_pass_doctor_against_serve() {
    let served = serve(POLICY);
    let base = served.path("");
    let commands = readme_commands();
    for args in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let stdout = run_ok(&base, &args, 0);
        assert!(!stdout.contains(served.token.trim()), "the token is never printed: {stdout}");
    }
    // What they wrote.
    let home = base.join("home");
    let claude = json(&home.join(".claude.json"));
    let server = &claude["mcpServers"]["portcullis"];
    // The stdio relay: the token stays in the hub's folder, out of a file Claude Code reads.
    assert_eq!(server["type"], "stdio", "{claude}");
    assert_eq!(server["command"], "portcullis");
    assert_eq!(server["args"], serde_json::json!(["mcp"]));
    assert!(!claude.to_string().contains(served.token.trim()), "no token in ~/.claude.json");
    let settings = json(&home.join(".claude/settings.json"));
    assert_eq!(settings["permissions"]["allow"], serde_json::json!(["mcp__portcullis"]));
    let config = base.join("config");
    for event in ["PreToolUse", "PostToolUse"] {
        let hook = &settings["hooks"][event][0];
        assert_eq!(hook["matcher"], "*", "{event}");
        assert_eq!(
            hook["hooks"][0]["command"],
            format!("PORTCULLIS_CONFIG_DIR={} portcullis hook claude", config.display()),
            "{event}"
        );
    }
    let codex = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(codex.contains("[mcp_servers.portcullis]\ncommand = \"portcullis\"\nargs = [\"mcp\"]\ndefault_tools_approval_mode = \"approve\""), "{codex}");
    assert!(!codex.contains(served.token.trim()), "no token in Codex's file");

    // Doctor, as the README runs it: every line ok, for both agents.
    let report = run_ok(&base, &["doctor"], 0);
    for subject in [
        "portcullis:",
        "hub:",
        "gateway:",
        "~/.claude.json:",
        "~/.claude/settings.json:",
        "~/.codex/config.toml:",
    ] {
        assert!(report.lines().any(|l| l.starts_with("ok") && l.contains(subject)), "{subject}\n{report}");
    }
    assert!(report.lines().all(|l| l.starts_with("ok ")), "{report}");

    // Again: nothing to change.
    assert!(run_ok(&base, &["setup", "claude", "--user", "--yes"], 0).contains("set up already"));

    // A relay that would read another config folder is named, with the fix.
    let tampered = std::fs::read_to_string(home.join(".claude.json")).unwrap().replace(
        &format!("\"PORTCULLIS_CONFIG_DIR\": \"{}\"", config.display()),
        "\"PORTCULLIS_CONFIG_DIR\": \"/elsewhere\"",
    );
    std::fs::write(home.join(".claude.json"), tampered).unwrap();
    let report = run_ok(&base, &["doctor", "claude"], 1);
    assert!(
        report.lines().any(|l| l.starts_with("wrong")
            && l.contains("~/.claude.json")
            && l.contains("/elsewhere")
            && l.contains("run `portcullis setup claude --user`")),
        "{report}"
    );
    assert!(!report.contains("codex"), "doctor claude checks Claude Code only: {report}");
}

#[test]
fn doctor_names_each_missing_piece_on_an_empty_home() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let out = run(&base, &["doctor"], false);
    let (report, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{report}{stderr}");
    let expected = [
        "missing portcullis: not on PATH",
        "missing hub: no hub runs",
        "missing gateway: not checked: no hub runs",
        "missing ~/.claude.json: no mcpServers.portcullis (no file) — run `portcullis setup claude --user`",
        "missing ~/.claude/settings.json: no permissions.allow mcp__portcullis (no file) — run `portcullis setup claude --user`",
        "missing ~/.claude/settings.json: no PreToolUse hook",
        "missing ~/.codex/config.toml: no [mcp_servers.portcullis] (no file) — run `portcullis setup codex --user`",
    ];
    for line in expected {
        assert!(report.lines().any(|l| l.starts_with(line)), "{line}\n{report}");
    }
    assert!(!report.lines().any(|l| l.starts_with("ok ")), "{report}");
}

const CLAUDE_JSON: &str = r#"{
  "numStartups": 12,
  "mcpServers": {
    "other": { "type": "stdio", "command": "other-server", "args": [] }
  },
  "projects": { "/src/x": { "allowedTools": [] } }
}
"#;

const SETTINGS_JSON: &str = r#"{
  "model": "opus",
  "permissions": { "allow": ["Bash(ls:*)"], "deny": ["Read(./.env)"] },
  "hooks": {
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "my-linter" } ] }
    ]
  }
}
"#;

const CODEX_TOML: &str =
    "# my Codex settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other-server\" # keep me\n";

/// A home with the agents' files already there.
fn home_with_files(base: &Path) -> [(PathBuf, &'static str); 3] {
    let home = base.join("home");
    let files = [
        (home.join(".claude.json"), CLAUDE_JSON),
        (home.join(".claude/settings.json"), SETTINGS_JSON),
        (home.join(".codex/config.toml"), CODEX_TOML),
    ];
    for (path, text) in &files {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    files
}

#[test]
fn setup_merges_keeping_other_keys_and_undo_restores_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let files = home_with_files(&base);
    run_ok(&base, &["setup", "claude", "--yes"], 0);
    run_ok(&base, &["setup", "codex", "--user", "--yes"], 0);

    let claude = json(&files[0].0);
    let keys: Vec<&str> = claude.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["numStartups", "mcpServers", "projects"], "order kept");
    assert_eq!(claude["numStartups"], 12);
    assert_eq!(claude["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(claude["mcpServers"]["portcullis"]["type"], "stdio");
    assert_eq!(claude["projects"]["/src/x"]["allowedTools"], serde_json::json!([]));
    assert_eq!(mode(&files[0].0), 0o644, "no secret: its mode is kept");

    let settings = json(&files[1].0);
    assert_eq!(settings["model"], "opus");
    assert_eq!(settings["permissions"]["allow"], serde_json::json!(["Bash(ls:*)", "mcp__portcullis"]));
    assert_eq!(settings["permissions"]["deny"], serde_json::json!(["Read(./.env)"]));
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "{pre:?}");
    assert_eq!(pre[0]["hooks"][0]["command"], "my-linter");
    assert!(pre[1]["hooks"][0]["command"].as_str().unwrap().ends_with("portcullis hook claude"));
    assert_eq!(mode(&files[1].0), 0o644, "no secret: its mode is kept");

    let codex = std::fs::read_to_string(&files[2].0).unwrap();
    assert!(codex.starts_with(CODEX_TOML), "comments and layout kept:\n{codex}");
    assert!(codex.contains("[mcp_servers.portcullis]"), "{codex}");

    for (path, text) in &files {
        let backup = PathBuf::from(format!("{}.portcullis-backup", path.display()));
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), *text, "{}", backup.display());
        assert_eq!(mode(&backup), 0o600);
    }

    // A second setup keeps the first backup (the file before Portcullis).
    run_ok(&base, &["setup", "claude", "--user", "--yes"], 0);

    // The undo is shown first and written only with --yes.
    let shown = run(&base, &["setup", "claude", "--undo"], true);
    assert_eq!(shown.status.code(), Some(1));
    assert!(text(&shown).0.contains("-    \"portcullis\": {"), "{}", text(&shown).0);
    assert_ne!(std::fs::read_to_string(&files[0].0).unwrap(), CLAUDE_JSON);
    run_ok(&base, &["setup", "claude", "--undo", "--yes"], 0);
    run_ok(&base, &["setup", "codex", "--undo", "--yes"], 0);
    for (path, text) in &files {
        assert_eq!(std::fs::read(path).unwrap(), text.as_bytes(), "{}", path.display());
        assert!(!PathBuf::from(format!("{}.portcullis-backup", path.display())).exists());
    }
    assert!(run_ok(&base, &["setup", "claude", "--undo", "--yes"], 0).contains("nothing to undo"));
}

#[test]
fn the_diff_is_shown_and_nothing_is_written_without_yes() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let files = home_with_files(&base);
    let out = run(&base, &["setup", "claude", "--user"], true);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("--- ~/.claude.json\n+++ ~/.claude.json\n@@ "), "{stdout}");
    assert!(stdout.contains("+    \"portcullis\": {"), "{stdout}");
    assert!(stdout.contains("+      \"args\": ["), "{stdout}");
    assert!(stdout.contains("+++ ~/.claude/settings.json"), "{stdout}");
    assert!(stderr.contains("pass --yes"), "{stderr}");
    assert!(!base.join("config/token").exists() || !stdout.contains("Bearer"), "no token in a diff");
    for (path, text) in &files {
        assert_eq!(std::fs::read_to_string(path).unwrap(), *text, "{} untouched", path.display());
        assert!(!PathBuf::from(format!("{}.portcullis-backup", path.display())).exists());
    }
    // --dry-run: the same diff, exit 0, nothing written.
    let dry = run_ok(&base, &["setup", "codex", "--dry-run"], 0);
    assert!(dry.contains("+[mcp_servers.portcullis]"), "{dry}");
    assert_eq!(std::fs::read_to_string(&files[2].0).unwrap(), CODEX_TOML);
    // On a fresh home the files it would make are shown as new.
    let fresh = tempfile::tempdir().unwrap();
    let fresh = fresh.path().canonicalize().unwrap();
    let out = text(&run(&fresh, &["setup", "codex"], true)).0;
    assert!(out.starts_with("--- /dev/null\n+++ ~/.codex/config.toml\n@@ -0,0 +1,"), "{out}");
    assert!(!fresh.join("home/.codex").exists());
}

#[test]
fn a_project_set_up_has_no_token_and_passes_doctor() {
    let served = serve(POLICY);
    let base = served.path("");
    run_ok(&base, &["setup", "claude", "--project", "--yes"], 0);
    run_ok(&base, &["setup", "codex", "--project", "--yes"], 0);
    let proj = base.join("proj");
    let mcp = json(&proj.join(".mcp.json"));
    let server = &mcp["mcpServers"]["portcullis"];
    assert_eq!(server["type"], "stdio");
    assert_eq!(server["command"], "portcullis");
    assert_eq!(server["args"], serde_json::json!(["mcp"]));
    for file in [".mcp.json", ".claude/settings.json", ".codex/config.toml"] {
        let text = std::fs::read_to_string(proj.join(file)).unwrap();
        assert!(!text.contains(served.token.trim()), "{file} holds no token");
    }
    assert!(!base.join("home/.claude.json").exists(), "the user's files are not touched");
    let report = run_ok(&base, &["doctor"], 0);
    assert!(
        report.contains("ok      .mcp.json: mcpServers.portcullis: the relay `portcullis mcp`"),
        "{report}"
    );
    assert!(report.contains("ok      .codex/config.toml:"), "{report}");

    // Undo removes the files it made.
    run_ok(&base, &["setup", "claude", "--project", "--undo", "--yes"], 0);
    assert!(!proj.join(".mcp.json").exists() && !proj.join(".claude/settings.json").exists());
    assert!(!proj.join(".mcp.json.portcullis-created").exists());
    let report = run_ok(&base, &["doctor", "claude"], 1);
    assert!(report.contains("missing ~/.claude.json: no mcpServers.portcullis"), "{report}");
}

#[test]
fn a_file_that_is_not_json_is_named_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let settings = base.join("home/.claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{ \"model\": ").unwrap();
    let out = run(&base, &["setup", "claude", "--user", "--yes"], true);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("~/.claude/settings.json: not JSON"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{ \"model\": ");
    assert!(!base.join("home/.claude.json").exists(), "nothing is written when one file fails");
}
