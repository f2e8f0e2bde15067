//! The `edit` tool: replaces one exact, unique occurrence of `old_string` with `new_string`, atomically;
//! zero matches fail with `no_match`, several with `not_unique` (and the count).

use crate::args::required_str;
use crate::errors::{invalid, io_error, join_error, too_large};
use crate::files::{ExecBits, Expect, action_path, atomic_write, identity, open_evaluated};
use crate::workspace::Workspace;
use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, CallContext, ExecutionAction, Risk, Tool, ToolAnnotations, ToolError, ToolInvocation,
    ToolOutput, ToolSpec,
};
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

pub struct EditTool {
    workspace: Arc<Workspace>,
    spec: ToolSpec,
}

impl EditTool {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let spec = ToolSpec::new(
            "edit",
            format!(
                "Replace one exact occurrence of old_string with new_string in a file. old_string must occur \
                 exactly once (include surrounding lines to make it unique). Files up to {} bytes.",
                workspace.limits.edit_bytes
            ),
        )
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File path (relative to the agent's cwd or the project root)."},
                "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace; must occur once."},
                "new_string": {"type": "string", "description": "The replacement text."}
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        }))
        .with_annotations(ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: Some(false),
            open_world: Some(false),
        });
        EditTool { workspace, spec }
    }
}

#[async_trait]
impl Tool for EditTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let path = self.workspace.resolve(required_str(arguments, "path")?, call)?;
        if required_str(arguments, "old_string")?.is_empty() {
            return Err(invalid("`old_string` is empty"));
        }
        required_str(arguments, "new_string")?;
        Ok(ExecutionAction::new(ActionKind::Write, "edit").with_paths(vec![path]).with_risk(Risk::Medium))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let path = action_path(&invocation.action, ActionKind::Write)?;
        let old = required_str(&invocation.arguments, "old_string")?.to_owned();
        let new = required_str(&invocation.arguments, "new_string")?.to_owned();
        if old.is_empty() {
            return Err(invalid("`old_string` is empty"));
        }
        let limit = self.workspace.limits.edit_bytes;
        let lock = self.workspace.lock_for(&path);
        let _held = lock.lock().await;
        let target = path.clone();
        let (line, bytes) = tokio::task::spawn_blocking(move || edit_blocking(target, &old, &new, limit))
            .await
            .map_err(|e| join_error(&e))??;
        let mut output =
            ToolOutput::text(format!("Edited {} (1 replacement at line {line})", path.display()));
        output.structured = Some(json!({ "path": path, "line": line, "bytes": bytes }));
        Ok(output)
    }
}

fn edit_blocking(path: PathBuf, old: &str, new: &str, limit: usize) -> Result<(usize, usize), ToolError> {
    let (file, meta) = open_evaluated(&path)?;
    if meta.len() > limit as u64 {
        return Err(too_large("the file", meta.len(), limit as u64));
    }
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(|e| io_error(&path, &e))?;
    if bytes.len() > limit {
        return Err(too_large("the file", bytes.len() as u64, limit as u64));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::new(CallErrorCode::NotText, format!("{} is not UTF-8 text", path.display()))
    })?;
    let mut matches = text.match_indices(old);
    let Some((at, _)) = matches.next() else {
        return Err(ToolError::new(
            CallErrorCode::NoMatch,
            format!("old_string was not found in {}", path.display()),
        ));
    };
    let count = 1 + matches.count();
    if count > 1 {
        return Err(ToolError::new(
            CallErrorCode::NotUnique,
            format!(
                "old_string occurs {count} times in {}; include more context to make it unique",
                path.display()
            ),
        )
        .with_details(json!({ "matches": count })));
    }
    let mut updated = String::with_capacity(text.len() - old.len() + new.len());
    updated.push_str(&text[..at]);
    updated.push_str(new);
    updated.push_str(&text[at + old.len()..]);
    if updated.len() > limit {
        return Err(too_large("the edited file", updated.len() as u64, limit as u64));
    }
    let (dev, ino) = identity(&meta);
    // The file keeps its execute bits (an edited script stays runnable); none is added.
    atomic_write(&path, updated.as_bytes(), false, Expect::Identity(dev, ino), ExecBits::Keep)?;
    let line = 1 + text[..at].bytes().filter(|b| *b == b'\n').count();
    Ok((line, updated.len()))
}
