//! The getopt tables of the wrappers `shell/wrappers.rs` parses exactly (from each program's own
//! option string or man page): data, kept apart from the code that reads it.

/// A getopt_long option table.
pub(super) struct Spec {
    /// Short options without an argument.
    pub(super) flags: &'static str,
    /// Short options with an argument: the rest of the cluster or the next word.
    pub(super) with_arg: &'static str,
    /// Short options with an optional argument: only the rest of the cluster (`-dpermanent`).
    pub(super) optional_arg: &'static str,
    pub(super) long_flags: &'static [&'static str],
    /// Long options with an argument: `--name=value` or the next word.
    pub(super) long_with_arg: &'static [&'static str],
    /// Long options with an optional argument: only `--name=value`.
    pub(super) long_optional_arg: &'static [&'static str],
    /// Options may follow operands (GNU getopt without `+`); `--` still ends them.
    pub(super) permute: bool,
}

const NO_OPTIONS: Spec = Spec {
    flags: "",
    with_arg: "",
    optional_arg: "",
    long_flags: &[],
    long_with_arg: &[],
    long_optional_arg: &[],
    permute: false,
};

/// procps-ng `watch`: `+bcCd::eghn:pq:rtvwx`.
pub(super) const WATCH: Spec = Spec {
    flags: "bcCegprtwxhv",
    with_arg: "nq",
    optional_arg: "d",
    long_flags: &[
        "beep",
        "color",
        "no-color",
        "errexit",
        "chgexit",
        "precise",
        "no-rerun",
        "no-title",
        "no-wrap",
        "no-linewrap",
        "exec",
        "help",
        "version",
    ],
    long_with_arg: &["interval", "equexit"],
    long_optional_arg: &["differences"],
    ..NO_OPTIONS
};

/// util-linux `su`; `runuser` adds `-u USER` (`runuser -u U -- CMD -opts`: options of CMD need the `--`).
pub(super) const SU: Spec = Spec {
    flags: "flmpPhV",
    with_arg: "cgGsw",
    long_flags: &["fast", "login", "preserve-environment", "pty", "help", "version"],
    long_with_arg: &["command", "session-command", "group", "supp-group", "shell", "whitelist-environment"],
    // getopt permutes: `su - root -c CMD` and `su root -c CMD` both give `-c` to su.
    permute: true,
    ..NO_OPTIONS
};

pub(super) const RUNUSER: Spec = Spec {
    with_arg: "cgGswu",
    long_with_arg: &[
        "command",
        "session-command",
        "group",
        "supp-group",
        "shell",
        "whitelist-environment",
        "user",
    ],
    ..SU
};

/// util-linux `script` (getopt permutes: `script out.log -c cmd` works).
pub(super) const SCRIPT: Spec = Spec {
    flags: "aefqhV",
    with_arg: "cBEIOTmo",
    optional_arg: "t",
    long_flags: &["append", "return", "flush", "force", "quiet", "help", "version"],
    long_with_arg: &[
        "command",
        "echo",
        "log-io",
        "log-in",
        "log-out",
        "log-timing",
        "logging-format",
        "output-limit",
    ],
    long_optional_arg: &["timing"],
    permute: true,
};

/// util-linux `flock`: `+sexnoFuw:E:hV`; `-c` is positional (after the file).
pub(super) const FLOCK: Spec = Spec {
    flags: "sexnoFuhV",
    with_arg: "wE",
    long_flags: &[
        "shared",
        "exclusive",
        "unlock",
        "nonblock",
        "nb",
        "close",
        "no-fork",
        "verbose",
        "help",
        "version",
    ],
    long_with_arg: &["timeout", "wait", "conflict-exit-code"],
    ..NO_OPTIONS
};

/// coreutils `chroot`.
pub(super) const CHROOT: Spec = Spec {
    long_flags: &["skip-chdir", "help", "version"],
    long_with_arg: &["groups", "userspec"],
    ..NO_OPTIONS
};

/// coreutils `stdbuf`.
pub(super) const STDBUF: Spec = Spec {
    with_arg: "ioe",
    long_flags: &["help", "version"],
    long_with_arg: &["input", "output", "error"],
    ..NO_OPTIONS
};

/// util-linux `ionice`: with `-p`/`-P`/`-u` it changes running processes and runs nothing.
pub(super) const IONICE: Spec = Spec {
    flags: "thV",
    with_arg: "cnpPu",
    long_flags: &["ignore", "help", "version"],
    long_with_arg: &["class", "classdata", "pid", "pgid", "uid"],
    ..NO_OPTIONS
};

/// util-linux `setsid`.
pub(super) const SETSID: Spec =
    Spec { flags: "cfwhV", long_flags: &["ctty", "fork", "wait", "help", "version"], ..NO_OPTIONS };

