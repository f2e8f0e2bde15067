//! Approvals as receipts: an operator's answer bound to exactly what it answered (the hash of the call's
//! canonical arguments), under which policy (its version), by whom and through which channel, and when.
//! A receipt is recorded with the call it decided, with the approval, and with the session grant or
//! rule it created; an answer whose receipt names other arguments approves nothing.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The validator named as the decider of a call an operator's "allow" reached with a receipt that does
/// not approve it (other arguments, another call, or altered): the call is refused, never run.
pub const RECEIPT_VALIDATOR: &str = "approval receipt";

/// How an operator answered an approval prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum OperatorOutcome {
    ApprovedOnce,
    ApprovedForSession,
    /// Approved and a rule was written so it is allowed from now on.
    ApprovedAlways,
    Denied,
}

/// An operator's answer to one approval prompt, bound to what was approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Receipt {
    /// The receipt's own hash (SHA-256, hex) over every other field: how grants and rules name it.
    pub id: String,
    /// The approval prompt answered.
    pub approval_id: String,
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    /// [`arguments_digest`] of the call's arguments as the operator was shown them.
    pub arguments_sha256: String,
    /// The version of the policy in force when the answer was given (none without a policy).
    pub policy_version: Option<String>,
    /// Who answered (as the hub knows them: `alice (app)`, `terminal`).
    pub operator: String,
    /// Through which front end: `app`, `browser`, `terminal`, `api`.
    pub channel: String,
    pub outcome: OperatorOutcome,
    pub at: Timestamp,
}

impl Receipt {
    /// `receipt` with its id computed from its other fields (whatever `id` it was made with).
    pub fn identified(receipt: Receipt) -> Receipt {
        let id = receipt.computed_id();
        Receipt { id, ..receipt }
    }

    /// The hash of every field but `id` (length-prefixed parts: no two receipts share an input).
    pub fn computed_id(&self) -> String {
        let mut hash = Sha256::new();
        let mut part = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        part(b"portcullis-receipt-v1");
        part(self.approval_id.as_bytes());
        part(self.session_id.as_bytes());
        part(self.call_id.as_bytes());
        part(self.tool.as_bytes());
        part(self.arguments_sha256.as_bytes());
        part(self.policy_version.as_deref().unwrap_or("").as_bytes());
        part(self.operator.as_bytes());
        part(self.channel.as_bytes());
        part(outcome_word(self.outcome).as_bytes());
        part(&self.at.0.to_le_bytes());
        hex(&hash.finalize())
    }

    /// Whether the receipt's id still matches its fields (nothing in it was changed).
    pub fn is_intact(&self) -> bool {
        self.id == self.computed_id()
    }

    /// Whether this receipt approves a call with `arguments`.
    pub fn covers(&self, arguments: &Value) -> bool {
        self.arguments_sha256 == arguments_digest(arguments)
    }
}

fn outcome_word(outcome: OperatorOutcome) -> &'static str {
    match outcome {
        OperatorOutcome::ApprovedOnce => "approved_once",
        OperatorOutcome::ApprovedForSession => "approved_for_session",
        OperatorOutcome::ApprovedAlways => "approved_always",
        OperatorOutcome::Denied => "denied",
    }
}

/// The SHA-256 (hex) of `arguments` in canonical JSON: object keys sorted, no whitespace, strings and
/// numbers as serde_json writes them. Two argument values that are equal as JSON have the same digest,
/// whatever order their keys came in.
pub fn arguments_digest(arguments: &Value) -> String {
    let mut canonical = Vec::new();
    write_canonical(arguments, &mut canonical);
    hex(&Sha256::digest(&canonical))
}

