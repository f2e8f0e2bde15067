//! Appending to a JSON array inside a policy file's text without reformatting the rest of the file, so
//! an "always" answer adds the operator's rule as a small diff rather than rewriting their layout.

/// Where an array sits in the text: its brackets and the end of its last element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ArraySpan {
    open: usize,
    close: usize,
    last_end: Option<usize>,
}

struct Scanner<'a> {
    bytes: &'a [u8],
}

impl Scanner<'_> {
    fn ws(&self, mut i: usize) -> usize {
        while i < self.bytes.len() && matches!(self.bytes[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    }

    /// The end (exclusive) of the string starting at `i`.
    fn string(&self, i: usize) -> Option<usize> {
        if self.bytes.get(i) != Some(&b'"') {
            return None;
        }
        let mut j = i + 1;
        while j < self.bytes.len() {
            match self.bytes[j] {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
        None
    }

    /// The end (exclusive) of the value starting at `i`.
    fn value(&self, i: usize) -> Option<usize> {
        match self.bytes.get(i)? {
            b'"' => self.string(i),
            b'{' | b'[' => {
                let (open, close) = if self.bytes[i] == b'{' { (b'{', b'}') } else { (b'[', b']') };
                let mut depth = 0usize;
                let mut j = i;
                while j < self.bytes.len() {
                    match self.bytes[j] {
                        b'"' => {
                            j = self.string(j)?;
                            continue;
                        }
                        c if c == open => depth += 1,
                        c if c == close => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(j + 1);
                            }
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth = depth.checked_sub(1)?,
                        _ => {}
                    }
                    j += 1;
                }
                None
            }
            _ => {
                let mut j = i;
                while j < self.bytes.len()
                    && !matches!(self.bytes[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    j += 1;
                }
                (j > i).then_some(j)
            }
        }
    }

    /// The start of the value of member `key` in the object starting at `i`.
    fn member(&self, i: usize, key: &str) -> Option<usize> {
        if self.bytes.get(i) != Some(&b'{') {
            return None;
        }
        let mut j = self.ws(i + 1);
        while self.bytes.get(j) == Some(&b'"') {
            let key_end = self.string(j)?;
            let name = &self.bytes[j + 1..key_end - 1];
            j = self.ws(key_end);
            if self.bytes.get(j) != Some(&b':') {
                return None;
            }
            let value_start = self.ws(j + 1);
            if name == key.as_bytes() {
                return Some(value_start);
            }
            j = self.ws(self.value(value_start)?);
            match self.bytes.get(j) {
                Some(b',') => j = self.ws(j + 1),
                _ => return None,
            }
        }
        None
    }

    fn array(&self, i: usize) -> Option<ArraySpan> {
        if self.bytes.get(i) != Some(&b'[') {
            return None;
        }
        let mut j = self.ws(i + 1);
        let mut last_end = None;
        while self.bytes.get(j) != Some(&b']') {
            let end = self.value(j)?;
            last_end = Some(end);
            j = self.ws(end);
            match self.bytes.get(j) {
                Some(b',') => j = self.ws(j + 1),
                Some(b']') => {}
                _ => return None,
            }
        }
        Some(ArraySpan { open: i, close: j, last_end })
    }
}

/// The indentation of the line holding byte `at`.
fn indent_of(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start().len()]
}

/// `text` with each of `items` (JSON, one line each) appended to the array at `path` (object keys from
/// the top). `None` when the array is not there as expected; the caller then rewrites the whole file.
pub fn append_to_array(text: &str, path: &[&str], items: &[String]) -> Option<String> {
    if items.is_empty() {
        return Some(text.to_owned());
    }
    let scanner = Scanner { bytes: text.as_bytes() };
    let mut at = scanner.ws(0);
    for key in path {
        at = scanner.member(at, key)?;
    }
    Some(insert_items(text, scanner.array(at)?, items))
}

/// `text` with each of `items` appended to the array `key` of the command rule whose id is `rule_id`
/// (`commands.rules[id = rule_id].key`). `None` when there is no such rule or array.
pub fn append_to_rule_array(text: &str, rule_id: &str, key: &str, items: &[String]) -> Option<String> {
    if items.is_empty() {
        return Some(text.to_owned());
    }
    let scanner = Scanner { bytes: text.as_bytes() };
    let mut at = scanner.ws(0);
    for step in ["commands", "rules"] {
        at = scanner.member(at, step)?;
    }
    if scanner.bytes.get(at) != Some(&b'[') {
        return None;
    }
    let mut j = scanner.ws(at + 1);
    while scanner.bytes.get(j) != Some(&b']') {
        let end = scanner.value(j)?;
        let id = scanner
            .member(j, "id")
            .and_then(|start| Some((start, scanner.string(start)?)))
            .and_then(|(start, stop)| serde_json::from_str::<String>(&text[start..stop]).ok());
        if id.as_deref() == Some(rule_id) {
            return Some(insert_items(text, scanner.array(scanner.member(j, key)?)?, items));
        }
        j = scanner.ws(end);
        match scanner.bytes.get(j) {
            Some(b',') => j = scanner.ws(j + 1),
            Some(b']') => {}
            _ => return None,
        }
    }
    None
}

/// `items` appended to the array at `span`: on its line when the array is written on one line, else
/// one per line at its elements' indentation.
fn insert_items(text: &str, span: ArraySpan, items: &[String]) -> String {
    match span.last_end {
        Some(end) if !text[span.open..end].contains('\n') => {
            let joined: String = items.iter().map(|item| format!(", {item}")).collect();
            format!("{}{joined}{}", &text[..end], &text[end..])
        }
        Some(end) => {
            let indent = indent_of(text, end);
            let joined: String = items.iter().map(|item| format!(",\n{indent}{item}")).collect();
            format!("{}{joined}{}", &text[..end], &text[end..])
        }
        None => {
            let outer = indent_of(text, span.open);
            let inner = format!("{outer}  ");
            let joined = items.iter().map(|item| format!("{inner}{item}")).collect::<Vec<_>>().join(",\n");
            format!("{}[\n{joined}\n{outer}]{}", &text[..span.open], &text[span.close + 1..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{append_to_array, append_to_rule_array};

    #[test]
    fn a_host_goes_into_the_named_rule_s_list_on_its_line() {
        let text = "{\"commands\": {\"rules\": [\n    {\"id\": \"curl\", \"network\": [\"a.test\"]},\n    {\"id\": \"npm\", \"pattern\": [\"npm\"], \"network\": [\"registry.npmjs.org\"]}\n]}}\n";
        let out = append_to_rule_array(text, "npm", "network", &["\"b.test:443\"".into()]).unwrap();
        assert!(out.contains("\"network\": [\"registry.npmjs.org\", \"b.test:443\"]}"), "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["commands"]["rules"][0]["network"], serde_json::json!(["a.test"]));
        assert!(append_to_rule_array(text, "pip", "network", &["\"x\"".into()]).is_none());
        assert!(append_to_rule_array(text, "npm", "match", &["\"x\"".into()]).is_none());
    }

    #[test]
    fn appends_after_the_last_element_keeping_the_layout() {
        let text = "{\n  \"commands\": {\n    \"rules\": [\n      {\"id\": \"a\", \"x\": [\"]\", \"}\"]}\n    ]\n  }\n}\n";
        let out = append_to_array(text, &["commands", "rules"], &["{\"id\": \"b\"}".into()]).unwrap();
        assert_eq!(
            out,
            "{\n  \"commands\": {\n    \"rules\": [\n      {\"id\": \"a\", \"x\": [\"]\", \"}\"]},\n      {\"id\": \"b\"}\n    ]\n  }\n}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["commands"]["rules"][1]["id"], "b");
    }

    #[test]
    fn fills_an_empty_array_and_skips_other_keys() {
        let text = "{ \"a\": {\"rules\": [1]}, \"commands\": { \"default\": \"prompt\", \"rules\": [] } }";
        let out = append_to_array(text, &["commands", "rules"], &["{\"id\": \"b\"}".into()]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["commands"]["rules"][0]["id"], "b");
        assert_eq!(v["a"]["rules"][0], 1);
    }

    #[test]
    fn missing_paths_are_none() {
        assert!(append_to_array("{\"paths\": {}}", &["commands", "rules"], &["1".into()]).is_none());
        assert!(
            append_to_array("{\"commands\": {\"rules\": 3}}", &["commands", "rules"], &["1".into()])
                .is_none()
        );
        assert!(append_to_array("[1, 2", &["commands"], &["1".into()]).is_none());
    }
}
