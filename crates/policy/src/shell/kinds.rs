//! Node kinds by id from a table made once: tree-sitter's `Node::kind` measures and checks the grammar's
//! C name on every call (`strlen`, then UTF-8), and the analyzer asks several times for the kind of every
//! node it visits (6 % of a compound command's evaluation, measured with callgrind). And a node's source
//! text: the other thing every walk asks of a node.

use std::sync::LazyLock;
use tree_sitter::Node;

/// Every node kind's name of the bash grammar, by kind id.
static NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    let language: tree_sitter::Language = tree_sitter_bash::LANGUAGE.into();
    (0..language.node_kind_count())
        .map(|id| {
            u16::try_from(id).ok().and_then(|id| language.node_kind_for_id(id)).unwrap_or_default().to_owned()
        })
        .collect()
});

/// A node's kind, as `Node::kind` names it.
pub(super) trait KindName<'tree> {
    fn kind_name(&self) -> &'tree str;
}

impl<'tree> KindName<'tree> for Node<'tree> {
    fn kind_name(&self) -> &'tree str {
        match NAMES.get(usize::from(self.kind_id())) {
            Some(name) if !name.is_empty() => name.as_str(),
            // Not in the table (the error symbol's id is past its end): ask tree-sitter.
            _ => self.kind(),
        }
    }
}

/// The source text of `node`, or "" if it is not valid UTF-8 (the input is a `&str`, so it always is).
pub(crate) fn node_text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_of_varied_scripts_has_the_kind_tree_sitter_gives() {
        let scripts = [
            "cd src && git status && RUST_BACKTRACE=1 cargo test -- --nocapture 2>/dev/null | tee out.log",
            "bash -c 'npm run build' || echo failed; x=$(ls *.rs | wc -l); echo \"${x:-0}\" >> log",
            "for f in a b; do [[ -f $f ]] && cat <<-EOF > \"$f\"\n\thi\n\tEOF\ndone; (( i++ )); case $1 in a) :;; esac",
            "f() { local -a arr=(1 2); echo ${arr[@]}; }; f & wait; if ! true; then exit 1; fi; `echo x`",
            "echo $((1 + 2)) <(ls) >(cat) 'a'$'b' {a,b} ~/x ${#x} ${x/a/b} ; declare -x Y=1 ; unset Y",
            "echo ) ( ; ;; 'unterminated",
        ];
        let language: tree_sitter::Language = tree_sitter_bash::LANGUAGE.into();
        for script in scripts {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&language).unwrap();
            let tree = parser.parse(script, None).unwrap();
            let mut stack = vec![tree.root_node()];
            let mut seen = 0;
            while let Some(node) = stack.pop() {
                assert_eq!(node.kind_name(), node.kind(), "{script}: node {node:?}");
                seen += 1;
                let mut cursor = node.walk();
                stack.extend(node.children(&mut cursor));
            }
            assert!(seen > 5, "{script}");
        }
    }
}
