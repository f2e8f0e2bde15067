//! Tauri's build step: reads tauri.conf.json and the capabilities (the UI's dist folder must exist).

fn main() {
    tauri_build::build()
}
