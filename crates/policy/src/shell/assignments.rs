//! Assignments as the walk meets them: each judged by `shell/variables.rs` (what is not inert is
//! opaque, naming the variable), and each checked against the variables `shell/literal_variables.rs`
//! resolved (a name assigned where that module did not foresee makes the script opaque).

use super::kinds::KindName;
use super::kinds::node_text;
use super::known_literals;
use super::variables::{self, Reach};
use super::words::{Word, resolve};
use super::{Analyzer, OpaqueKind, declaration_exports};
use tree_sitter::Node;

impl Analyzer {
    /// A `NAME=value` node: a prefix of a command or an exporting declaration reaches programs; a plain
    /// assignment or `local`/`declare` stays in the shell.
    pub(super) fn check_assignment(&mut self, node: Node<'_>, src: &str) {
        let (name, value) = assignment(node, src);
        let reach = match node.parent() {
            Some(parent) if parent.kind_name() == "command" => Reach::Exported,
            Some(parent)
                if parent.kind_name() == "declaration_command" && declaration_exports(parent, src) =>
            {
                Reach::Exported
            }
            _ => Reach::Shell,
        };
        let shown = node.parent().map_or_else(|| node_text(node, src), |p| node_text(p, src));
        let known = (!value.dynamic).then_some(value.text.as_str());
        if known_literals::is_definite(node.start_byte()) {
            self.judge_variable(&name, known, reach, shown);
        } else {
            self.check_variable(&name, known, reach, shown);
        }
        let arithmetic =
            node.child_by_field_name("value").is_some_and(|v| v.kind_name() == "arithmetic_expansion");
        if let Some(value) = known.or(arithmetic.then_some("0")) {
            self.note_numeric_assignment(&name, value);
        }
    }

    /// Judges one assignment by `shell/variables.rs`, and checks the name was not resolved.
    pub(crate) fn check_variable(&mut self, name: &str, value: Option<&str>, reach: Reach, text: &str) {
        self.guard_resolved(name, text);
        self.judge_variable(name, value, reach, text);
    }

    /// A name the judge read as its literal value is changed here (`unset`, `read`, `printf -v`, an
    /// assignment through a computed name): the value it read may be wrong, so the script is opaque.
    pub(crate) fn guard_resolved(&mut self, name: &str, text: &str) {
        let name = base_name(name);
        let said =
            |o: &super::Opaque| o.text.starts_with(&format!("{name} was read as")) && o.text.ends_with(text);
        if known_literals::is_resolved(name) && !self.out.opaque.iter().any(said) {
            self.opaque(
                OpaqueKind::UnreviewedVariable,
                format!("{name} was read as the literal value the script gave it, but is changed again here: {text}"),
            );
        }
    }

    /// Judges one assignment by `shell/variables.rs`; what is not inert is opaque, naming the variable.
    fn judge_variable(&mut self, name: &str, value: Option<&str>, reach: Reach, text: &str) {
        let name = base_name(name);
        match variables::judge(name, value, reach) {
            variables::Verdict::Inert => {}
            variables::Verdict::InjectsCode => self.opaque(
                OpaqueKind::CodeInjectingVariable,
                format!("{name} makes programs load or run other code: {text}"),
            ),
            variables::Verdict::Unreviewed => self.opaque(
                OpaqueKind::UnreviewedVariable,
                format!("{name} is not on the reviewed list of inert variables: {text}"),
            ),
        }
    }
}

/// `a[1]` and `x+` (of `x+=`) are `a` and `x`.
fn base_name(name: &str) -> &str {
    name.split('[').next().unwrap_or(name).trim_end_matches('+')
}

/// `NAME=value` (or `NAME+=value`): the name and the resolved value.
pub(super) fn assignment(node: Node<'_>, src: &str) -> (String, Word) {
    let name = node.child_by_field_name("name").map(|n| node_text(n, src).to_owned()).unwrap_or_default();
    let value = node.child_by_field_name("value").map_or_else(|| Word::literal(""), |v| resolve(v, src));
    (name, value)
}
