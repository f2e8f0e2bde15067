//! Wrappers whose options are parsed exactly, as their getopt tables define them: `watch`, `su`, `runuser`,
//! `sg`, `script`, `flock`, `chroot`, `busybox`, `stdbuf`, `ionice`, `setsid`, `taskset`, `unbuffer`,
//! `parallel`, `nsenter`, `unshare`, `systemd-run`, and `ssh` (whose command runs on another machine).
//!
//! An option a wrapper does not know (or an abbreviated long option) is [`OpaqueKind::WrapperOption`]: the
//! command is still reported, found by taking the option as a flag, but where it starts is a guess, so the
//! script is at least `prompt`. A wrapper that runs a shell without a command (`su`, `chroot DIR`) while
//! stdin carries data is [`OpaqueKind::StdinCode`].

use super::interpreters::{POSIX_SHELLS, shell_code};
use super::words::Word;
use super::wrapper_specs::{
    CHROOT, FLOCK, IONICE, NSENTER, PARALLEL, RUNUSER, SCRIPT, SETSID, SSH, STDBUF, SU, SYSTEMD_RUN, Spec,
    TASKSET, UNSHARE, WATCH,
};
use super::{Analyzer, Context, OpaqueKind, basename};

/// The programs [`inspect`] knows.
pub(super) const PROGRAMS: &[&str] = &[
    "watch",
    "su",
    "runuser",
    "sg",
    "script",
    "flock",
    "chroot",
    "busybox",
    "stdbuf",
    "ionice",
    "setsid",
    "taskset",
    "unbuffer",
    "parallel",
    "nsenter",
    "unshare",
    "systemd-run",
    "ssh",
];

/// Reports what one of [`PROGRAMS`] runs.
pub(super) fn inspect(
    analyzer: &mut Analyzer,
    program: &str,
    args: &[Word],
    env: &[(String, String)],
    ctx: &Context,
    text: &str,
) {
    let mut w = Wrapper { analyzer, program, env, ctx: ctx.clone(), text };
    match program {
        "watch" => w.watch(args),
        "su" | "runuser" => w.su(args),
        "sg" => w.sg(args),
        "script" => w.script(args),
        "flock" => w.flock(args),
        "busybox" => w.busybox(args),
        "unbuffer" => w.unbuffer(args),
        "parallel" => w.parallel(args),
        "systemd-run" => w.systemd_run(args),
        "ssh" => w.ssh(args),
        _ => w.plain(args),
    }
}

/// One option as given: its name (`c`, or `command` for `--command`) and its argument, if it took one.
struct Opt {
    name: String,
    value: Option<Word>,
}

#[derive(Default)]
struct Parsed {
    options: Vec<Opt>,
    operands: Vec<Word>,
    /// An option is not in the table, is abbreviated, or lacks its argument.
    unknown: bool,
    /// `--` ended the options.
    terminated: bool,
}

impl Parsed {
    fn has(&self, names: &[&str]) -> bool {
        self.options.iter().any(|o| names.contains(&o.name.as_str()))
    }

    fn values<'a>(&'a self, names: &'a [&'a str]) -> impl Iterator<Item = &'a Word> + 'a {
        self.options.iter().filter(|o| names.contains(&o.name.as_str())).filter_map(|o| o.value.as_ref())
    }

    fn value(&self, names: &[&str]) -> Option<&Word> {
        self.options.iter().rev().filter(|o| names.contains(&o.name.as_str())).find_map(|o| o.value.as_ref())
    }
}

/// Part of `word` (an attached option argument), as dynamic as the word.
fn part(word: &Word, text: &str) -> Word {
    Word { text: text.to_owned(), dynamic: word.dynamic }
}

