//! The routing headers of MCP 2026-07-28 (SEP-2243: `Mcp-Method`, `Mcp-Name`) checked against the body
//! they travel with, whatever protocol version the request speaks. Proxies and load balancers route on
//! these headers without reading the body, so a request whose headers name another method or another
//! tool than its body is refused: with JSON-RPC `-32020` (header mismatch) and HTTP 400, as 2026-07-28
//! prescribes. A 2025-11-25 session's client has no reason to send them, but one that does gets the same
//! answer when they contradict its body (rmcp ignores them below 2026-07-28). Headers that are absent are
//! not this check's business: rmcp requires them of 2026-07-28 requests itself.

use crate::envelope::EnvelopeError;
use http::HeaderMap;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, JsonRpcMessage};
use serde_json::Value;

/// The header naming the JSON-RPC method.
pub const MCP_METHOD: &str = "mcp-method";
/// The header naming the tool, prompt, resource or task the request is about.
pub const MCP_NAME: &str = "mcp-name";

/// Whether `headers` carry routing headers at all (most requests do not: then nothing is parsed).
pub fn present(headers: &HeaderMap) -> bool {
    headers.contains_key(MCP_METHOD) || headers.contains_key(MCP_NAME)
}

/// Refuses a request or notification whose `Mcp-Method` / `Mcp-Name` headers contradict its body
/// (`body` is the message's bytes, `message` what the screen read of them), or that repeats one.
pub fn check(headers: &HeaderMap, message: &ClientJsonRpcMessage, body: &[u8]) -> Result<(), EnvelopeError> {
    if !present(headers) {
        return Ok(());
    }
    let id = match message {
        JsonRpcMessage::Request(request) => serde_json::to_value(&request.id).unwrap_or(Value::Null),
        JsonRpcMessage::Notification(_) => Value::Null,
        _ => return Ok(()),
    };
    let mismatch =
        |message: String| EnvelopeError { code: ErrorCode::HEADER_MISMATCH, message, id: id.clone() };
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let Some(method) = value.get("method").and_then(Value::as_str) else { return Ok(()) };
    if let Some(given) = single(headers, MCP_METHOD).map_err(&mismatch)?
        && given != method
    {
        return Err(mismatch(format!("Mcp-Method header `{given}` does not match body method `{method}`")));
    }
    if let Some(given) = single(headers, MCP_NAME).map_err(&mismatch)?
        && let Some(expected) = name_of(method, value.get("params"))
    {
        let decoded = decode(given).ok_or_else(|| mismatch("Mcp-Name header is not valid Base64".into()))?;
        if decoded != expected {
            return Err(mismatch(format!(
                "Mcp-Name header `{decoded}` does not match body value `{expected}`"
            )));
        }
    }
    Ok(())
}

/// The one value of header `name`, if any; two or more, or one that is not text, are refused.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(format!("duplicate {name} header"));
    }
    first.to_str().map(Some).map_err(|_| format!("{name} header contains invalid characters"))
}

/// What `Mcp-Name` stands for in a request of `method`: the tool or prompt name, the resource URI, the
/// task id; none for other methods.
fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(key)?.as_str()
}

/// A header value as sent: plain, or `=?base64?…?=` for values a header cannot carry as they are.
fn decode(value: &str) -> Option<String> {
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => String::from_utf8(base64(encoded)?).ok(),
        None => Some(value.to_owned()),
    }
}

/// Standard Base64 (padding optional).
fn base64(text: &str) -> Option<Vec<u8>> {
    let sextet = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let text = text.trim_end_matches('=').as_bytes();
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut bits: u32 = 0;
        for (i, c) in chunk.iter().enumerate() {
            bits |= u32::from(sextet(*c)?) << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::tests::headers;

    fn checked(pairs: &[(&'static str, &str)], body: &str) -> Result<(), (i32, Value)> {
        let message: ClientJsonRpcMessage = serde_json::from_str(body).unwrap();
        check(&headers(pairs), &message, body.as_bytes()).map_err(|e| (e.code.0, e.id))
    }

    const CALL: &str =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;

    #[test]
    fn contradicting_headers_are_refused_with_header_mismatch() {
        assert_eq!(checked(&[], CALL), Ok(()));
        assert_eq!(checked(&[("mcp-method", "tools/call"), ("mcp-name", "echo")], CALL), Ok(()));
        assert_eq!(checked(&[("mcp-method", "tools/list")], CALL), Err((-32020, serde_json::json!(7))));
        assert_eq!(checked(&[("mcp-name", "shell")], CALL), Err((-32020, serde_json::json!(7))));
        let twice = [("mcp-method", "tools/call"), ("mcp-method", "tools/call")];
        assert_eq!(checked(&twice, CALL).map_err(|e| e.0), Err(-32020));
        // Base64 for names a header cannot carry as they are ("echo" here).
        assert_eq!(checked(&[("mcp-name", "=?base64?ZWNobw==?=")], CALL), Ok(()));
        assert_eq!(checked(&[("mcp-name", "=?base64?ZWNobA==?=")], CALL).map_err(|e| e.0), Err(-32020));
        assert_eq!(checked(&[("mcp-name", "=?base64?!!?=")], CALL).map_err(|e| e.0), Err(-32020));
        // A name for a method that has none is not a contradiction; a notification has no id.
        let list = r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#;
        assert_eq!(checked(&[("mcp-method", "tools/list"), ("mcp-name", "x")], list), Ok(()));
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(checked(&[("mcp-method", "ping")], note), Err((-32020, Value::Null)));
    }

    #[test]
    fn base64_decodes_with_or_without_padding() {
        assert_eq!(base64("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(base64("aGk").as_deref(), Some(&b"hi"[..]));
        assert_eq!(base64("").as_deref(), Some(&b""[..]));
        assert_eq!(base64("a"), None);
    }
}
