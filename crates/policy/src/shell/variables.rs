//! Which variable assignments a script may make without an operator: an assignment bash hands to the
//! programs it starts (a prefix, `export`, `env X=v`, `sudo X=v`...) is inert only when its name is on a
//! reviewed list of variables that load nothing and write nothing; every other name makes the command a
//! prompt that names the variable. A plain assignment (`X=v`, `read X`, `for X in`...) stays in the shell
//! and is inert, unless bash itself reads the name (`shell/bash_variables.rs`) or the environment a
//! command starts with may already hold it (bash exports an inherited name: assigning it changes what
//! programs see).

/// Variables reviewed as inert: programs that read them load no code and no configuration named by them,
/// and write no file because of them. Each row: the name, the values allowed, and why it is inert.
const INERT_VARIABLES: &[(&str, Values, &str)] = &[
    ("LANG", Values::LocaleName, "selects a system locale by name"),
    ("LANGUAGE", Values::LocaleName, "selects message catalogues by name"),
    ("LC_ALL", Values::LocaleName, "selects a system locale by name"),
    ("LC_COLLATE", Values::LocaleName, "selects a system locale by name"),
    ("LC_CTYPE", Values::LocaleName, "selects a system locale by name"),
    ("LC_MESSAGES", Values::LocaleName, "selects a system locale by name"),
    ("LC_NUMERIC", Values::LocaleName, "selects a system locale by name"),
    ("LC_TIME", Values::LocaleName, "selects a system locale by name"),
    ("TZ", Values::ZoneName, "a time zone below /usr/share/zoneinfo"),
    ("TERM", Values::PlainName, "a terminal type looked up in the system's terminfo"),
    ("NO_COLOR", Values::Any, "turns colours off"),
    ("FORCE_COLOR", Values::Any, "turns colours on"),
    ("CLICOLOR", Values::Any, "turns colours on"),
    ("CLICOLOR_FORCE", Values::Any, "turns colours on"),
    ("COLUMNS", Values::Number, "the terminal's width"),
    ("LINES", Values::Number, "the terminal's height"),
    ("CI", Values::Any, "tells tools they run unattended"),
    ("DEBIAN_FRONTEND", Values::PlainName, "selects apt's dialog front end"),
    ("SOURCE_DATE_EPOCH", Values::Number, "a timestamp for reproducible builds"),
    ("RUST_BACKTRACE", Values::PlainName, "prints backtraces"),
    ("RUST_LOG", Values::Any, "selects log levels"),
    ("RUST_LOG_STYLE", Values::PlainName, "log colours"),
    ("RUST_TEST_THREADS", Values::Number, "test parallelism"),
    ("RUST_MIN_STACK", Values::Number, "thread stack size"),
    ("CARGO_TERM_COLOR", Values::PlainName, "cargo's colours"),
    ("CARGO_TERM_VERBOSE", Values::PlainName, "cargo's verbosity"),
    ("CARGO_TERM_QUIET", Values::PlainName, "cargo's verbosity"),
    ("CARGO_TERM_PROGRESS_WHEN", Values::PlainName, "cargo's progress bar"),
    ("CARGO_INCREMENTAL", Values::Number, "incremental compilation on or off"),
    ("CARGO_BUILD_JOBS", Values::Number, "build parallelism"),
    ("NODE_ENV", Values::PlainName, "a mode name node programs read"),
    ("NODE_NO_WARNINGS", Values::Number, "silences node's warnings"),
    ("PYTHONUNBUFFERED", Values::Any, "unbuffered output"),
    ("PYTHONDONTWRITEBYTECODE", Values::Any, "no .pyc files"),
    ("PYTHONHASHSEED", Values::PlainName, "hash randomisation"),
    ("PYTHONIOENCODING", Values::PlainName, "the encoding of standard streams"),
    ("GIT_AUTHOR_NAME", Values::Any, "recorded in commits"),
    ("GIT_AUTHOR_EMAIL", Values::Any, "recorded in commits"),
    ("GIT_AUTHOR_DATE", Values::Any, "recorded in commits"),
    ("GIT_COMMITTER_NAME", Values::Any, "recorded in commits"),
    ("GIT_COMMITTER_EMAIL", Values::Any, "recorded in commits"),
    ("GIT_COMMITTER_DATE", Values::Any, "recorded in commits"),
    ("GIT_TERMINAL_PROMPT", Values::Number, "git never asks on the terminal"),
    ("GIT_OPTIONAL_LOCKS", Values::Number, "git takes no optional locks"),
    ("GIT_PAGER", Values::Pager, "`cat` or nothing: no pager runs"),
    ("PAGER", Values::Pager, "`cat` or nothing: no pager runs"),
    ("MANPAGER", Values::Pager, "`cat` or nothing: no pager runs"),
    ("SYSTEMD_PAGER", Values::Pager, "`cat` or nothing: no pager runs"),
    ("GREP_COLOR", Values::Any, "grep's colours"),
    ("GREP_COLORS", Values::Any, "grep's colours"),
    ("LS_COLORS", Values::Any, "ls's colours"),
    ("TIMEFORMAT", Values::Any, "the format of bash's `time`"),
];

