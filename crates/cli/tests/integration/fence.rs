//! The front ends' fence: the CLI and the desktop app are built from one workspace crate,
//! `portcullis-api` (the command table, its clients, and `start`, what starts a hub). Cargo refuses them
//! anything else; this test holds the manifests to it (dependencies, not the tests' dev-dependencies),
//! and the source scan names the file and line of any path into another workspace crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

/// The paths a front end may name.
const ALLOWED: &[&str] = &["portcullis_api", "portcullis_app"];
/// The workspace crates below the API (as Cargo names them).
const BELOW: &[&str] = &[
    "portcullis-hub",
    "portcullis-policy",
    "portcullis-ledger",
    "portcullis-harness",
    "portcullis-coding",
    "portcullis-mcp",
    "portcullis-sandbox",
    "portcullis-team",
    "portcullis-otel",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `portcullis_…` path in `text` that is not allowed, with its line.
fn crossings(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("portcullis_") {
            let before = rest[..at].chars().next_back();
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches(':');
            let part_of_a_word = before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            if !part_of_a_word && !ALLOWED.iter().any(|a| path == *a || path.starts_with(&format!("{a}::"))) {
                found.push((n + 1, path.to_owned()));
            }
            rest = &tail[end.max(1)..];
        }
    }
    found
}

#[test]
fn the_scanner_flags_a_crossing_and_passes_the_doors() {
    assert_eq!(
        crossings("use portcullis_policy::Policy;"),
        vec![(1, "portcullis_policy::Policy".to_owned())]
    );
    assert_eq!(crossings("use portcullis_hub::{Hub, api};"), vec![(1, "portcullis_hub".to_owned())]);
    assert_eq!(crossings("let x = portcullis_hub::hook::parse_input(t);").len(), 1);
    assert!(crossings("use portcullis_api::Client;\nportcullis_api::start::launch(c)").is_empty());
    assert!(crossings("portcullis_api::operator_commands!(adapter);").is_empty());
}

#[test]
fn the_cli_and_the_app_import_only_the_api_and_the_start_up_entry() {
    let root = workspace();
    let mut files = Vec::new();
    for dir in ["crates/cli/src", "src-tauri/src", "src-tauri/tests"] {
        sources(&root.join(dir), &mut files);
    }
    assert!(files.len() > 20, "{} files", files.len());
    let mut crossed = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, path) in crossings(&text) {
            crossed.push(format!("{}:{line}: {path}", file.strip_prefix(&root).unwrap().display()));
        }
    }
    assert!(crossed.is_empty(), "front ends reach past the hub's API:\n{}", crossed.join("\n"));
}

/// Every workspace member's package name (read from the root manifest's `members`).
fn workspace_packages(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = &manifest[manifest.find("members = [").unwrap()..];
    let members = &members[..members.find(']').unwrap()];
    members
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|member| {
            let text = std::fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap();
            let name = text.lines().find_map(|l| l.trim().strip_prefix("name = ")).unwrap();
            name.trim_matches('"').to_owned()
        })
        .collect()
}

#[test]
fn the_cli_and_the_app_are_built_from_the_api_crate_alone() {
    let root = workspace();
    let packages = workspace_packages(&root);
    assert!(packages.len() >= 10 && packages.iter().any(|p| p == "portcullis-api"), "{packages:?}");
    for below in BELOW {
        assert!(packages.iter().any(|p| p == below), "{below} is not a workspace member");
    }
    for (manifest, own) in
        [("crates/cli/Cargo.toml", "portcullis"), ("src-tauri/Cargo.toml", "portcullis-app")]
    {
        let text = std::fs::read_to_string(root.join(manifest)).unwrap();
        // What the front end is built from: its dependencies, not its tests' (which start peers such
        // as a private PostgreSQL server from the team crate).
        let mut section = String::new();
        let mut named = Vec::new();
        for line in text.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('[') {
                section = trimmed.to_owned();
                continue;
            }
            if trimmed.starts_with('#')
                || !section.contains("dependencies")
                || section.contains("dev-dependencies")
            {
                continue;
            }
            let key = trimmed.split(['=', '.', ' ']).next().unwrap_or_default();
            if packages.iter().any(|p| p == key) && key != own {
                named.push(key.to_owned());
            }
        }
        assert_eq!(named, ["portcullis-api"], "{manifest} is built from workspace crates {named:?}");
    }
}

/// The hub's public modules: its face is the list of items its root re-exports, not its insides.
fn public_modules(lib_rs: &str) -> Vec<String> {
    lib_rs
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub mod ").and_then(|rest| rest.strip_suffix(';')))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_hub_exposes_at_most_three_public_modules() {
    assert_eq!(public_modules("mod a;\npub mod b;\n#[doc(hidden)]\npub mod c;\npub use a::X;\n"), ["b", "c"]);
    let lib = std::fs::read_to_string(workspace().join("crates/hub/src/lib.rs")).unwrap();
    let public = public_modules(&lib);
    assert!(public.len() <= 3, "the hub exposes {} public modules: {public:?}", public.len());
}