/// `value` in canonical JSON (see [`arguments_digest`]): what digests of arguments are taken over.
pub fn canonical_json(value: &Value) -> String {
    let mut canonical = Vec::new();
    write_canonical(value, &mut canonical);
    String::from_utf8_lossy(&canonical).into_owned()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Scalars always serialize.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// Exactly `N` bytes from `2 * N` hex digits (either case); `None` for anything else.
pub fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != N * 2 {
        return None;
    }
    let nibble = |b: u8| char::from(b).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_digest_ignores_key_order_and_whitespace_and_sees_any_change() {
        let a = arguments_digest(&json!({"command": "ls -la", "cwd": "/w", "n": [1, 2.5, null]}));
        let b = arguments_digest(
            &serde_json::from_str(r#"{ "n": [1, 2.5, null],  "cwd": "/w", "command": "ls -la" }"#).unwrap(),
        );
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        for other in [
            json!({"command": "ls -la ", "cwd": "/w", "n": [1, 2.5, null]}),
            json!({"command": "ls -la", "cwd": "/w", "n": [2.5, 1, null]}),
            json!({"command": "ls -la", "cwd": "/w"}),
            json!({"command": "ls -la", "cwd": "/w", "n": [1, 2.5, null], "x": 1}),
            json!(["ls -la"]),
        ] {
            assert_ne!(arguments_digest(&other), a, "{other}");
        }
        // The canonical form of a known value, checked by hand (SHA-256 of `{"a":"b"}`).
        assert_eq!(
            arguments_digest(&json!({"a": "b"})),
            "db4a7ecb114bc66c623a06c4ff6fe8daa2f49cc270ebbf7a1f81e22ab061c837"
        );
    }

    fn receipt(arguments: &Value) -> Receipt {
        Receipt::identified(Receipt {
            id: String::new(),
            approval_id: "a1".into(),
            session_id: "s1".into(),
            call_id: "c1".into(),
            tool: "shell".into(),
            arguments_sha256: arguments_digest(arguments),
            policy_version: Some("v1".into()),
            operator: "alice (app)".into(),
            channel: "app".into(),
            outcome: OperatorOutcome::ApprovedOnce,
            at: Timestamp(1_700_000_000_000_000),
        })
    }

    #[test]
    fn hex_goes_there_and_back_and_refuses_anything_else() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(hex(&bytes), "0001abff");
        assert_eq!(unhex::<4>("0001abff"), Some(bytes));
        assert_eq!(unhex::<4>("0001ABFF"), Some(bytes));
        for bad in ["0001abf", "0001abff00", "0001abfg", "+001abff", "é001abf", "é01abf"] {
            assert_eq!(unhex::<4>(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_receipt_covers_its_arguments_only_and_any_edit_shows() {
        let args = json!({"command": "rm -rf build"});
        let r = receipt(&args);
        assert!(r.is_intact());
        assert!(r.covers(&args));
        assert!(!r.covers(&json!({"command": "rm -rf /"})));
        let mut edited = r.clone();
        edited.operator = "mallory".into();
        assert!(!edited.is_intact());
        let mut moved = r.clone();
        moved.arguments_sha256 = arguments_digest(&json!({"command": "rm -rf /"}));
        assert!(!moved.is_intact());
    }

    /// An operator's decider carries its receipt in every record's body; one without a receipt (and a
    /// session grant without one) is written as before receipts, and records from before read back.
    #[test]
    fn a_decider_carries_its_receipt_and_records_without_one_read_as_before() {
        use crate::call::DecidedBy;
        let r = receipt(&json!({"command": "make"}));
        let with = DecidedBy::Operator {
            outcome: OperatorOutcome::ApprovedOnce,
            operator: Some("alice (app)".into()),
            rule_written: None,
            receipt: Some(Box::new(r.clone())),
        };
        let text = serde_json::to_string(&with).unwrap();
        assert_eq!(serde_json::from_str::<DecidedBy>(&text).unwrap(), with);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["receipt"]["id"], r.id.as_str());
        assert_eq!(value["receipt"]["arguments_sha256"], r.arguments_sha256.as_str());
        let old = r#"{"by":"operator","outcome":"approved_once","operator":"alice (app)"}"#;
        let read: DecidedBy = serde_json::from_str(old).unwrap();
        assert!(matches!(read, DecidedBy::Operator { receipt: None, .. }));
        assert_eq!(serde_json::to_string(&read).unwrap(), old);
        let grant = r#"{"by":"session_grant","grant_id":"session-grant-1"}"#;
        let read: DecidedBy = serde_json::from_str(grant).unwrap();
        assert_eq!(read, DecidedBy::SessionGrant { grant_id: "session-grant-1".into(), receipt: None });
        assert_eq!(serde_json::to_string(&read).unwrap(), grant);
    }
}
