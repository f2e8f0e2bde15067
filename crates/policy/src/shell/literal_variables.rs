//! Variables a script gives a literal value in straight-line code are read as that value
//! (`LOGS_DIR=logs; grep x "$LOGS_DIR/a.log"` reads `logs/a.log`), so that paths built from them are
//! judged as the paths they are. A wrong value would be a hole, so only what bash certainly does is
//! followed: every assignment of the name is a plain `NAME=literal` statement at the top level of the
//! script (or the first part of a top-level `&&`/`||` list; not in the background), the name is not one
//! bash reads or the environment may hold, and the name appears nowhere else in the script's text but
//! in those assignments and in `$NAME`/`${NAME}` reads outside functions and heredoc bodies (so `read`,
//! `unset`, `declare`, `printf -v`, arithmetic, loops, subshells, functions: anything else leaves the
//! name computed at run time). A read takes the value of the last such assignment before it. A name
//! the walk then sees assigned another way anyway (through a name built from other variables,
//! `printf -v "${p}S"`) is opaque.

use super::kinds::KindName;
use super::kinds::node_text;
use super::known_literals::{Known, identity, install};
use super::variables::{injects_code, stays_in_shell};
use super::words::resolve;
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

/// One top-level `NAME=literal`.
struct Definition {
    name: String,
    start: usize,
    end: usize,
    value: String,
}

/// Finds, in the script `src` whose tree is `root`, the reads whose value is certain.
pub(crate) fn of_script(root: Node<'_>, src: &str) -> Known {
    let mut known = Known { script: identity(src), ..Known::default() };
    // Only a script that assigns and reads has anything to find.
    if !src.contains('=') || !src.contains('$') {
        return known;
    }
    // Values are read as written: nothing an outer script knows applies here.
    let _nothing = install(Known::default());
    let definitions = definitions(root, src);
    if definitions.is_empty() {
        return known;
    }
    let names: HashSet<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    let mut reads: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut unfollowed: HashSet<&str> = HashSet::new();
    collect_reads(root, src, &names, false, &mut reads, &mut unfollowed);
    for name in names {
        let assigned = definitions.iter().filter(|d| d.name == name).count();
        let read = reads.get(name).map_or(0, Vec::len);
        if unfollowed.contains(name) || mentions(src, name) != assigned + read {
            continue;
        }
        let mut resolved = false;
        for &at in reads.get(name).into_iter().flatten() {
            let last = definitions.iter().rfind(|d| d.name == name && d.end <= at);
            if let Some(definition) = last {
                known.values.insert(at, definition.value.clone());
                resolved = true;
            }
        }
        if resolved {
            known.names.insert(name.to_owned());
            known.definite.extend(definitions.iter().filter(|d| d.name == name).map(|d| d.start));
        }
    }
    known
}

/// The `NAME=literal` statements bash certainly runs, in the order it runs them: top-level statements
/// not sent to the background, and the first part of a top-level `&&`/`||` list.
fn definitions(root: Node<'_>, src: &str) -> Vec<Definition> {
    let mut out = Vec::new();
    let mut cursor = root.walk();
    let children: Vec<Node<'_>> = root.children(&mut cursor).collect();
    for (i, statement) in children.iter().enumerate() {
        let background = children.get(i + 1).is_some_and(|n| !n.is_named() && n.kind_name() == "&");
        if !statement.is_named() || background {
            continue;
        }
        for assignment in first_assignments(*statement) {
            if let Some(definition) = literal_definition(assignment, src) {
                out.push(definition);
            }
        }
    }
    out
}

