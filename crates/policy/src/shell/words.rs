//! Turns tree-sitter-bash word nodes into the strings bash would pass, resolving every quoting form.

use super::kinds::{KindName, node_text};
use tree_sitter::Node;

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word's value; parts that cannot be known statically keep their source text (`$x`, `$(cmd)`).
    pub(crate) text: String,
    /// True when some part is an expansion or substitution whose value is only known at run time.
    pub(crate) dynamic: bool,
}

impl Word {
    pub(crate) fn literal(text: impl Into<String>) -> Self {
        Self { text: text.into(), dynamic: false }
    }
}

/// Resolves a word-like node (word, string, raw string, ANSI-C string, concatenation, expansion...).
pub(crate) fn resolve(node: Node<'_>, src: &str) -> Word {
    let text = node_text(node, src);
    match node.kind_name() {
        "word" => Word::literal(unescape_unquoted(text)),
        "raw_string" => Word::literal(strip_delimiters(text, 1, 1)),
        "ansi_c_string" => Word::literal(decode_ansi_c(strip_delimiters(text, 2, 1))),
        "string" => resolve_double_quoted(node, src),
        "translated_string" => {
            let mut cursor = node.walk();
            let inner = node.named_children(&mut cursor).find(|c| c.kind_name() == "string");
            match inner {
                Some(string) => resolve_double_quoted(string, src),
                None => Word { text: text.to_owned(), dynamic: true },
            }
        }
        "concatenation" | "command_name" => resolve_pieces(node, src),
        "number" => Word { text: text.to_owned(), dynamic: node.named_child_count() > 0 },
        "brace_expression" | "extglob_pattern" | "regex" | "variable_name" | "test_operator" => {
            Word::literal(text)
        }
        // Unquoted, bash splits and globs the value: only one that stays one word as it is counts.
        "simple_expansion" | "expansion" => match super::known_literals::value_of(node, src) {
            Some(value) if literal_value(&value, false) => Word::literal(value),
            _ => Word { text: text.to_owned(), dynamic: true },
        },
        _ => Word { text: text.to_owned(), dynamic: true },
    }
}

/// Whether bash expands `node` as a pattern: a `*`, `?` or `[` outside quotes and not escaped
/// (`*.txt`, `src/*"x"`; not `'*.txt'` or `\*`).
pub(crate) fn is_pattern(node: Node<'_>, src: &str) -> bool {
    match node.kind_name() {
        "word" => unquoted_glob(node_text(node, src)),
        "extglob_pattern" => true,
        "concatenation" => {
            let mut pos = node.start_byte();
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                let gap = src.get(pos..child.start_byte()).unwrap_or("");
                if unquoted_glob(gap) || (child.is_named() && is_pattern(child, src)) {
                    return true;
                }
                if !child.is_named() && unquoted_glob(node_text(child, src)) {
                    return true;
                }
                pos = child.end_byte();
            }
            unquoted_glob(src.get(pos..node.end_byte()).unwrap_or(""))
        }
        _ => false,
    }
}

/// Unquoted text holding a glob character that no backslash escapes.
fn unquoted_glob(text: &str) -> bool {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// Concatenates the children of a concatenation; text between children is taken as unquoted.
fn resolve_pieces(node: Node<'_>, src: &str) -> Word {
    let mut out = Word::literal(String::new());
    let mut pos = node.start_byte();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.start_byte() > pos {
            out.text.push_str(&unescape_unquoted(src.get(pos..child.start_byte()).unwrap_or("")));
        }
        let part = if child.is_named() { resolve(child, src) } else { Word::literal(node_text(child, src)) };
        out.text.push_str(&part.text);
        out.dynamic |= part.dynamic;
        pos = child.end_byte();
    }
    if node.end_byte() > pos {
        out.text.push_str(&unescape_unquoted(src.get(pos..node.end_byte()).unwrap_or("")));
    }
    tilde_after_values(node, out)
}

/// A word with a variable's value and a `~` (`~$x/.ssh`): bash reads the tilde before the value is there
/// (and passes `~a/.ssh`), where later steps of the judge would read a home folder; it stays dynamic.
fn tilde_after_values(node: Node<'_>, mut word: Word) -> Word {
    let mut cursor = node.walk();
    let has_reads =
        node.named_children(&mut cursor).any(|c| matches!(c.kind_name(), "simple_expansion" | "expansion"));
    if has_reads && word.text.contains('~') {
        word.dynamic = true;
    }
    word
}