/// What values an inert variable may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Values {
    Any,
    /// Digits only (or empty).
    Number,
    /// Letters, digits, `_ . - + @ :` — no `/`, so no path.
    PlainName,
    /// A locale name (`C.UTF-8`, `en_US.UTF-8@euro`): a path instead loads a locale from there.
    LocaleName,
    /// A zone name below the zone folder (`UTC`, `Europe/Paris`): not absolute, no `..`, no `:`.
    ZoneName,
    /// `cat` or empty.
    Pager,
}

impl Values {
    fn admits(self, value: &str) -> bool {
        let plain =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+' | '@' | ':' | ',');
        match self {
            Self::Any => true,
            Self::Number => value.chars().all(|c| c.is_ascii_digit()),
            Self::PlainName | Self::LocaleName => value.chars().all(plain),
            Self::ZoneName => {
                !value.starts_with('/')
                    && !value.contains(':')
                    && value.split('/').all(|part| part != ".." && part.chars().all(plain))
            }
            Self::Pager => matches!(value, "" | "cat"),
        }
    }
}

/// Variables that make later programs load or run other code, or move where they look for it. Not needed
/// for the decision (only the inert list allows), but they give the reason a sharper name.
const CODE_INJECTING_VARIABLES: &[&str] = &[
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PATH",
    "HOME",
    "PWD",
    "OLDPWD",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_DIR",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "GIT_TRACE",
    "EDITOR",
    "VISUAL",
    "LESSOPEN",
    "LESSCLOSE",
    "RIPGREP_CONFIG_PATH",
    "NODE_OPTIONS",
    "PERL5OPT",
    "RUBYOPT",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "CDPATH",
    "GLOBIGNORE",
    "IFS",
];

