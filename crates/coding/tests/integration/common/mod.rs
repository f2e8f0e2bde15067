//! Shared fixtures for the coding tools' tests: a workspace root, a folder outside it, a dispatcher.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use portcullis_coding::{Limits, Workspace, coding_tools};
use portcullis_harness::{
    CallContext, CallErrorCode, Catalog, Dispatcher, ExecutionAction, Grants, ProgressReporter, RunContext,
    Tool, ToolCall, ToolCallResult, ToolError, ToolInvocation, ToolOutput, ToolRegistry,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

pub struct Fixture {
    pub root_dir: TempDir,
    pub outside_dir: TempDir,
    pub workspace: Arc<Workspace>,
    pub dispatcher: Dispatcher,
}

pub fn fixture() -> Fixture {
    fixture_with(Limits::default(), &[])
}

pub fn fixture_with(limits: Limits, passthrough: &[&str]) -> Fixture {
    let root_dir = tempfile::tempdir().unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let workspace = Arc::new(
        Workspace::new(root_dir.path())
            .unwrap()
            .with_limits(limits)
            .with_env_passthrough(passthrough.iter().copied()),
    );
    let mut registry = ToolRegistry::new();
    for tool in coding_tools(&workspace) {
        registry.register(tool).unwrap();
    }
    let dispatcher = Dispatcher::builder(registry).build();
    Fixture { root_dir, outside_dir, workspace, dispatcher }
}

impl Fixture {
    pub fn root(&self) -> PathBuf {
        self.workspace.root().to_path_buf()
    }

    pub fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.outside_dir.path()).unwrap()
    }

    pub async fn call(&self, name: &str, args: Value) -> ToolCallResult {
        self.call_in(&RunContext::new("s", "r"), name, args).await
    }

    pub async fn call_in(&self, run: &RunContext, name: &str, args: Value) -> ToolCallResult {
        self.dispatcher.dispatch(ToolCall::new("c1", name, args), run).await
    }
}

pub fn ctx() -> CallContext {
    RunContext::new("s", "r").call(Arc::from("c1"))
}

/// Runs a tool directly with a given (already evaluated) action.
pub async fn execute(tool: &dyn Tool, action: ExecutionAction, args: Value) -> Result<ToolOutput, ToolError> {
    let invocation = ToolInvocation {
        arguments: args,
        action,
        call: Arc::new(ctx()),
        progress: ProgressReporter::detached(ctx(), &tool.spec().name),
        cancel: CancellationToken::new(),
        catalog: Catalog { registry: Arc::new(ToolRegistry::new()), grants: Arc::new(Grants::default()) },
        asks: None,
    };
    tool.execute(invocation).await
}

/// The error code of a finished-with-error or blocked result.
pub fn code(result: &ToolCallResult) -> CallErrorCode {
    result.error().map(|e| e.code.clone()).unwrap_or_else(|| panic!("expected an error, got {result:?}"))
}

pub fn output(result: &ToolCallResult) -> &ToolOutput {
    result.output().unwrap_or_else(|| panic!("expected output, got {result:?}"))
}

pub fn write(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

/// Permission bits of a file (with set-id and sticky bits).
pub fn mode_of(path: &Path) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions()) & 0o7777
}

pub fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}
