//! One line saying what a call does, from its arguments: the summary a listing of calls shows.

/// The argument that says what a call does, by the first of these keys its arguments hold.
pub const SUMMARY_KEYS: [&str; 6] = ["command", "path", "file_path", "url", "query", "name"];

/// Most characters of a call's summary.
pub const SUMMARY_CHARS: usize = 200;

/// One line saying what a call does: its command, path, URL… (the first of [`SUMMARY_KEYS`] its
/// arguments hold, when a string), else its arguments as compact JSON; at most [`SUMMARY_CHARS`]
/// characters (`…` when cut).
pub fn argument_summary(arguments: &serde_json::Value) -> Option<String> {
    let text = SUMMARY_KEYS
        .iter()
        .find_map(|k| arguments.get(k).and_then(|v| v.as_str()).map(str::to_owned))
        .unwrap_or_else(|| match arguments {
            serde_json::Value::Null => String::new(),
            serde_json::Value::Object(o) if o.is_empty() => String::new(),
            other => other.to_string(),
        });
    if text.is_empty() {
        return None;
    }
    Some(match text.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::argument_summary;
    use serde_json::json;

    #[test]
    fn summaries_by_key_in_order() {
        let rows = [
            (json!({"command": "ls -la", "path": "/x"}), Some("ls -la".to_owned())),
            (json!({"path": "src/main.rs", "content": "…"}), Some("src/main.rs".to_owned())),
            (json!({"url": "https://example.com"}), Some("https://example.com".to_owned())),
            (json!({"command": 7}), Some("{\"command\":7}".to_owned())),
            (json!({"a": 1}), Some("{\"a\":1}".to_owned())),
            (json!({}), None),
            (json!(null), None),
        ];
        for (args, want) in rows {
            assert_eq!(argument_summary(&args), want, "{args}");
        }
        let long = "x".repeat(500);
        let cut = argument_summary(&json!({ "command": long })).unwrap();
        assert_eq!(cut.chars().count(), 201);
        assert!(cut.ends_with('…'));
    }
}
