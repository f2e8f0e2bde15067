//! Files and folders whose content other programs execute or take the programs they run from: agents'
//! and editors' settings, package managers', toolchain and hook runners' configuration, CI workflows,
//! and any folder git would take as a repository. Writing one is running code later, outside every
//! sandbox, when the operator's own tools read it; so a write there needs an operator, and the prompt
//! says what runs it. Knowledge as data: a row each, with a test per row.

use std::path::{Component, Path};

/// Folder names that mark such a place wherever they appear (the whole folder).
pub(crate) const FOLDERS: &[(&str, &str)] = &[
    (".cursor", "Cursor starts the MCP servers and runs the rules this folder holds"),
    (".gemini", "Gemini CLI starts the MCP servers and runs the commands its settings name"),
    (".codex", "Codex starts the MCP servers and runs the commands its config names"),
    (".devcontainer", "the dev container runs the commands its definition names"),
    (".zed", "Zed runs the tasks and language servers its settings name"),
    (".windsurf", "Windsurf runs the rules and MCP servers this folder names"),
    (".continue", "Continue starts the MCP servers and commands its config names"),
    (".mise", "mise runs the tasks and hooks this folder holds"),
    (".opencode", "opencode starts the MCP servers and runs the commands this folder names"),
    (".amazonq", "Amazon Q starts the MCP servers this folder lists"),
    (".kiro", "Kiro starts the MCP servers and runs the hooks this folder holds"),
    (".roo", "Roo Code starts the MCP servers and follows the rules this folder holds"),
    (".husky", "husky runs the git hooks this folder holds"),
    (".hg", "Mercurial runs the hooks its hgrc names"),
];

/// File names that mark such a place, in the folder named (`None`: anywhere).
pub(crate) const FILES: &[(Option<&str>, &str, &str)] = &[
    (None, ".mcp.json", "Claude Code starts the MCP servers this file lists"),
    (None, ".pre-commit-config.yaml", "pre-commit runs the hooks this file names"),
    (None, ".npmrc", "npm runs the script shell and node options this file sets"),
    (None, ".yarnrc", "yarn runs the programs this file names"),
    (None, ".yarnrc.yml", "yarn runs the release (yarnPath) and plugins this file names"),
    (None, ".pnpmfile.cjs", "pnpm runs this file on every install"),
    (None, ".gitconfig", "git runs the commands a config names (core.fsmonitor, aliases, filters)"),
    (None, ".mise.toml", "mise runs the tasks and hooks this file names"),
    (None, "mise.toml", "mise runs the tasks and hooks this file names"),
    (None, ".tool-versions", "asdf and mise install and run the tools this file names"),
    (None, "rust-toolchain.toml", "rustup runs the toolchain this file names (a path runs that binary)"),
    (None, "rust-toolchain", "rustup runs the toolchain this file names (a path runs that binary)"),
    (None, "lefthook.yml", "lefthook runs the git hooks this file names"),
    (None, ".lefthook.yml", "lefthook runs the git hooks this file names"),
    (None, "lefthook-local.yml", "lefthook runs the git hooks this file names"),
    (None, ".gitlab-ci.yml", "GitLab CI runs the jobs this file names"),
    (None, ".bazelrc", "bazel runs what its options name (--run_under, --workspace_status_command)"),
    (None, ".pdbrc", "pdb runs this file's commands when it starts"),
    (Some(".vscode"), "mcp.json", "VS Code starts the MCP servers this file lists"),
    (None, "opencode.json", "opencode starts the MCP servers and runs the commands this file names"),
    (None, "opencode.jsonc", "opencode starts the MCP servers and runs the commands this file names"),
    (None, "lefthook.yaml", "lefthook runs the git hooks this file names"),
    (None, "lefthook.json", "lefthook runs the git hooks this file names"),
    (None, "lefthook.toml", "lefthook runs the git hooks this file names"),
    (None, ".lefthook.yaml", "lefthook runs the git hooks this file names"),
    (None, ".lefthook.json", "lefthook runs the git hooks this file names"),
    (None, ".lefthook.toml", "lefthook runs the git hooks this file names"),
    (None, "lefthook-local.yaml", "lefthook runs the git hooks this file names"),
    (None, "lefthook-local.json", "lefthook runs the git hooks this file names"),
    (None, "lefthook-local.toml", "lefthook runs the git hooks this file names"),
    (None, ".lintstagedrc*", "lint-staged runs the commands this file names on every commit"),
    (None, "lint-staged.config.*", "lint-staged runs the commands this file names on every commit"),
    (None, ".simple-git-hooks*", "simple-git-hooks installs the git hooks this file names"),
    (None, "simple-git-hooks.*", "simple-git-hooks installs the git hooks this file names"),
    (None, "mise.local.toml", "mise runs the tasks and hooks this file names"),
    (None, ".mise.local.toml", "mise runs the tasks and hooks this file names"),
    (Some("mise"), "config.toml", "mise runs the tasks and hooks this file names"),
    (Some("mise"), "config.local.toml", "mise runs the tasks and hooks this file names"),
    (Some(".config"), "mise.toml", "mise runs the tasks and hooks this file names"),
    (None, "bunfig.toml", "bun runs the preload scripts and plugins this file names"),
    (None, ".bazeliskrc", "bazelisk runs the bazel binary this file names"),
    (None, ".devcontainer.json", "the dev container runs the commands its definition names"),
    (None, "*.code-workspace", "VS Code runs the tasks and settings this workspace file names"),
    (Some(".idea"), "workspace.xml", "IntelliJ runs the run configurations this file holds"),
    (
        Some(".cargo"),
        "config.toml",
        "cargo runs the programs this file names (runner, rustc-wrapper, linker)",
    ),
    (Some(".cargo"), "config", "cargo runs the programs this file names (runner, rustc-wrapper, linker)"),
    (Some(".vscode"), "launch.json", "VS Code runs the programs its launch configurations name"),
    (Some("workflows"), "*", "CI runs the workflows in .github/workflows"),
];

