//! Environment variables that make later programs load or run other code: assigning one is opaque,
//! whatever the command, because the program that reads it runs what it names.

/// The variables, one row each.
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
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "PAGER",
    "MANPAGER",
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
    // Not code, but it moves where `cd NAME` goes, which relative paths are judged from.
    "CDPATH",
    // Not code, but it makes `*` match dot files (`.portcullis`, `.git`), which patterns are judged without.
    "GLOBIGNORE",
];

/// True for the variables listed above (and `GIT_CONFIG_KEY_*`/`GIT_CONFIG_VALUE_*`).
pub(crate) fn injects_code(name: &str) -> bool {
    CODE_INJECTING_VARIABLES.contains(&name)
        || name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variable_injects_code() {
        for name in CODE_INJECTING_VARIABLES {
            assert!(injects_code(name), "{name}");
        }
        assert!(injects_code("GIT_CONFIG_KEY_0"));
        assert!(!injects_code("HOME") && !injects_code("LANG") && !injects_code("PATHX"));
    }
}
