//! The scratch world a command runs in: a project (the policy's root), a HOME with files an agent must
//! not quietly read, a folder outside every root, symbolic links across them, a git repository and a zip
//! archive. Built once as a template, copied fresh before every command so that no command sees what
//! another did; the copy always sits at the same place, so paths in commands and policies stay valid.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Scratch {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    template: PathBuf,
    pub run: PathBuf,
    pub proj: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
    pub tmp: PathBuf,
    pub log: PathBuf,
}

const FILES: &[(&str, &str)] = &[
    ("proj/a.txt", "alpha\nbeta\nalpha\n"),
    ("proj/b.txt", "beta\n"),
    ("proj/README.md", "# A README the corpus cases read\n"),
    ("proj/data.json", "{\"k\": 1, \"list\": [1, 2]}\n"),
    ("proj/src/main.rs", "fn main() {}\n"),
    ("proj/src/lib.rs", "pub fn f() {}\n"),
    ("proj/sub/deep/c.txt", "gamma\n"),
    ("proj/prog.awk", "{ print }\n"),
    ("home/.bash_history", "ssh prod\n"),
    ("home/notes.txt", "private\n"),
    ("home/.ssh/id_rsa", "KEY\n"),
    ("home/.gitconfig", "[user]\n\tname = Oracle\n\temail = oracle@example.invalid\n"),
    ("outside/secret.txt", "secret\n"),
    ("outside/other.txt", "other\n"),
    ("outside/dir/x.txt", "x\n"),
    ("tmp/.keep", ""),
];

const LINKS: &[(&str, &str)] = &[
    ("proj/link-in", "src/main.rs"),
    ("proj/link-out", "../outside/secret.txt"),
    ("proj/linkdir-out", "../outside"),
    ("outside/link-to-proj", "../proj/a.txt"),
    ("outside/linkdir-to-proj", "../proj/src"),
];

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new().prefix("portcullis-oracle-").tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let template = root.join("template");
        for (path, text) in FILES {
            let path = template.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        for (link, target) in LINKS {
            std::os::unix::fs::symlink(target, template.join(link)).unwrap();
        }
        let run = root.join("run");
        let scratch = Scratch {
            proj: run.join("proj"),
            home: run.join("home"),
            outside: run.join("outside"),
            tmp: run.join("tmp"),
            log: root.join("trace.log"),
            _dir: dir,
            root,
            template,
            run,
        };
        let proj = scratch.template.join("proj");
        let env = scratch.env_for(&scratch.template.join("home"), &scratch.template.join("tmp"));
        for args in [
            &["zip", "-q", "archive.zip", "a.txt", "b.txt"][..],
            &["tar", "-cf", "archive.tar", "a.txt", "sub"],
            &["git", "init", "-q", "-b", "main"],
            &["git", "add", "-A"],
            &["git", "commit", "-q", "-m", "init"],
        ] {
            let status = Command::new(args[0])
                .args(&args[1..])
                .current_dir(&proj)
                .env_clear()
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .status()
                .unwrap_or_else(|e| panic!("{} runs: {e}", args[0]));
            assert!(status.success(), "{args:?} failed in the template");
        }
        std::fs::write(proj.join("a.txt"), "alpha\nbeta\nalpha\nchanged\n").unwrap();
        scratch
    }

    /// A fresh copy of the template at `run`, with `policy` as the project's policy file.
    pub fn reset(&self, policy: &str) {
        if self.run.exists() {
            make_writable(&self.run);
            std::fs::remove_dir_all(&self.run).unwrap();
        }
        copy_tree(&self.template, &self.run);
        let file = self.policy_file();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, policy).unwrap();
    }

    pub fn policy_file(&self) -> PathBuf {
        self.proj.join(".portcullis/policy.json")
    }

    /// The environment commands run with: a clean one, as the shell tool's, with the scratch HOME.
    pub fn env(&self) -> Vec<(String, String)> {
        self.env_for(&self.home, &self.tmp)
    }

    fn env_for(&self, home: &Path, tmp: &Path) -> Vec<(String, String)> {
        [
            ("HOME", home.display().to_string()),
            ("TMPDIR", tmp.display().to_string()),
            ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned()),
            ("LANG", "C.UTF-8".to_owned()),
            ("TERM", "dumb".to_owned()),
            ("PAGER", "cat".to_owned()),
            ("GIT_PAGER", "cat".to_owned()),
            ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Words in generated commands that name places of the run (`@OUT@/x` is absolute).
    pub fn place(&self, command: &str) -> String {
        command
            .replace("@OUT@", &self.outside.display().to_string())
            .replace("@HOME@", &self.home.display().to_string())
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A command may have taken write permission away (`chmod -R 000`); the next copy must still replace it.
fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else { return };
    if meta.is_dir() {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                make_writable(&entry.path());
            }
        }
    }
}
