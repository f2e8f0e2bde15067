//! The body of the MCP crate's fuzz target (`fuzz/fuzz_targets/mcp_mapping.rs`), shared with the replay
//! of its corpus in this crate's integration tests. Not an API: hidden from the docs, and it may change
//! at any time.

use crate::convert::{annotations_of, call_result, output_of, tool_of};
use crate::envelope::check_envelope;
use crate::gateway::malformed_call;
use crate::upstream::{UpstreamLimits, spec_of_listed};
use crate::wire::{WireNames, is_wire_safe};
use portcullis_harness::{CallOutcome, DecidedBy, ToolCallResult, ToolSpec};
use rmcp::model::{CallToolRequestParams, CallToolResult, ListToolsResult};
use serde_json::Value;
use std::sync::Arc;

/// Registry names that are always there beside the upstream ones (built-in tools).
const BUILT_IN: [&str; 3] = ["shell", "read", "search_tools"];

/// `mcp_mapping`: the input as a POST body to `/mcp` (its JSON-RPC envelope checked), then the JSON
/// itself, its `result` and its `params`, each read as an upstream's `tools/list` result (mapped to
/// registry specs, wire names and back to MCP tools), an upstream's `tools/call` result (mapped to
/// harness output and back), an agent's `tools/call` params (resolved to a registry name, or recorded
/// as malformed) and a harness call result (answered to the agent). `Err` means an invariant broke: a
/// wire name that is not wire-safe or does not lead back to its tool, hints lost on the way, content
/// blocks lost, `isError` changed.
pub fn mcp_mapping(data: &[u8]) -> Result<(), String> {
    let _ = check_envelope(data);
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return Ok(()) };
    let candidates = [Some(&value), value.get("result"), value.get("params")];
    for candidate in candidates.into_iter().flatten() {
        let list = serde_json::from_value::<ListToolsResult>(candidate.clone()).ok();
        let table = tool_list(list.as_ref())?;
        if let Ok(result) = serde_json::from_value::<CallToolResult>(candidate.clone()) {
            tool_result(&result)?;
        }
        if let Ok(params) = serde_json::from_value::<CallToolRequestParams>(candidate.clone()) {
            std::hint::black_box(table.registry_name(&params.name));
        }
        std::hint::black_box(malformed_call(Some(candidate), &table));
        if let Ok(result) = serde_json::from_value::<ToolCallResult>(candidate.clone()) {
            std::hint::black_box(call_result(&result));
        }
    }
    Ok(())
}

/// The registry as the bridge fills it from an upstream's tool list (small limits, so the fuzzer
/// reaches them), beside the built-in tools, and its wire-name table (over the names as listed too).
/// Each kept spec goes back to an MCP tool with the same hints.
fn tool_list(list: Option<&ListToolsResult>) -> Result<WireNames, String> {
    let limits = UpstreamLimits { schema_bytes: 4096, description_bytes: 200, ..UpstreamLimits::default() };
    let listed = list.map(|l| l.tools.as_slice()).unwrap_or_default();
    let specs: Vec<ToolSpec> =
        listed.iter().filter_map(|tool| spec_of_listed("fuzz", tool, &limits).ok()).collect();
    let mut names: Vec<String> = BUILT_IN.iter().map(|n| (*n).to_owned()).collect();
    names.extend(specs.iter().map(|s| s.name.clone()));
    names.extend(listed.iter().map(|t| t.name.to_string()));
    let table = wire_table(&names)?;
    for spec in &specs {
        if spec.description.len() > limits.description_bytes + '…'.len_utf8() {
            return Err(format!("description of {} bytes kept", spec.description.len()));
        }
        let wire = table.wire_name(&spec.name).unwrap_or(&spec.name);
        let tool = tool_of(spec, wire);
        if annotations_of(&tool) != spec.annotations {
            return Err(format!("hints changed: {:?} became {:?}", spec.annotations, annotations_of(&tool)));
        }
    }
    Ok(table)
}

/// The wire-name table of `names`: every name has a wire-safe wire name that leads back to it.
fn wire_table(names: &[String]) -> Result<WireNames, String> {
    let table = WireNames::new(names.iter().map(String::as_str));
    for name in names {
        let Some(wire) = table.wire_name(name) else { return Err(format!("{name:?} has no wire name")) };
        if !is_wire_safe(wire) {
            return Err(format!("{name:?} has the wire name {wire:?}, which is not wire-safe"));
        }
        if table.registry_name(wire) != Some(name.as_str()) {
            return Err(format!(
                "the wire name {wire:?} of {name:?} leads to {:?}",
                table.registry_name(wire)
            ));
        }
    }
    Ok(table)
}

/// An upstream's call result as harness output, then as the agent receives it: as many content blocks
/// and the same `isError` all the way.
fn tool_result(result: &CallToolResult) -> Result<(), String> {
    let output = output_of(result);
    if output.content.len() != result.content.len() || output.is_error != (result.is_error == Some(true)) {
        return Err(format!("upstream result mapped to {output:?}"));
    }
    let dispatched = ToolCallResult {
        call_id: Arc::from("c1"),
        tool_name: Arc::from("mcp:fuzz:tool"),
        outcome: CallOutcome::Finished { output: Arc::new(output.clone()) },
        decided_by: DecidedBy::DEFAULT,
        redacted: false,
    };
    let answered = call_result(&dispatched);
    if answered.content.len() != output.content.len() || answered.is_error != Some(output.is_error) {
        return Err(format!("harness output {output:?} answered as {answered:?}"));
    }
    Ok(())
}
