//! Runs one command the way the shell tool does (`bash -c`, its own process group, a clean environment)
//! under `strace -f`, and reads the trace back as events: each program executed, each file opened for
//! reading, each file written (opened for writing, created, removed, renamed, linked, its mode, owner
//! or times changed), each with the program that did it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exec,
    Read,
    Write,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub kind: Kind,
    /// Absolute; the real path where the kernel said (an opened file), else lexically normal.
    pub path: PathBuf,
    /// The program that did it (the basename it was executed as).
    pub program: String,
    /// The program of the process that started this one (for executions).
    pub parent: String,
    /// The system call, for messages.
    pub call: String,
    /// The call succeeded.
    pub ok: bool,
}

pub struct Run {
    pub events: Vec<Event>,
    pub timed_out: bool,
    pub status: Option<i32>,
}

/// The system calls traced: every call naming a file, process creation, and calls on descriptors that
/// change a file or the working folder.
const TRACED: &str = "%file,%process,fchdir,fchmod,fchown,fsetxattr,fremovexattr";

/// Runs `command` from `cwd` with exactly `env`, the trace written to `log`; stops it after `limit`.
pub fn run(command: &str, cwd: &Path, env: &[(String, String)], log: &Path, limit: Duration) -> Run {
    let _ = std::fs::remove_file(log);
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "65535", "-e"])
        .arg(format!("trace={TRACED}"))
        .arg("-o")
        .arg(log)
        .args(["--", "bash", "-c", command])
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("strace runs (the Debian package `strace`)");
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for strace") {
            break status.code();
        }
        if started.elapsed() > limit {
            timed_out = true;
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let text = std::fs::read(log).unwrap_or_default();
    Run { events: parse(&String::from_utf8_lossy(&text), cwd), timed_out, status }
}

#[derive(Debug, Clone, Default)]
struct Process {
    program: String,
    parent: String,
    cwd: PathBuf,
}

/// Reads a trace of `strace -f -y` whose first process started in `cwd`.
pub fn parse(text: &str, cwd: &Path) -> Vec<Event> {
    let mut pending: HashMap<u32, String> = HashMap::new();
    let mut processes: HashMap<u32, Process> = HashMap::new();
    // A child's first calls may come before its parent's `clone` returns: who started whom is read first.
    let mut parent_of: HashMap<u32, u32> = HashMap::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.trim_start().split_once(char::is_whitespace) else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let rest = rest.trim();
        let Some((_, ret)) = rest.rsplit_once(" = ") else { continue };
        let starts = [
            "clone(",
            "clone3(",
            "fork(",
            "vfork(",
            "<... clone resumed>",
            "<... clone3 resumed>",
            "<... vfork resumed>",
        ];
        if starts.iter().any(|s| rest.starts_with(s))
            && let Ok(child) = ret.trim().parse::<u32>()
        {
            parent_of.insert(child, pid);
        }
    }
    let mut first: Option<u32> = None;
    let mut shell_started = false;
    let mut events = Vec::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.trim_start().split_once(char::is_whitespace) else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let rest = rest.trim_start();
        if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        let call = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, head.to_owned());
            continue;
        } else if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some((_, tail)) = resumed.split_once(" resumed>") else { continue };
            let head = pending.remove(&pid).unwrap_or_default();
            format!("{head}{tail}")
        } else {
            rest.to_owned()
        };
        let root = *first.get_or_insert(pid);
        if !processes.contains_key(&pid) {
            // A forked child is a copy of its parent, started by whoever started the parent.
            let inherited = parent_of.get(&pid).and_then(|p| processes.get(p)).map(|p| Process {
                program: p.program.clone(),
                parent: p.parent.clone(),
                cwd: p.cwd.clone(),
            });
            let started = inherited.unwrap_or_else(|| Process {
                program: "bash".into(),
                parent: "bash".into(),
                cwd: cwd.to_path_buf(),
            });
            processes.insert(pid, started);
        }
        let Some(process) = processes.get_mut(&pid) else { continue };
        let Some(syscall) = Syscall::parse(&call) else { continue };
        if let Some(at) = syscall.args.iter().find_map(|a| a.strip_prefix("AT_FDCWD<")) {
            process.cwd = PathBuf::from(at.trim_end_matches('>'));
        }
        let snapshot = process.clone();
        let mut event = |kind: Kind, path: PathBuf| {
            events.push(Event {
                kind,
                path,
                program: snapshot.program.clone(),
                parent: snapshot.parent.clone(),
                call: syscall.name.clone(),
                ok: syscall.ok,
            })
        };
        let here = &snapshot.cwd;
        match syscall.name.as_str() {
            "clone" | "clone3" | "fork" | "vfork" if syscall.ok => {
                if let Ok(child) = syscall.ret.parse::<u32>() {
                    processes.entry(child).or_insert_with(|| Process {
                        program: snapshot.program.clone(),
                        parent: snapshot.parent.clone(),
                        cwd: snapshot.cwd.clone(),
                    });
                }
            }
            "execve" | "execveat" if syscall.ok => {
                let path = syscall.string(if syscall.name == "execve" { 0 } else { 1 }).unwrap_or_default();
                let name = Path::new(&path).file_name().map(|n| n.to_string_lossy().into_owned());
                // The first process is the shell the tool runs; its own start is not the command's.
                if pid == root && !shell_started {
                    shell_started = true;
                } else {
                    event(Kind::Exec, absolute(here, &path));
                }
                if let Some(p) = processes.get_mut(&pid) {
                    p.parent = snapshot.program.clone();
                    p.program = name.unwrap_or_default();
                }
            }
            "chdir" if syscall.ok => {
                let to = absolute(here, &syscall.string(0).unwrap_or_default());
                if let Some(p) = processes.get_mut(&pid) {
                    p.cwd = to;
                }
            }
            "fchdir" if syscall.ok => {
                if let Some(to) = syscall.fd_path(0)
                    && let Some(p) = processes.get_mut(&pid)
                {
                    p.cwd = to;
                }
            }
            "open" | "openat" | "openat2" | "creat" => {
                let (dir, name, flags) = match syscall.name.as_str() {
                    "open" => (None, syscall.string(0), syscall.args.get(1).cloned().unwrap_or_default()),
                    "creat" => (None, syscall.string(0), "O_WRONLY|O_CREAT|O_TRUNC".to_owned()),
                    _ => (
                        syscall.fd_path(0),
                        syscall.string(1),
                        syscall.args.get(2).cloned().unwrap_or_default(),
                    ),
                };
                let Some(name) = name else { continue };
                if flags.contains("O_PATH") {
                    continue;
                }
                let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
                    .iter()
                    .any(|f| flags.contains(f));
                let path = match syscall.ret_path() {
                    Some(real) => real,
                    None => absolute(dir.as_deref().unwrap_or(here), &name),
                };
                if writes {
                    event(Kind::Write, path);
                } else if syscall.ok {
                    event(Kind::Read, path);
                }
            }
            name => {
                for path in written_paths(name, &syscall, here) {
                    event(Kind::Write, path);
                }
            }
        }
    }
    events
}

