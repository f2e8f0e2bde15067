//! A tool's public description: name, description, arguments schema and behaviour hints. A leaf apart
//! from the `Tool` trait, so the seams that judge a call before it runs (the execution policy, host
//! validators) can name the tool they judge without depending on what a tool is run with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Behaviour hints shown to agents and operators (MCP's tool annotations, kept as given).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub destructive: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub idempotent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub open_world: Option<bool>,
}

/// A tool's public description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object. Passed through as given (extra keywords are metadata).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub parameters: Option<Value>,
    #[serde(default)]
    pub annotations: ToolAnnotations,
    /// An exclusive tool never runs beside another call of the same batch.
    #[serde(default)]
    pub exclusive: bool,
    /// Pass-through metadata (for example the upstream server of an MCP tool).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Value>,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: None,
            annotations: ToolAnnotations::default(),
            exclusive: false,
            meta: None,
        }
    }

    pub fn with_parameters(mut self, schema: Value) -> Self {
        self.parameters = Some(schema);
        self
    }

    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    pub fn exclusive(mut self, exclusive: bool) -> Self {
        self.exclusive = exclusive;
        self
    }
}
