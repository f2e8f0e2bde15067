//! The words of a declaration (`declare`, `export`, `local`, `readonly`, `typeset`) that the grammar
//! did not read as a name or an assignment: bash still reads them as options, names or `NAME=value`
//! once quotes and braces are gone (`export "PATH=/x"`, `export {PATH=/x,y}`, `declare {-n,r=x}`).

use super::kinds::KindName;
use super::kinds::node_text;
use super::variables::Reach;
use super::words::Word;
use super::{Analyzer, OpaqueKind};
use tree_sitter::Node;

impl Analyzer {
    /// One word of a declaration that the grammar did not read as a name or an assignment: an option,
    /// a name, or `NAME=value` (`built`: it came from quotes, braces or parts, where bash still reads it
    /// as a plain word would be read).
    pub(super) fn declared_word(&mut self, node: Node<'_>, src: &str, word: &Word, built: bool) {
        let text = node_text(node, src);
        if word.text.starts_with(['-', '+']) && !word.dynamic {
            // Options of plain words are `declaration_attributes`'s; built ones are read here.
            if built && word.text.get(1..).is_some_and(|f| f.contains(['i', 'n'])) {
                self.opaque(
                    OpaqueKind::EvaluatedValue,
                    format!("{text}: integer and reference variables evaluate their values"),
                );
            }
            return;
        }
        let reach = if declaration_exports(node, src) { Reach::Exported } else { Reach::Shell };
        let (name, value) = match word.text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word.text.as_str(), None),
        };
        let name = Word { text: name.to_owned(), dynamic: word.dynamic };
        let known = value.filter(|_| !word.dynamic);
        self.evaluated_name(&name, Some((known, reach)), text);
    }
}

/// Whether a declaration exports what it names: `export`, or `declare`/`typeset`/`local` with `-x`.
pub(super) fn declaration_exports(node: Node<'_>, src: &str) -> bool {
    let mut cursor = node.walk();
    let mut children = node.children(&mut cursor);
    let keyword = children.next().map(|c| node_text(c, src)).unwrap_or("");
    keyword == "export"
        || children.any(|c| {
            let t = node_text(c, src);
            c.kind_name() == "word" && t.starts_with('-') && t.contains('x')
        })
}