/// The files a call other than open changes: (index of the dirfd argument or none, index of the path).
const WRITING_CALLS: &[(&str, Option<usize>, usize)] = &[
    ("truncate", None, 0),
    ("unlink", None, 0),
    ("unlinkat", Some(0), 1),
    ("rmdir", None, 0),
    ("mkdir", None, 0),
    ("mkdirat", Some(0), 1),
    ("rename", None, 0),
    ("rename", None, 1),
    ("renameat", Some(0), 1),
    ("renameat", Some(2), 3),
    ("renameat2", Some(0), 1),
    ("renameat2", Some(2), 3),
    ("link", None, 1),
    ("linkat", Some(2), 3),
    ("symlink", None, 1),
    ("symlinkat", Some(1), 2),
    ("chmod", None, 0),
    ("fchmodat", Some(0), 1),
    ("fchmodat2", Some(0), 1),
    ("chown", None, 0),
    ("lchown", None, 0),
    ("fchownat", Some(0), 1),
    ("utime", None, 0),
    ("utimes", None, 0),
    ("futimesat", Some(0), 1),
    ("utimensat", Some(0), 1),
    ("mknod", None, 0),
    ("mknodat", Some(0), 1),
    ("setxattr", None, 0),
    ("lsetxattr", None, 0),
    ("removexattr", None, 0),
    ("lremovexattr", None, 0),
];

/// Calls on a descriptor that change its file.
const WRITING_FD_CALLS: &[&str] = &["fchmod", "fchown", "fsetxattr", "fremovexattr"];

fn written_paths(name: &str, syscall: &Syscall, here: &Path) -> Vec<PathBuf> {
    if WRITING_FD_CALLS.contains(&name) {
        return syscall.fd_path(0).into_iter().collect();
    }
    let mut paths = Vec::new();
    for (call, dirfd, at) in WRITING_CALLS {
        if *call != name {
            continue;
        }
        let dir = dirfd.and_then(|i| syscall.fd_path(i));
        match syscall.string(*at) {
            Some(path) => paths.push(absolute(dir.as_deref().unwrap_or(here), &path)),
            // `utimensat(fd, NULL, ...)` changes the descriptor's own file.
            None => paths.extend(dir),
        }
    }
    paths
}

