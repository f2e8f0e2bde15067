//! What an agent's MCP request said about a call besides the tool and its arguments: the JSON-RPC
//! request id, the protocol version and the W3C trace context the agent sent in `params._meta`. The
//! gateway puts it on the call's context, the ledger keeps it with the call's records, and an
//! OpenTelemetry export continues the agent's trace from it.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The MCP request that carried a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpRequest {
    /// The MCP method (`tools/call`, `resources/read`, `prompts/get`).
    pub method: String,
    /// The JSON-RPC request id as text (a number's digits, or the string).
    pub request_id: String,
    /// The protocol version the session negotiated (or the request named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The agent's `traceparent`, when it sent a well-formed one (canonical form, see [`TraceParent`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// When the gateway received the request (before any check or approval).
    pub received_at: Timestamp,
    /// The agent identity the request's credential names (a named agent token, or `default`); none
    /// where the transport has no credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The idempotency key the request carried (SEP-3182's `idempotencyKey`, or
    /// `_meta.idempotencyKey`): a retry with it gets the first call's result instead of running again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// The longest `traceparent` looked at (version 00 is exactly 55 characters).
const TRACEPARENT_LEN: usize = 55;

/// A W3C trace context `traceparent` of version 00: `00-<32 hex trace id>-<16 hex parent id>-<2 hex
/// flags>`, lowercase, neither id all zeros. It is agent text: anything else is ignored, never repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub parent_id: [u8; 8],
    pub flags: u8,
}

impl TraceParent {
    /// The trace context in `text`, when it is a well-formed version-00 `traceparent`.
    pub fn parse(text: &str) -> Option<TraceParent> {
        let bytes = text.as_bytes();
        if bytes.len() != TRACEPARENT_LEN || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let version: [u8; 1] = hex(&bytes[0..2])?;
        if version != [0] {
            return None;
        }
        let trace_id: [u8; 16] = hex(&bytes[3..35])?;
        let parent_id: [u8; 8] = hex(&bytes[36..52])?;
        let [flags] = hex::<1>(&bytes[53..55])?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, parent_id, flags })
    }

    /// The trace context in the `traceparent` key of a request's `_meta`, when it is well-formed.
    pub fn in_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<TraceParent> {
        meta.get("traceparent").and_then(serde_json::Value::as_str).and_then(TraceParent::parse)
    }

    /// Whether the agent sampled its trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("00-")?;
        self.trace_id.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        f.write_str("-")?;
        self.parent_id.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        write!(f, "-{:02x}", self.flags)
    }
}

/// `N` bytes from `2 * N` lowercase hex digits.
fn hex<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    fn nibble(d: u8) -> Option<u8> {
        match d {
            b'0'..=b'9' => Some(d - b'0'),
            b'a'..=b'f' => Some(d - b'a' + 10),
            _ => None,
        }
    }
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_traceparent_is_read_and_written_back_alike() {
        let parsed = TraceParent::parse(GOOD).unwrap();
        assert_eq!(parsed.trace_id[0], 0x4b);
        assert_eq!(parsed.parent_id[7], 0xb7);
        assert!(parsed.sampled());
        assert_eq!(parsed.to_string(), GOOD);
        let unsampled =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        assert!(!unsampled.sampled());
    }

    /// Each malformed form, and why it is refused.
    const MALFORMED: [(&str, &str); 12] = [
        ("", "empty"),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "another version"),
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "the invalid version ff"),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "uppercase trace id"),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", "all-zero trace id"),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "all-zero parent id"),
        ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "short trace id"),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-701", "misplaced dash"),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "trailing fields"),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", "flags not hex"),
        ("00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", "no dashes"),
        ("00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01", "non-ASCII"),
    ];

    #[test]
    fn each_malformed_traceparent_is_ignored() {
        for (text, why) in MALFORMED {
            assert_eq!(TraceParent::parse(text), None, "{why}: {text:?}");
        }
    }

    #[test]
    fn the_traceparent_is_read_from_meta_only_when_a_string() {
        let meta = |v: serde_json::Value| v.as_object().cloned().unwrap();
        assert!(TraceParent::in_meta(&meta(serde_json::json!({ "traceparent": GOOD }))).is_some());
        assert!(TraceParent::in_meta(&meta(serde_json::json!({ "traceparent": 7 }))).is_none());
        assert!(TraceParent::in_meta(&meta(serde_json::json!({ "progressToken": 1 }))).is_none());
    }
}
