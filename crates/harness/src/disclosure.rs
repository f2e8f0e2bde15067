//! Tool search for progressive disclosure: BM25-style lexical scoring over tool names (weighted) and
//! descriptions. It only ever narrows the granted set, never describes a denied tool, breaks ties by
//! registry order, and over its index cap falls back to disclosing the whole granted set.

use crate::call::CallContext;
use crate::error_code::CallErrorCode;
use crate::grants::Grants;
use crate::registry::ToolRegistry;
use crate::schema::truncate;
use crate::tool::{Tool, ToolError, ToolInvocation, ToolOutput};
use crate::tool_spec::{ToolAnnotations, ToolSpec};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::HashMap;
use thiserror::Error;

/// The name of the search tool.
pub const SEARCH_TOOLS_NAME: &str = "search_tools";
/// Hard caps.
pub const HARD_MAX_K: usize = 64;
pub const HARD_MAX_QUERY_BYTES: usize = 65_536;
pub const MAX_INDEXED_TOOLS: usize = 1024;
/// Longest description shown per tool, in bytes.
pub const SUMMARY_BYTES: usize = 512;

const NAME_WEIGHT: f64 = 3.0;
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Bounds of tool search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DisclosureLimits {
    /// Tools disclosed when the caller gives no k (default 16).
    pub default_k: usize,
    /// Largest k accepted (default and hard cap 64); larger asks are clamped.
    pub max_k: usize,
    /// Longest query in bytes (default 4,096; hard cap 65,536).
    pub max_query_bytes: usize,
}

impl Default for DisclosureLimits {
    fn default() -> Self {
        DisclosureLimits { default_k: 16, max_k: HARD_MAX_K, max_query_bytes: 4096 }
    }
}