/// The names inside a git repository folder: a write to one of them, below a folder, makes that folder
/// a candidate look-alike.
const REPOSITORY_NAMES: &[&str] = &[
    "HEAD",
    "config",
    "commondir",
    "objects",
    "refs",
    "hooks",
    "info",
    "packed-refs",
    "index",
    "logs",
    "worktrees",
    "modules",
    "gitdir",
    "description",
    "FETCH_HEAD",
    "ORIG_HEAD",
];

/// Why a folder git would take as a repository is protected.
pub const LOOK_ALIKE: &str = "a folder git would take as a repository (a HEAD with objects/ and refs/): git runs what its config names (core.fsmonitor, hooks) in any command run there";

/// The place `path` (canonical) is, if it is one: what runs it. (A repository look-alike is judged only
/// for writes, by [`repository_look_alike`]: `git show HEAD` names a revision, not a file.)
pub fn find(path: &Path) -> Option<String> {
    let named = path.components().find_map(|c| match c {
        Component::Normal(name) => FOLDERS.iter().find(|(n, _)| name == *n),
        _ => None,
    });
    if let Some((_, what)) = named {
        return Some((*what).to_owned());
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let parent = path.parent().and_then(Path::file_name).and_then(|n| n.to_str());
    let file = FILES.iter().find(|(folder, file, _)| {
        name_matches(file, name)
            && folder.is_none_or(|f| Some(f) == parent)
            && (*folder != Some("workflows") || in_github_workflows(path))
    });
    file.map(|(_, _, what)| (*what).to_owned())
}

/// A row's file name: exact, or with a `*` at its end or its start standing for any text
/// (`.lintstagedrc*`, `*.code-workspace`; `*` alone is any name). Constant time per row: every path a
/// command names is checked against every row.
fn name_matches(row: &str, name: &str) -> bool {
    match (row.strip_suffix('*'), row.strip_prefix('*')) {
        (Some(prefix), _) => name.starts_with(prefix),
        (None, Some(suffix)) => name.ends_with(suffix),
        (None, None) => row == name,
    }
}

fn in_github_workflows(path: &Path) -> bool {
    path.parent().is_some_and(|p| p.ends_with(".github/workflows"))
}

/// Whether `path`, once written, makes or changes a folder git would take as a repository. Git takes a
/// folder holding `HEAD` with `objects/` and `refs/` (or with `commondir`); an agent may write the pieces
/// in any order, one script or many, so the piece no look-alike lacks is what is guarded: writing a
/// `HEAD` (or `commondir`) anywhere, and writing any repository name (`config`, `hooks/`, `objects/`...)
/// beside an existing `HEAD`.
pub fn repository_look_alike(path: &Path) -> bool {
    let mut current = path;
    while let Some(folder) = current.parent() {
        let Some(step) = current.file_name().and_then(|s| s.to_str()) else { break };
        let whole_name = current == path;
        if (whole_name && matches!(step, "HEAD" | "commondir"))
            || (REPOSITORY_NAMES.contains(&step) && folder.join("HEAD").is_file())
        {
            return true;
        }
        current = folder;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_folder_row_is_found_anywhere() {
        for (folder, what) in FOLDERS {
            let hit = find(&Path::new("/p/sub").join(folder).join("x.json"));
            assert_eq!(hit.as_deref(), Some(*what), "{folder}");
        }
    }

    #[test]
    fn each_file_row_is_found_where_it_applies() {
        for (folder, file, what) in FILES {
            let path = match (folder, *file) {
                (Some("workflows"), _) => Path::new("/p/.github/workflows/ci.yml").to_path_buf(),
                (Some(folder), file) => Path::new("/p/sub").join(folder).join(file),
                (None, file) => Path::new("/p/sub").join(file),
            };
            assert_eq!(find(&path).as_deref(), Some(*what), "{}", path.display());
        }
        // Outside the folder a row names, the same file name is ordinary.
        assert_eq!(find(Path::new("/p/config.toml")), None);
        assert_eq!(find(Path::new("/p/other/workflows/ci.yml")), None);
        assert_eq!(find(Path::new("/p/src/main.rs")), None);
        assert_eq!(find(Path::new("/p/package.json")), None);
        // A row with a `*` stands for every name of its shape; a `*` is only ever at a row's end or start.
        for (_, file, _) in FILES {
            let inner = file.trim_start_matches('*').trim_end_matches('*');
            assert!(!inner.contains('*'), "{file}: a `*` inside a row is not matched");
        }
        for name in [".lintstagedrc", ".lintstagedrc.json", "lint-staged.config.mjs", "app.code-workspace"] {
            assert!(find(&Path::new("/p/sub").join(name)).is_some(), "{name}");
        }
        assert_eq!(find(Path::new("/p/code-workspace.md")), None);
    }

    #[test]
    fn a_folder_git_would_take_as_a_repository_is_guarded_in_any_order() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let sub = dir.path().join("sub");
        std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
        // Without a HEAD, the other pieces are ordinary names (`src/objects/`, `config`).
        for piece in ["config", "objects/ab/cd", "refs/heads/main", "hooks/pre-commit"] {
            assert!(!repository_look_alike(&sub.join(piece)), "{piece}");
        }
        // A HEAD anywhere is the piece git cannot do without.
        assert!(repository_look_alike(&sub.join("HEAD")) && repository_look_alike(&sub.join("commondir")));
        std::fs::write(sub.join("HEAD"), "ref: refs/heads/main\n").unwrap_or_else(|e| panic!("{e}"));
        // Beside a HEAD, every name git reads.
        for piece in ["config", "objects/ab/cd", "refs/heads/main", "hooks/pre-commit", "info/attributes"] {
            assert!(repository_look_alike(&sub.join(piece)), "{piece}");
        }
        assert!(!repository_look_alike(&sub.join("README.md")));
        assert!(!repository_look_alike(&sub.join("docs/HEADER.md")));
    }
}