/// Names the environment of a command may hold when it starts, each with where it comes from: bash
/// marks an inherited variable exported, so a plain assignment of one reaches every program started
/// after it. The first rows are what the shell tool passes (`DEFAULT_ENV_ALLOWLIST` of
/// `crates/coding/src/workspace.rs`, and `LC_*`; a test checks the two agree); the others are names an
/// operator commonly passes through (`Workspace::env_passthrough`, which the judge does not see).
const INHERITED_ENVIRONMENT: &[(&str, &str)] = &[
    ("PATH", "the shell tool's allowlist"),
    ("HOME", "the shell tool's allowlist"),
    ("LANG", "the shell tool's allowlist"),
    ("LANGUAGE", "the shell tool's allowlist"),
    ("TERM", "the shell tool's allowlist"),
    ("USER", "the shell tool's allowlist"),
    ("LOGNAME", "the shell tool's allowlist"),
    ("SHELL", "the shell tool's allowlist"),
    ("TMPDIR", "the shell tool's allowlist"),
    ("TZ", "the shell tool's allowlist"),
    ("COLORTERM", "the shell tool's allowlist"),
    ("NO_COLOR", "the shell tool's allowlist"),
    ("http_proxy", "a proxy every HTTP client reads"),
    ("https_proxy", "a proxy every HTTP client reads"),
    ("ftp_proxy", "a proxy every HTTP client reads"),
    ("all_proxy", "a proxy every HTTP client reads"),
    ("no_proxy", "hosts reached without the proxy"),
    ("HTTP_PROXY", "a proxy every HTTP client reads"),
    ("HTTPS_PROXY", "a proxy every HTTP client reads"),
    ("FTP_PROXY", "a proxy every HTTP client reads"),
    ("ALL_PROXY", "a proxy every HTTP client reads"),
    ("NO_PROXY", "hosts reached without the proxy"),
    ("SSL_CERT_FILE", "the certificates TLS clients trust"),
    ("SSL_CERT_DIR", "the certificates TLS clients trust"),
    ("CURL_CA_BUNDLE", "the certificates curl trusts"),
    ("REQUESTS_CA_BUNDLE", "the certificates Python's requests trusts"),
    ("NODE_EXTRA_CA_CERTS", "the certificates node trusts"),
    ("GIT_SSL_CAINFO", "the certificates git trusts"),
];

thread_local! {
    /// Set while a command is judged that starts with its user's whole environment (Claude Code's own
    /// shell, when the hub does not run it): any name may be inherited there.
    static WHOLE_ENVIRONMENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `judge` (on this thread) as for a command that starts with its user's whole environment, not
/// the shell tool's allowlist: every name may be inherited, so bash exports it and no plain assignment
/// of it is inert (`KUBECONFIG=/tmp/x; kubectl …` reaches kubectl there).
pub fn with_whole_environment<T>(judge: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            WHOLE_ENVIRONMENT.set(self.0);
        }
    }
    let _restore = Restore(WHOLE_ENVIRONMENT.replace(true));
    judge()
}

/// True when the environment a command starts with may hold `name` (then bash exports it).
pub(crate) fn may_be_inherited(name: &str) -> bool {
    WHOLE_ENVIRONMENT.get()
        || name.starts_with("LC_")
        || INHERITED_ENVIRONMENT.iter().any(|(n, _)| *n == name)
}

/// True when a plain assignment of `name` stays in the shell and bash itself does not read it: a valid
/// name, not one of bash's variables, not one the environment may hand down.
pub(crate) fn stays_in_shell(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !super::bash_variables::is_bash_variable(name)
        && !may_be_inherited(name)
}

/// How an assignment reaches programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// A prefix (`X=v cmd`), `export`, `declare -x`, `env X=v`, `sudo X=v`: programs see it.
    Exported,
    /// `X=v` alone, `read X`, `for X in`, `printf -v X`: the shell's own variable, which programs see
    /// only if the name was already exported (as `HOME`, `PATH`, `PWD` are: `may_be_inherited`), or when
    /// the script exports it later (`export X` is judged then, as `Exported`).
    Shell,
}

/// The verdict on one assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Inert,
    /// On the list of variables known to load or run code.
    InjectsCode,
    /// Not on the reviewed list (or its value is not one the list allows, or is computed at run time).
    Unreviewed,
}

