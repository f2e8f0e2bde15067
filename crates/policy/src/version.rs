//! A policy's version: a content hash of the layers it was loaded from (each layer's source, the folder
//! its relative roots point at, and its text), recorded with every call the policy judges, so an audit
//! can say which policy decided a call, and tell a reload of the same files from an edit.

use crate::layer::PolicyLayer;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The version of a policy made of `layers`: the first 128 bits of the SHA-256 of their contents, in
/// hex. Each part is length-prefixed, so no two different sets of layers share an input.
pub(crate) fn of_layers(layers: &[PolicyLayer]) -> Arc<str> {
    let mut hash = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    for layer in layers {
        part(layer.source.as_bytes());
        part(layer.project_root.as_os_str().as_encoded_bytes());
        match &layer.text {
            Some(text) => part(text.as_bytes()),
            // A layer made in memory (a draft's): its document as JSON (fields in declaration order,
            // no maps of unstable order).
            None => part(serde_json::to_string(&layer.document).unwrap_or_default().as_bytes()),
        }
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    Arc::from(hex)
}

#[cfg(test)]
mod tests {
    use crate::layer::PolicyLayer;
    use crate::policy::Policy;
    use std::path::PathBuf;

    fn policy(source: &str, text: &str, root: &str) -> Policy {
        Policy::from_layers(vec![PolicyLayer::parse(source, text, PathBuf::from(root)).unwrap()]).unwrap()
    }

    #[test]
    fn the_same_layers_have_the_same_version_and_any_change_another() {
        let text = r#"{ "commands": { "default": "prompt" } }"#;
        let v = policy("p.json", text, "/tmp").version().clone();
        assert_eq!(v.len(), 32);
        assert!(v.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(policy("p.json", text, "/tmp").version(), &v, "loaded again");
        for (source, text, root) in [
            ("p.json", r#"{ "commands": { "default": "allow" } }"#, "/tmp"),
            ("q.json", text, "/tmp"),
            ("p.json", text, "/var"),
            ("p.json", r#"{ "commands": { "default": "prompt" } } "#, "/tmp"),
        ] {
            assert_ne!(policy(source, text, root).version(), &v, "{source} {text} {root}");
        }
    }
}
