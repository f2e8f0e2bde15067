//! Words written for a POSIX shell to read back whole: a command shown to the operator, an `always`
//! rule's example, the wrapper Claude Code runs for a ticketed `Bash`, the wall of a masked program.
//! One quoting for all of them, so that none reads a word differently.

/// `word` single-quoted (`it's` → `'it'\''s'`): bash, dash and zsh read it back as one word.
pub fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `word` as is where bash reads it back unchanged (letters, digits and `_./=:,@%+-`, not starting
/// with `=`, which zsh expands), else [`quoted`].
pub fn word(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "_./=:,@%+-".contains(c))
        && !word.starts_with('=');
    if plain { word.to_owned() } else { quoted(word) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_back_whole() {
        // (word, as quoted, as a word)
        let rows = [
            ("ls", "'ls'", "ls"),
            ("it's", r"'it'\''s'", r"'it'\''s'"),
            ("a b", "'a b'", "'a b'"),
            ("", "''", "''"),
            ("=cmd", "'=cmd'", "'=cmd'"),
            ("$(id)", "'$(id)'", "'$(id)'"),
            ("/usr/bin/x-1.2", "'/usr/bin/x-1.2'", "/usr/bin/x-1.2"),
        ];
        for (w, q, plain) in rows {
            assert_eq!((quoted(w).as_str(), super::word(w).as_str()), (q, plain), "{w:?}");
        }
    }
}