impl DisclosureLimits {
    fn clamped(self) -> Self {
        let max_k = self.max_k.clamp(1, HARD_MAX_K);
        DisclosureLimits {
            default_k: self.default_k.clamp(1, max_k),
            max_k,
            max_query_bytes: self.max_query_bytes.clamp(1, HARD_MAX_QUERY_BYTES),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DisclosureError {
    #[error("query is {bytes} bytes, over the limit of {limit}")]
    QueryTooLong { bytes: usize, limit: usize },
    #[error("more than {MAX_INDEXED_TOOLS} tools to index")]
    IndexTooLarge,
}

/// Lower-case word pieces: split on non-alphanumerics and camelCase humps; a plural `s` is dropped
/// from words longer than three letters (`files` finds `file`).
fn tokenize(text: &str, mut sink: impl FnMut(String)) {
    let mut emit = |mut word: String| {
        if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
            word.pop();
        }
        sink(word)
    };
    let mut current = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !current.is_empty() {
                emit(std::mem::take(&mut current));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !current.is_empty() {
                emit(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        emit(current);
    }
}

/// A description made inert and short: one line, control characters removed, at most 512 bytes.
pub fn summary_of(description: &str) -> String {
    let mut flat = String::with_capacity(description.len().min(SUMMARY_BYTES + 8));
    let mut space = false;
    for c in description.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !flat.is_empty();
            continue;
        }
        if space {
            flat.push(' ');
            space = false;
        }
        flat.push(c);
        if flat.len() > SUMMARY_BYTES + 8 {
            break;
        }
    }
    truncate(&flat, SUMMARY_BYTES)
}

struct IndexedTool {
    name: String,
    summary: String,
    terms: HashMap<String, f64>,
    length: f64,
}

/// A ranked hit.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub name: String,
    pub summary: String,
    pub score: f64,
}

/// A BM25 index over a set of tools (in the order given, which breaks ties).
pub struct ToolSearchIndex {
    tools: Vec<IndexedTool>,
    document_frequency: HashMap<String, usize>,
    average_length: f64,
}

impl ToolSearchIndex {
    pub fn build<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> Result<Self, DisclosureError> {
        let mut tools = Vec::new();
        let mut document_frequency: HashMap<String, usize> = HashMap::new();
        let patterns = crate::redaction::Redactor::default();
        for spec in specs {
            if tools.len() == MAX_INDEXED_TOOLS {
                return Err(DisclosureError::IndexTooLarge);
            }
            let mut terms: HashMap<String, f64> = HashMap::new();
            let mut length = 0.0;
            tokenize(&spec.name, |t| {
                *terms.entry(t).or_default() += NAME_WEIGHT;
                length += NAME_WEIGHT;
            });
            let summary = summary_of(&spec.description);
            // Secret-looking values never reach an agent, whichever host renders the selection.
            let summary = patterns.redact_str(&summary).unwrap_or(summary);
            tokenize(&summary, |t| {
                *terms.entry(t).or_default() += 1.0;
                length += 1.0;
            });
            for term in terms.keys() {
                *document_frequency.entry(term.clone()).or_default() += 1;
            }
            tools.push(IndexedTool { name: spec.name.clone(), summary, terms, length });
        }
        let average_length = if tools.is_empty() {
            1.0
        } else {
            (tools.iter().map(|t| t.length).sum::<f64>() / tools.len() as f64).max(1.0)
        };
        Ok(ToolSearchIndex { tools, document_frequency, average_length })
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The top `k` tools for the query (only tools with a positive score), best first; ties by order.
    pub fn search(&self, query: &str, k: usize) -> Vec<SearchHit> {
        let mut query_terms: Vec<String> = Vec::new();
        tokenize(query, |t| {
            if !query_terms.contains(&t) {
                query_terms.push(t);
            }
        });
        let trimmed = query.trim();
        let n = self.tools.len() as f64;
        let mut scored: Vec<(usize, f64)> = Vec::new();
        for (position, tool) in self.tools.iter().enumerate() {
            let mut score = 0.0;
            for term in &query_terms {
                let Some(tf) = tool.terms.get(term) else { continue };
                let df = self.document_frequency.get(term).copied().unwrap_or(0) as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                score +=
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * tool.length / self.average_length));
            }
            if !trimmed.is_empty() && (tool.name == trimmed || tool.name.rsplit(':').next() == Some(trimmed))
            {
                score += 100.0; // the exact name asked for comes first
            }
            if score > 0.0 {
                scored.push((position, score));
            }
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
            .into_iter()
            .take(k)
            .filter_map(|(position, score)| {
                self.tools.get(position).map(|t| SearchHit {
                    name: t.name.clone(),
                    summary: t.summary.clone(),
                    score,
                })
            })
            .collect()
    }
}

/// Which tools a query discloses.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// Granted tools to show, best first (or all granted tools, in registry order, when `full`).
    pub tools: Vec<SearchHit>,
    /// True when the index cap was passed and the whole granted set is disclosed.
    pub full: bool,
}

/// The disclosure selector.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disclosure {
    limits: DisclosureLimits,
}

impl Disclosure {
    pub fn new(limits: DisclosureLimits) -> Self {
        Disclosure { limits: limits.clamped() }
    }

    pub fn limits(&self) -> DisclosureLimits {
        self.limits
    }

    /// Selects the top-k granted tools for a query. Never returns a tool the grants refuse, nor the
    /// search tool itself.
    pub fn select(
        &self,
        registry: &ToolRegistry,
        grants: &Grants,
        query: &str,
        k: Option<usize>,
    ) -> Result<Selection, DisclosureError> {
        if query.len() > self.limits.max_query_bytes {
            return Err(DisclosureError::QueryTooLong {
                bytes: query.len(),
                limit: self.limits.max_query_bytes,
            });
        }
        let k = k.unwrap_or(self.limits.default_k).clamp(1, self.limits.max_k);
        // An upstream server's methods (resources/read, prompts/get, ...) are not tools agents call.
        let granted = || {
            registry.specs().filter(|s| {
                s.name != SEARCH_TOOLS_NAME
                    && crate::mcp_method_of(&s.name).is_none()
                    && grants.permits(&s.name)
            })
        };
        match ToolSearchIndex::build(granted()) {
            Ok(index) => Ok(Selection { tools: index.search(query, k), full: false }),
            Err(DisclosureError::IndexTooLarge) => {
                tracing::warn!("tool search index cap passed; disclosing every granted tool");
                let tools = granted()
                    .map(|s| SearchHit {
                        name: s.name.clone(),
                        summary: summary_of(&s.description),
                        score: 0.0,
                    })
                    .collect();
                Ok(Selection { tools, full: true })
            }
            Err(e) => Err(e),
        }
    }
}

