//! Portcullis built-in coding tools: `shell`, `read`, `write` and `edit`.
//!
//! Each tool describes its [`ExecutionAction`](portcullis_harness::ExecutionAction) (kind, operation,
//! canonical paths, cwd + command) so the execution policy judges it before anything runs, and then
//! executes exactly that action: it refuses with `path_changed` when the path it is about to open is no
//! longer the one that was evaluated. The tools never decide policy themselves.

pub mod args;
pub mod change_record;
pub mod change_review;
pub mod confined;
pub mod edit;
pub mod errors;
pub mod files;
pub mod host_asker;
pub mod imaging;
pub mod output;
pub mod paths;
pub mod read;
pub mod replace;
pub mod shell;
pub mod workspace;
pub mod write;

pub use edit::EditTool;
pub use read::ReadTool;
pub use shell::ShellTool;
pub use workspace::{Limits, Workspace};
pub use write::WriteTool;

use portcullis_harness::{RegistryError, Tool, ToolRegistry};
use std::sync::Arc;

/// The four coding tools over one workspace, in registry order: shell, read, write, edit.
pub fn coding_tools(workspace: &Arc<Workspace>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ShellTool::new(workspace.clone())),
        Arc::new(ReadTool::new(workspace.clone())),
        Arc::new(WriteTool::new(workspace.clone())),
        Arc::new(EditTool::new(workspace.clone())),
    ]
}

/// Registers the four coding tools into `registry`.
pub fn register_coding_tools(
    registry: &mut ToolRegistry,
    workspace: &Arc<Workspace>,
) -> Result<(), RegistryError> {
    for tool in coding_tools(workspace) {
        registry.register(tool)?;
    }
    Ok(())
}
