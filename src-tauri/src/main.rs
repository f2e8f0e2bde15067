//! The desktop app's binary: everything lives in the library (`portcullis_app::run`), so tests reach it.

/// mimalloc: a call allocates a handful of small objects and frees them on another thread (the
/// ledger's writer); measured in docs/benchmarks.md ("The hot path").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    portcullis_app::run()
}
