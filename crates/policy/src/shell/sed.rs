//! Reads sed scripts far enough to tell whether they run commands (`e`) or write files (`w`, `W`).

/// What a sed script can do beyond editing its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SedVerdict {
    /// Only stream editing (and reading files with `r`/`R`).
    StreamOnly,
    /// The `e` command or the `e` flag of `s`: runs a shell command.
    Executes,
    /// The `w`/`W` commands or the `w` flag of `s`: writes a file.
    Writes,
    /// The script could not be read with confidence.
    Unreadable,
}

/// Scans a GNU sed script (commands separated by `;` or newlines, optional addresses, `{ }` blocks).
#[cfg(test)]
pub(crate) fn scan(script: &str) -> SedVerdict {
    scan_reading(script, &mut Vec::new())
}

/// [`scan`], and the files the script's `r` and `R` commands read (the rest of their line), in `reads`.
pub(crate) fn scan_reading(script: &str, reads: &mut Vec<String>) -> SedVerdict {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    loop {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ';') {
            i += 1;
        }
        if i >= chars.len() {
            return SedVerdict::StreamOnly;
        }
        if !skip_address(&chars, &mut i) {
            return SedVerdict::Unreadable;
        }
        if i < chars.len() && chars[i] == ',' {
            i += 1;
            if !skip_address(&chars, &mut i) {
                return SedVerdict::Unreadable;
            }
        }
        while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t' || chars[i] == '!') {
            i += 1;
        }
        let Some(&command) = chars.get(i) else {
            return SedVerdict::Unreadable;
        };
        i += 1;
        match command {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {
            }
            '#' | ':' | 'b' | 't' | 'T' => skip_to_line_end(&chars, &mut i, true),
            // `r FILE`, `R FILE`: the file name is the rest of the line.
            'r' | 'R' => {
                while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
                    i += 1;
                }
                let start = i;
                skip_to_line_end(&chars, &mut i, false);
                let name: String = chars.get(start..i).unwrap_or(&[]).iter().collect();
                if name.is_empty() {
                    return SedVerdict::Unreadable;
                }
                reads.push(name);
            }
            'a' | 'i' | 'c' => skip_text_argument(&chars, &mut i),
            'q' | 'Q' | 'l' | 'L' => {
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ' ') {
                    i += 1;
                }
            }
            'e' => return SedVerdict::Executes,
            'w' | 'W' => return SedVerdict::Writes,
            'y' => {
                let Some(&delim) = chars.get(i) else { return SedVerdict::Unreadable };
                i += 1;
                if !skip_delimited(&chars, &mut i, delim) || !skip_delimited(&chars, &mut i, delim) {
                    return SedVerdict::Unreadable;
                }
            }
            's' => {
                let Some(&delim) = chars.get(i) else { return SedVerdict::Unreadable };
                if delim == '\n' || delim == '\\' {
                    return SedVerdict::Unreadable;
                }
                i += 1;
                if !skip_delimited(&chars, &mut i, delim) || !skip_delimited(&chars, &mut i, delim) {
                    return SedVerdict::Unreadable;
                }
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}' | ' ' | '\t') {
                    match chars[i] {
                        'e' => return SedVerdict::Executes,
                        'w' => return SedVerdict::Writes,
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        _ => return SedVerdict::Unreadable,
                    }
                }
            }
            _ => return SedVerdict::Unreadable,
        }
    }
}

/// Skips one address: a line number, `$`, `first~step`, `+N`, `~N`, `/re/` or `\cREc` with I/M flags.
fn skip_address(chars: &[char], i: &mut usize) -> bool {
    match chars.get(*i) {
        Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
            *i += 1;
            while *i < chars.len() && (chars[*i].is_ascii_digit() || chars[*i] == '~') {
                *i += 1;
            }
        }
        Some('$') => *i += 1,
        Some('/') => {
            *i += 1;
            if !skip_delimited(chars, i, '/') {
                return false;
            }
            skip_regex_flags(chars, i);
        }
        Some('\\') => {
            let Some(&delim) = chars.get(*i + 1) else { return false };
            *i += 2;
            if !skip_delimited(chars, i, delim) {
                return false;
            }
            skip_regex_flags(chars, i);
        }
        _ => {}
    }
    true
}

fn skip_regex_flags(chars: &[char], i: &mut usize) {
    while *i < chars.len() && (chars[*i] == 'I' || chars[*i] == 'M') {
        *i += 1;
    }
}

/// Skips to just past the next unescaped `delim`; false if there is none.
fn skip_delimited(chars: &[char], i: &mut usize, delim: char) -> bool {
    while *i < chars.len() {
        let c = chars[*i];
        *i += 1;
        if c == '\\' {
            *i += 1;
        } else if c == delim {
            return true;
        }
    }
    false
}

/// Labels end at `;` or newline; file names (`r`) only at a newline.
fn skip_to_line_end(chars: &[char], i: &mut usize, semicolon_ends: bool) {
    while *i < chars.len() && chars[*i] != '\n' && !(semicolon_ends && chars[*i] == ';') {
        *i += 1;
    }
}

/// `a`, `i`, `c` take text to the end of the line, continued by a trailing backslash.
fn skip_text_argument(chars: &[char], i: &mut usize) {
    while *i < chars.len() && chars[*i] != '\n' {
        if chars[*i] == '\\' {
            *i += 1;
        }
        *i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_without_dangerous_flags_only_edit() {
        assert_eq!(scan("s/a/b/g"), SedVerdict::StreamOnly);
        assert_eq!(scan("1,/x/d; $p"), SedVerdict::StreamOnly);
        assert_eq!(scan(r"s|a\|b|c|2"), SedVerdict::StreamOnly);
        assert_eq!(scan("/^#/!{s/a/b/;p}"), SedVerdict::StreamOnly);
        assert_eq!(scan("1i hello; e world"), SedVerdict::StreamOnly);
    }

    #[test]
    fn exec_and_write_are_found() {
        assert_eq!(scan("s/a/b/e"), SedVerdict::Executes);
        let mut reads = Vec::new();
        assert_eq!(scan_reading("1r/etc/shadow", &mut reads), SedVerdict::StreamOnly);
        assert_eq!(scan_reading("/x/R notes.txt\np", &mut reads), SedVerdict::StreamOnly);
        assert_eq!(reads, ["/etc/shadow", "notes.txt"]);
        assert_eq!(scan("1e rm x"), SedVerdict::Executes);
        assert_eq!(scan("s/a/b/w out"), SedVerdict::Writes);
        assert_eq!(scan("p;w /tmp/x"), SedVerdict::Writes);
        assert_eq!(scan("s/a/b/gw out"), SedVerdict::Writes);
    }

    #[test]
    fn unreadable_scripts_are_flagged() {
        assert_eq!(scan("s/a/b"), SedVerdict::Unreadable);
        assert_eq!(scan("k"), SedVerdict::Unreadable);
    }
}
