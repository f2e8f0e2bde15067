//! What a draft lets agents reach, through the operator API: which tools agents would see under the
//! draft's grant scopes (every registered tool, built-in and upstream, against the scopes of every layer
//! with the draft in place: a deny anywhere refuses, a scope with an allow list refuses what it does not
//! name), and whether a path would be readable or writable — asked of the real `read` and `write` tools,
//! which resolve the path (relative to the project, symlinks followed; `~` refused) as they do for an
//! agent.

use super::OperatorApi;
use super::error::ApiError;
use super::policy_files::located;
use super::workbench::TrialInput;
use portcullis_mcp::wire::WireNames;
use portcullis_policy::{CallVerdict, Policy};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// One registered tool under the grants in force and under the draft's.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolGrant {
    /// The registry's name (`shell`, `mcp:<server>:<tool>`): what grant scopes name.
    pub name: String,
    /// The name agents call it by.
    pub wire_name: String,
    pub visible_now: bool,
    pub visible_with_draft: bool,
    /// The draft's scope that hides it.
    pub refused_by: Option<String>,
}

/// What a path would get from the `read` and `write` tools under the draft.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathProbe {
    pub path: String,
    /// The path the tools would touch (resolved as they resolve it), when they got that far.
    pub resolved: Option<String>,
    pub read: CallVerdict,
    pub write: CallVerdict,
}

impl OperatorApi {
    /// Every registered tool, visible to agents now and with the draft of `file` in place.
    pub fn grants_with_draft(&self, file: &str, text: &str) -> Result<Vec<ToolGrant>, ApiError> {
        let draft = Policy::from_layers_unchecked(self.layers_with_draft(file, text)?).map_err(located)?;
        let registry = self.hub.dispatcher().registry();
        let names = WireNames::new(registry.names());
        let now = self.hub.grants();
        Ok(registry
            .specs()
            .map(|spec| {
                let refused_by = draft.grants().refusing_scope(&spec.name).map(|s| s.name.clone());
                ToolGrant {
                    name: spec.name.clone(),
                    wire_name: names.wire_name(&spec.name).unwrap_or(&spec.name).to_owned(),
                    visible_now: now.permits(&spec.name),
                    visible_with_draft: refused_by.is_none(),
                    refused_by,
                }
            })
            .collect())
    }

    /// Whether `path` would be readable and writable by the `read` and `write` tools with the draft of
    /// `file` in place (judged as live calls are; nothing is read or written).
    pub async fn probe_path_draft(&self, file: &str, text: &str, path: &str) -> Result<PathProbe, ApiError> {
        let read = self
            .try_policy_draft(
                file,
                text,
                TrialInput::Call { tool: "read".into(), arguments: json!({ "path": path }) },
            )
            .await?
            .verdict;
        let write = self
            .try_policy_draft(
                file,
                text,
                TrialInput::Call { tool: "write".into(), arguments: json!({ "path": path, "content": "" }) },
            )
            .await?
            .verdict;
        let resolved = [&read, &write].into_iter().find_map(|v| match v {
            CallVerdict::Evaluated(e) => {
                e.accesses.first().map(|a| a.path.clone()).or_else(|| e.paths.first().cloned())
            }
            CallVerdict::Blocked { .. } => None,
        });
        Ok(PathProbe { path: path.to_owned(), resolved, read, write })
    }
}
