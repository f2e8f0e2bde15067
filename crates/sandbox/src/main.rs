//! `portcullis-sandbox`: the dedicated launcher. The hub starts it as `portcullis-sandbox sandbox-exec`
//! for every command it confines (see the library's documentation); it does nothing else.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    match portcullis_sandbox::entry_point() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "portcullis-sandbox: the hub starts this program to confine commands; it takes `{}` and a request on a socket",
                portcullis_sandbox::ENTRY
            );
            ExitCode::from(2)
        }
    }
}
