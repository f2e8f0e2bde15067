//! The desktop app's binary: everything lives in the library (`portcullis_app::run`), so tests reach it.

fn main() -> std::process::ExitCode {
    // First, before any thread: the app's binary is also the sandbox launcher its hub starts.
    if let Some(code) = portcullis_hub::sandboxing::entry_point() {
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    portcullis_app::run()
}
