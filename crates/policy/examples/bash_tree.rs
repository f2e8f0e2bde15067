//! Prints tree-sitter-bash's syntax tree of a script, for reading how the grammar splits words:
//! `cargo run -p portcullis-policy --example bash_tree -- 'rg {--pre,sh} x'`.
#![allow(clippy::print_stdout)] // a developer tool that reports on stdout

fn main() {
    let script = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        println!("the bash grammar did not load");
        return;
    }
    let Some(tree) = parser.parse(&script, None) else { return };
    print(tree.root_node(), &script, 0);
}

fn print(node: tree_sitter::Node<'_>, src: &str, depth: usize) {
    let text = src.get(node.byte_range()).unwrap_or("");
    println!("{}{} {:?}", "  ".repeat(depth), node.kind(), text);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        print(child, src, depth + 1);
    }
}
