//! Search snippets: the piece of a call's search document around the words a full-text search found,
//! with those words marked. The search index is contentless (it holds no copy of the text), so SQLite's
//! `snippet()` cannot be used; the snippet is cut here from the same text the index was fed.
//!
//! A snippet is a list of parts, each either plain text or a hit, so a front end renders it without
//! parsing markup out of text an agent wrote. The search's words are read from the user's text once,
//! here ([`fts_query`]), for the index query and the snippet alike.

use serde::{Deserialize, Serialize};

/// The text around the first hit, at most about [`SNIPPET_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Snippet {
    pub parts: Vec<SnippetPart>,
    /// Text was left out before the first part.
    pub cut_before: bool,
    /// Text was left out after the last part.
    pub cut_after: bool,
}

/// A run of the snippet's text: a word the search asked for (`hit`), or the text between.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SnippetPart {
    pub text: String,
    pub hit: bool,
}

/// About how many characters a snippet holds.
pub const SNIPPET_CHARS: usize = 120;

/// The words of `text` as the index's tokenizer (unicode61) sees them: runs of letters and digits.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    let mut out = Vec::new();
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out.into_iter()
}

/// Turns user text into an FTS5 query: the words (letters and digits, as the index tokenizes them),
/// each quoted so no FTS syntax gets through, all required.
pub fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The snippet of `document` for the search `query` (user text, read as [`fts_query`]
/// reads it); `None` when no word of the query is in the document (e.g. it matched only in a part of
/// the document that is no longer readable).
pub fn snippet(document: &str, query: &str) -> Option<Snippet> {
    let wanted: Vec<String> = words(query).map(|(_, w)| w.to_lowercase()).collect();
    let hits: Vec<(usize, usize)> = words(document)
        .filter(|(_, w)| wanted.iter().any(|q| q == &w.to_lowercase()))
        .map(|(at, w)| (at, at + w.len()))
        .collect();
    let &(first, _) = hits.first()?;
    // A window starting a third of its width before the first hit, snapped to character boundaries.
    let back = document[..first].char_indices().rev().nth(SNIPPET_CHARS / 3 - 1).map_or(0, |(i, _)| i);
    let end = document[back..].char_indices().nth(SNIPPET_CHARS).map_or(document.len(), |(i, _)| back + i);
    let mut parts = Vec::new();
    let mut at = back;
    for &(s, e) in hits.iter().filter(|&&(s, e)| s >= back && e <= end) {
        if s > at {
            parts.push(SnippetPart { text: document[at..s].to_owned(), hit: false });
        }
        parts.push(SnippetPart { text: document[s..e].to_owned(), hit: true });
        at = e;
    }
    if end > at {
        parts.push(SnippetPart { text: document[at..end].to_owned(), hit: false });
    }
    Some(Snippet { parts, cut_before: back > 0, cut_after: end < document.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(s: &Snippet) -> String {
        let body: String =
            s.parts.iter().map(|p| if p.hit { format!("[{}]", p.text) } else { p.text.clone() }).collect();
        format!("{}{body}{}", if s.cut_before { "…" } else { "" }, if s.cut_after { "…" } else { "" })
    }

    #[test]
    fn each_case_gives_its_snippet() {
        let cases: [(&str, &str, Option<&str>); 6] = [
            ("shell {\"command\":\"cargo test\"}", "cargo", Some("shell {\"command\":\"[cargo] test\"}")),
            // Case-insensitive, whole words only (the index matches tokens, not prefixes).
            ("Cargo cargoes CARGO", "cargo", Some("[Cargo] cargoes [CARGO]")),
            // Every word of the query is marked.
            ("git push origin main", "main git", Some("[git] push origin [main]")),
            // Punctuation in the query is not a word.
            ("rm -rf /tmp/x", "-rf", Some("rm -[rf] /tmp/x")),
            ("nothing here", "cargo", None),
            ("über straße", "STRASSE straße", Some("über [straße]")),
        ];
        for (document, query, want) in cases {
            let got = snippet(document, query);
            assert_eq!(got.as_ref().map(shown).as_deref(), want, "{document:?} / {query:?}");
        }
    }

    #[test]
    fn a_long_document_is_cut_around_the_first_hit() {
        let document = format!("{} deploy to prod {}", "a ".repeat(100), "b ".repeat(100));
        let text = shown(&snippet(&document, "prod").unwrap());
        assert!(text.starts_with('…') && text.ends_with('…'), "{text}");
        assert!(text.contains("deploy to [prod]"), "{text}");
        assert!(text.chars().count() <= SNIPPET_CHARS + 4, "{text}");
    }

    #[test]
    fn windows_snap_to_character_boundaries() {
        // A letter glued to the word makes one longer word: no hit.
        assert_eq!(snippet(&format!("{}needle{}", "é".repeat(200), "ß".repeat(200)), "needle"), None);
        let document = format!("{} needle {}", "é".repeat(200), "ß".repeat(200));
        let s = snippet(&document, "needle").unwrap();
        assert!(s.cut_before && s.cut_after);
        let hits: Vec<&str> = s.parts.iter().filter(|p| p.hit).map(|p| p.text.as_str()).collect();
        assert_eq!(hits, ["needle"]);
    }
}
