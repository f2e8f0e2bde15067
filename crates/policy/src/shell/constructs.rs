//! The judge allows only what it fully resolves: every syntax node kind of the bash grammar has a
//! reviewed row saying how bash treats it, and a kind without a row is opaque. Two kinds of blind spot
//! are closed here rather than trusted to the grammar: text the grammar leaves as plain text where bash
//! still expands it (backquotes in an unquoted heredoc body or inside `${…}` operands) is rescanned for
//! substitutions, and every place where bash evaluates a value as code (arithmetic on variable names,
//! subscripts, `${!x}`, `${x@P}`, namerefs) is found and made opaque unless its variables are known.

use super::kinds::KindName;
use super::kinds::node_text;
use super::{Analyzer, Context, OpaqueKind};
use std::collections::HashSet;
use tree_sitter::Node;

/// How bash treats a node kind, as far as the judge is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Treatment {
    /// Holds statements or words; its children are judged.
    Structure,
    /// Text bash takes literally, whatever it holds (single quotes, `$'…'`, comments, the delimiters).
    Literal,
    /// Text bash expands: anything in it the grammar did not break out as a node is rescanned.
    Expanded,
    /// A command or process substitution: its commands are judged where they stand.
    Substitution,
    /// `$x`, `${…}`: operators that evaluate a value are checked.
    Expansion,
    /// `$((…))`, `$[…]`: arithmetic, evaluated with every variable's value.
    Arithmetic,
    /// `[[ … ]]`: arithmetic comparisons and `-v` evaluate their operands.
    Test,
    /// An expression inside arithmetic or `[[ ]]`: judged as part of the context holding it.
    Expression,
    /// A heredoc's body: expanded unless its delimiter is quoted.
    HeredocBody,
}

/// Every named node kind of tree-sitter-bash 0.25, one row each, sorted by kind (a test checks the grammar
/// has no other, and the order).
pub(crate) const NODE_KINDS: &[(&str, Treatment)] = &[
    ("ansi_c_string", Treatment::Literal),
    ("arithmetic_expansion", Treatment::Arithmetic),
    ("array", Treatment::Structure),
    ("binary_expression", Treatment::Expression),
    ("brace_expression", Treatment::Expanded),
    ("c_style_for_statement", Treatment::Structure),
    ("case_item", Treatment::Structure),
    ("case_statement", Treatment::Structure),
    ("command", Treatment::Structure),
    ("command_name", Treatment::Structure),
    ("command_substitution", Treatment::Substitution),
    ("comment", Treatment::Literal),
    ("compound_statement", Treatment::Structure),
    ("concatenation", Treatment::Expanded),
    ("declaration_command", Treatment::Structure),
    ("do_group", Treatment::Structure),
    ("elif_clause", Treatment::Structure),
    ("else_clause", Treatment::Structure),
    ("expansion", Treatment::Expansion),
    ("extglob_pattern", Treatment::Expanded),
    ("file_descriptor", Treatment::Literal),
    ("file_redirect", Treatment::Structure),
    ("for_statement", Treatment::Structure),
    ("function_definition", Treatment::Structure),
    ("heredoc_body", Treatment::HeredocBody),
    ("heredoc_content", Treatment::Expanded),
    ("heredoc_end", Treatment::Literal),
    ("heredoc_redirect", Treatment::Structure),
    ("heredoc_start", Treatment::Literal),
    ("herestring_redirect", Treatment::Structure),
    ("if_statement", Treatment::Structure),
    ("list", Treatment::Structure),
    ("negated_command", Treatment::Structure),
    ("number", Treatment::Expanded),
    ("parenthesized_expression", Treatment::Expression),
    ("pipeline", Treatment::Structure),
    ("postfix_expression", Treatment::Expression),
    ("process_substitution", Treatment::Substitution),
    ("program", Treatment::Structure),
    ("raw_string", Treatment::Literal),
    ("redirected_statement", Treatment::Structure),
    ("regex", Treatment::Expanded),
    ("simple_expansion", Treatment::Expansion),
    ("special_variable_name", Treatment::Literal),
    ("string", Treatment::Expanded),
    ("string_content", Treatment::Expanded),
    ("subscript", Treatment::Structure),
    ("subshell", Treatment::Structure),
    ("ternary_expression", Treatment::Expression),
    ("test_command", Treatment::Test),
    ("test_operator", Treatment::Literal),
    ("translated_string", Treatment::Expanded),
    ("unary_expression", Treatment::Expression),
    ("unset_command", Treatment::Structure),
    ("variable_assignment", Treatment::Structure),
    ("variable_assignments", Treatment::Structure),
    ("variable_name", Treatment::Literal),
    ("while_statement", Treatment::Structure),
    ("word", Treatment::Expanded),
];

