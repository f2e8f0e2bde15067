//! The tool registry: insertion-ordered, O(1) lookup, explicit duplicate handling, fail-closed resolve.

use crate::name::{NameError, validate_tool_name};
use crate::schema::SchemaKey;
use crate::schema::ToolSchemaSlot;
use crate::tool::Tool;
use crate::tool_spec::ToolSpec;
use indexmap::IndexMap;
use std::sync::{Arc, RwLock};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    #[error("Duplicate tool: {0}")]
    Duplicate(String),
    #[error("Unknown tool: {0}")]
    Unknown(String),
    #[error(transparent)]
    InvalidName(#[from] NameError),
}

/// What `register` does when the name is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicatePolicy {
    /// The new tool replaces the old one, keeping its position.
    #[default]
    Replace,
    /// Registration fails with `Duplicate tool: <name>`.
    Fail,
}

/// A tool as registered: the tool and the cache key of its schema, computed once here.
#[derive(Clone)]
pub struct RegisteredTool {
    pub tool: Arc<dyn Tool>,
    /// The name, shared by every event and record of this tool's calls.
    pub name: Arc<str>,
    pub(crate) schema_key: Option<SchemaKey>,
    /// The compiled schema, once a validator has compiled it: later calls reach it without the
    /// validator's cache (no mutex, no hashing; an uncontended read lock). Shared by clones.
    pub(crate) compiled: Arc<RwLock<Option<ToolSchemaSlot>>>,
}

impl RegisteredTool {
    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }
}

/// The registry. Build it, then hand it to a dispatcher (which can swap in a new one at run time).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// foldhash: a lookup per call (see `grants::NameSet`).
    tools: IndexMap<String, RegisteredTool, foldhash::fast::RandomState>,
    duplicates: DuplicatePolicy,
}

impl ToolRegistry {
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    pub fn with_duplicate_policy(duplicates: DuplicatePolicy) -> Self {
        ToolRegistry { tools: IndexMap::default(), duplicates }
    }

    /// Registers a tool. Returns the tool it replaced, if any.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<Option<Arc<dyn Tool>>, RegistryError> {
        let name = tool.spec().name.clone();
        validate_tool_name(&name)?;
        if self.duplicates == DuplicatePolicy::Fail && self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let schema_key = tool.spec().parameters.as_ref().map(SchemaKey::of);
        let entry =
            RegisteredTool { tool, name: Arc::from(name.as_str()), schema_key, compiled: Arc::default() };
        Ok(self.tools.insert(name, entry).map(|old| old.tool))
    }

    /// Removes a tool (for example when an upstream server goes away).
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.shift_remove(name).map(|e| e.tool)
    }

    /// Looks a tool up; fails closed with `Unknown tool: <name>`.
    pub fn resolve(&self, name: &str) -> Result<&RegisteredTool, RegistryError> {
        self.tools.get(name).ok_or_else(|| RegistryError::Unknown(name.to_owned()))
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Names in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Specs in insertion order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|e| e.tool.spec())
    }

    /// Position of a tool in insertion order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.tools.get_index_of(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolError, ToolInvocation, ToolOutput};
    use async_trait::async_trait;

    struct Named(ToolSpec);

    #[async_trait]
    impl Tool for Named {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn execute(&self, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(self.0.description.clone()))
        }
    }

    fn tool(name: &str, desc: &str) -> Arc<dyn Tool> {
        Arc::new(Named(ToolSpec::new(name, desc)))
    }

    #[test]
    fn keeps_insertion_order_and_replace_keeps_position() {
        let mut r = ToolRegistry::new();
        for n in ["zeta", "alpha", "mid"] {
            r.register(tool(n, "v1")).unwrap();
        }
        let old = r.register(tool("alpha", "v2")).unwrap();
        assert_eq!(old.unwrap().spec().description, "v1");
        assert_eq!(r.names().collect::<Vec<_>>(), ["zeta", "alpha", "mid"]);
        assert_eq!(r.resolve("alpha").unwrap().spec().description, "v2");
    }

    #[test]
    fn duplicate_fail_mode() {
        let mut r = ToolRegistry::with_duplicate_policy(DuplicatePolicy::Fail);
        r.register(tool("a", "1")).unwrap();
        let err = r.register(tool("a", "2")).err().unwrap();
        assert_eq!(err.to_string(), "Duplicate tool: a");
        assert_eq!(r.resolve("a").unwrap().spec().description, "1");
    }

    #[test]
    fn resolve_fails_closed_and_names_are_checked() {
        let mut r = ToolRegistry::new();
        assert_eq!(r.resolve("nope").err().unwrap().to_string(), "Unknown tool: nope");
        assert!(matches!(r.register(tool("Bad-Name", "")), Err(RegistryError::InvalidName(_))));
        r.register(tool("mcp:fs:read_file", "")).unwrap();
        assert!(r.contains("mcp:fs:read_file"));
        assert!(r.unregister("mcp:fs:read_file").is_some());
        assert!(r.is_empty());
    }
}
