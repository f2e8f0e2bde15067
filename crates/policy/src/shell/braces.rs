//! Brace expansion as bash does it, before any other expansion and before a program sees its words:
//! `rg {--pre,sh} x` runs `rg --pre sh x`, and `{rm,-rf,d}` runs `rm -rf d`. The judge reads the words
//! bash makes, never the braces: a word whose expansion is too large, or that this module cannot follow
//! exactly as bash would, is dynamic (known only at run time).
//!
//! The algorithm follows bash's own (`braces.c`): the first `{` that has a matching `}` with an unquoted
//! comma or `..` at its level starts the expansion; the text before it is kept, the text inside is split
//! at its top-level commas (each part expanded again) or read as a sequence (`{1..10..2}`, `{a..e}`,
//! `{01..10}`), and the text after it is expanded in turn.

use super::kinds::KindName;
use super::kinds::node_text;
use super::words::{Word, resolve};
use tree_sitter::Node;

/// Words one word may expand to; past this the word is dynamic.
pub(crate) const MAX_BRACE_WORDS: usize = 1024;
/// Characters scanned while looking for braces (a word of thousands of `{` is quadratic in bash too).
const MAX_STEPS: usize = 1 << 20;
/// Groups inside or after each other followed before the word is dynamic.
const MAX_DEPTH: usize = 64;

/// How bash sees a character of a word before brace expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// Outside quotes: may be a brace, comma or dot of an expansion.
    Unquoted,
    /// Preceded by a backslash outside quotes (`\{`): a plain character.
    Escaped,
    /// Inside quotes, or the value of an expansion: a plain character.
    Quoted,
}

type Text = Vec<(char, Mark)>;

/// One word bash makes from a word of the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    pub(crate) word: Word,
    /// An unquoted `*`, `?` or `[` is left in it: bash then matches it against file names.
    pub(crate) pattern: bool,
}

/// The words bash makes of the word `node` by brace expansion, or `None` when it has no unquoted `{`
/// (the word stays as `resolve` reads it). A word that expands past the bounds, or in a way this module
/// does not follow, is one dynamic word.
pub(crate) fn expand(node: Node<'_>, src: &str) -> Option<Vec<Expanded>> {
    // Most words have no brace at all: nothing to mark.
    if !node_text(node, src).contains('{') {
        return None;
    }
    let mut text = Text::new();
    let mut dynamic = false;
    collect(node, src, &mut text, &mut dynamic);
    // A quoted part, even an empty one (`""{a,}`), keeps an empty word a word.
    let quoted = text.iter().any(|&(_, m)| m == Mark::Quoted) || has_quotes(node);
    if !text.iter().any(|&(c, m)| c == '{' && m == Mark::Unquoted) {
        return None;
    }
    let mut run = Run::default();
    let words = run.brace_expand(&text, 0);
    let words = drop_null_words(words, quoted);
    if run.unsure || words.len() > MAX_BRACE_WORDS {
        let whole = resolve(node, src);
        return Some(vec![Expanded { word: Word { text: whole.text, dynamic: true }, pattern: false }]);
    }
    Some(
        words
            .into_iter()
            .map(|w| Expanded {
                pattern: w.iter().any(|&(c, m)| m == Mark::Unquoted && matches!(c, '*' | '?' | '[')),
                word: Word { text: w.iter().map(|(c, _)| *c).collect(), dynamic },
            })
            .collect(),
    )
}

/// Expands one word's text as bash would, for tests and the fuzzer: `None` when it is unsure.
#[cfg(test)]
pub(crate) fn expand_unquoted(word: &str) -> Option<Vec<String>> {
    let mut text = Text::new();
    unquoted(word, &mut text);
    let mut run = Run::default();
    let words = drop_null_words(run.brace_expand(&text, 0), false);
    (!run.unsure && words.len() <= MAX_BRACE_WORDS)
        .then(|| words.into_iter().map(|w| w.iter().map(|(c, _)| *c).collect()).collect())
}

/// Bash removes the empty words an unquoted expansion makes (`x {,}` runs `x`).
fn drop_null_words(words: Vec<Text>, quoted: bool) -> Vec<Text> {
    if quoted { words } else { words.into_iter().filter(|w| !w.is_empty()).collect() }
}

