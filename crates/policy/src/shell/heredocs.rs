//! Heredocs with a quoted delimiter (`<<'EOF'`, `<<"EOF"`, `<<\EOF`, `<<-'EOF'`): bash takes their body
//! literally, so nothing in it may make the judge prompt — neither an expansion-looking text nor a
//! backslash-newline — and `"$(cat <<'EOF' … EOF)"` is exactly the body's text (the form agents write
//! commit messages in).

use super::kinds::{KindName, node_text};
use tree_sitter::Node;

/// Whether the heredoc redirect `redirect` has a quoted delimiter (`<<'EOF'`, `<<"EOF"`, `<<\EOF`,
/// `<<E"O"F`): then bash expands nothing in its body.
pub(crate) fn redirect_is_quoted(redirect: Node<'_>, src: &str) -> bool {
    let mut cursor = redirect.walk();
    let start = redirect.children(&mut cursor).find(|c| c.kind_name() == "heredoc_start");
    start.is_some_and(|s| node_text(s, src).contains(['\'', '"', '\\']))
}

/// Whether the heredoc holding `body` has a quoted delimiter.
pub(crate) fn body_is_quoted(body: Node<'_>, src: &str) -> bool {
    body.parent().is_some_and(|redirect| redirect_is_quoted(redirect, src))
}

/// The byte ranges of every quoted heredoc body in the tree under `root` (bash reads them literally:
/// a backslash-newline there joins nothing).
pub(crate) fn quoted_body_ranges(root: Node<'_>, src: &str) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    // Only a script holding `<<` has a heredoc.
    if !src.contains("<<") {
        return ranges;
    }
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.kind_name() == "heredoc_body" && body_is_quoted(node, src) {
            ranges.push(node.byte_range());
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    ranges
}

/// The output of a command substitution that is nothing but `cat` of a quoted heredoc
/// (`$(cat <<'EOF'` newline body `EOF` newline `)`): the body with its trailing newlines removed, as
/// bash's substitution removes them. `None` for any other substitution (arguments, other redirections,
/// a pipeline, `<<-`, an unquoted delimiter, a body the grammar broke into parts, a NUL byte).
pub(crate) fn literal_cat_output(substitution: Node<'_>, src: &str) -> Option<String> {
    if substitution.kind_name() != "command_substitution" || substitution.named_child_count() != 1 {
        return None;
    }
    let mut cursor = substitution.walk();
    let kinds: Vec<&str> = substitution.children(&mut cursor).map(|c| c.kind_name()).collect();
    if kinds != ["$(", "redirected_statement", ")"] {
        return None;
    }
    let statement = substitution.named_child(0)?;
    let mut cursor = statement.walk();
    let parts: Vec<Node<'_>> = statement.children(&mut cursor).collect();
    let [command, redirect] = parts.as_slice() else { return None };
    if command.kind_name() != "command" || node_text(*command, src) != "cat" {
        return None;
    }
    if redirect.kind_name() != "heredoc_redirect" || !redirect_is_quoted(*redirect, src) {
        return None;
    }
    let mut cursor = redirect.walk();
    let pieces: Vec<Node<'_>> = redirect.children(&mut cursor).collect();
    let kinds: Vec<&str> = pieces.iter().map(|c| c.kind_name()).collect();
    if kinds != ["<<", "heredoc_start", "heredoc_body", "heredoc_end"] {
        return None;
    }
    let [_, start, body, end] = pieces.as_slice() else { return None };
    if body.child_count() != 0 {
        return None;
    }
    // The body is every line between the delimiter's line and the closing line (the grammar's body
    // node leaves out leading empty lines): nothing but blanks may follow the delimiter on its line.
    let after_start = src.get(start.end_byte()..)?;
    let line_end = start.end_byte() + after_start.find('\n')?;
    if !src.get(start.end_byte()..line_end)?.chars().all(|c| c == ' ' || c == '\t') {
        return None;
    }
    let text = src.get(line_end + 1..end.start_byte())?;
    if !text.ends_with('\n') || text.contains('\0') {
        return None;
    }
    Some(text.trim_end_matches('\n').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(script: &str) -> Option<tree_sitter::Tree> {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
        parser.parse(script, None)
    }

    fn first_substitution<'t>(node: Node<'t>) -> Option<Node<'t>> {
        if node.kind_name() == "command_substitution" {
            return Some(node);
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
        children.into_iter().find_map(first_substitution)
    }

    /// One row per substitution form: the script, and the text bash substitutes when it is known.
    const CAT_SUBSTITUTIONS: &[(&str, Option<&str>)] = &[
        ("x \"$(cat <<'EOF'\nFix `a` $(b) $c\nEOF\n)\"", Some("Fix `a` $(b) $c")),
        ("x \"$(cat <<\"EOF\"\nline\n\n\nEOF\n)\"", Some("line")),
        // Leading empty lines are part of the body.
        ("x \"$(cat <<'EOF'  \n\n\nx\nEOF\n)\"", Some("\n\nx")),
        ("x \"$(cat <<\\EOF\nback\\\nslash\nEOF\n)\"", Some("back\\\nslash")),
        // Unquoted delimiter: bash expands the body.
        ("x \"$(cat <<EOF\n$(id)\nEOF\n)\"", None),
        // Not cat alone: arguments, another program, a pipeline, more redirections, tabs removed.
        ("x \"$(cat -A <<'EOF'\nx\nEOF\n)\"", None),
        ("x \"$(tac <<'EOF'\nx\nEOF\n)\"", None),
        ("x \"$(cat <<'EOF' | sh\nx\nEOF\n)\"", None),
        ("x \"$(cat <<'EOF' 2>/tmp/x\nx\nEOF\n)\"", None),
        ("x \"$(cat <<-'EOF'\n\tx\n\tEOF\n)\"", None),
        ("x \"$(cat <<'EOF'; id\nx\nEOF\n)\"", None),
        ("x \"$(X=1 cat <<'EOF'\nx\nEOF\n)\"", None),
    ];

    #[test]
    fn each_cat_substitution_row_resolves_as_bash_does() {
        for (script, expected) in CAT_SUBSTITUTIONS {
            let tree = parse(script);
            let substitution = tree.as_ref().and_then(|t| first_substitution(t.root_node()));
            let got = substitution.and_then(|s| literal_cat_output(s, script));
            assert_eq!(got.as_deref(), *expected, "{script:?}");
        }
    }

    #[test]
    fn quoted_bodies_are_found_and_unquoted_ones_are_not() {
        let script = "cat <<'A' >a\none\\\ntwo\nA\ncat <<B >b\nthree\\\nfour\nB";
        let tree = parse(script);
        let ranges = tree.map(|t| quoted_body_ranges(t.root_node(), script)).unwrap_or_default();
        let bodies: Vec<&str> = ranges.iter().filter_map(|r| script.get(r.clone())).collect();
        assert_eq!(bodies, ["one\\\ntwo\n"]);
    }
}