/// `path` made absolute from `from`, `.` and `..` taken lexically.
pub fn absolute(from: &Path, path: &str) -> PathBuf {
    let joined = from.join(path);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// One traced call: its name, its arguments as strace printed them, its result.
struct Syscall {
    name: String,
    args: Vec<String>,
    ret: String,
    ok: bool,
}

impl Syscall {
    fn parse(call: &str) -> Option<Syscall> {
        let open = call.find('(')?;
        let name = call[..open].to_owned();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let (args, end) = split_args(&call[open + 1..])?;
        let ret = call[open + 1 + end..].trim_start_matches(')').trim();
        let ret = ret.strip_prefix('=')?.trim().to_owned();
        let ok = !ret.starts_with('-') && !ret.starts_with('?');
        Some(Syscall { name, args, ret, ok })
    }

    /// Argument `i` as a decoded string, if it is one.
    fn string(&self, i: usize) -> Option<String> {
        let arg = self.args.get(i)?;
        let inner = arg.strip_prefix('"')?;
        let inner = inner.strip_suffix("...").unwrap_or(inner).strip_suffix('"')?;
        Some(OsStr::from_bytes(&unescape(inner)).to_string_lossy().into_owned())
    }

    /// The file a descriptor argument names (`3</path>`, `AT_FDCWD</path>`).
    fn fd_path(&self, i: usize) -> Option<PathBuf> {
        let arg = self.args.get(i)?;
        let start = arg.find('<')?;
        let inner = arg[start + 1..].strip_suffix('>')?;
        inner.starts_with('/').then(|| PathBuf::from(inner))
    }

    /// The file the returned descriptor names.
    fn ret_path(&self) -> Option<PathBuf> {
        let start = self.ret.find('<')?;
        let end = self.ret.rfind('>')?;
        let inner = &self.ret[start + 1..end];
        inner.starts_with('/').then(|| PathBuf::from(inner))
    }
}

/// Splits strace's argument list at top-level commas; returns them and the offset of the closing `)`.
fn split_args(text: &str) -> Option<(Vec<String>, usize)> {
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut current = String::new();
    for (i, ch) in text.char_indices() {
        if in_string {
            current.push(ch);
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                in_string = false;
            }
            continue;
        }
        match ch {
            '"' => {
                in_string = true;
                current.push(ch);
            }
            '(' | '[' | '{' | '<' => {
                depth += 1;
                current.push(ch);
            }
            ')' if depth == 0 => {
                if !current.trim().is_empty() {
                    args.push(current.trim().to_owned());
                }
                return Some((args, i));
            }
            ')' | ']' | '}' | '>' => {
                depth = depth.saturating_sub(1);
                current.push(ch);
            }
            ',' if depth == 0 => {
                args.push(current.trim().to_owned());
                current.clear();
            }
            _ => current.push(ch),
        }
    }
    None
}

/// strace's C escapes back to bytes.
fn unescape(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 == bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let c = bytes[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let hex: String = s[i..].chars().take(2).take_while(char::is_ascii_hexdigit).collect();
                i += hex.len();
                out.push(u8::from_str_radix(&hex, 16).unwrap_or(b'?'));
            }
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                let mut taken = 0;
                while taken < 2 && i < bytes.len() && (b'0'..=b'7').contains(&bytes[i]) {
                    value = value * 8 + u32::from(bytes[i] - b'0');
                    i += 1;
                    taken += 1;
                }
                out.push(u8::try_from(value).unwrap_or(b'?'));
            }
            other => out.push(other),
        }
    }
    out
}

#[test]
fn a_trace_reads_back_as_events() {
    let text = r#"100 execve("/usr/bin/bash", ["bash", "-c", "x"], 0x1 /* 3 vars */) = 0
100 openat(AT_FDCWD</p>, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>
100 clone(child_stack=NULL, flags=SIGCHLD) = 101
101 execve("/usr/bin/cat", ["cat", "a b"], 0x2 /* 3 vars */) = 0
101 openat(AT_FDCWD</p>, "a\"b", O_RDONLY <unfinished ...>
100 wait4(-1,  <unfinished ...>
101 <... openat resumed>) = 3</p/a"b>
101 mkdir("new\303\251", 0777) = 0
101 chdir("sub") = 0
101 unlinkat(AT_FDCWD</p/sub>, "x", 0) = -1 EACCES (Permission denied)
101 openat(4</p/d>, "o", O_WRONLY|O_CREAT, 0666) = -1 EACCES (Permission denied)
101 +++ exited with 0 +++
"#;
    let events = parse(text, Path::new("/p"));
    let got: Vec<(Kind, String, &str, bool)> =
        events.iter().map(|e| (e.kind, e.path.display().to_string(), e.program.as_str(), e.ok)).collect();
    assert_eq!(
        got,
        vec![
            (Kind::Read, "/etc/ld.so.cache".into(), "bash", true),
            (Kind::Exec, "/usr/bin/cat".into(), "bash", true),
            (Kind::Read, "/p/a\"b".into(), "cat", true),
            (Kind::Write, "/p/new\u{e9}".into(), "cat", true),
            (Kind::Write, "/p/sub/x".into(), "cat", false),
            (Kind::Write, "/p/d/o".into(), "cat", false),
        ]
    );
    assert_eq!(events[1].parent, "bash");
}