/// Whether a word holds quotes anywhere (`""` adds no character, yet makes the word a word).
fn has_quotes(node: Node<'_>) -> bool {
    if matches!(node.kind_name(), "string" | "raw_string" | "ansi_c_string" | "translated_string") {
        return true;
    }
    let mut cursor = node.walk();
    node.named_children(&mut cursor).any(has_quotes)
}

/// The characters of a word-like node, each marked as bash sees it.
fn collect(node: Node<'_>, src: &str, out: &mut Text, dynamic: &mut bool) {
    match node.kind_name() {
        "word" | "brace_expression" => unquoted(node_text(node, src), out),
        "number" if node.named_child_count() == 0 => unquoted(node_text(node, src), out),
        "concatenation" | "command_name" => {
            let mut pos = node.start_byte();
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                if child.start_byte() > pos {
                    unquoted(src.get(pos..child.start_byte()).unwrap_or(""), out);
                }
                if child.is_named() {
                    collect(child, src, out, dynamic);
                } else {
                    unquoted(node_text(child, src), out);
                }
                pos = child.end_byte();
            }
            if node.end_byte() > pos {
                unquoted(src.get(pos..node.end_byte()).unwrap_or(""), out);
            }
        }
        _ => {
            let word = resolve(node, src);
            *dynamic |= word.dynamic;
            out.extend(word.text.chars().map(|c| (c, Mark::Quoted)));
        }
    }
}

/// Unquoted text: a backslash makes the next character plain, and backslash-newline disappears.
fn unquoted(text: &str, out: &mut Text) {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('\n') => {}
                Some(next) => out.push((next, Mark::Escaped)),
                None => out.push(('\\', Mark::Escaped)),
            },
            _ => out.push((c, Mark::Unquoted)),
        }
    }
}

/// What `gobble` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seek {
    Open,
    Close,
    Comma,
}

/// One expansion's bounds.
#[derive(Debug, Default)]
struct Run {
    steps: usize,
    /// Past a bound, or a form bash reads from its raw text in a way the marks cannot follow.
    unsure: bool,
}

fn is(text: &[(char, Mark)], at: usize, c: char) -> bool {
    text.get(at).is_some_and(|&(x, m)| x == c && m == Mark::Unquoted)
}

impl Run {
    /// Bash's `brace_expand` over `text`.
    fn brace_expand(&mut self, text: &[(char, Mark)], depth: usize) -> Vec<Text> {
        if self.unsure || depth > MAX_DEPTH {
            self.unsure = true;
            return vec![text.to_vec()];
        }
        // The first `{` that has a matching `}`.
        let mut from = 0;
        let open = loop {
            match self.gobble(text, from, Seek::Open) {
                None => break None,
                Some(at) if self.gobble(text, at + 1, Seek::Close).is_some() => break Some(at),
                Some(at) => from = at + 1,
            }
        };
        let Some(open) = open else { return vec![text.to_vec()] };
        let Some(close) = self.gobble(text, open + 1, Seek::Close) else { return vec![text.to_vec()] };
        let (preamble, amble, postamble) = (&text[..open], &text[open + 1..close], &text[close + 1..]);
        let tack = if separated(amble) {
            // Bash looks for the comma in the raw text, quotes and all; the group was found through a
            // `..` and the only comma is quoted: bash then drops the braces. Not followed here.
            if !amble.iter().any(|&(c, m)| c == ',' && m == Mark::Unquoted) {
                self.unsure = true;
            }
            self.expand_amble(amble, depth + 1)
        } else {
            match self.sequence(amble) {
                Some(words) => words,
                None if !postamble.is_empty() => vec![text[open..=close].to_vec()],
                None => return vec![text.to_vec()],
            }
        };
        let mut result = self.product(vec![preamble.to_vec()], tack);
        if !postamble.is_empty() {
            let rest = self.brace_expand(postamble, depth + 1);
            result = self.product(result, rest);
        }
        result
    }

