//! Between the harness's shapes and MCP's: tool specs ↔ `Tool`, tool output ↔ `CallToolResult`, and a
//! blocked or failed call as a tool result with `isError` that names the reason and the deciding rule
//! (never a protocol error).

use portcullis_harness::{
    CallOutcome, Content, DecidedBy, ToolAnnotations, ToolCallResult, ToolOutput, ToolSpec,
};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ResourceContents, Tool};
use serde_json::{Value, json};
use std::sync::Arc;

/// The MCP tool an agent sees for a registry tool, under its wire name.
pub fn tool_of(spec: &ToolSpec, wire_name: &str) -> Tool {
    let schema: JsonObject = match &spec.parameters {
        Some(Value::Object(map)) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), json!("object"));
            map
        }
    };
    let annotations = rmcp::model::ToolAnnotations::new()
        .read_only(spec.annotations.read_only)
        .destructive(spec.annotations.destructive);
    let annotations = match spec.annotations.idempotent {
        Some(i) => annotations.idempotent(i),
        None => annotations,
    };
    let annotations = match spec.annotations.open_world {
        Some(o) => annotations.open_world(o),
        None => annotations,
    };
    Tool::new(wire_name.to_owned(), spec.description.clone(), Arc::new(schema)).with_annotations(annotations)
}

/// The harness annotations of an upstream tool (hints absent upstream stay unset or false).
pub fn annotations_of(tool: &Tool) -> ToolAnnotations {
    let a = tool.annotations.as_ref();
    ToolAnnotations {
        read_only: a.and_then(|a| a.read_only_hint).unwrap_or(false),
        destructive: a.and_then(|a| a.destructive_hint).unwrap_or(false),
        idempotent: a.and_then(|a| a.idempotent_hint),
        open_world: a.and_then(|a| a.open_world_hint),
    }
}

/// What decided a call, in words (for agents' results and hook answers).
pub fn describe_decider(decided_by: &DecidedBy) -> String {
    match decided_by {
        DecidedBy::Rule { rule_id, source } => format!("rule `{rule_id}` in {source}"),
        DecidedBy::ProtectedPlace { kind, place, path } => kind.describe(place, path),
        DecidedBy::Operator { outcome, operator, .. } => {
            let outcome = serde_json::to_value(outcome).ok().and_then(|v| v.as_str().map(str::to_owned));
            format!(
                "the operator{} ({})",
                operator.as_deref().map(|o| format!(" {o}")).unwrap_or_default(),
                outcome.unwrap_or_default()
            )
        }
        DecidedBy::ApprovalTimeout { after_ms } => format!("approval timeout after {} s", after_ms / 1000),
        DecidedBy::SessionGrant { grant_id, .. } => format!("session grant {grant_id}"),
        DecidedBy::Grants { scope } => format!("grant scope `{scope}`"),
        DecidedBy::Guardrail { pack, rule } => format!("guardrail {pack}/{rule}"),
        DecidedBy::Permission { permission } => format!("permission {permission}"),
        DecidedBy::Registry => "the registry".into(),
        DecidedBy::Validator { validator } => format!("validator {validator}"),
        DecidedBy::Default { detail } => match detail {
            Some(d) => format!("the default ({d})"),
            None => "the default".into(),
        },
    }
}

/// Who decided, in words, unless `message` already says it: a default decided by a path rule (a deny
/// glob, a root) carries that rule's words as its detail, and the refusal's message is the same words.
pub fn decider_beyond(decided_by: &DecidedBy, message: &str) -> Option<String> {
    match decided_by {
        DecidedBy::Default { detail: Some(detail) } if message.contains(detail.as_str()) => None,
        other => Some(describe_decider(other)),
    }
}

fn content_block(content: &Content) -> ContentBlock {
    match content {
        Content::Text { text } => ContentBlock::text(text.clone()),
        Content::Image { data, mime_type } => ContentBlock::image(data.clone(), mime_type.clone()),
        Content::Audio { data, mime_type } => ContentBlock::audio(data.clone(), mime_type.clone()),
        Content::Resource { uri, mime_type, text } => {
            let mut resource = ResourceContents::text(text.clone().unwrap_or_default(), uri.clone());
            if let (Some(mime), ResourceContents::TextResourceContents { mime_type: m, .. }) =
                (mime_type, &mut resource)
            {
                *m = Some(mime.clone());
            }
            ContentBlock::resource(resource)
        }
    }
}

/// A dispatched call as the agent receives it.
pub fn call_result(result: &ToolCallResult) -> CallToolResult {
    match &result.outcome {
        CallOutcome::Finished { output } => {
            let blocks: Vec<ContentBlock> = output.content.iter().map(content_block).collect();
            let mut r =
                if output.is_error { CallToolResult::error(blocks) } else { CallToolResult::success(blocks) };
            // Agents hand their model the structured result in place of the content when there is
            // one: an image, audio or resource would never reach the model beside it.
            let only_text = output.content.iter().all(|c| matches!(c, Content::Text { .. }));
            r.structured_content = output.structured.clone().filter(|_| only_text);
            r
        }
        CallOutcome::Blocked { reason, error } => {
            let by = decider_beyond(&result.decided_by, &error.message)
                .map(|by| format!(" Decided by {by}."))
                .unwrap_or_default();
            let message = format!(
                "portcullis blocked this call ({reason}): {}.{by}",
                error.message.trim_end_matches('.'),
            );
            let mut r = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
            // The readable reason too: an agent that shows the structured result shows why.
            r.structured_content = Some(json!({
                "message": message,
                "portcullis": { "blocked": reason.as_str(), "code": error.code, "decided_by": result.decided_by }
            }));
            r
        }
        CallOutcome::Error { error } => {
            let message = format!("the tool failed ({}): {}", error.code, error.message);
            let mut r = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
            r.structured_content = Some(json!({ "message": message, "portcullis": { "error": error.code } }));
            r
        }
    }
}

/// An upstream result as harness output (bounded by the caller). Resource links become resources.
pub fn output_of(result: &CallToolResult) -> ToolOutput {
    let content = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => Content::Text { text: t.text.clone() },
            ContentBlock::Image(i) => Content::Image { data: i.data.clone(), mime_type: i.mime_type.clone() },
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, mime_type, text, .. } => Content::Resource {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    text: Some(text.clone()),
                },
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    Content::Resource { uri: uri.clone(), mime_type: mime_type.clone(), text: None }
                }
                _ => Content::Text { text: "[a resource of a kind Portcullis does not forward]".into() },
            },
            ContentBlock::ResourceLink(link) => {
                Content::Resource { uri: link.uri.clone(), mime_type: link.mime_type.clone(), text: None }
            }
            ContentBlock::Audio(a) => Content::Audio { data: a.data.clone(), mime_type: a.mime_type.clone() },
            #[allow(unreachable_patterns)]
            _ => Content::Text { text: "[content of a kind Portcullis does not forward]".into() },
        })
        .collect();
    ToolOutput {
        content,
        structured: result.structured_content.clone(),
        is_error: result.is_error == Some(true),
        ..ToolOutput::default()
    }
}
