//! The programs a contained command may not run (a rule prompts or forbids some use of them), covered in
//! its mount namespace by a wall: a small script that says which rule masks the program, and how to run
//! it instead (as a command of its own, which the policy judges), and exits 126. The walls live on a
//! read-only tmpfs of their own inside the command's private temporary folder, so nothing inside can
//! change what they say.

use crate::failure::Failure;
use nix::mount::{MsFlags, mount};
use portcullis_harness::MaskedProgram;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// The folder inside the command's private temporary folder that holds the walls.
const WALLS: &str = ".portcullis-walls";

/// The exit code of a masked program: bash's for a command found but not executable.
pub const MASKED_EXIT: i32 = 126;

/// The start of the line a wall prints: findings and the agent's tool result look for it.
pub const WALL_PREFIX: &str = "portcullis: [contained:";

/// The script that stands in for `masked`.
pub fn wall_script(masked: &MaskedProgram) -> String {
    let line = format!(
        "{WALL_PREFIX} `{}` cannot run inside a command that runs contained — {}. Run that step as a command of its own, which the policy judges]",
        masked.program, masked.by
    );
    format!(
        "#!/bin/sh\nprintf '%s\\n' {} >&2\nexit {MASKED_EXIT}\n",
        portcullis_harness::shell_words::quoted(&line)
    )
}

/// Covers every file of every masked program with its wall. Before Landlock and the drop to the hub's
/// user (mounts are made as the namespace's root); any step that fails stops the command.
pub(crate) fn mask(masked: &[MaskedProgram], private_tmp: &Path) -> Result<(), Failure> {
    if masked.iter().all(|m| m.paths.is_empty()) {
        return Ok(());
    }
    let none: Option<&str> = None;
    let step = "masking programs";
    let folder = private_tmp.join(WALLS);
    let at = |p: &Path, e: &dyn std::fmt::Display| (step, format!("{}: {e}", p.display()));
    std::fs::DirBuilder::new().mode(0o755).create(&folder).map_err(|e| at(&folder, &e))?;
    mount(
        Some("tmpfs"),
        &folder,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("size=1m,mode=755"),
    )
    .map_err(|e| at(&folder, &e))?;
    let mut walls = Vec::new();
    for (index, program) in masked.iter().enumerate() {
        let wall = folder.join(index.to_string());
        std::fs::write(&wall, wall_script(program)).map_err(|e| at(&wall, &e))?;
        std::fs::set_permissions(&wall, std::fs::Permissions::from_mode(0o555)).map_err(|e| at(&wall, &e))?;
        walls.push((wall, program));
    }
    mount(
        none,
        &folder,
        none,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        none,
    )
    .map_err(|e| at(&folder, &e))?;
    for (wall, program) in walls {
        for path in &program.paths {
            mount(Some(&wall), path, none, MsFlags::MS_BIND, none).map_err(|e| at(path, &e))?;
            mount(none, path, none, MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY, none)
                .map_err(|e| at(path, &e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_names_the_program_and_the_rule_and_quotes_what_it_prints() {
        let masked = MaskedProgram {
            program: "git".into(),
            paths: Vec::new(),
            by: "rule `it's` (p.json) says prompt".into(),
        };
        let script = wall_script(&masked);
        assert!(script.starts_with("#!/bin/sh\n"));
        assert!(script.contains(r"rule `it'\''s` (p.json) says prompt"), "{script}");
        assert!(script.contains("`git` cannot run inside a command that runs contained"));
        assert!(script.ends_with("exit 126\n"));
    }
}
