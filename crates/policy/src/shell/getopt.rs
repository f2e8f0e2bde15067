//! How getopt reads option words, for the parsers that need only that much: a long option's whole name
//! from an abbreviation, and where the options of a command end. A leaf: the row parser (`options`),
//! `tar`'s and git's own small parsers (`file_operands`), wrappers (`programs`) and working folders use
//! it.

use super::words::Word;

/// A long option's name as getopt_long reads it (`--expr` is `--expression`, `--fi` is `--file`): the
/// name given exactly, else the one name it is a prefix of. `None`: no name, or several (getopt_long
/// refuses an ambiguous one, and the judge does not guess which).
pub(super) fn long_name<'t>(
    names: impl IntoIterator<Item = &'t str> + Clone,
    given: &str,
) -> Option<&'t str> {
    if given.is_empty() {
        return None;
    }
    if let Some(exact) = names.clone().into_iter().find(|n| *n == given) {
        return Some(exact);
    }
    let mut candidates = names.into_iter().filter(|n| n.starts_with(given));
    let first = candidates.next()?;
    candidates.all(|n| n == first).then_some(first)
}

/// `--given[=value]` with its name made whole by [`long_name`] over `names`; unchanged when it names
/// nothing (or more than one), so that the caller's own checks refuse it.
pub(super) fn whole_long<'t>(names: impl IntoIterator<Item = &'t str> + Clone, arg: &str) -> String {
    let Some(long) = arg.strip_prefix("--") else { return arg.to_owned() };
    let (given, attached) = match long.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (long, None),
    };
    match (long_name(names, given), attached) {
        (Some(name), Some(value)) => format!("--{name}={value}"),
        (Some(name), None) => format!("--{name}"),
        (None, _) => arg.to_owned(),
    }
}

/// Splits `-abc` option clusters and skips option arguments: `with_arg` letters take the rest of the
/// cluster or the next word; `long_with_arg` long options take the next word unless written `--x=v`.
/// Returns the index of the first operand.
pub(super) fn skip_options(args: &[Word], with_arg: &str, long_with_arg: &[&str]) -> usize {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let a = arg.text.as_str();
        if a == "--" {
            return i + 1;
        }
        if a == "-" || !a.starts_with('-') {
            return i;
        }
        i += 1;
        if let Some(long) = a.strip_prefix("--") {
            // An abbreviation of an option with an argument takes it too (`timeout --sig KILL cmd`).
            if !long.contains('=') && long_with_arg.iter().any(|n| n.starts_with(long)) && !long.is_empty() {
                i += 1;
            }
            continue;
        }
        let cluster: Vec<char> = a.chars().skip(1).collect();
        for (pos, c) in cluster.iter().enumerate() {
            if with_arg.contains(*c) {
                if pos + 1 == cluster.len() {
                    i += 1;
                }
                break;
            }
        }
    }
    i
}