/// The row of a node kind; `None` for a kind no row reviews.
pub(crate) fn treatment(kind: &str) -> Option<Treatment> {
    NODE_KINDS.binary_search_by(|(k, _)| (*k).cmp(kind)).ok().and_then(|i| NODE_KINDS.get(i)).map(|(_, t)| *t)
}

/// Arithmetic comparison operators of `[[ ]]`: both operands are evaluated as arithmetic.
const ARITHMETIC_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Variables a script may use in arithmetic because it gave them a number itself before any use, and
/// never anything else: their values cannot hold code.
#[derive(Debug, Default, Clone)]
pub(crate) struct Numeric {
    /// Every name assigned a value that is not a plain number, anywhere in the script (loops repeat).
    tainted: HashSet<String>,
    /// Names assigned a number (or in arithmetic) so far, in the order bash meets them.
    defined: HashSet<String>,
}

impl Numeric {
    /// Collects, over the whole script, the names assigned anything but a number.
    pub(crate) fn of_script(root: Node<'_>, src: &str) -> Self {
        let mut numeric = Self::default();
        // Only arithmetic contexts read it: `((`, `$[`, subscripts, `let`, `${x:n}`, `[[ -eq ]]`.
        if !(src.contains("((") || src.contains('[') || src.contains("let") || src.contains("${")) {
            return numeric;
        }
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            match node.kind_name() {
                "variable_assignment" => {
                    let name = node.child_by_field_name("name").map(|n| base_name(node_text(n, src)));
                    let value = node.child_by_field_name("value");
                    // The value of `$((…))` is always a number.
                    let numeric_value = value.is_some_and(|v| {
                        v.kind_name() == "arithmetic_expansion" || is_plain_number(node_text(v, src))
                    });
                    if let Some(name) = name
                        && !numeric_value
                    {
                        numeric.tainted.insert(name.to_owned());
                    }
                }
                "for_statement" => {
                    let mut cursor = node.walk();
                    let all_numbers = node
                        .children_by_field_name("value", &mut cursor)
                        .all(|v| is_plain_number(node_text(v, src)));
                    if let Some(variable) = node.child_by_field_name("variable")
                        && !all_numbers
                    {
                        numeric.tainted.insert(node_text(variable, src).to_owned());
                    }
                }
                // `read x`, `printf -v x`, `declare x`, `mapfile x`, `getopts o x`: any word that
                // names a variable a builtin may assign.
                "command" | "declaration_command" | "unset_command" => {
                    let mut cursor = node.walk();
                    for child in node.named_children(&mut cursor) {
                        if matches!(child.kind_name(), "word" | "variable_name" | "string" | "raw_string") {
                            let text = node_text(child, src).trim_matches(['"', '\'']);
                            numeric.tainted.insert(base_name(text).to_owned());
                            if let Some(rest) = text.strip_prefix("-v") {
                                numeric.tainted.insert(base_name(rest).to_owned());
                            }
                        }
                    }
                }
                _ => {}
            }
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
        numeric
    }

    fn safe(&self, name: &str) -> bool {
        self.defined.contains(name) && !self.tainted.contains(name)
    }
}

/// `a[1]` → `a`; `x+` (of `x+=`) → `x`.
fn base_name(text: &str) -> &str {
    let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(text.len());
    text.get(..end).unwrap_or(text)
}

fn is_plain_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