/// The assignments a statement certainly makes first: itself, each of `a=1 b=2`, or those of the first
/// part of a list.
fn first_assignments(statement: Node<'_>) -> Vec<Node<'_>> {
    match statement.kind_name() {
        "variable_assignment" => vec![statement],
        "variable_assignments" => {
            let mut cursor = statement.walk();
            statement.named_children(&mut cursor).filter(|c| c.kind_name() == "variable_assignment").collect()
        }
        "list" => statement.named_child(0).map(first_assignments).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// `NAME=literal` with `=` (not `+=`), a plain name that stays in the shell, and a value with no
/// expansion or substitution.
fn literal_definition(assignment: Node<'_>, src: &str) -> Option<Definition> {
    let name = assignment.child_by_field_name("name").filter(|n| n.kind_name() == "variable_name")?;
    let name = node_text(name, src);
    let mut cursor = assignment.walk();
    let plain = assignment.children(&mut cursor).any(|c| !c.is_named() && c.kind_name() == "=");
    if !plain || !stays_in_shell(name) || injects_code(name) {
        return None;
    }
    let value = match assignment.child_by_field_name("value") {
        None => String::new(),
        Some(value) => {
            let literal_kind = matches!(
                value.kind_name(),
                "word" | "string" | "raw_string" | "number" | "concatenation" | "ansi_c_string"
            );
            let word = resolve(value, src);
            if !literal_kind || word.dynamic {
                return None;
            }
            word.text
        }
    };
    Some(Definition {
        name: name.to_owned(),
        start: assignment.start_byte(),
        end: assignment.end_byte(),
        value,
    })
}

/// Every `$NAME` and `${NAME}` of the names, by first byte; a read inside a function or a heredoc body
/// (run or expanded at another time than where it stands) makes its name unfollowed.
fn collect_reads<'s>(
    node: Node<'_>,
    src: &'s str,
    names: &HashSet<&'s str>,
    elsewhere: bool,
    reads: &mut HashMap<&'s str, Vec<usize>>,
    unfollowed: &mut HashSet<&'s str>,
) {
    let mut stack = vec![(node, elsewhere)];
    while let Some((node, elsewhere)) = stack.pop() {
        let text = node_text(node, src);
        let read = match node.kind_name() {
            "simple_expansion" => text.strip_prefix('$'),
            "expansion" => text.strip_prefix("${").and_then(|t| t.strip_suffix('}')),
            _ => None,
        };
        if let Some(name) = read.and_then(|r| names.get(r)) {
            // After `$NAME`, a byte past ASCII may continue the name in some locales (bash reads names
            // with the locale's `isalnum`).
            let unsure_end = node.kind_name() == "simple_expansion"
                && (in_braced_word(node, src)
                    || src.as_bytes().get(node.end_byte()).is_some_and(|b| !b.is_ascii()));
            if elsewhere || unsure_end {
                unfollowed.insert(name);
            } else {
                reads.entry(name).or_default().push(node.start_byte());
            }
        }
        let inner = elsewhere || matches!(node.kind_name(), "function_definition" | "heredoc_body");
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor).map(|c| (c, inner)));
    }
}

/// Whether the word holding `$NAME` has a brace: bash expands braces first, and the text after the
/// group may continue the name (`$x{1,2}` reads `x1` and `x2`; `{$x,y}z` reads `xz`).
fn in_braced_word(node: Node<'_>, src: &str) -> bool {
    let mut current = node.parent();
    while let Some(parent) = current {
        if !matches!(parent.kind_name(), "concatenation" | "string" | "brace_expression") {
            return false;
        }
        // A `{` other than that of a `${…}`.
        let text = node_text(parent, src);
        if text.match_indices('{').any(|(at, _)| !text[..at].ends_with('$')) {
            return true;
        }
        current = parent.parent();
    }
    false
}

/// How many times `name` stands in `src` as a whole name (not part of a longer one).
fn mentions(src: &str, name: &str) -> usize {
    let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = src.as_bytes();
    let mut count = 0;
    let mut i = 0;
    while i < bytes.len() {
        if is_name_byte(bytes[i]) {
            let start = i;
            while i < bytes.len() && is_name_byte(bytes[i]) {
                i += 1;
            }
            if src.get(start..i) == Some(name) {
                count += 1;
            }
        } else {
            i += 1;
        }
    }
    count
}

#[cfg(test)]
#[path = "literal_variables_tests.rs"]
mod tests;
