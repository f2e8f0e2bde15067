//! Untrusted text (an agent's commands, paths, tool names, reasons quoting them) made safe to show a
//! person: every character that could move the cursor, recolour, hide or reorder what is shown —
//! C0 controls including newline and tab, DEL, C1 controls, bidirectional overrides and invisible
//! zero-width characters — is written as a visible escape (`\x1b`, `\n`, `\u{202e}`), so the operator
//! reads what will run, not what the text draws.

use std::borrow::Cow;
use std::fmt::Write;

/// Characters beyond the controls that are shown escaped, a row per range: Unicode's format characters
/// (general category Cf: bidirectional marks, embeddings, overrides and isolates, zero-width characters,
/// invisible operators, tags), the line and paragraph separators, and the fillers and variation
/// selectors that draw nothing.
pub const HIDDEN: &[(char, char, &str)] = &[
    ('\u{00ad}', '\u{00ad}', "soft hyphen"),
    ('\u{034f}', '\u{034f}', "combining grapheme joiner"),
    ('\u{0600}', '\u{0605}', "Arabic number signs (format)"),
    ('\u{061c}', '\u{061c}', "Arabic letter mark (bidi)"),
    ('\u{06dd}', '\u{06dd}', "Arabic end of ayah (format)"),
    ('\u{070f}', '\u{070f}', "Syriac abbreviation mark (format)"),
    ('\u{0890}', '\u{0891}', "Arabic pound and piastre marks (format)"),
    ('\u{08e2}', '\u{08e2}', "Arabic disputed end of ayah (format)"),
    ('\u{115f}', '\u{1160}', "Hangul fillers (invisible)"),
    ('\u{17b4}', '\u{17b5}', "Khmer invisible vowels"),
    ('\u{180b}', '\u{180f}', "Mongolian variation selectors and vowel separator"),
    ('\u{200b}', '\u{200f}', "zero-width space, joiners, left-to-right and right-to-left marks"),
    ('\u{2028}', '\u{2029}', "line and paragraph separators"),
    ('\u{202a}', '\u{202e}', "bidi embeddings and overrides"),
    ('\u{2060}', '\u{2064}', "word joiner and invisible operators"),
    ('\u{2066}', '\u{206f}', "bidi isolates and deprecated format characters"),
    ('\u{3164}', '\u{3164}', "Hangul filler"),
    ('\u{fe00}', '\u{fe0f}', "variation selectors"),
    ('\u{feff}', '\u{feff}', "zero-width no-break space (byte order mark)"),
    ('\u{ffa0}', '\u{ffa0}', "halfwidth Hangul filler"),
    ('\u{fff9}', '\u{fffb}', "interlinear annotation characters"),
    ('\u{110bd}', '\u{110bd}', "Kaithi number sign (format)"),
    ('\u{110cd}', '\u{110cd}', "Kaithi number sign above (format)"),
    ('\u{13430}', '\u{1343f}', "Egyptian hieroglyph format controls"),
    ('\u{1bca0}', '\u{1bca3}', "shorthand format controls"),
    ('\u{1d173}', '\u{1d17a}', "musical symbol format controls"),
    ('\u{e0000}', '\u{e007f}', "tag characters (invisible text)"),
    ('\u{e0100}', '\u{e01ef}', "variation selectors supplement"),
];

/// Every range of characters shown escaped, as code points (first, last): the C0 and C1 controls and
/// DEL, then [`HIDDEN`]. The desktop app's `visible()` reads this very table (generated into its
/// bindings), so agent text looks the same in the terminal and in the window.
pub fn escaped_ranges() -> Vec<(u32, u32)> {
    let controls = [(0x00, 0x1f), (0x7f, 0x9f)];
    controls.into_iter().chain(HIDDEN.iter().map(|(first, last, _)| (*first as u32, *last as u32))).collect()
}

/// True for characters that are shown escaped.
pub fn is_hidden_or_control(c: char) -> bool {
    c.is_control() || HIDDEN.iter().any(|(first, last, _)| (*first..=*last).contains(&c))
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
    fn each_hidden_range_is_escaped_at_both_ends_and_its_neighbours_are_not() {
        for (first, last, what) in HIDDEN {
            for c in [*first, *last] {
                let shown = visible(&format!("a{c}b")).into_owned();
                assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32), "{what}");
            }
        }
        for c in ['é', '✓', 'ß', '中', '\u{2070}'] {
            assert_eq!(visible(&c.to_string()), c.to_string());
        }
    }

    #[test]
    fn the_escaped_ranges_are_exactly_the_characters_shown_escaped() {
        let ranges = escaped_ranges();
        for code in 0..=0x10ffffu32 {
            let Some(c) = char::from_u32(code) else { continue };
            let listed = ranges.iter().any(|(first, last)| (*first..=*last).contains(&code));
            assert_eq!(listed, is_hidden_or_control(c), "U+{code:04X}");
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
