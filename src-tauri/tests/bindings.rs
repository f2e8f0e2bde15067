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

/// Each command the bindings invoke: its name and the argument keys it sends.
fn invoked(bindings: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for piece in bindings.split("__TAURI_INVOKE").skip(1) {
        let Some(start) = piece.find("(\"") else { continue };
        let rest = &piece[start + 2..];
        let name = rest[..rest.find('"').unwrap()].to_owned();
        let after = &rest[name.len() + 1..];
        let args = match after.strip_prefix(", { ") {
            Some(args) => args[..args.find(" }").unwrap()].split(", ").map(str::to_owned).collect(),
            None => Vec::new(),
        };
        found.push((name, args));
    }
    found
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The window reaches the hub only through the command table: every table command (and stream) is a
/// window command taking exactly the table's arguments (the keys the HTTP routes read too, camelCase),
/// streams with a channel besides; and every window command is the table's or one of the window's own.
#[test]
fn the_window_mounts_the_command_table_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bindings.ts");
    portcullis_app::export_bindings(&file).unwrap();
    let invoked = invoked(&std::fs::read_to_string(file).unwrap());
    let table = portcullis_api::COMMANDS;
    for command in table {
        let (_, args) = invoked
            .iter()
            .find(|(name, _)| name == command.name)
            .unwrap_or_else(|| panic!("{} is in the command table but not a window command", command.name));
        let mut expected: Vec<String> = command.args.iter().map(|a| camel(a)).collect();
        if command.stream {
            expected.push("onUpdate".into());
        }
        assert_eq!(
            args, &expected,
            "{}: the window sends other arguments than the table names",
            command.name
        );
    }
    for (name, _) in &invoked {
        assert!(
            table.iter().any(|c| c.name == name)
                || portcullis_app::commands::WINDOW_ONLY.contains(&name.as_str()),
            "the window command {name} is neither the table's nor the window's own"
        );
    }
    assert_eq!(invoked.len(), table.len() + portcullis_app::commands::WINDOW_ONLY.len());
}
