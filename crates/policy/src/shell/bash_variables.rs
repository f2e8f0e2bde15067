//! Bash's own shell variables — the closed list of the bash manual's "Shell Variables" section (Bourne
//! Shell Variables and Bash Variables, bash 5.3) and the locale variables of its "Locale-Specific
//! Translation" section: bash itself reads or sets them, so an assignment to one is never inert merely
//! for staying in the shell, and the judge never takes its value for the one a script wrote.

/// Each row: the name, and what bash does with it.
pub(crate) const BASH_VARIABLES: &[(&str, &str)] = &[
    // Bourne Shell Variables.
    ("CDPATH", "cd searches these folders"),
    ("HOME", "tilde expansion and cd's default"),
    ("IFS", "splits words after expansion"),
    ("MAIL", "checked for mail"),
    ("MAILPATH", "files checked for mail"),
    ("OPTARG", "set by getopts"),
    ("OPTIND", "read and set by getopts"),
    ("PATH", "where command names are looked up"),
    ("PS1", "the primary prompt, expanded"),
    ("PS2", "the secondary prompt, expanded"),
    // Bash Variables.
    ("_", "set to the last argument of each command"),
    ("BASH", "the shell's own path"),
    ("BASHOPTS", "shell options, set at startup"),
    ("BASHPID", "the process id"),
    ("BASH_ALIASES", "assigning adds aliases"),
    ("BASH_ARGC", "the call stack's argument counts"),
    ("BASH_ARGV", "the call stack's arguments"),
    ("BASH_ARGV0", "assigning sets $0"),
    ("BASH_CMDS", "assigning adds to the command hash table: a name runs another file"),
    ("BASH_COMMAND", "the command being run"),
    ("BASH_COMPAT", "sets the compatibility level"),
    ("BASH_ENV", "a file a non-interactive shell runs at startup"),
    ("BASH_EXECUTION_STRING", "the -c string"),
    ("BASH_LINENO", "the call stack's line numbers"),
    ("BASH_LOADABLES_PATH", "where enable -f looks for builtins to load"),
    ("BASH_MONOSECONDS", "a monotonic clock"),
    ("BASH_REMATCH", "set by [[ =~ ]]"),
    ("BASH_SOURCE", "the call stack's source files"),
    ("BASH_SUBSHELL", "the subshell depth"),
    ("BASH_TRAPSIG", "the signal a trap runs for"),
    ("BASH_VERSINFO", "the version, read-only"),
    ("BASH_VERSION", "the version"),
    ("BASH_XTRACEFD", "the file descriptor xtrace writes to"),
    ("CHILD_MAX", "how many exit statuses are remembered"),
    ("COLUMNS", "the terminal's width, set by checkwinsize"),
    ("COMP_CWORD", "programmable completion"),
    ("COMP_KEY", "programmable completion"),
    ("COMP_LINE", "programmable completion"),
    ("COMP_POINT", "programmable completion"),
    ("COMP_TYPE", "programmable completion"),
    ("COMP_WORDBREAKS", "programmable completion"),
    ("COMP_WORDS", "programmable completion"),
    ("COMPREPLY", "programmable completion"),
    ("COPROC", "the default coprocess's file descriptors"),
    ("DIRSTACK", "the directory stack"),
    ("EMACS", "turns line editing off"),
    ("ENV", "a file a POSIX-mode shell runs at startup"),
    ("EPOCHREALTIME", "the time, set on every read"),
    ("EPOCHSECONDS", "the time, set on every read"),
    ("EUID", "the effective user id, read-only"),
    ("EXECIGNORE", "files command lookup ignores"),
    ("FCEDIT", "the editor fc runs"),
    ("FIGNORE", "suffixes completion ignores"),
    ("FUNCNAME", "the call stack's function names"),
    ("FUNCNEST", "the maximum function nesting"),
    ("GLOBIGNORE", "names pathname expansion leaves out"),
    ("GLOBSORT", "how pathname expansion sorts"),
    ("GROUPS", "the user's groups"),
    ("histchars", "history expansion's characters"),
    ("HISTCMD", "the history number"),
    ("HISTCONTROL", "what history saves"),
    ("HISTFILE", "the file history is written to"),
    ("HISTFILESIZE", "the history file's length"),
    ("HISTIGNORE", "what history saves"),
    ("HISTSIZE", "the history's length"),
    ("HISTTIMEFORMAT", "history time stamps"),
    ("HOSTFILE", "a file of host names completion reads"),
    ("HOSTNAME", "the host's name"),
    ("HOSTTYPE", "the machine type"),
    ("IGNOREEOF", "end of input handling"),
    ("INPUTRC", "the readline start-up file"),
    ("INSIDE_EMACS", "turns line editing off"),
    ("LANG", "the locale"),
    ("LC_ALL", "the locale"),
    ("LC_COLLATE", "the sort order of pathname expansion and ranges"),
    ("LC_CTYPE", "character classes"),
    ("LC_MESSAGES", "the language of $\"…\" strings"),
    ("LC_NUMERIC", "number formatting"),
    ("LC_TIME", "time formatting"),
    ("LINENO", "the current line"),
    ("LINES", "the terminal's height, set by checkwinsize"),
    ("MACHTYPE", "the system type"),
    ("MAILCHECK", "how often mail is checked"),
    ("MAPFILE", "mapfile's default array"),
    ("OLDPWD", "cd's previous folder, and ~-"),
    ("OPTERR", "getopts error messages"),
    ("OSTYPE", "the operating system"),
    ("PIPESTATUS", "the exit statuses of the last pipeline"),
    ("POSIXLY_CORRECT", "turns POSIX mode on"),
    ("PPID", "the parent's process id, read-only"),
    ("PROMPT_COMMAND", "commands run before each prompt"),
    ("PROMPT_DIRTRIM", "prompt folder trimming"),
    ("PS0", "printed before each command, expanded"),
    ("PS3", "the select prompt"),
    ("PS4", "the xtrace prefix, expanded"),
    ("PWD", "the current folder, and ~+"),
    ("RANDOM", "a random number on every read"),
    ("READLINE_ARGUMENT", "readline bindings"),
    ("READLINE_LINE", "readline bindings"),
    ("READLINE_MARK", "readline bindings"),
    ("READLINE_POINT", "readline bindings"),
    ("REPLY", "read's and select's default variable"),
    ("SECONDS", "seconds since the shell started, on every read"),
    ("SHELL", "the user's shell"),
    ("SHELLOPTS", "shell options, set at startup"),
    ("SHLVL", "the shell's nesting, exported"),
    ("SRANDOM", "a random number on every read"),
    ("TIMEFORMAT", "the format of time"),
    ("TMOUT", "read and select time out"),
    ("TMPDIR", "where bash makes temporary files (heredocs)"),
    ("UID", "the user id, read-only"),
    ("auto_resume", "job control"),
    // Locale-Specific Translation.
    ("TEXTDOMAIN", "the message catalogue of $\"…\" strings"),
    ("TEXTDOMAINDIR", "the folder message catalogues are loaded from"),
];

/// Whether bash itself reads or sets `name`.
pub(crate) fn is_bash_variable(name: &str) -> bool {
    BASH_VARIABLES.iter().any(|(n, _)| *n == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_names_a_variable_once_and_says_why() {
        for (i, (name, why)) in BASH_VARIABLES.iter().enumerate() {
            assert!(!why.is_empty(), "{name}");
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{name}");
            assert!(BASH_VARIABLES.iter().skip(i + 1).all(|(n, _)| n != name), "{name} twice");
            assert!(is_bash_variable(name), "{name}");
        }
        for name in ["LOGS_DIR", "x", "Path", "PATH2", "BASH_ENVX"] {
            assert!(!is_bash_variable(name), "{name}");
        }
    }
}