/// Judges `name=value` (`value` is `None` when computed at run time or not given, as in `export NAME`).
pub(crate) fn judge(name: &str, value: Option<&str>, reach: Reach) -> Verdict {
    if injects_code(name) {
        return Verdict::InjectsCode;
    }
    // A reviewed name keeps its values even in the shell: `export NAME` later passes on what it holds.
    let reviewed = INERT_VARIABLES.iter().any(|(n, _, _)| *n == name);
    if reach == Reach::Shell && stays_in_shell(name) && !reviewed {
        return Verdict::Inert;
    }
    match INERT_VARIABLES.iter().find(|(n, _, _)| *n == name) {
        Some((_, values, _)) if value.is_some_and(|v| values.admits(v)) => Verdict::Inert,
        // `export LANG` passes on the value the shell already has.
        Some(_) if value.is_none() && reach == Reach::Exported => Verdict::Inert,
        _ => Verdict::Unreviewed,
    }
}

/// True for the variables known to load or run code (and `GIT_CONFIG_KEY_*`, `GIT_TRACE*`).
pub(crate) fn injects_code(name: &str) -> bool {
    CODE_INJECTING_VARIABLES.contains(&name)
        || name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_")
        || name.starts_with("GIT_TRACE")
        || name.starts_with("LD_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_injecting_variable_is_refused_everywhere() {
        for name in CODE_INJECTING_VARIABLES {
            assert!(injects_code(name), "{name}");
            assert_eq!(judge(name, Some("x"), Reach::Shell), Verdict::InjectsCode, "{name}");
            assert_eq!(judge(name, Some("x"), Reach::Exported), Verdict::InjectsCode, "{name}");
        }
        for name in ["GIT_CONFIG_KEY_0", "GIT_TRACE_PACKET", "GIT_TRACE2_EVENT", "LD_DEBUG_OUTPUT"] {
            assert!(injects_code(name), "{name}");
        }
    }

    #[test]
    fn each_inert_variable_is_inert_with_an_ordinary_value_only() {
        for (name, values, why) in INERT_VARIABLES {
            assert!(!why.is_empty());
            let ordinary = match values {
                Values::Any | Values::PlainName => "C",
                Values::Number => "80",
                Values::LocaleName => "C.UTF-8",
                Values::ZoneName => "Europe/Paris",
                Values::Pager => "cat",
            };
            assert_eq!(judge(name, Some(ordinary), Reach::Exported), Verdict::Inert, "{name}={ordinary}");
            assert_eq!(judge(name, None, Reach::Exported), Verdict::Inert, "export {name}");
            let hostile = ["/tmp/x", "../x", "less", "1x"];
            if *values != Values::Any {
                assert!(hostile.iter().any(|v| !values.admits(v)), "{name}");
                assert_eq!(judge(name, Some("/tmp/x"), Reach::Exported), Verdict::Unreviewed, "{name}");
            }
        }
    }

    #[test]
    fn unlisted_names_are_unreviewed_unless_they_stay_in_the_shell() {
        assert_eq!(judge("XDG_CACHE_HOME", Some("x"), Reach::Exported), Verdict::Unreviewed);
        assert_eq!(judge("FOO", Some("1"), Reach::Exported), Verdict::Unreviewed);
        assert_eq!(judge("f", Some("x"), Reach::Shell), Verdict::Inert);
        assert_eq!(judge("my_var2", None, Reach::Shell), Verdict::Inert);
        assert_eq!(judge("f", Some("x"), Reach::Exported), Verdict::Unreviewed);
        for (name, why) in INHERITED_ENVIRONMENT {
            assert!(!why.is_empty() && may_be_inherited(name) && !stays_in_shell(name), "{name}");
            // Off the reviewed list, a path for a value is never inert.
            if !INERT_VARIABLES.iter().any(|(n, _, _)| n == name) {
                assert_ne!(judge(name, Some("/tmp/x"), Reach::Shell), Verdict::Inert, "{name}");
            }
        }
        assert!(may_be_inherited("LC_PAPER") && !stays_in_shell("LC_PAPER"));
        // In a shell that starts with its user's whole environment, any name may be inherited.
        assert!(stays_in_shell("KUBECONFIG"));
        assert!(with_whole_environment(|| !stays_in_shell("KUBECONFIG")));
        assert!(stays_in_shell("KUBECONFIG"), "the flag is the judgement's only");
        assert_eq!(judge("TZ", Some("../../tmp/x"), Reach::Exported), Verdict::Unreviewed);
        assert_eq!(judge("LANG", Some("/tmp/locale"), Reach::Exported), Verdict::Unreviewed);
        assert_eq!(judge("PAGER", Some("less"), Reach::Exported), Verdict::Unreviewed);
    }

    /// Plain assignments (`NAME=value` alone): one row per name, and whether it stays inert.
    const PLAIN_ASSIGNMENTS: &[(&str, Verdict)] = &[
        ("LOGS_DIR", Verdict::Inert),
        ("OUT", Verdict::Inert),
        ("COUNT", Verdict::Inert),
        ("x", Verdict::Inert),
        ("_tmp", Verdict::Inert),
        // Bash reads these itself.
        ("PATH", Verdict::InjectsCode),
        ("IFS", Verdict::InjectsCode),
        ("BASH_ENV", Verdict::InjectsCode),
        ("CDPATH", Verdict::InjectsCode),
        ("GLOBIGNORE", Verdict::InjectsCode),
        ("PROMPT_COMMAND", Verdict::InjectsCode),
        ("SHELLOPTS", Verdict::InjectsCode),
        ("BASHOPTS", Verdict::InjectsCode),
        ("HOME", Verdict::InjectsCode),
        ("PWD", Verdict::InjectsCode),
        ("OLDPWD", Verdict::InjectsCode),
        ("ENV", Verdict::InjectsCode),
        ("PS4", Verdict::Unreviewed),
        ("PS0", Verdict::Unreviewed),
        ("HISTFILE", Verdict::Unreviewed),
        ("BASH_XTRACEFD", Verdict::Unreviewed),
        ("BASH_CMDS", Verdict::Unreviewed),
        ("BASH_LOADABLES_PATH", Verdict::Unreviewed),
        ("EXECIGNORE", Verdict::Unreviewed),
        ("OPTIND", Verdict::Unreviewed),
        ("TEXTDOMAINDIR", Verdict::Unreviewed),
        ("auto_resume", Verdict::Unreviewed),
        // The environment may already hold these: bash exports them.
        ("TMPDIR", Verdict::Unreviewed),
        ("USER", Verdict::Unreviewed),
        ("HTTPS_PROXY", Verdict::Unreviewed),
        ("http_proxy", Verdict::Unreviewed),
        ("SSL_CERT_FILE", Verdict::Unreviewed),
        // Reviewed names keep their values in the shell too (`export PAGER` passes the value on).
        ("PAGER", Verdict::Unreviewed),
        ("GIT_PAGER", Verdict::Unreviewed),
        ("RUST_BACKTRACE", Verdict::Unreviewed),
        // Code-injecting names are refused wherever they stay.
        ("LD_PRELOAD", Verdict::InjectsCode),
        ("GIT_SSH_COMMAND", Verdict::InjectsCode),
        ("NODE_OPTIONS", Verdict::InjectsCode),
    ];

    #[test]
    fn each_plain_assignment_row_has_its_verdict() {
        for (name, verdict) in PLAIN_ASSIGNMENTS {
            assert_eq!(judge(name, Some("/tmp/evil"), Reach::Shell), *verdict, "{name}=/tmp/evil");
            // Exported, none is inert with a path for a value.
            assert_ne!(judge(name, Some("/tmp/evil"), Reach::Exported), Verdict::Inert, "export {name}");
        }
        let reviewed = |name: &&str| INERT_VARIABLES.iter().any(|(n, _, _)| n == name);
        for (name, _) in super::super::bash_variables::BASH_VARIABLES.iter().filter(|(n, _)| !reviewed(n)) {
            assert_ne!(judge(name, Some("/tmp/evil"), Reach::Shell), Verdict::Inert, "{name}");
        }
    }
}
