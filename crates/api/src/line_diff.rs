//! A line diff of two texts, cut to the changed lines and a few lines of context around them: what an
//! operator reads before a policy file is amended or a file is written or edited.

use serde::{Deserialize, Serialize};

/// Unchanged lines shown before and after each change.
pub const CONTEXT_LINES: usize = 3;

/// Lines a diff shows at most (a window must not be handed an agent's megabyte of text to lay out).
pub const MAX_LINES_SHOWN: usize = 2000;

/// Middles (after the common head and tail are cut) longer than this, multiplied, are not aligned line
/// by line: the whole middle is shown removed, then added.
const MAX_ALIGNED_CELLS: usize = 4_000_000;

/// One line of a diff, or a run of unchanged lines left out.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DiffLine {
    Same {
        old: u32,
        new: u32,
        text: String,
    },
    Removed {
        old: u32,
        text: String,
    },
    Added {
        new: u32,
        text: String,
    },
    /// `count` unchanged lines not shown.
    Skipped {
        count: u32,
    },
    /// The diff goes on for `count` more lines (changed or not), past [`MAX_LINES_SHOWN`].
    Truncated {
        count: u32,
    },
}

/// The diff of `before` and `after` by lines, with [`CONTEXT_LINES`] of context; empty when equal.
pub fn line_diff(before: &str, after: &str) -> Vec<DiffLine> {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..].iter().rev().zip(new[head..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (old_mid, new_mid) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut ops: Vec<Op> = vec![Op::Same; head];
    ops.extend(align(old_mid, new_mid));
    ops.extend(std::iter::repeat_n(Op::Same, tail));
    if ops.iter().all(|op| *op == Op::Same) {
        return Vec::new();
    }
    render(&ops, &old, &new)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Removed,
    Added,
}

/// The edit script of two line lists by longest common subsequence (removals before additions).
fn align(old: &[&str], new: &[&str]) -> Vec<Op> {
    if old.len().saturating_mul(new.len()) > MAX_ALIGNED_CELLS {
        let mut ops = vec![Op::Removed; old.len()];
        ops.extend(std::iter::repeat_n(Op::Added, new.len()));
        return ops;
    }
    // lcs[i][j]: the common subsequence length of old[i..] and new[j..].
    let width = new.len() + 1;
    let mut lcs = vec![0u32; (old.len() + 1) * width];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            lcs[i * width + j] = if old[i] == new[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::with_capacity(old.len() + new.len()));
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i] == new[j] {
            ops.push(Op::Same);
            i += 1;
            j += 1;
        } else if i < old.len() && (j == new.len() || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) {
            ops.push(Op::Removed);
            i += 1;
        } else {
            ops.push(Op::Added);
            j += 1;
        }
    }
    ops
}

/// The lines of `ops`, unchanged runs cut to the context around changes.
fn render(ops: &[Op], old: &[&str], new: &[&str]) -> Vec<DiffLine> {
    let near_change = |at: usize| {
        let from = at.saturating_sub(CONTEXT_LINES);
        let to = (at + CONTEXT_LINES + 1).min(ops.len());
        ops[from..to].iter().any(|op| *op != Op::Same)
    };
    let number = |n: usize| u32::try_from(n + 1).unwrap_or(u32::MAX);
    let (mut i, mut j, mut skipped, mut lines) = (0, 0, 0u32, Vec::new());
    for (at, op) in ops.iter().enumerate() {
        if *op == Op::Same && !near_change(at) {
            skipped += 1;
            i += 1;
            j += 1;
            continue;
        }
        if skipped > 0 {
            lines.push(DiffLine::Skipped { count: skipped });
            skipped = 0;
        }
        match op {
            Op::Same => {
                lines.push(DiffLine::Same { old: number(i), new: number(j), text: old[i].to_owned() });
                i += 1;
                j += 1;
            }
            Op::Removed => {
                lines.push(DiffLine::Removed { old: number(i), text: old[i].to_owned() });
                i += 1;
            }
            Op::Added => {
                lines.push(DiffLine::Added { new: number(j), text: new[j].to_owned() });
                j += 1;
            }
        }
    }
    if skipped > 0 {
        lines.push(DiffLine::Skipped { count: skipped });
    }
    if lines.len() > MAX_LINES_SHOWN {
        let rest = lines.len() - MAX_LINES_SHOWN;
        lines.truncate(MAX_LINES_SHOWN);
        lines.push(DiffLine::Truncated { count: u32::try_from(rest).unwrap_or(u32::MAX) });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(lines: &[DiffLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| match l {
                DiffLine::Same { text, .. } => format!(" {text}"),
                DiffLine::Removed { text, .. } => format!("-{text}"),
                DiffLine::Added { text, .. } => format!("+{text}"),
                DiffLine::Skipped { count } => format!("…{count}"),
                DiffLine::Truncated { count } => format!("+{count} more"),
            })
            .collect()
    }

    #[test]
    fn diffs_as_a_table() {
        let long: String = (1..=20).map(|n| format!("l{n}\n")).collect();
        let inserted = long.replace("l10\n", "l10\nnew\n");
        let table: &[(&str, &str, &[&str])] = &[
            ("a\nb\n", "a\nb\n", &[]),
            ("", "x\n", &["+x"]),
            ("a\nb\nc\n", "a\nc\n", &[" a", "-b", " c"]),
            ("a\nb\nc\n", "a\nB\nc\n", &[" a", "-b", "+B", " c"]),
            ("a\n", "a\nb\n", &[" a", "+b"]),
            (&long, &inserted, &["…7", " l8", " l9", " l10", "+new", " l11", " l12", " l13", "…7"]),
        ];
        for (before, after, want) in table {
            assert_eq!(shown(&line_diff(before, after)), *want, "{before:?} -> {after:?}");
        }
    }

    #[test]
    fn a_huge_diff_is_cut_and_says_how_much_more_there_is() {
        let after: String = (0..5000).map(|n| format!("{n}\n")).collect();
        let lines = line_diff("", &after);
        assert_eq!(lines.len(), MAX_LINES_SHOWN + 1);
        assert_eq!(lines.last(), Some(&DiffLine::Truncated { count: 3000 }));
    }

    #[test]
    fn line_numbers_count_from_one_on_each_side() {
        let lines = line_diff("a\nb\n", "a\nx\nb\n");
        assert_eq!(lines[1], DiffLine::Added { new: 2, text: "x".into() });
        assert_eq!(lines[2], DiffLine::Same { old: 2, new: 3, text: "b".into() });
    }
}
