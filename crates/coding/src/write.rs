//! The `write` tool: replaces a file atomically (temp file in the same folder, fsync, rename), creating
//! missing parent folders inside the root; writes to one path are serialized. Written files have no
//! execute bits unless the call asks for an executable file, which its action then says
//! (operation `write_executable`, risk high) so the policy and the operator see it.

use crate::args::{optional_bool, required_str};
use crate::errors::{join_error, too_large};
use crate::files::{ExecBits, Expect, action_path, atomic_write};
use crate::workspace::Workspace;
use async_trait::async_trait;
use portcullis_harness::{
    ActionKind, CallContext, ExecutionAction, Risk, Tool, ToolAnnotations, ToolError, ToolInvocation,
    ToolOutput, ToolSpec,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// The operation of a write that makes the file executable.
pub const WRITE_EXECUTABLE: &str = "write_executable";

pub struct WriteTool {
    workspace: Arc<Workspace>,
    spec: ToolSpec,
}

impl WriteTool {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let spec = ToolSpec::new(
            "write",
            format!(
                "Write a file (replacing it atomically), creating missing parent folders inside the project. \
                 At most {} bytes.",
                workspace.limits.write_bytes
            ),
        )
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File path (relative to the agent's cwd or the project root)."},
                "content": {"type": "string", "description": "The complete new content."},
                "executable": {"type": "boolean", "description": "Make the file executable (default false: written files never have execute bits, even when the file they replace had them)."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }))
        .with_annotations(ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: Some(true),
            open_world: Some(false),
        });
        WriteTool { workspace, spec }
    }

    fn check_size(&self, content: &str) -> Result<(), ToolError> {
        let limit = self.workspace.limits.write_bytes;
        if content.len() > limit {
            return Err(too_large("the content", content.len() as u64, limit as u64));
        }
        Ok(())
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let path = self.workspace.resolve(required_str(arguments, "path")?, call)?;
        self.check_size(required_str(arguments, "content")?)?;
        if optional_bool(arguments, "executable")?.unwrap_or(false) {
            return Ok(ExecutionAction::new(ActionKind::Write, WRITE_EXECUTABLE)
                .with_paths(vec![path])
                .with_risk(Risk::High));
        }
        Ok(ExecutionAction::new(ActionKind::Write, "write").with_paths(vec![path]).with_risk(Risk::Medium))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let path = action_path(&invocation.action, ActionKind::Write)?;
        let content = required_str(&invocation.arguments, "content")?;
        self.check_size(content)?;
        let data = content.as_bytes().to_vec();
        // Execute bits only when the evaluated (and approved) action said so.
        let exec =
            if invocation.action.operation == WRITE_EXECUTABLE { ExecBits::Set } else { ExecBits::Clear };
        let create_missing = path.parent().is_some_and(|p| self.workspace.is_inside(p));
        let lock = self.workspace.lock_for(&path);
        let _held = lock.lock().await;
        let target = path.clone();
        let len = data.len();
        let existed = tokio::task::spawn_blocking(move || {
            let existed = std::fs::symlink_metadata(&target).is_ok();
            atomic_write(&target, &data, create_missing, Expect::Any, exec).map(|()| existed)
        })
        .await
        .map_err(|e| join_error(&e))??;
        let mut output = ToolOutput::text(format!(
            "{} {} ({len} bytes)",
            if existed { "Replaced" } else { "Created" },
            path.display()
        ));
        let executable = exec == ExecBits::Set;
        output.structured =
            Some(json!({ "path": path, "bytes": len, "created": !existed, "executable": executable }));
        Ok(output)
    }
}
