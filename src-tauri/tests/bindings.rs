//! The committed TypeScript contract (`ui/src/backend/bindings.ts`) is what the Rust commands generate:
//! this test fails when it is stale. Regenerate it with
//! `PORTCULLIS_WRITE_BINDINGS=1 cargo test -p portcullis-app --test bindings`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

#[test]
fn committed_bindings_are_current() {
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui/src/backend/bindings.ts");
    if std::env::var_os("PORTCULLIS_WRITE_BINDINGS").is_some() {
        portcullis_app::export_bindings(&committed).unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("bindings.ts");
    portcullis_app::export_bindings(&fresh).unwrap();
    let fresh = std::fs::read_to_string(fresh).unwrap();
    let current = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        fresh == current,
        "ui/src/backend/bindings.ts is stale: regenerate it with \
         `PORTCULLIS_WRITE_BINDINGS=1 cargo test -p portcullis-app --test bindings` and commit it"
    );
}
