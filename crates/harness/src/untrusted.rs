//! Untrusted text (an agent's commands, paths, tool names, reasons quoting them) made safe to show a
//! person: every character that could move the cursor, recolour, hide or reorder what is shown —
//! C0 controls including newline and tab, DEL, C1 controls, bidirectional overrides and invisible
//! zero-width characters — is written as a visible escape (`\x1b`, `\n`, `\u{202e}`), so the operator
//! reads what will run, not what the text draws.

use std::borrow::Cow;
use std::fmt::Write;

/// True for characters that are shown escaped.
pub fn is_hidden_or_control(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
        )
}

/// `text` with control and invisible characters escaped; borrowed when there are none.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden_or_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && is_hidden_or_control(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_hidden_or_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_hidden_character_is_escaped() {
        let rows: &[(&str, &str)] = &[
            ("ls -la", "ls -la"),
            ("rm x\r\x1b[2Kls -la", "rm x\\r\\x1b[2Kls -la"),
            ("a\nb\tc", "a\\nb\\tc"),
            ("\x1b[8mhidden\x1b[0m", "\\x1b[8mhidden\\x1b[0m"),
            ("x\x7fy", "x\\x7fy"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("echo \u{202e}txt.exe", "echo \\u{202e}txt.exe"),
            ("r\u{200b}m", "r\\u{200b}m"),
            ("\u{feff}ls", "\\u{feff}ls"),
            ("naïve café ✓", "naïve café ✓"),
            ("find . -exec rm {} \\;", "find . -exec rm {} \\;"),
        ];
        for (raw, shown) in rows {
            assert_eq!(visible(raw), *shown, "{raw:?}");
        }
    }

    #[test]
    fn nothing_hidden_survives_random_text() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let text: String = (0..24)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    char::from_u32((seed % 0x3000) as u32).unwrap_or('?')
                })
                .collect();
            assert!(!visible(&text).chars().any(is_hidden_or_control), "{text:?}");
        }
    }
}
