//! On a machine with no display (issue 52), the app and `scripts/app.sh` say so and point to the headless
//! hub and its browser console, instead of a GTK backtrace after a long build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_app_without_a_display_points_to_serve_and_the_console() {
    let out = Command::new(env!("CARGO_BIN_EXE_portcullis-app"))
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("no display") && said.contains("portcullis serve"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
}

#[test]
fn app_sh_without_a_display_stops_before_building() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/app.sh");
    let out = Command::new("bash")
        .arg(script)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("no display") && said.contains("-- serve"), "{said}");
    assert!(!said.contains("first build"), "{said}");
}
