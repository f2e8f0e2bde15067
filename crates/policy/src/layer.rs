//! One policy document and where it came from, parsed (JSON syntax errors point at line and column)
//! but not yet checked, and the errors loading a policy gives. Below the loaded policy (`policy`), its
//! version (`version`) and discovery: they all take layers, and a layer knows none of them.

use crate::document::PolicyDocument;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a policy did not load. Every variant names the file; syntax errors give line and column.
#[derive(Debug, Error)]
pub enum PolicyError {
    #[error("{file}: cannot read: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}:{line}:{column}: {message}")]
    Syntax { file: String, line: usize, column: usize, message: String },
    #[error("{file}:{line}:{column}: rule `{rule}`: {message}")]
    Rule { file: String, line: usize, column: usize, rule: String, message: String },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

impl PolicyError {
    pub fn code(&self) -> &'static str {
        match self {
            PolicyError::Io { .. } => "policy_unreadable",
            PolicyError::Syntax { .. } => "policy_syntax",
            PolicyError::Rule { .. } => "policy_rule",
            PolicyError::Invalid { .. } => "policy_invalid",
        }
    }
}

/// One document and where it came from.
#[derive(Debug, Clone)]
pub struct PolicyLayer {
    /// Shown in errors and in matched rules (usually the file path).
    pub source: String,
    /// Relative roots resolve against this folder.
    pub project_root: PathBuf,
    pub document: PolicyDocument,
    /// The document text, when loaded from a file (to point errors at lines).
    pub text: Option<String>,
}

impl PolicyLayer {
    /// Parses a document whose relative roots resolve against `project_root`.
    pub fn parse(source: &str, text: &str, project_root: PathBuf) -> Result<Self, PolicyError> {
        let document: PolicyDocument = serde_json::from_str(text).map_err(|e| PolicyError::Syntax {
            file: source.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string().split(" at line ").next().unwrap_or_default().to_owned(),
        })?;
        Ok(PolicyLayer { source: source.to_owned(), project_root, document, text: Some(text.to_owned()) })
    }

    /// Reads a policy file applied to `project`; its relative roots point where
    /// [`crate::folders::roots_anchor`] says.
    pub fn read(path: &Path, project: &Path) -> Result<Self, PolicyError> {
        let file = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| PolicyError::Io { file: file.clone(), source })?;
        PolicyLayer::parse(&file, &text, crate::folders::roots_anchor(path, project))
    }

    /// Line and column (1-based) of the member `"key": value` whose value is the string `value` (the
    /// first such member after the first `"section"` key), else of the first occurrence of the quoted
    /// value; `(0, 0)` when unknown.
    pub(crate) fn locate_member(&self, section: &str, key: &str, value: &str) -> (usize, usize) {
        let Some(text) = &self.text else { return (0, 0) };
        let quoted = serde_json::to_string(value).unwrap_or_default();
        let key = format!("\"{key}\"");
        let start = text.find(&format!("\"{section}\"")).unwrap_or(0);
        let member = text.match_indices(&quoted).map(|(at, _)| at).filter(|&at| at > start).find(|&at| {
            let before = text[..at].trim_end();
            before.strip_suffix(':').is_some_and(|b| b.trim_end().ends_with(&key))
        });
        match member {
            Some(at) => position(text, at),
            None => self.locate(&quoted),
        }
    }

    /// The line (1-based) of every member `"key": "<string>"` after the first `"section"` key, by its
    /// value (the first such member of each value), found in one pass: a policy of a thousand rules
    /// locates its rules in linear time, not a search of the whole text per rule.
    pub(crate) fn member_lines(&self, section: &str, key: &str) -> std::collections::HashMap<String, usize> {
        let mut lines = std::collections::HashMap::new();
        let Some(text) = &self.text else { return lines };
        let key = format!("\"{key}\"");
        let start = text.find(&format!("\"{section}\"")).unwrap_or(0);
        let (mut line, mut counted) = (text[..start].matches('\n').count() + 1, start);
        for (at, _) in text[start..].match_indices(&key).map(|(at, k)| (at + start, k)) {
            let rest = text[at + key.len()..].trim_start();
            let Some(rest) = rest.strip_prefix(':') else { continue };
            let rest = rest.trim_start();
            if !rest.starts_with('"') {
                continue;
            }
            let Some(value) = leading_json_string(rest) else { continue };
            line += text[counted..at].matches('\n').count();
            counted = at;
            lines.entry(value).or_insert(line);
        }
        lines
    }

    /// Line and column (1-based) of the first occurrence of `needle` in the text, if known.
    pub(crate) fn locate(&self, needle: &str) -> (usize, usize) {
        let Some(text) = &self.text else { return (0, 0) };
        let Some(at) = text.find(needle) else { return (0, 0) };
        position(text, at)
    }
}

/// The JSON string literal `text` starts with, decoded.
fn leading_json_string(text: &str) -> Option<String> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return serde_json::from_str(&text[..=i]).ok(),
            _ => {}
        }
    }
    None
}

/// Line and column (1-based) of byte offset `at` of `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(at, |n| at - n - 1) + 1;
    (line, column)
}
