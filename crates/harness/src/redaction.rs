//! Secret redaction: known secret values, secret-looking values (API keys, bearer tokens, private keys,
//! passwords in URLs) and values under secret-looking keys become `[REDACTED]` in errors, events, ledger
//! records and results. Values are trees (no cycles); depth is bounded and what lies deeper is redacted
//! whole. Command lines are also read with shell quoting removed ([`Redactor::redact_command`]).

mod unquote;

use crate::call::CallError;
use crate::tool::{Content, ToolOutput};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde_json::Value;

/// The replacement text.
pub const REDACTED: &str = "[REDACTED]";
/// What replaces a subtree deeper than the redactor looks.
pub const REDACTED_TOO_DEEP: &str = "[REDACTED: nested too deep to inspect]";
/// Known secrets shorter than this are ignored (they would redact ordinary text).
pub const MIN_SECRET_BYTES: usize = 6;
/// Default and hard cap of the depth the redactor inspects.
pub const DEFAULT_MAX_DEPTH: usize = 64;
pub const HARD_MAX_DEPTH: usize = 128;

/// A secret-looking value: a literal prefix, then at least `min` bytes of `charset`.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Token characters after a prefix, the prefix included in what is redacted.
    Prefixed { min: usize, charset: Charset },
    /// `Bearer <token>`: only the token is redacted.
    Bearer,
    /// A PEM private-key block up to its END line (or the end of the text).
    PrivateKey,
    /// `scheme://user:password@host`: only the password is redacted.
    UrlCredentials,
}

#[derive(Debug, Clone, Copy)]
enum Charset {
    /// Letters, digits, '_' and '-'.
    Word,
    /// Letters and digits.
    Alnum,
    /// Upper-case letters and digits.
    UpperAlnum,
}

impl Charset {
    fn accepts(self, b: u8) -> bool {
        match self {
            Charset::Word => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            Charset::Alnum => b.is_ascii_alphanumeric(),
            Charset::UpperAlnum => b.is_ascii_uppercase() || b.is_ascii_digit(),
        }
    }
}

const PATTERNS: &[(&str, Shape)] = &[
    ("sk-", Shape::Prefixed { min: 20, charset: Charset::Word }),
    ("ghp_", Shape::Prefixed { min: 30, charset: Charset::Alnum }),
    ("gho_", Shape::Prefixed { min: 30, charset: Charset::Alnum }),
    ("ghu_", Shape::Prefixed { min: 30, charset: Charset::Alnum }),
    ("ghs_", Shape::Prefixed { min: 30, charset: Charset::Alnum }),
    ("ghr_", Shape::Prefixed { min: 30, charset: Charset::Alnum }),
    ("github_pat_", Shape::Prefixed { min: 20, charset: Charset::Word }),
    ("glpat-", Shape::Prefixed { min: 20, charset: Charset::Word }),
    ("xoxb-", Shape::Prefixed { min: 10, charset: Charset::Word }),
    ("xoxp-", Shape::Prefixed { min: 10, charset: Charset::Word }),
    ("xoxa-", Shape::Prefixed { min: 10, charset: Charset::Word }),
    ("xoxs-", Shape::Prefixed { min: 10, charset: Charset::Word }),
    ("npm_", Shape::Prefixed { min: 30, charset: Charset::Alnum }),
    ("AKIA", Shape::Prefixed { min: 16, charset: Charset::UpperAlnum }),
    ("ASIA", Shape::Prefixed { min: 16, charset: Charset::UpperAlnum }),
    ("AIza", Shape::Prefixed { min: 30, charset: Charset::Word }),
    ("Bearer ", Shape::Bearer),
    ("bearer ", Shape::Bearer),
    ("BEARER ", Shape::Bearer),
    ("-----BEGIN ", Shape::PrivateKey),
    ("://", Shape::UrlCredentials),
];

/// Passes [`Redactor::redact_command`] makes before it redacts a command whole.
const MAX_COMMAND_PASSES: usize = 4;
/// Longest URL authority (`user:password@host:port`) looked at after `://`.
const MAX_URL_AUTHORITY_BYTES: usize = 2048;