/// Renders a selection as inert text lines `name: short description`.
pub fn render_selection(selection: &Selection) -> String {
    if selection.tools.is_empty() {
        return "No tools match the query.".to_owned();
    }
    let mut out = String::new();
    for hit in &selection.tools {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&hit.name);
        out.push_str(": ");
        out.push_str(&hit.summary);
    }
    out
}

/// The `search_tools({query, k?})` tool.
pub struct SearchToolsTool {
    spec: ToolSpec,
    disclosure: Disclosure,
}

impl Default for SearchToolsTool {
    fn default() -> Self {
        SearchToolsTool::new(DisclosureLimits::default())
    }
}

impl SearchToolsTool {
    pub fn new(limits: DisclosureLimits) -> Self {
        let disclosure = Disclosure::new(limits);
        let limits = disclosure.limits();
        let spec = ToolSpec::new(
            SEARCH_TOOLS_NAME,
            "Search the tools available to you by keywords. Returns the best matches, one per line, \
             as `name: description`.",
        )
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Keywords describing the tool you need."},
                "k": {"type": "integer", "minimum": 1, "maximum": limits.max_k,
                      "description": "How many tools to return (default 16)."}
            },
            "required": ["query"],
            "additionalProperties": false
        }))
        .with_annotations(ToolAnnotations { read_only: true, ..ToolAnnotations::default() });
        SearchToolsTool { spec, disclosure }
    }
}

#[async_trait]
impl Tool for SearchToolsTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(
        &self,
        _: &Value,
        _: &CallContext,
    ) -> Result<crate::execution::ExecutionAction, ToolError> {
        Ok(crate::execution::ExecutionAction::new(crate::execution::ActionKind::None, "search"))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let query = invocation.arguments.get("query").and_then(Value::as_str).unwrap_or_default();
        let k = invocation
            .arguments
            .get("k")
            .and_then(Value::as_u64)
            .map(|k| usize::try_from(k).unwrap_or(usize::MAX));
        let catalog = &invocation.catalog;
        let selection = self
            .disclosure
            .select(&catalog.registry, &catalog.grants, query, k)
            .map_err(|e| ToolError::new(CallErrorCode::InvalidQuery, e.to_string()))?;
        let mut output = ToolOutput::text(render_selection(&selection));
        output.structured = Some(json!({
            "tools": selection.tools.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(),
            "full": selection.full,
        }));
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_splits_words_and_humps() {
        let mut out = Vec::new();
        tokenize("mcp:github:createPullRequest read_file HTTPServer files process", |t| out.push(t));
        assert_eq!(
            out,
            ["mcp", "github", "create", "pull", "request", "read", "file", "httpserver", "file", "process"]
        );
    }

    #[test]
    fn summaries_are_one_bounded_line() {
        assert_eq!(summary_of("  Line one\n\tline\u{7}two  "), "Line one line two");
        let long = "é".repeat(600);
        let s = summary_of(&long);
        assert!(s.len() <= SUMMARY_BYTES && s.ends_with("..."));
    }

    #[test]
    fn ranks_by_name_weight_then_order() {
        let specs = [
            ToolSpec::new("write", "Write a file to disk"),
            ToolSpec::new("read", "Read a file from disk"),
            ToolSpec::new("list", "List files in a folder"),
        ];
        let index = ToolSearchIndex::build(specs.iter()).unwrap();
        let hits = index.search("read file", 3);
        assert_eq!(hits[0].name, "read");
        let names: Vec<_> = hits.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["read", "write", "list"], "ties of 'file' keep registry order");
        assert!(index.search("nothing-like-it", 3).is_empty());
    }
}