/// Parses `args` as getopt_long would with `spec`.
fn parse(args: &[Word], spec: &Spec) -> Parsed {
    let mut parsed = Parsed::default();
    let mut i = 0;
    let mut options_done = false;
    while let Some(arg) = args.get(i) {
        i += 1;
        let a = arg.text.as_str();
        if options_done || a == "-" || !a.starts_with('-') {
            parsed.operands.push(arg.clone());
            options_done |= !spec.permute;
            continue;
        }
        if a == "--" {
            options_done = true;
            parsed.terminated = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(part(arg, value))),
                None => (long, None),
            };
            // getopt_long takes a unique prefix for the whole name (`--comm` is `--command`).
            let every = spec.long_flags.iter().chain(spec.long_with_arg).chain(spec.long_optional_arg);
            let name = super::getopt::long_name(every.copied(), given).unwrap_or(given);
            let value = if spec.long_with_arg.contains(&name) {
                match attached {
                    Some(value) => Some(value),
                    None => {
                        i += 1;
                        args.get(i - 1).cloned()
                    }
                }
            } else {
                attached
            };
            let known = spec.long_with_arg.contains(&name)
                || spec.long_optional_arg.contains(&name)
                || (spec.long_flags.contains(&name) && value.is_none());
            parsed.unknown |= !known || (spec.long_with_arg.contains(&name) && value.is_none());
            parsed.options.push(Opt { name: name.to_owned(), value });
            continue;
        }
        for (pos, c) in a.char_indices().skip(1) {
            let rest = a.get(pos + c.len_utf8()..).unwrap_or("");
            let name = c.to_string();
            if spec.with_arg.contains(c) {
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(part(arg, rest))
                };
                parsed.unknown |= value.is_none();
                parsed.options.push(Opt { name, value });
                break;
            }
            if spec.optional_arg.contains(c) {
                let value = (!rest.is_empty()).then(|| part(arg, rest));
                parsed.options.push(Opt { name, value });
                break;
            }
            parsed.unknown |= !spec.flags.contains(c);
            parsed.options.push(Opt { name, value: None });
        }
    }
    parsed
}

/// Words joined with spaces, as `watch` and `parallel` hand their command to `sh -c`.
fn joined(words: &[Word]) -> Word {
    Word {
        text: words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "),
        dynamic: words.iter().any(|w| w.dynamic),
    }
}

struct Wrapper<'a> {
    analyzer: &'a mut Analyzer,
    program: &'a str,
    env: &'a [(String, String)],
    /// Where the wrapper runs; a folder option (`--wd=DIR`) moves what it runs (see [`Self::folder`]).
    ctx: Context,
    text: &'a str,
}