/// A `"..."` string: backslash escapes `$ ` " \ newline`; expansions inside make it dynamic.
fn resolve_double_quoted(node: Node<'_>, src: &str) -> Word {
    let start = node.start_byte() + 1;
    let end = node.end_byte().saturating_sub(1).max(start);
    let mut out = Word::literal(String::new());
    let mut pos = start;
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        if child.start_byte() > pos {
            out.text.push_str(&unescape_double_quoted(src.get(pos..child.start_byte()).unwrap_or("")));
        }
        let child_text = node_text(child, src);
        if child.kind_name() == "string_content" {
            out.text.push_str(&unescape_double_quoted(child_text));
        } else if let Some(output) = super::heredocs::literal_cat_output(child, src) {
            // `"$(cat <<'EOF' … EOF)"`: the quoted heredoc's body, taken literally.
            out.text.push_str(&output);
        } else if let Some(value) = super::known_literals::value_of(child, src).filter(|v| {
            literal_value(v, true) && matches!(child.kind_name(), "simple_expansion" | "expansion")
        }) {
            out.text.push_str(&value);
        } else {
            out.text.push_str(child_text);
            out.dynamic = true;
        }
        pos = child.end_byte();
    }
    if end > pos {
        out.text.push_str(&unescape_double_quoted(src.get(pos..end).unwrap_or("")));
    }
    tilde_after_values(node, out)
}

/// Whether a variable's value may stand for its read: plain characters only (no pattern, tilde, quote,
/// brace or expansion character, which later steps of the judge could read otherwise than bash passes
/// them), and, unquoted, no blank (bash would split it) and not empty (bash would drop the word).
pub(crate) fn literal_value(value: &str, quoted: bool) -> bool {
    let plain = |c: char| {
        c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | '@' | '%' | '+' | '=' | ',')
    };
    (quoted || !value.is_empty()) && value.chars().all(|c| plain(c) || (quoted && c == ' '))
}

fn strip_delimiters(text: &str, front: usize, back: usize) -> &str {
    if text.len() >= front + back { text.get(front..text.len() - back).unwrap_or("") } else { "" }
}

/// Outside quotes a backslash quotes the next character, and backslash-newline disappears.
pub(crate) fn unescape_unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') => {}
                Some(next) => out.push(next),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Inside double quotes a backslash only quotes `$`, backquote, `"`, `\` and newline.
fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    out.push(next);
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes the body of `$'...'` as bash does (`\n`, `\x41`, `\101`, `\u00e9`, `\cA`...).
pub(crate) fn decode_ansi_c(body: &str) -> String {
    let mut bytes: Vec<u8> = Vec::with_capacity(body.len());
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let push_char = |bytes: &mut Vec<u8>, c: char| {
        let mut buf = [0u8; 4];
        bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            push_char(&mut bytes, c);
            continue;
        }
        let e = chars[i];
        i += 1;
        let simple = match e {
            'a' => Some(0x07u8),
            'b' => Some(0x08),
            'e' | 'E' => Some(0x1b),
            'f' => Some(0x0c),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(0x0b),
            '\\' => Some(b'\\'),
            '\'' => Some(b'\''),
            '"' => Some(b'"'),
            '?' => Some(b'?'),
            _ => None,
        };
        if let Some(b) = simple {
            bytes.push(b);
            continue;
        }
        match e {
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                let mut n = 1;
                while n < 3 && i < chars.len() && chars[i].is_digit(8) {
                    value = value * 8 + chars[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                bytes.push((value & 0xff) as u8);
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value: u32 = 0;
                let mut n = 0;
                while n < max && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    value = value * 16 + chars[i].to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                if n == 0 {
                    push_char(&mut bytes, '\\');
                    push_char(&mut bytes, e);
                } else if e == 'x' {
                    bytes.push((value & 0xff) as u8);
                } else {
                    push_char(&mut bytes, char::from_u32(value).unwrap_or('\u{fffd}'));
                }
            }
            'c' if i < chars.len() => {
                let target = chars[i];
                i += 1;
                bytes.push((u32::from(target.to_ascii_uppercase()) & 0x1f) as u8);
            }
            _ => {
                push_char(&mut bytes, '\\');
                push_char(&mut bytes, e);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_escapes_decode() {
        assert_eq!(decode_ansi_c(r"r\x6d"), "rm");
        assert_eq!(decode_ansi_c(r"\162\155"), "rm");
        assert_eq!(decode_ansi_c(r"\u0072m"), "rm");
        assert_eq!(decode_ansi_c(r"a\nb\tc\\d\'e"), "a\nb\tc\\d'e");
        assert_eq!(decode_ansi_c(r"\cA"), "\u{1}");
        assert_eq!(decode_ansi_c(r"\q"), r"\q");
    }

    #[test]
    fn unquoted_backslashes_quote_one_character() {
        assert_eq!(unescape_unquoted(r"\rm"), "rm");
        assert_eq!(unescape_unquoted(r"a\ b"), "a b");
        assert_eq!(unescape_unquoted("a\\\nb"), "ab");
    }

    #[test]
    fn double_quoted_backslashes_are_selective() {
        assert_eq!(unescape_double_quoted(r#"a\"b\$c\\d\e"#), r#"a"b$c\d\e"#);
    }
}