impl Analyzer {
    /// Judges `node` by its row, before its children are visited: an unknown kind is opaque, expanded
    /// text is rescanned, values bash evaluates are checked.
    pub(crate) fn judge_construct(&mut self, node: Node<'_>, src: &str, ctx: &Context) {
        let Some(treatment) = treatment(node.kind_name()) else {
            if !node.is_error() && !node.is_missing() {
                self.opaque(
                    OpaqueKind::UnknownConstruct,
                    format!("{}: {}", node.kind_name(), node_text(node, src)),
                );
            }
            return;
        };
        if matches!(treatment, Treatment::Substitution | Treatment::Expansion | Treatment::Arithmetic)
            || matches!(node.kind_name(), "c_style_for_statement")
            || (node.kind_name() == "compound_statement"
                && node.child(0).is_some_and(|c| c.kind_name() == "(("))
        {
            self.out.expands = true;
        }
        match treatment {
            Treatment::Structure | Treatment::Literal | Treatment::Substitution | Treatment::Expression => {
                if node.kind_name() == "compound_statement"
                    && node.child(0).is_some_and(|c| c.kind_name() == "((")
                {
                    self.arithmetic(node, src, "((…))");
                }
                if node.kind_name() == "c_style_for_statement" {
                    self.arithmetic(node, src, "for ((…))");
                }
                if node.kind_name() == "subscript"
                    && let Some(index) = node.child_by_field_name("index")
                {
                    let text = node_text(index, src);
                    if !matches!(text, "@" | "*") {
                        self.arithmetic_text(text, node_text(node, src));
                    }
                }
                if node.kind_name() == "declaration_command" {
                    self.declaration_attributes(node, src);
                }
                if node.kind_name() == "heredoc_redirect" && !heredoc_ends_as_bash_ends_it(node, src) {
                    // The grammar ends a body at `EOF; more` where bash reads on to a line that is
                    // exactly the delimiter: what follows would be judged as commands bash never runs,
                    // and the body bash expands would go unseen.
                    self.out.parse_errors = true;
                }
            }
            Treatment::Expanded => self.rescan_uncovered(node, src, ctx),
            Treatment::HeredocBody => {
                if !super::heredocs::body_is_quoted(node, src) {
                    self.rescan_uncovered(node, src, ctx);
                }
            }
            Treatment::Expansion => {
                self.expansion(node, src);
                self.rescan_uncovered(node, src, ctx);
            }
            Treatment::Arithmetic => self.arithmetic(node, src, "$((…))"),
            Treatment::Test => self.test(node, src),
        }
    }