/// util-linux `taskset`: `-c` is a flag (the mask operand is a CPU list); with `-p` it runs nothing.
pub(super) const TASKSET: Spec =
    Spec { flags: "acphV", long_flags: &["all-tasks", "cpu-list", "pid", "help", "version"], ..NO_OPTIONS };

/// util-linux `nsenter` (namespace options take an optional file: `-m/proc/1/ns/mnt`, `--mount=FILE`).
pub(super) const NSENTER: Spec = Spec {
    flags: "aeFZcNkhV",
    with_arg: "tSGW",
    optional_arg: "muinpCUTrw",
    long_flags: &[
        "all",
        "env",
        "no-fork",
        "follow-context",
        "join-cgroup",
        "preserve-credentials",
        "user-parent",
        "keep-caps",
        "help",
        "version",
    ],
    long_with_arg: &["target", "setuid", "setgid", "wdns"],
    long_optional_arg: &["mount", "uts", "ipc", "net", "pid", "cgroup", "user", "time", "root", "wd"],
    permute: false,
};

/// util-linux `unshare`.
pub(super) const UNSHARE: Spec = Spec {
    flags: "fhVrc",
    with_arg: "RwSGl",
    optional_arg: "muinpCUT",
    long_flags: &["fork", "map-root-user", "map-current-user", "map-auto", "keep-caps", "help", "version"],
    long_with_arg: &[
        "map-user",
        "map-group",
        "map-users",
        "map-groups",
        "propagation",
        "setgroups",
        "root",
        "wd",
        "setuid",
        "setgid",
        "monotonic",
        "boottime",
        "load-interp",
    ],
    long_optional_arg: &[
        "mount",
        "uts",
        "ipc",
        "net",
        "pid",
        "cgroup",
        "user",
        "time",
        "kill-child",
        "mount-proc",
        "mount-binfmt",
    ],
    permute: false,
};

/// systemd `systemd-run`.
pub(super) const SYSTEMD_RUN: Spec = Spec {
    flags: "rtPGqdShV",
    with_arg: "upEMH",
    long_flags: &[
        "remain-after-exit",
        "send-sighup",
        "pty",
        "pipe",
        "collect",
        "quiet",
        "same-dir",
        "shell",
        "user",
        "system",
        "scope",
        "no-block",
        "wait",
        "no-ask-password",
        "on-clock-change",
        "on-timezone-change",
        "slice-inherit",
        "ignore-failure",
        "help",
        "version",
    ],
    long_with_arg: &[
        "unit",
        "property",
        "description",
        "slice",
        "setenv",
        "machine",
        "host",
        "uid",
        "gid",
        "nice",
        "working-directory",
        "on-active",
        "on-boot",
        "on-startup",
        "on-unit-active",
        "on-unit-inactive",
        "on-calendar",
        "timer-property",
        "path-property",
        "socket-property",
        "service-type",
        "expand-environment",
        "json",
    ],
    ..NO_OPTIONS
};

/// OpenSSH `ssh` (it parses options again after the destination: `ssh host -t ls`).
pub(super) const SSH: Spec =
    Spec { flags: "46AaCfGgKkMNnqsTtVvXxYy", with_arg: "BbcDEeFIiJLlmOoPpQRSWw", ..NO_OPTIONS };

/// GNU `parallel` (only the options listed are known; others fail closed).
pub(super) const PARALLEL: Spec = Spec {
    flags: "kXmuvqr0t",
    with_arg: "jPnNLsdEICaS",
    long_flags: &[
        "keep-order",
        "ungroup",
        "group",
        "line-buffer",
        "linebuffer",
        "lb",
        "verbose",
        "dry-run",
        "dryrun",
        "eta",
        "bar",
        "progress",
        "quote",
        "no-run-if-empty",
        "null",
        "tag",
        "shuf",
        "pipe",
        "spreadstdin",
        "xapply",
        "link",
        "no-notice",
        "will-cite",
        "plus",
        "files",
        "round-robin",
        "help",
        "version",
    ],
    long_with_arg: &[
        "jobs",
        "max-procs",
        "max-args",
        "max-replace-args",
        "max-lines",
        "max-chars",
        "delimiter",
        "eof",
        "colsep",
        "arg-file",
        "tagstring",
        "joblog",
        "results",
        "res",
        "tmpdir",
        "workdir",
        "wd",
        "sshlogin",
        "sshloginfile",
        "slf",
        "env",
        "timeout",
        "retries",
        "delay",
        "load",
        "memfree",
        "halt",
        "halt-on-error",
        "block",
        "block-size",
        "recstart",
        "recend",
        "header",
        "basefile",
        "bf",
        "return",
        "transferfile",
        "tf",
        "arg-sep",
        "arg-file-sep",
        "nice",
    ],
    ..NO_OPTIONS
};