/// Object keys whose (normalized: lower case, no `_`/`-`/`.`) name ends with one of these hold secrets.
const SECRET_KEY_SUFFIXES: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "authorization",
    "cookie",
    "privatekey",
    "credential",
    "credentials",
    "accesskey",
    "sessionkey",
];

/// Builds a [`Redactor`].
#[derive(Debug, Clone)]
pub struct RedactorBuilder {
    secrets: Vec<String>,
    patterns: bool,
    secret_keys: bool,
    max_depth: usize,
}

impl Default for RedactorBuilder {
    fn default() -> Self {
        RedactorBuilder {
            secrets: Vec::new(),
            patterns: true,
            secret_keys: true,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

impl RedactorBuilder {
    /// A known secret value (an API key from the environment, a token ...). Shorter than
    /// [`MIN_SECRET_BYTES`] is ignored with a warning.
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        let secret = secret.into();
        if secret.len() < MIN_SECRET_BYTES {
            tracing::warn!(
                len = secret.len(),
                "ignoring a known secret shorter than {MIN_SECRET_BYTES} bytes"
            );
        } else {
            self.secrets.push(secret);
        }
        self
    }

    pub fn secrets<I, S>(mut self, secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for s in secrets {
            self = self.secret(s);
        }
        self
    }

    /// Detect secret-looking values (on by default).
    pub fn patterns(mut self, on: bool) -> Self {
        self.patterns = on;
        self
    }

    /// Redact strings under secret-looking keys (on by default).
    pub fn secret_keys(mut self, on: bool) -> Self {
        self.secret_keys = on;
        self
    }

    /// Depth inspected (1..=128); deeper subtrees are replaced whole.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth.clamp(1, HARD_MAX_DEPTH);
        self
    }

    pub fn build(mut self) -> Redactor {
        self.secrets.sort();
        self.secrets.dedup();
        // Known secrets: every overlapping occurrence is found, so one secret can never hide part of another.
        let known = (!self.secrets.is_empty())
            .then(|| AhoCorasickBuilder::new().match_kind(MatchKind::Standard).build(&self.secrets));
        let patterns = self.patterns.then(|| {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(PATTERNS.iter().map(|(p, _)| *p))
        });
        let (known, patterns) = match (known.transpose(), patterns.transpose()) {
            (Ok(k), Ok(p)) => (k, p),
            (Err(e), _) | (_, Err(e)) => {
                // Building can only fail on absurd sizes; fail closed by redacting every string.
                tracing::error!(error = %e, "redactor automaton failed to build; redacting all text");
                return Redactor { mode: Mode::Everything, ..Redactor::disabled() };
            }
        };
        Redactor {
            mode: Mode::Scan,
            known,
            patterns,
            secret_keys: self.secret_keys,
            max_depth: self.max_depth,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Scan,
    Everything,
}

/// Replaces secrets by `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct Redactor {
    mode: Mode,
    /// Known secret values.
    known: Option<AhoCorasick>,
    /// Prefixes of secret-looking values.
    patterns: Option<AhoCorasick>,
    secret_keys: bool,
    max_depth: usize,
}

impl Default for Redactor {
    /// Patterns and secret keys on, no known secrets.
    fn default() -> Self {
        RedactorBuilder::default().build()
    }
}

impl Redactor {
    pub fn builder() -> RedactorBuilder {
        RedactorBuilder::default()
    }

    /// Redacts nothing.
    pub fn disabled() -> Self {
        Redactor {
            mode: Mode::Scan,
            known: None,
            patterns: None,
            secret_keys: false,
            max_depth: HARD_MAX_DEPTH,
        }
    }

    /// Whether this redactor can change anything.
    pub fn is_active(&self) -> bool {
        self.mode == Mode::Everything || self.known.is_some() || self.patterns.is_some() || self.secret_keys
    }

    /// The redacted text, or `None` when nothing needed redacting. Known secrets go first (every
    /// occurrence, overlapping ones merged), then secret-looking values in what is left.
    pub fn redact_str(&self, text: &str) -> Option<String> {
        if self.mode == Mode::Everything {
            return (!text.is_empty()).then(|| REDACTED.to_owned());
        }
        let after_known = self.known.as_ref().and_then(|known| redact_known(known, text));
        let current = after_known.as_deref().unwrap_or(text);
        match self.patterns.as_ref().and_then(|patterns| redact_patterns(patterns, current)) {
            Some(done) => Some(done),
            None => after_known,
        }
    }

    /// Redacts a command line: as [`redact_str`](Redactor::redact_str) does, and also what a reading
    /// of it with shell quoting removed holds (`ghp_abc''def`, `"sk-"'rest'`, `\`-escapes, `$'..'`: the
    /// shell removes the quotes and the real argument is the secret). A secret found in that reading is
    /// redacted over the original text it came from, quotes included. Shell-agnostic and
    /// character-level: no parsing, no expansion.
    ///
    /// Redacting can unbalance the quotes of what follows, so the result is read again until neither
    /// it nor its reading shows a secret (a few passes; then the whole command is redacted).
    pub fn redact_command(&self, command: &str) -> Option<String> {
        if self.mode == Mode::Everything {
            return self.redact_str(command);
        }
        let mut current: Option<String> = None;
        for _ in 0..MAX_COMMAND_PASSES {
            match self.redact_command_pass(current.as_deref().unwrap_or(command)) {
                Some(next) => current = Some(next),
                None => return current,
            }
        }
        Some(REDACTED.to_owned())
    }

    /// One pass of [`redact_command`](Redactor::redact_command): the text and its quote-removed reading.
    fn redact_command_pass(&self, command: &str) -> Option<String> {
        let Some(reading) = unquote::Reading::of(command) else { return self.redact_str(command) };
        let spans = self.secret_spans(&reading.text);
        if spans.is_empty() {
            return self.redact_str(command);
        }
        let mapped = merge_spans(spans.into_iter().filter_map(|span| reading.original_span(span)).collect());
        let first = if mapped.is_empty() { REDACTED.to_owned() } else { splice(command, &mapped) };
        Some(self.redact_str(&first).unwrap_or(first))
    }

    /// Byte spans of `text` holding a known secret or a secret-looking value (sorted, disjoint).
    fn secret_spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut spans = self.known.as_ref().map(|known| known_spans(known, text)).unwrap_or_default();
        if let Some(patterns) = &self.patterns {
            spans.extend(pattern_spans(patterns, text));
        }
        merge_spans(spans)
    }

    /// Redacts a string in place; true when it changed.
    pub fn redact_string(&self, text: &mut String) -> bool {
        match self.redact_str(text) {
            Some(r) => {
                *text = r;
                true
            }
            None => false,
        }
    }

    /// Redacts a JSON value in place; true when anything changed.
    pub fn redact_value(&self, value: &mut Value) -> bool {
        if !self.is_active() {
            return false;
        }
        self.redact_at(value, 1, false)
    }

    fn redact_at(&self, value: &mut Value, depth: usize, under_secret_key: bool) -> bool {
        if depth > self.max_depth && matches!(value, Value::Array(_) | Value::Object(_)) {
            *value = Value::String(REDACTED_TOO_DEEP.to_owned());
            return true;
        }
        match value {
            Value::String(s) => {
                if under_secret_key && !s.is_empty() {
                    *s = REDACTED.to_owned();
                    true
                } else {
                    self.redact_string(s)
                }
            }
            Value::Array(items) => {
                let mut changed = false;
                for item in items {
                    changed |= self.redact_at(item, depth + 1, under_secret_key);
                }
                changed
            }
            Value::Object(map) => {
                let mut changed = false;
                for (key, item) in map.iter_mut() {
                    let secret = under_secret_key || (self.secret_keys && is_secret_key(key));
                    changed |= self.redact_at(item, depth + 1, secret);
                }
                changed
            }
            _ => false,
        }
    }

    /// Redacts every text of an output; true when anything changed.
    pub fn redact_output(&self, output: &mut ToolOutput) -> bool {
        if !self.is_active() {
            return false;
        }
        let mut changed = false;
        for block in &mut output.content {
            match block {
                Content::Text { text } => changed |= self.redact_string(text),
                Content::Image { .. } | Content::Audio { .. } => {}
                Content::Resource { uri, text, .. } => {
                    changed |= self.redact_string(uri);
                    if let Some(t) = text {
                        changed |= self.redact_string(t);
                    }
                }
            }
        }
        if let Some(s) = &mut output.structured {
            changed |= self.redact_value(s);
        }
        if let Some(record) = &mut output.changes {
            for entry in &mut record.entries {
                changed |= self.redact_string(&mut entry.path);
                if let Some(why) = &mut entry.why {
                    changed |= self.redact_string(why);
                }
            }
        }
        changed
    }

    /// Redacts an error's message and details; true when anything changed.
    pub fn redact_error(&self, error: &mut CallError) -> bool {
        if !self.is_active() {
            return false;
        }
        let mut changed = self.redact_string(&mut error.message);
        if let Some(d) = &mut error.details {
            changed |= self.redact_value(d);
        }
        changed
    }
}

/// Replaces the union of all (possibly overlapping) occurrences of known secrets.
fn redact_known(known: &AhoCorasick, text: &str) -> Option<String> {
    let spans = known_spans(known, text);
    (!spans.is_empty()).then(|| splice(text, &spans))
}

/// The union of all (possibly overlapping) occurrences of known secrets, sorted and disjoint.
fn known_spans(known: &AhoCorasick, text: &str) -> Vec<(usize, usize)> {
    merge_spans(known.find_overlapping_iter(text).map(|m| (m.start(), m.end())).collect())
}

/// Sorts spans and merges the ones that overlap or touch.
fn merge_spans(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Replaces secret-looking values.
fn redact_patterns(patterns: &AhoCorasick, text: &str) -> Option<String> {
    let spans = pattern_spans(patterns, text);
    (!spans.is_empty()).then(|| splice(text, &spans))
}

/// Spans of secret-looking values, in order. A prefix that turns out not to be a secret is skipped by
/// one byte only, so it cannot hide a real one that starts inside it.
fn pattern_spans(patterns: &AhoCorasick, text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut at = 0usize;
    while at < text.len() {
        let Some(m) = patterns.find(aho_corasick::Input::new(text).span(at..text.len())) else { break };
        let shape = PATTERNS.get(m.pattern().as_usize()).map(|(_, shape)| *shape);
        match shape.and_then(|shape| secret_span(bytes, m.start(), m.end(), shape)) {
            Some((start, end)) => {
                spans.push((start, end));
                at = end.max(m.start() + 1);
            }
            None => at = m.start() + 1, // prefixes are ASCII: the next byte is a char boundary
        }
    }
    spans
}

/// The passwords of the `scheme://user:password@host` URLs in `text`, in order.
pub fn url_passwords(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = find(bytes, from, b"://") {
        match url_password_span(bytes, at + 3) {
            Some((start, end)) => {
                found.push(&text[start..end]);
                from = end;
            }
            None => from = at + 3,
        }
    }
    found
}

/// The password of a URL authority starting at `from` (just after `://`): the userinfo ends at the
/// last `@` before the host ends (`/`, `?`, `#` after the first `@`), and the password is what
/// follows its first `:`. Whitespace, quotes and angle brackets end the URL.
fn url_password_span(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    let rest = bytes.get(from..)?;
    let len = rest
        .iter()
        .take(MAX_URL_AUTHORITY_BYTES)
        .take_while(|b| !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b'`' | b'<' | b'>'))
        .count();
    let run = &rest[..len];
    let first_at = run.iter().position(|b| *b == b'@')?;
    let host_end = run[first_at..]
        .iter()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .map_or(run.len(), |p| p + first_at);
    let last_at = run[..host_end].iter().rposition(|b| *b == b'@')?;
    let colon = run[..last_at].iter().position(|b| *b == b':')?;
    let password = &run[colon + 1..last_at];
    // Already redacted: nothing more to do (redaction stays idempotent).
    (!password.is_empty() && password != REDACTED.as_bytes()).then_some((from + colon + 1, from + last_at))
}

/// `text` with each (sorted, disjoint) byte span replaced by `[REDACTED]`.
fn splice(text: &str, spans: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for &(start, end) in spans {
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether an object key names a secret (normalized suffix match).
pub fn is_secret_key(key: &str) -> bool {
    if key.len() > 64 {
        return false;
    }
    let mut normalized = [0u8; 64];
    let mut n = 0;
    for b in key.bytes() {
        if matches!(b, b'_' | b'-' | b'.' | b' ') {
            continue;
        }
        normalized[n] = b.to_ascii_lowercase();
        n += 1;
    }
    let normalized = &normalized[..n];
    SECRET_KEY_SUFFIXES.iter().any(|s| normalized.ends_with(s.as_bytes()))
}

/// The byte span to redact for a pattern match at `start..prefix_end`, if the text really looks secret.
fn secret_span(bytes: &[u8], start: usize, prefix_end: usize, shape: Shape) -> Option<(usize, usize)> {
    if let Shape::UrlCredentials = shape {
        return url_password_span(bytes, prefix_end); // `://` follows its scheme: no token boundary
    }
    if start > 0 && bytes.get(start - 1).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
        return None; // not at a token boundary ("task-..." is not "sk-...")
    }
    match shape {
        Shape::Prefixed { min, charset } => {
            let run = bytes[prefix_end..].iter().take_while(|b| charset.accepts(**b)).count();
            (run >= min).then_some((start, prefix_end + run))
        }
        Shape::Bearer => {
            let run = bytes[prefix_end..]
                .iter()
                .take_while(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
                })
                .count();
            (run >= 16).then_some((prefix_end, prefix_end + run))
        }
        Shape::PrivateKey => {
            let header_end = find(bytes, prefix_end, b"-----")?;
            let header = &bytes[prefix_end..header_end];
            if !header.ends_with(b"PRIVATE KEY") {
                return None;
            }
            let end = match find(bytes, header_end + 5, b"-----END ") {
                Some(end_at) => find(bytes, end_at + 9, b"-----").map_or(bytes.len(), |e| e + 5),
                None => bytes.len(),
            };
            Some((start, end))
        }
        Shape::UrlCredentials => None, // answered above
    }
}

fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_secret_is_replaced_everywhere() {
        let r = Redactor::builder().secret("hunter2-very-secret").build();
        assert_eq!(
            r.redact_str("a hunter2-very-secret b hunter2-very-secret").unwrap(),
            "a [REDACTED] b [REDACTED]"
        );
        assert_eq!(r.redact_str("nothing here"), None);
    }