    /// Bash's `expand_amble`: the parts between top-level commas, each expanded, one after another.
    fn expand_amble(&mut self, amble: &[(char, Mark)], depth: usize) -> Vec<Text> {
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let at = self.gobble(amble, start, Seek::Comma).unwrap_or(amble.len());
            out.extend(self.brace_expand(&amble[start..at.min(amble.len())], depth));
            if out.len() > MAX_BRACE_WORDS {
                self.unsure = true;
                return out;
            }
            if at >= amble.len() {
                return out;
            }
            start = at + 1;
        }
    }

    /// Every word of `left` followed by every word of `right` (bash's `array_concat`).
    fn product(&mut self, left: Vec<Text>, right: Vec<Text>) -> Vec<Text> {
        if left.len().saturating_mul(right.len()) > MAX_BRACE_WORDS {
            self.unsure = true;
            return left;
        }
        let mut out = Vec::with_capacity(left.len() * right.len());
        for l in &left {
            for r in &right {
                let mut word = l.clone();
                word.extend_from_slice(r);
                out.push(word);
            }
        }
        out
    }

    /// Bash's `brace_gobbler`: the index of the first `seek` at the top level from `from`. A `}` counts
    /// only after a top-level comma or `..`; a `{` alone at a word's edge (`{}`) is not a group.
    fn gobble(&mut self, text: &[(char, Mark)], from: usize, seek: Seek) -> Option<usize> {
        let mut level = 0usize;
        let mut commas = usize::from(seek != Seek::Close);
        let mut i = from;
        while i < text.len() {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                self.unsure = true;
                return None;
            }
            let (c, mark) = text[i];
            if mark != Mark::Unquoted {
                i += 1;
                continue;
            }
            // `${` outside quotes is a parameter expansion: its brace is not a group's.
            if c == '$' && is(text, i + 1, '{') {
                level += 1;
                i += 2;
                continue;
            }
            let wanted = match seek {
                Seek::Open => '{',
                Seek::Close => '}',
                Seek::Comma => ',',
            };
            if c == wanted && level == 0 && commas > 0 {
                let edge_before = i == 0;
                let edge_after = i + 1 >= text.len() || is(text, i + 1, '}');
                if c == '{' && edge_before && edge_after {
                    i += 1;
                    continue;
                }
                return Some(i);
            }
            if c == '{' {
                level += 1;
            } else if c == '}' && level > 0 {
                level -= 1;
            } else if seek == Seek::Close
                && level == 0
                && (c == ',' || (c == '.' && is(text, i + 1, '.') && !is(text, i + 2, '}')))
            {
                commas += 1;
            }
            i += 1;
        }
        None
    }

    /// Bash's `expand_seqterm`: `{1..5}`, `{5..1..2}`, `{01..10}`, `{a..e}`; `None` when the group is not
    /// a sequence (bash then keeps it as written).
    fn sequence(&mut self, amble: &[(char, Mark)]) -> Option<Vec<Text>> {
        if amble.iter().any(|&(_, m)| m != Mark::Unquoted) {
            return None;
        }
        let text: String = amble.iter().map(|(c, _)| *c).collect();
        let (lhs, rhs) = text.split_once("..")?;
        if lhs.is_empty() || rhs.is_empty() {
            return None;
        }
        let left = Term::of_left(lhs)?;
        let (right, rhs_len, rest) = Term::of_right(rhs)?;
        let incr = match rest {
            "" => 1,
            _ => {
                let by = rest.strip_prefix("..").filter(|s| !s.is_empty())?;
                let (value, tail) = leading_integer(by)?;
                if !tail.is_empty() {
                    return None;
                }
                value
            }
        };
        let (start, end) = match (left, right) {
            (Term::Int(start), Term::Int(end)) => (start, end),
            (Term::Char(start), Term::Char(end)) => (i64::from(start), i64::from(end)),
            _ => return None,
        };
        // Past the bound (or past bash's own overflow checks) the word is unsure, not kept as written.
        let Some(numbers) = mkseq(start, end, incr) else {
            self.unsure = true;
            return Some(Vec::new());
        };
        let words = match left {
            Term::Int(_) => {
                let width = zero_width(lhs, &rhs[..rhs_len]);
                numbers
                    .into_iter()
                    .map(|n| match width {
                        Some(width) => i32::try_from(n).ok().map(|n| format!("{n:0width$}")),
                        None => Some(n.to_string()),
                    })
                    .collect::<Option<Vec<_>>>()
            }
            Term::Char(_) => {
                let chars: Vec<char> =
                    numbers.into_iter().filter_map(|n| u8::try_from(n).ok()).map(char::from).collect();
                // Between `Z` and `a` lie `[`, `\`, `]`, `^`, `_` and a backquote: bash's later passes
                // read those again (quote removal, patterns). Not followed here.
                if chars.iter().any(|c| !c.is_ascii_alphanumeric()) {
                    self.unsure = true;
                }
                Some(chars.into_iter().map(String::from).collect())
            }
        };
        let Some(words) = words else {
            self.unsure = true;
            return Some(Vec::new());
        };
        Some(words.into_iter().map(|w| w.chars().map(|c| (c, Mark::Quoted)).collect()).collect())
    }
}

