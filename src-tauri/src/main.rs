//! The desktop app's binary: everything lives in the library (`portcullis_app::run`), so tests reach it.

fn main() -> std::process::ExitCode {
    portcullis_app::run()
}