    /// Rescans the text of `node` that no child covers, where bash expands it: a backquote pair is
    /// parsed and judged as the command substitution bash runs; `$(`, `$[`, `<(` or `>(` the grammar did
    /// not break out is opaque.
    fn rescan_uncovered(&mut self, node: Node<'_>, src: &str, ctx: &Context) {
        let mut pos = node.start_byte();
        let mut gaps = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.start_byte() > pos {
                gaps.push((pos, child.start_byte()));
            }
            pos = pos.max(child.end_byte());
        }
        if node.end_byte() > pos {
            gaps.push((pos, node.end_byte()));
        }
        for (start, end) in gaps {
            let Some(text) = src.get(start..end) else { continue };
            self.rescan_text(text, node_text(node, src), ctx);
        }
    }

    /// Finds substitutions in `text` (expanded text the grammar left whole).
    pub(crate) fn rescan_text(&mut self, text: &str, shown: &str, ctx: &Context) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'`' => match closing_backquote(text, i + 1) {
                    Some((inner, end)) => {
                        self.rescanned_substitution(&inner, shown, ctx);
                        i = end + 1;
                    }
                    None => {
                        self.opaque(OpaqueKind::UnseenSubstitution, shown);
                        return;
                    }
                },
                b'$' | b'<' | b'>' if matches!(bytes.get(i + 1), Some(b'(')) => {
                    self.opaque(OpaqueKind::UnseenSubstitution, shown);
                    return;
                }
                b'$' if matches!(bytes.get(i + 1), Some(b'[')) => {
                    self.opaque(OpaqueKind::UnseenSubstitution, shown);
                    return;
                }
                _ => i += 1,
            }
        }
    }

    /// A backquote substitution the grammar found: its code, unescaped as bash unescapes it, is analysed as
    /// a script of its own (a nested `\`…\`` is a substitution there, not a literal).
    pub(crate) fn backquoted(&mut self, node: Node<'_>, src: &str, ctx: &Context) {
        self.out.expands = true;
        let text = node_text(node, src);
        match closing_backquote(text, 1) {
            Some((code, end)) if end + 1 == text.len() => self.rescanned_substitution(&code, text, ctx),
            _ => self.opaque(OpaqueKind::UnseenSubstitution, text),
        }
    }

    /// A backquote substitution found by the rescan: its code is judged like any substitution's.
    fn rescanned_substitution(&mut self, code: &str, shown: &str, ctx: &Context) {
        if ctx.shell_depth >= super::MAX_SHELL_DEPTH {
            self.opaque(OpaqueKind::ShellTooDeep, shown);
            return;
        }
        let inner = Context { shell_depth: ctx.shell_depth + 1, ..ctx.clone() };
        self.analyze_script(code, &inner);
    }

    /// `${…}` operators that evaluate the value: `${!x}` (indirection: a name with a subscript runs it),
    /// `${x@P}` (prompt expansion runs substitutions in the value), `${x:off:len}` (arithmetic).
    fn expansion(&mut self, node: Node<'_>, src: &str) {
        if node.kind_name() != "expansion" {
            return;
        }
        let text = node_text(node, src);
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let operators: Vec<&str> = children
            .iter()
            .filter(|c| !c.is_named() && !matches!(c.kind_name(), "${" | "}"))
            .map(|c| c.kind_name())
            .collect();
        let first_operator = operators.first().copied();
        // `${!x}` and `${!x[n]}`, but not `${!prefix*}`, `${!prefix@}` or `${!x[@]}` (names and keys).
        if first_operator == Some("!")
            && !text.ends_with("*}")
            && !text.ends_with("@}")
            && !text.contains("[@]")
            && !text.contains("[*]")
        {
            self.opaque(
                OpaqueKind::EvaluatedValue,
                format!(
                    "{text}: the value of the variable names another, and a name with a subscript runs code"
                ),
            );
        }
        if let Some(at) = operators.iter().position(|o| *o == "@")
            && operators.get(at + 1).is_some_and(|o| o.starts_with('P'))
        {
            self.opaque(
                OpaqueKind::EvaluatedValue,
                format!("{text}: prompt expansion runs the substitutions in the value"),
            );
        }
        // Any `@` transformation the grammar did not break out (`${x@P}` written oddly) is opaque too.
        if text.contains("@P") {
            self.opaque(OpaqueKind::EvaluatedValue, format!("{text}: prompt expansion"));
        }
        if matches!(first_operator, Some(":=" | "="))
            && let Some(name) = children.iter().find(|c| c.kind_name() == "variable_name")
        {
            self.check_variable(node_text(*name, src), None, super::variables::Reach::Shell, text);
        }
        if first_operator == Some(":") {
            // `${x:off:len}`: everything after the variable is arithmetic.
            if let Some(colon) = children.iter().find(|c| c.kind_name() == ":") {
                let rest = src.get(colon.end_byte()..node.end_byte().saturating_sub(1)).unwrap_or("");
                self.arithmetic_text(&rest.replace(':', " "), text);
            }
        }
    }

    /// `declare -i` makes every later assignment arithmetic; `declare -n` makes the name a reference that
    /// is evaluated on every use.
    fn declaration_attributes(&mut self, node: Node<'_>, src: &str) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            let text = node_text(child, src);
            let is_flag = child.kind_name() == "word" && (text.starts_with('-') || text.starts_with('+'));
            if is_flag && text.get(1..).is_some_and(|f| f.contains(['i', 'n'])) {
                self.opaque(
                    OpaqueKind::EvaluatedValue,
                    format!(
                        "{}: integer and reference variables evaluate their values",
                        node_text(node, src)
                    ),
                );
                return;
            }
        }
    }

    /// `[[ a -eq b ]]` evaluates both operands as arithmetic; `[[ -v a[i] ]]` evaluates the subscript.
    fn test(&mut self, node: Node<'_>, src: &str) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            let mut cursor = n.walk();
            let children: Vec<Node<'_>> = n.children(&mut cursor).collect();
            let operator = n.child_by_field_name("operator").map(|o| node_text(o, src));
            match (n.kind_name(), operator) {
                ("binary_expression", Some(op)) if ARITHMETIC_TESTS.contains(&op) => {
                    for side in ["left", "right"] {
                        if let Some(operand) = n.child_by_field_name(side) {
                            self.arithmetic_text(node_text(operand, src), node_text(n, src));
                        }
                    }
                }
                ("unary_expression", Some("-v")) => {
                    let operand =
                        children.iter().rev().find(|c| c.is_named() && c.kind_name() != "test_operator");
                    if let Some(operand) = operand {
                        let text = node_text(*operand, src);
                        if operand.kind_name() != "word" || text.contains(['$', '`']) {
                            self.opaque(
                                OpaqueKind::EvaluatedValue,
                                format!("{}: the variable's name is computed", node_text(n, src)),
                            );
                        } else if let Some((_, index)) = text.split_once('[') {
                            let index = index.trim_end_matches(']');
                            if !matches!(index, "@" | "*") {
                                self.arithmetic_text(index, node_text(n, src));
                            }
                        }
                    }
                }
                _ => {}
            }
            stack.extend(children.into_iter().filter(|c| c.is_named()));
        }
    }

    /// An arithmetic context: the text between its delimiters.
    fn arithmetic(&mut self, node: Node<'_>, src: &str, _form: &str) {
        let text = node_text(node, src);
        let inner = text
            .trim_start_matches("for")
            .trim_start()
            .trim_start_matches("$((")
            .trim_start_matches("$[")
            .trim_start_matches("((");
        let inner = match inner.find("))") {
            Some(end) if node.kind_name() == "c_style_for_statement" => inner.get(..end).unwrap_or(inner),
            _ => inner.trim_end_matches("))").trim_end_matches(']'),
        };
        self.arithmetic_text(inner, text);
    }

    /// Arithmetic evaluates the value of every variable it names, as arithmetic again: a value like
    /// `a[$(cmd)]` runs `cmd`. A name is safe only if the script gave it a number before any use and
    /// never anything else; an assignment in arithmetic is checked like any other.
    pub(crate) fn arithmetic_text(&mut self, text: &str, shown: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_digit() {
                // A number, with its base (`16#ff`, `0x1f`): its letters are digits.
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'#' | b'_' | b'@'))
                {
                    i += 1;
                }
                continue;
            }
            if c == b'$' {
                match bytes.get(i + 1) {
                    Some(b'?' | b'#' | b'$' | b'!') => {
                        i += 2;
                        continue;
                    }
                    Some(b'{') => {
                        self.unsafe_arithmetic(text, shown);
                        return;
                    }
                    Some(n) if n.is_ascii_alphabetic() || *n == b'_' => {
                        i += 1;
                        continue;
                    }
                    _ => {
                        // `$1`, `$@`, `$(…)` (a substitution is judged where the grammar found it).
                        if bytes.get(i + 1) != Some(&b'(') {
                            self.unsafe_arithmetic(text, shown);
                            return;
                        }
                        i += 2;
                        continue;
                    }
                }
            }
            if c.is_ascii_alphabetic() || c == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let name = text.get(start..i).unwrap_or("");
                let rest = text.get(i..).unwrap_or("").trim_start();
                let assigns = rest.starts_with('=') && !rest.starts_with("==");
                if assigns {
                    self.check_variable(name, None, super::variables::Reach::Shell, shown);
                    if !self.numeric.tainted.contains(name) {
                        self.numeric.defined.insert(name.to_owned());
                    }
                } else if !self.numeric.safe(name) {
                    self.unsafe_arithmetic(text, shown);
                    return;
                }
                continue;
            }
            i += 1;
        }
    }

    fn unsafe_arithmetic(&mut self, expression: &str, shown: &str) {
        self.opaque(
            OpaqueKind::EvaluatedValue,
            format!(
                "{shown}: arithmetic on `{}` evaluates the values of its variables as code (a value like a[$(cmd)] runs cmd)",
                expression.trim()
            ),
        );
    }

    /// Records that a plain assignment gave `name` a number (for [`Numeric`]).
    pub(crate) fn note_numeric_assignment(&mut self, name: &str, value: &str) {
        if is_plain_number(value) && !self.numeric.tainted.contains(name) {
            self.numeric.defined.insert(name.to_owned());
        }
    }
}