/// Whether the text inside a group holds a comma, as bash looks for one: in the raw text, skipping only
/// what a backslash escapes (quoted commas count).
fn separated(amble: &[(char, Mark)]) -> bool {
    let mut j = 0;
    while j < amble.len() {
        match amble[j] {
            (_, Mark::Escaped) => j += 1,
            ('\\', _) => j += 2,
            (',', _) => return true,
            _ => j += 1,
        }
    }
    false
}

/// One end of a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Term {
    Int(i64),
    Char(u8),
}

impl Term {
    /// The left end: a whole integer (an optional sign and digits), or one letter.
    fn of_left(lhs: &str) -> Option<Term> {
        match leading_integer(lhs) {
            Some((value, "")) => Some(Term::Int(value)),
            _ => match lhs.as_bytes() {
                [c] if c.is_ascii_alphabetic() => Some(Term::Char(*c)),
                _ => None,
            },
        }
    }

    /// The right end, how many characters it takes, and what follows it (`..INCR` or nothing).
    fn of_right(rhs: &str) -> Option<(Term, usize, &str)> {
        let bytes = rhs.as_bytes();
        let signed_digit = matches!(bytes, [b'+' | b'-', d, ..] if d.is_ascii_digit());
        if bytes.first().is_some_and(u8::is_ascii_digit) || signed_digit {
            let (value, rest) = leading_integer(rhs)?;
            if !rest.is_empty() && !rest.starts_with('.') {
                return None;
            }
            return Some((Term::Int(value), rhs.len() - rest.len(), rest));
        }
        match bytes {
            [c, rest @ ..] if c.is_ascii_alphabetic() && (rest.is_empty() || rest[0] == b'.') => {
                Some((Term::Char(*c), 1, &rhs[1..]))
            }
            _ => None,
        }
    }
}

/// An optional sign and the digits after it at the start of `text`, and the rest; `None` without
/// digits or when the value does not fit.
fn leading_integer(text: &str) -> Option<(i64, &str)> {
    let signed = text.starts_with(['+', '-']);
    let digits = text[usize::from(signed)..].bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let end = usize::from(signed) + digits;
    text[..end].parse::<i64>().ok().map(|v| (v, &text[end..]))
}

/// The width bash pads a sequence's numbers to (`{01..10}`, `{-05..5}`): `None` for no padding.
fn zero_width(lhs: &str, rhs: &str) -> Option<usize> {
    let padded = |s: &str| (s.len() > 1 && s.starts_with('0')) || (s.len() > 2 && s.starts_with("-0"));
    (padded(lhs) || padded(rhs)).then(|| lhs.len().max(rhs.len()))
}

/// The numbers from `start` to `end` by `incr` (its sign taken from the direction), as bash's `mkseq`;
/// `None` when their count does not fit the bound.
fn mkseq(start: i64, end: i64, incr: i64) -> Option<Vec<i64>> {
    let step = incr.checked_abs()?.max(1);
    let span = end.checked_sub(start)?.checked_abs()?;
    let count = span / step + 1;
    if count > MAX_BRACE_WORDS as i64 {
        return None;
    }
    let step = if start > end { -step } else { step };
    Some((0..count).map(|k| start + k * step).collect())
}

#[cfg(test)]
#[path = "braces_tests.rs"]
mod tests;