impl Wrapper<'_> {
    /// The wrapper's folder option (`shell/working_folders.rs`), if given: what it runs runs there.
    fn folder(&mut self, parsed: &Parsed) {
        let names = super::working_folders::folder_options(self.program);
        if names.is_empty() || !parsed.has(names) {
            return;
        }
        match parsed.value(names).cloned() {
            Some(folder) => {
                let mut ctx = self.ctx.clone();
                self.analyzer.enter_folder(&mut ctx, &folder, self.text);
                self.ctx = ctx;
            }
            // `nsenter --wd` alone: the target process's folder.
            None => self.analyzer.opaque(
                OpaqueKind::WrapperOption,
                format!("{}: runs in a folder known only at run time", self.text),
            ),
        }
    }

    fn exported_variable(&mut self, name: &str, value: &str) {
        self.analyzer.check_variable(name, Some(value), super::variables::Reach::Exported, self.text);
    }

    fn opaque(&mut self, kind: OpaqueKind) {
        self.analyzer.opaque(kind, self.text);
    }

    fn check_unknown(&mut self, parsed: &Parsed) {
        if parsed.unknown {
            self.opaque(OpaqueKind::WrapperOption);
        }
    }

    /// Reports `argv` as a command run by this wrapper.
    fn run(&mut self, argv: &[Word], env: &[(String, String)], dynamic: bool) {
        if argv.is_empty() {
            return;
        }
        let inner = self.ctx.inside(self.program);
        self.analyzer.emit(argv.to_vec(), env.to_vec(), dynamic, &inner, self.text);
    }

    /// Parses `code` as the bash script this wrapper hands to a shell.
    fn code(&mut self, code: &Word) {
        shell_code(self.analyzer, self.program, code, &self.ctx, self.text);
    }

    /// The wrapper starts an interactive shell: it runs whatever stdin carries.
    fn shell_without_command(&mut self) {
        if self.ctx.stdin_redirected {
            self.opaque(OpaqueKind::StdinCode);
        }
    }

    fn write(&mut self, target: &Word, op: &str) {
        self.analyzer.add_redirection(None, op.to_owned(), target.clone(), self.text);
    }

    /// `chroot`, `stdbuf`, `ionice`, `setsid`, `taskset`, `nsenter`, `unshare`: options, then the command
    /// (after the new root for `chroot`, after the mask for `taskset`).
    fn plain(&mut self, args: &[Word]) {
        let spec = match self.program {
            "chroot" => &CHROOT,
            "stdbuf" => &STDBUF,
            "ionice" => &IONICE,
            "setsid" => &SETSID,
            "taskset" => &TASKSET,
            "nsenter" => &NSENTER,
            _ => &UNSHARE,
        };
        let parsed = parse(args, spec);
        self.check_unknown(&parsed);
        self.folder(&parsed);
        let operands = parsed.operands.as_slice();
        let command = match self.program {
            "ionice" if parsed.has(&["p", "P", "u", "pid", "pgid", "uid"]) => return,
            "taskset" if parsed.has(&["p", "pid"]) => return,
            "chroot" | "taskset" => operands.get(1..).unwrap_or(&[]),
            _ => operands,
        };
        let runs_shell = matches!(self.program, "chroot" | "nsenter" | "unshare");
        if command.is_empty() && runs_shell && (self.program != "chroot" || !operands.is_empty()) {
            self.shell_without_command();
        }
        self.run(command, self.env, false);
    }

    /// `watch [opts] CMD...`: the words joined with spaces are run by `sh -c`; with `-x` they are exec'd.
    fn watch(&mut self, args: &[Word]) {
        let parsed = parse(args, &WATCH);
        self.check_unknown(&parsed);
        if parsed.operands.is_empty() {
            return;
        }
        if parsed.has(&["x", "exec"]) {
            self.run(&parsed.operands, self.env, false);
        } else {
            self.code(&joined(&parsed.operands));
        }
    }

    /// `su [opts] [-] [USER [ARG...]]`, `runuser` likewise or `runuser -u USER [--] CMD...`. `-c CMD` (or
    /// `-c CMD` among the arguments after the user, which go to the user's shell) is shell code.
    fn su(&mut self, args: &[Word]) {
        let parsed = parse(args, if self.program == "runuser" { &RUNUSER } else { &SU });
        self.check_unknown(&parsed);
        let mut codes: Vec<Word> = parsed.values(&["c", "command", "session-command"]).cloned().collect();
        if parsed.has(&["u", "user"]) {
            // runuser -u runs the command itself, without a shell; `-c` with `-u` is refused.
            if !codes.is_empty() {
                self.opaque(OpaqueKind::WrapperOption);
            }
            if parsed.operands.is_empty() {
                self.shell_without_command();
            }
            self.run(&parsed.operands, self.env, false);
            return;
        }
        let mut operands = parsed.operands.as_slice();
        if operands.first().is_some_and(|o| o.text == "-") {
            operands = operands.get(1..).unwrap_or(&[]);
        }
        match operands.get(1..).unwrap_or(&[]) {
            [] => {}
            [flag, code] if matches!(flag.text.as_str(), "-c" | "--command") => codes.push(code.clone()),
            [flag] if flag.text.starts_with("--command=") => {
                codes.push(part(flag, flag.text.trim_start_matches("--command=")));
            }
            _ => self.opaque(OpaqueKind::WrapperOption),
        }
        let shell = parsed.value(&["s", "shell"]);
        if shell.is_some_and(|s| s.dynamic || !POSIX_SHELLS.contains(&basename(&s.text))) {
            // Another program as the shell: what it makes of its arguments is unknown.
            self.opaque(OpaqueKind::ShellCode);
            return;
        }
        if codes.is_empty() {
            self.shell_without_command();
        }
        for code in &codes {
            self.code(code);
        }
    }

    /// `sg [-] GROUP [-c] CMD`: CMD is run by `/bin/sh -c`.
    fn sg(&mut self, args: &[Word]) {
        let args = match args.first() {
            Some(first) if first.text == "-" => args.get(1..).unwrap_or(&[]),
            _ => args,
        };
        let Some((group, rest)) = args.split_first() else {
            self.shell_without_command();
            return;
        };
        if group.text.starts_with('-') {
            self.opaque(OpaqueKind::WrapperOption);
        }
        let rest = match rest.first() {
            Some(flag) if flag.text == "-c" => rest.get(1..).unwrap_or(&[]),
            _ => rest,
        };
        match rest {
            [] => self.shell_without_command(),
            [code] => self.code(code),
            _ => {
                self.opaque(OpaqueKind::WrapperOption);
                self.code(&joined(rest));
            }
        }
    }

    /// `script [opts] [FILE]`: `-c CMD` runs CMD with `$SHELL -c`; FILE (default `typescript`) and the
    /// `-B`/`-I`/`-O`/`-T`/`-t` logs are writes.
    fn script(&mut self, args: &[Word]) {
        let parsed = parse(args, &SCRIPT);
        self.check_unknown(&parsed);
        let logs = ["B", "I", "O", "log-io", "log-in", "log-out"];
        let mut writes: Vec<Word> = parsed.values(&logs).cloned().collect();
        let other_logs = !writes.is_empty();
        writes.extend(parsed.values(&["T", "t", "log-timing", "timing"]).cloned());
        match parsed.operands.as_slice() {
            [] if !other_logs => writes.push(Word::literal("typescript")),
            [] => {}
            [file] => writes.push(file.clone()),
            [file, ..] => {
                self.opaque(OpaqueKind::WrapperOption);
                writes.push(file.clone());
            }
        }
        for target in &writes {
            self.write(target, "script");
        }
        let codes: Vec<Word> = parsed.values(&["c", "command"]).cloned().collect();
        if codes.is_empty() {
            self.shell_without_command();
        }
        for code in &codes {
            self.code(code);
        }
    }

    /// `flock [opts] FILE CMD...` or `flock [opts] FILE -c CMD`; the lock file is created when missing (a
    /// write). `flock [opts] FD` runs nothing.
    fn flock(&mut self, args: &[Word]) {
        let parsed = parse(args, &FLOCK);
        self.check_unknown(&parsed);
        let Some((file, command)) = parsed.operands.split_first() else { return };
        if command.is_empty() {
            return;
        }
        self.write(file, "flock");
        match command {
            [flag, code] if matches!(flag.text.as_str(), "-c" | "--command") => self.code(code),
            [flag, ..] if matches!(flag.text.as_str(), "-c" | "--command") => {
                // flock refuses more than one command argument; fail closed all the same.
                self.opaque(OpaqueKind::WrapperOption);
                self.code(&joined(command.get(1..).unwrap_or(&[])));
            }
            _ => self.run(command, self.env, false),
        }
    }

    /// `busybox APPLET ARGS...`: the applet is the program (`busybox sh -c ...`, `busybox rm x`).
    fn busybox(&mut self, args: &[Word]) {
        let Some(first) = args.first() else { return };
        if first.text.starts_with('-') {
            if !matches!(first.text.as_str(), "--list" | "--list-full" | "--help") {
                self.opaque(OpaqueKind::WrapperOption);
            }
            return;
        }
        self.run(args, self.env, false);
    }

    /// `unbuffer [-p] CMD...` (expect): only `-p`, and only first, is an option.
    fn unbuffer(&mut self, args: &[Word]) {
        let command = match args.first() {
            Some(first) if first.text == "-p" => args.get(1..).unwrap_or(&[]),
            _ => args,
        };
        if command.first().is_some_and(|c| c.text.starts_with('-')) {
            self.opaque(OpaqueKind::WrapperOption);
        }
        self.run(command, self.env, false);
    }

    /// `parallel [opts] TEMPLATE... ::: ARGS...`: the template words joined with spaces are shell code (with
    /// `-q` they are the command's words) and its commands and redirections are dynamic (arguments are
    /// substituted at run time). Without a template every input is a command: static `:::` arguments are parsed, anything read
    /// at run time is opaque. `-S` runs jobs on other machines; `--joblog`/`--results` are writes.
    fn parallel(&mut self, args: &[Word]) {
        let parsed = parse(args, &PARALLEL);
        self.check_unknown(&parsed);
        self.folder(&parsed);
        if parsed.has(&["S", "sshlogin", "sshloginfile", "slf"]) {
            self.opaque(OpaqueKind::RemoteCommand);
        }
        let logs: Vec<Word> = parsed.values(&["joblog", "results", "res"]).cloned().collect();
        for log in logs.iter().filter(|l| l.text != "-") {
            self.write(log, "parallel --joblog");
        }
        let arg_sep = parsed.value(&["arg-sep"]).map_or(":::", |w| w.text.as_str()).to_owned();
        let file_sep = parsed.value(&["arg-file-sep"]).map_or("::::", |w| w.text.as_str()).to_owned();
        let is_separator = |w: &Word| {
            let t = w.text.strip_suffix('+').unwrap_or(&w.text);
            t == arg_sep || t == file_sep
        };
        let operands = parsed.operands.as_slice();
        let split = operands.iter().position(is_separator).unwrap_or(operands.len());
        let (template, sources) = operands.split_at(split);
        if template.iter().any(|w| w.text.contains("{=")) {
            // `{= perl expression =}` replacement strings.
            self.opaque(OpaqueKind::InterpreterCode);
        }
        let before = (self.analyzer.out.commands.len(), self.analyzer.out.redirections.len());
        if template.is_empty() {
            let single_static_source = sources.first().is_some_and(|s| s.text == arg_sep)
                && !sources.iter().skip(1).any(is_separator)
                && !parsed.has(&["a", "arg-file"]);
            if single_static_source {
                for command in sources.iter().skip(1) {
                    self.code(command);
                }
            } else if sources.is_empty() && !parsed.has(&["a", "arg-file"]) {
                self.opaque(OpaqueKind::StdinCode);
            } else {
                self.opaque(OpaqueKind::ShellCode);
            }
            return;
        }
        if parsed.has(&["q", "quote"]) {
            self.run(template, self.env, true);
        } else {
            self.code(&joined(template));
        }
        for command in self.analyzer.out.commands.iter_mut().skip(before.0) {
            command.dynamic = true;
        }
        // `{}` in a redirection target (`echo {} > {}.out`) is replaced too.
        for redirection in self.analyzer.out.redirections.iter_mut().skip(before.1) {
            redirection.dynamic = true;
        }
    }

    /// `systemd-run [opts] CMD...`: `-H`/`-M` run it on another host or machine; `-p Exec*=`/`Environment*=`
    /// properties run or steer other code; `-E NAME=VALUE` is the command's environment.
    fn systemd_run(&mut self, args: &[Word]) {
        let parsed = parse(args, &SYSTEMD_RUN);
        self.check_unknown(&parsed);
        self.folder(&parsed);
        if parsed.has(&["H", "host", "M", "machine"]) {
            self.opaque(OpaqueKind::RemoteCommand);
            return;
        }
        let risky_property = parsed.values(&["p", "property"]).any(|p| {
            let key = p.text.split('=').next().unwrap_or("").trim();
            p.dynamic || key.starts_with("Exec") || key.starts_with("Environment")
        });
        if risky_property {
            self.opaque(OpaqueKind::WrapperOption);
        }
        let mut env = self.env.to_vec();
        for setting in parsed.values(&["E", "setenv"]) {
            // `-E NAME` alone passes the caller's value on.
            if let Some((name, value)) = setting.text.split_once('=') {
                self.exported_variable(name, value);
                env.push((name.to_owned(), value.to_owned()));
            }
        }
        if parsed.operands.is_empty() && parsed.has(&["S", "shell"]) {
            self.shell_without_command();
        }
        self.run(&parsed.operands, &env, false);
    }

    /// `ssh [opts] DEST [opts] [CMD...]`: the command runs on DEST, so it is [`OpaqueKind::RemoteCommand`]
    /// and not reported as a local command; so is a remote shell fed by stdin. Options that run local
    /// commands (`-o ProxyCommand=...`, `LocalCommand`, `KnownHostsCommand`) or load code (`-F`, `-I`,
    /// providers) are [`OpaqueKind::WrapperOption`]; a local command given inline is parsed too. The
    /// `-E` log file is a write.
    fn ssh(&mut self, args: &[Word]) {
        let first = parse(args, &SSH);
        let (command, second) = match first.operands.split_first() {
            Some((_destination, rest)) if !first.terminated => {
                let second = parse(rest, &SSH);
                (second.operands.clone(), Some(second))
            }
            Some((_destination, rest)) => (rest.to_vec(), None),
            None => (Vec::new(), None),
        };
        let all: Vec<&Parsed> = std::iter::once(&first).chain(second.as_ref()).collect();
        if all.iter().any(|p| p.unknown) {
            self.opaque(OpaqueKind::WrapperOption);
        }
        let mut risky = false;
        let mut local_code: Vec<Word> = Vec::new();
        let mut remote_option = false;
        for parsed in &all {
            for option in parsed.values(&["o"]) {
                let text = option.text.trim();
                let split = text.find(|c: char| c == '=' || c.is_whitespace()).unwrap_or(text.len());
                let key = text.get(..split).unwrap_or("").to_ascii_lowercase();
                let value = text.get(split..).unwrap_or("").trim_start_matches(['=', ' ', '\t']);
                match key.as_str() {
                    "proxycommand" | "localcommand" | "knownhostscommand" => {
                        risky = true;
                        local_code.push(part(option, value));
                    }
                    "pkcs11provider" | "securitykeyprovider" | "permitlocalcommand" => risky = true,
                    "remotecommand" => remote_option = true,
                    _ => risky |= option.dynamic,
                }
            }
            risky |= parsed.values(&["F"]).any(|f| f.text != "/dev/null") || parsed.has(&["I"]);
        }
        let logs: Vec<Word> = all.iter().flat_map(|p| p.values(&["E"])).cloned().collect();
        for log in &logs {
            self.write(log, "ssh -E");
        }
        if risky {
            self.opaque(OpaqueKind::WrapperOption);
        }
        for code in &local_code {
            self.code(code);
        }
        let no_remote_shell = all.iter().any(|p| p.has(&["N", "W"]));
        let has_destination = !first.operands.is_empty();
        if !command.is_empty()
            || remote_option
            || (has_destination && !no_remote_shell && self.ctx.stdin_redirected)
        {
            self.opaque(OpaqueKind::RemoteCommand);
        }
    }
}