    #[test]
    fn short_secrets_are_ignored() {
        let r = Redactor::builder().secret("abc").patterns(false).secret_keys(false).build();
        assert!(!r.is_active());
        assert_eq!(r.redact_str("abc abc"), None);
    }

    #[test]
    fn secret_looking_values() {
        let r = Redactor::default();
        let cases = [
            ("key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA end", "key [REDACTED] end"),
            ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "[REDACTED]"),
            ("AKIAABCDEFGHIJKLMNOP", "[REDACTED]"),
            ("Authorization: Bearer abcdefghijklmnop.qrstuv", "Authorization: Bearer [REDACTED]"),
            ("xoxb-1234567890-abcdef", "[REDACTED]"),
        ];
        for (input, want) in cases {
            assert_eq!(r.redact_str(input).as_deref(), Some(want), "{input}");
        }
        for harmless in ["task-0123456789abcdefghijklmnop", "sk-short", "Bearer of bad news", "AKIA"] {
            assert_eq!(r.redact_str(harmless), None, "{harmless}");
        }
    }

    #[test]
    fn private_key_blocks() {
        let r = Redactor::default();
        let pem =
            "x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\ny";
        assert_eq!(r.redact_str(pem).unwrap(), "x\n[REDACTED]\ny");
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
        assert_eq!(r.redact_str(cert), None);
        let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow";
        assert_eq!(r.redact_str(cut).unwrap(), "[REDACTED]");
    }

    #[test]
    fn secret_keys_and_nesting() {
        let r = Redactor::default();
        let mut v = json!({
            "api_key": "plain-looking",
            "max_tokens": 100,
            "headers": {"Authorization": "x", "X-Api-Key": "y", "accept": "json"},
            "credentials": {"user": "u", "pin": ["1", "2"]},
            "note": "fine"
        });
        assert!(r.redact_value(&mut v));
        assert_eq!(
            v,
            json!({
                "api_key": REDACTED, "max_tokens": 100,
                "headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED, "accept": "json"},
                "credentials": {"user": REDACTED, "pin": [REDACTED, REDACTED]},
                "note": "fine"
            })
        );
    }

    #[test]
    fn depth_is_bounded_and_fails_closed() {
        let r = Redactor::builder().max_depth(3).build();
        let mut v = json!({"a": {"b": {"c": {"d": "sk-hidden"}}}});
        assert!(r.redact_value(&mut v));
        assert_eq!(v, json!({"a": {"b": {"c": REDACTED_TOO_DEEP}}}));
    }

    #[test]
    fn a_failed_pattern_prefix_cannot_hide_a_known_secret() {
        let r = Redactor::builder().secret("k-secretvalue").build();
        assert_eq!(r.redact_str("sk-secretvalue").unwrap(), "s[REDACTED]");
        let r = Redactor::builder().secret("AKIAsecret1").build();
        assert_eq!(r.redact_str("xAKIAsecret1").unwrap(), "x[REDACTED]");
    }

    #[test]
    fn overlapping_known_secrets_are_redacted_whole() {
        let r = Redactor::builder().secrets(["abcdef12", "ef123456", "3456789z"]).patterns(false).build();
        assert_eq!(r.redact_str("__abcdef123456789z__").unwrap(), "__[REDACTED]__");
        assert_eq!(r.redact_str("ef123456 and abcdef12").unwrap(), "[REDACTED] and [REDACTED]");
    }

    #[test]
    fn a_non_secret_prefix_does_not_hide_a_pattern_inside_it() {
        let r = Redactor::default();
        // "sk-" that is too short, immediately followed by a real GitHub token.
        let text = "sk-ghp_0123456789abcdefghijABCDEFGHIJ012345";
        assert_eq!(r.redact_str(text).unwrap(), "[REDACTED]", "the whole run is one token");
        let text = "Bearer short ghp_0123456789abcdefghijABCDEFGHIJ012345";
        assert_eq!(r.redact_str(text).unwrap(), "Bearer short [REDACTED]");
    }

    /// Known secrets dropped at random places into random text never survive, whatever surrounds them.
    /// The same text as a command, each secret split by quotes, backslashes and `$'..'` escapes: neither
    /// the recorded command nor its quote-removed reading shows a secret.
    #[test]
    fn randomized_texts_never_leak_a_known_secret() {
        let secrets = ["hunter2-very-secret", "sk-proj-KNOWNSECRET0001", "p@ss w0rd!", "ünïcödé-sëcret"];
        let r = Redactor::builder().secrets(secrets).build();
        let alphabet: Vec<char> = "abcXYZ019 -_:/\n\"'skghpAKIBearer@üé\\$".chars().collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let mut text = String::new();
            let mut command = String::new();
            for _ in 0..(next() % 6) {
                for _ in 0..(next() % 12) {
                    let c = alphabet[(next() % alphabet.len() as u64) as usize];
                    text.push(c);
                    command.push(c);
                }
                let secret = secrets[(next() % secrets.len() as u64) as usize];
                // Sometimes glue two secrets or a secret and a pattern prefix together.
                let glue = match next() % 4 {
                    0 => "sk-",
                    1 => "Bearer ",
                    _ => "",
                };
                text.push_str(glue);
                text.push_str(secret);
                command.push_str(glue);
                for c in secret.chars() {
                    match next() % 8 {
                        0 => command.push_str("''"),
                        1 => command.push_str("\"\""),
                        2 => command.push('\\'),
                        3 if c.is_ascii() => {
                            command.push_str(&format!("$'\\x{:02x}'", c as u32));
                            continue;
                        }
                        4 => {
                            command.push_str(&format!("'{c}'"));
                            continue;
                        }
                        _ => {}
                    }
                    command.push(c);
                }
            }
            let out = r.redact_str(&text).unwrap_or_else(|| text.clone());
            for secret in secrets {
                assert!(!out.contains(secret), "{secret:?} leaked from {text:?} as {out:?}");
            }
            let recorded = r.redact_command(&command).unwrap_or_else(|| command.clone());
            let reading = unquote::Reading::of(&recorded).map_or_else(|| recorded.clone(), |r| r.text);
            for secret in secrets {
                assert!(!recorded.contains(secret), "{secret:?} leaked from {command:?} as {recorded:?}");
                assert!(!reading.contains(secret), "{secret:?} readable in {recorded:?} (from {command:?})");
            }
        }
    }

    #[test]
    fn passwords_in_urls() {
        let r = Redactor::default();
        let cases = [
            (
                "DATABASE_URL=postgres://app:hunter2@db:5432/app",
                "DATABASE_URL=postgres://app:[REDACTED]@db:5432/app",
            ),
            ("redis://:p4ss@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
            (
                "git clone https://x-access-token:abc123@github.com/o/r",
                "git clone https://x-access-token:[REDACTED]@github.com/o/r",
            ),
            ("mysql://root:p@ss:word@h/db?mail=a@b", "mysql://root:[REDACTED]@h/db?mail=a@b"),
            ("x://u:pa/ss@h/@scope", "x://u:[REDACTED]@h/@scope"),
            (
                "'amqp://guest:guest@rabbit' and ftp://u:v@w",
                "'amqp://guest:[REDACTED]@rabbit' and ftp://u:[REDACTED]@w",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(r.redact_str(input).as_deref(), Some(want), "{input}");
        }
        let harmless =
            ["https://example.com:8443/x", "ssh://git@github.com:22/o/r", "https://u@h/x:y", "a :// b@c"];
        for harmless in harmless {
            assert_eq!(r.redact_str(harmless), None, "{harmless}");
        }
        assert_eq!(url_passwords("x postgres://a:b%40c@h y https://k:v@z"), vec!["b%40c", "v"]);
    }

    #[test]
    fn secrets_split_by_shell_quoting_in_commands() {
        let r = Redactor::builder().secret("hunter2-very-secret").build();
        let cases = [
            ("echo ghp_0123456789''abcdefghijABCDEFGHIJ012345", "echo [REDACTED]"),
            ("echo ghp_0123456789\"\"abcdefghijABCDEFGHIJ012345 ok", "echo [REDACTED] ok"),
            ("echo \"sk-\"'proj0123456789abcdefghijkl'", "echo \"[REDACTED]'"),
            ("echo gh\\p_0123456789abcdefghijABCDEFGHIJ012345", "echo [REDACTED]"),
            ("echo $'\\x67hp_0123456789abcdefghijABCDEFGHIJ012345'", "echo $'[REDACTED]'"),
            (
                "curl -H \"Authorization: Bearer \"'abcdefghijklmnopqrstuvwxyz'",
                "curl -H \"Authorization: Bearer \"'[REDACTED]'",
            ),
            ("echo hunter2-''very-secret | x", "echo [REDACTED] | x"),
            ("psql 'postgres://app:pa'\"ss\"'word@db/app'", "psql 'postgres://app:[REDACTED]@db/app'"),
        ];
        for (input, want) in cases {
            assert_eq!(r.redact_str(input), None, "plain text is not read as a command: {input}");
            assert_eq!(r.redact_command(input).as_deref(), Some(want), "{input}");
        }
        assert_eq!(r.redact_command("echo 'hello world' \"ok\""), None);
        let whole = "echo ghp_0123456789abcdefghijABCDEFGHIJ012345";
        assert_eq!(r.redact_command(whole).as_deref(), Some("echo [REDACTED]"));
    }

    #[test]
    fn multibyte_text_around_secrets() {
        let r = Redactor::builder().secret("sécret-ünïcode").build();
        assert_eq!(r.redact_str("→sécret-ünïcode←").unwrap(), "→[REDACTED]←");
    }
}
