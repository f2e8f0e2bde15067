//! The `portcullis` command line (being written).
fn main() {}