/// Whether the grammar's end of this heredoc is where bash ends it: a line holding the delimiter and
/// nothing else (leading tabs removed for `<<-`).
fn heredoc_ends_as_bash_ends_it(redirect: Node<'_>, src: &str) -> bool {
    let mut cursor = redirect.walk();
    let children: Vec<Node<'_>> = redirect.children(&mut cursor).collect();
    let Some(end) = children.iter().find(|c| c.kind_name() == "heredoc_end") else {
        // A body the grammar did not end runs to the end of the script, as bash reads it too.
        return children.iter().any(|c| c.kind_name() == "heredoc_start");
    };
    let strip_tabs = children.iter().any(|c| c.kind_name() == "<<-");
    let line_start = src.get(..end.start_byte()).and_then(|b| b.rfind('\n')).map_or(0, |i| i + 1);
    let line_end =
        src.get(end.start_byte()..).and_then(|a| a.find('\n')).map_or(src.len(), |i| end.start_byte() + i);
    let line = src.get(line_start..line_end).unwrap_or("");
    let line = if strip_tabs { line.trim_start_matches('\t') } else { line };
    let delimiter = children
        .iter()
        .find(|c| c.kind_name() == "heredoc_start")
        .map(|s| node_text(*s, src).replace(['\'', '"', '\\'], ""))
        .unwrap_or_default();
    line == delimiter
}

