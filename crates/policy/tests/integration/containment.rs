//! Path containment on canonical paths: `..`, symlinks inside a root pointing outside, new files in new
//! nested folders, deny globs, and shell redirections judged like tool paths.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_policy::{Access, Decision, EvalContext, Policy, PolicyLayer};
use std::path::Path;

fn policy(project: &Path) -> Policy {
    let text = r#"{ "paths": { "roots": [ { "path": ".", "access": "write" }, { "path": "../shared-docs", "access": "read" } ],
                   "deny": ["secrets/**", "*.sqlite"] },
                   "commands": { "default": "allow" } }"#;
    Policy::from_layers(vec![PolicyLayer::parse("p.json", text, project.to_path_buf()).unwrap()]).unwrap()
}

#[test]
fn symlinks_dotdot_and_new_folders() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("project");
    let outside = base.join("outside");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(base.join("shared-docs")).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("escape")).unwrap();
    std::os::unix::fs::symlink(outside.join("target.txt"), project.join("dangling")).unwrap();
    let p = policy(&project);
    let ctx = EvalContext { cwd: project.clone(), home: Some(base.join("home")) };
    let write = |path: &str| p.evaluate_path(path, Access::Write, &ctx);
    let read = |path: &str| p.evaluate_path(path, Access::Read, &ctx).decision;

    assert_eq!(write("src/main.rs").decision, Decision::Allow);
    let nested = write("src/new/deeper/still/file.rs");
    assert_eq!(nested.decision, Decision::Allow, "{:?}", nested.reasons);
    assert_eq!(nested.paths, [project.join("src/new/deeper/still/file.rs").display().to_string()]);
    assert_eq!(write("../outside/x").decision, Decision::Forbidden);
    assert_eq!(write("src/../../outside/x").decision, Decision::Forbidden);
    let through_link = write("escape/file.txt");
    assert_eq!(
        through_link.decision,
        Decision::Forbidden,
        "a symlink inside the root that points outside is outside"
    );
    assert_eq!(through_link.paths, [outside.join("file.txt").display().to_string()]);
    assert_eq!(
        write("escape/../src/x").decision,
        Decision::Forbidden,
        "`..` after a symlink leaves its target"
    );
    assert_eq!(write("dangling").decision, Decision::Forbidden, "a dangling link resolves to its target");
    assert_eq!(write("secrets/api/key.txt").decision, Decision::Forbidden);
    assert_eq!(write("data/app.sqlite").decision, Decision::Forbidden);
    assert_eq!(write(".env.production").decision, Decision::Forbidden, "default deny globs");
    assert_eq!(read("../shared-docs/guide.md"), Decision::Allow);
    assert_eq!(
        write("../shared-docs/guide.md").decision,
        Decision::Forbidden,
        "read roots are not write roots"
    );
    assert_eq!(read("/etc/hostname"), Decision::Prompt);
    assert_eq!(read("~/.ssh/id_ed25519"), Decision::Forbidden);

    // The same rules through shell redirections.
    let shell = |c: &str| p.evaluate_command(c, &ctx).decision;
    assert_eq!(shell("echo x > src/generated/out.txt"), Decision::Allow);
    assert_eq!(shell("echo x > escape/out.txt"), Decision::Forbidden);
    assert_eq!(shell("echo x | tee escape/out.txt"), Decision::Forbidden);
    assert_eq!(shell("cat < ../shared-docs/guide.md"), Decision::Allow);
    assert_eq!(shell("echo x 2>/dev/null"), Decision::Allow);
}
