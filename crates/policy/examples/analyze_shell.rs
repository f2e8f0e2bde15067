//! Prints the analysis of a shell command as JSON: `cargo run -p portcullis-policy --example analyze_shell -- 'ls && rm -rf ~'`.
#![allow(clippy::print_stdout)] // a developer tool that reports on stdout

fn main() {
    let script = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let analysis = portcullis_policy::shell::analyze(&script);
    match serde_json::to_string_pretty(&analysis) {
        Ok(json) => println!("{json}"),
        Err(e) => println!("{{\"error\": \"{e}\"}}"),
    }
}
