//! The `read` tool: text by lines (offset/limit, byte bound) or, recognized by magic bytes, an image
//! (byte bound checked by `stat` before reading and again on the bytes read; optional downscale).

use crate::args::{optional_u64, required_str};
use crate::errors::{invalid, io_error, join_error, too_large};
use crate::files::{action_path, open_evaluated};
use crate::imaging::{MAGIC_LEN, base64_encode, prepare, sniff};
use crate::workspace::{Limits, Workspace};
use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, CallContext, Content, ExecutionAction, Tool, ToolAnnotations, ToolError, ToolInvocation,
    ToolOutput, ToolSpec,
};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct ReadTool {
    workspace: Arc<Workspace>,
    spec: ToolSpec,
}

impl ReadTool {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let spec = ToolSpec::new(
            "read",
            format!(
                "Read a file. Text is returned by lines (offset = first line, 1-based; limit = number of lines, \
                 default {}), at most {} bytes. PNG, JPEG, GIF and WebP files are returned as images (at most \
                 {} bytes of base64); max_dimension downscales larger images.",
                workspace.limits.read_default_lines,
                workspace.limits.read_text_bytes,
                workspace.limits.image_bytes_bound()
            ),
        )
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File path (relative to the agent's cwd or the project root)."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to return."},
                "max_dimension": {"type": "integer", "minimum": 1, "description": "Images only: downscale so neither side exceeds this many pixels."}
            },
            "required": ["path"],
            "additionalProperties": false
        }))
        .with_annotations(ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: Some(true),
            open_world: Some(false),
        });
        ReadTool { workspace, spec }
    }
}

/// What one read asks for.
struct ReadRequest {
    path: PathBuf,
    offset: u64,
    lines: u64,
    max_dimension: Option<u32>,
    limits: Limits,
}

#[async_trait]
impl Tool for ReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let path = self.workspace.resolve(required_str(arguments, "path")?, call)?;
        Ok(ExecutionAction::new(ActionKind::Read, "read").with_paths(vec![path]))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = &invocation.arguments;
        let asked = optional_u64(args, "max_dimension")?
            .map(|d| u32::try_from(d).map_err(|_| invalid("`max_dimension` is too large")))
            .transpose()?;
        // The configured bound always applies; a call may only ask for smaller.
        let max_dimension = match (asked, self.workspace.limits.image_max_dimension) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let request = ReadRequest {
            path: action_path(&invocation.action, ActionKind::Read)?,
            offset: optional_u64(args, "offset")?.unwrap_or(1).max(1),
            lines: optional_u64(args, "limit")?.unwrap_or(self.workspace.limits.read_default_lines).max(1),
            max_dimension,
            limits: self.workspace.limits.clone(),
        };
        tokio::task::spawn_blocking(move || read_blocking(&request)).await.map_err(|e| join_error(&e))?
    }
}

fn read_blocking(request: &ReadRequest) -> Result<ToolOutput, ToolError> {
    let path = &request.path;
    let (mut file, meta) = open_evaluated(path)?;
    let mut head = [0u8; MAGIC_LEN];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]).map_err(|e| io_error(path, &e))? {
            0 => break,
            n => filled += n,
        }
    }
    if let Some(kind) = sniff(&head[..filled]) {
        let bound = request.limits.image_bytes_bound();
        if meta.len() > bound {
            return Err(too_large("the image file", meta.len(), bound));
        }
        file.seek(SeekFrom::Start(0)).map_err(|e| io_error(path, &e))?;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(bound + 1).read_to_end(&mut bytes).map_err(|e| io_error(path, &e))?;
        if bytes.len() as u64 > bound {
            return Err(too_large("the image file", bytes.len() as u64, bound));
        }
        let image = prepare(bytes, kind, request.max_dimension, &request.limits)?;
        let structured = json!({
            "path": path,
            "mime_type": image.mime_type,
            "width": image.width,
            "height": image.height,
            "bytes": image.bytes.len(),
            "resized_from": image.resized_from.map(|(w, h)| json!({"width": w, "height": h})),
        });
        return Ok(ToolOutput {
            content: vec![Content::Image {
                data: base64_encode(&image.bytes),
                mime_type: image.mime_type.to_owned(),
            }],
            structured: Some(structured),
            ..ToolOutput::default()
        });
    }
    file.seek(SeekFrom::Start(0)).map_err(|e| io_error(path, &e))?;
    read_text(file, path, request)
}

/// Streams the file, skipping to `offset` and keeping at most `lines` lines and the byte bound.
fn read_text(mut file: File, path: &Path, request: &ReadRequest) -> Result<ToolOutput, ToolError> {
    let max_bytes = request.limits.read_text_bytes;
    let mut out: Vec<u8> = Vec::new();
    let mut line: u64 = 1;
    let mut kept_lines: u64 = 0;
    let mut truncated_bytes = false;
    let mut more = false;
    let mut buf = vec![0u8; 64 * 1024];
    let mut first_chunk = true;
    'outer: loop {
        let n = file.read(&mut buf).map_err(|e| io_error(path, &e))?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        if first_chunk && chunk[..n.min(8192)].contains(&0) {
            return Err(ToolError::new(
                CallErrorCode::NotText,
                format!("{} looks binary (NUL bytes)", path.display()),
            ));
        }
        first_chunk = false;
        for &byte in chunk {
            if line >= request.offset + request.lines {
                more = true;
                break 'outer;
            }
            if line >= request.offset {
                if out.len() >= max_bytes {
                    truncated_bytes = true;
                    more = true;
                    break 'outer;
                }
                out.push(byte);
            }
            if byte == b'\n' {
                if line >= request.offset {
                    kept_lines += 1;
                }
                line += 1;
            }
        }
    }
    if out.last().is_some_and(|b| *b != b'\n') {
        kept_lines += 1;
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let next_offset =
        more.then_some(request.offset + kept_lines - u64::from(truncated_bytes && kept_lines > 0));
    // The text itself too: an agent that shows its model the structured result shows the file.
    let structured = json!({
        "content": text,
        "path": path,
        "start_line": request.offset,
        "lines": kept_lines,
        "bytes": out.len(),
        "truncated": more,
        "truncated_by_bytes": truncated_bytes,
        "next_offset": next_offset,
    });
    let mut output = ToolOutput::text(text);
    if truncated_bytes {
        output.content.push(Content::Text {
            text: format!(
                "[output truncated at {max_bytes} bytes; continue with offset {}]",
                next_offset.unwrap_or(1)
            ),
        });
    }
    output.structured = Some(structured);
    Ok(output)
}