/// The code of a backquote substitution starting at `from` (after the opening backquote), unescaped as
/// bash does inside backquotes (`\$`, `` \` ``, `\\` lose the backslash), and the index of the closing one.
fn closing_backquote(text: &str, from: usize) -> Option<(String, usize)> {
    let mut code = String::new();
    let mut chars = text.get(from..)?.char_indices();
    while let Some((offset, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, next @ ('$' | '`' | '\\'))) => code.push(next),
                Some((_, next)) => {
                    code.push('\\');
                    code.push(next);
                }
                None => return None,
            },
            '`' => return Some((code, from + offset)),
            _ => code.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_kind_of_the_grammar_has_a_row() {
        let types: serde_json::Value =
            serde_json::from_str(tree_sitter_bash::NODE_TYPES).unwrap_or(serde_json::Value::Null);
        let kinds: Vec<&str> = types
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["named"] == true)
            .filter_map(|t| t["type"].as_str())
            .filter(|k| !k.starts_with('_'))
            .collect();
        assert!(kinds.len() > 50, "the grammar's node kinds were not read");
        for kind in &kinds {
            assert!(treatment(kind).is_some(), "no row for the grammar's node kind {kind}");
        }
        for (kind, _) in NODE_KINDS {
            assert!(kinds.contains(kind), "row {kind} is not a kind of the grammar");
        }
        assert!(NODE_KINDS.windows(2).all(|w| w[0].0 < w[1].0), "the rows are sorted by kind");
    }

    #[test]
    fn backquotes_are_found_with_bash_unescaping() {
        assert_eq!(closing_backquote("rm \\$HOME` x", 0), Some(("rm $HOME".to_owned(), 9)));
        assert_eq!(closing_backquote("no end", 0), None);
        assert_eq!(closing_backquote("a\\`b`", 0), Some(("a`b".to_owned(), 4)));
    }

    #[test]
    fn numbers_and_names() {
        assert!(is_plain_number("10") && is_plain_number("-1"));
        assert!(!is_plain_number("1x") && !is_plain_number("") && !is_plain_number("a[$(id)]"));
        assert_eq!(base_name("a[1]"), "a");
        assert_eq!(base_name("x+"), "x");
    }
}
