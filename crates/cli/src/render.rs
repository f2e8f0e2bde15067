//! Text for people: counts, who decided, and one-line summaries of records (times and durations are
//! the operator API's, `api::times`).

use portcullis_api::ledger::{ApprovalRecord, CallRow, StoredPolicyDecision};
use portcullis_api::times::format_time;
use portcullis_api::types::{ChangeKind, ChangeRecord, DecidedBy, Decider};

/// Longest argument, output or message text shown in a one-line summary.
const SUMMARY_CHARS: usize = portcullis_api::record_summary::SUMMARY_CHARS;

/// The text with control characters escaped (`\n`, `\t`, `\u{1b}` ...), so it stays on one line.
pub fn clean(text: &str) -> String {
    // The one escape every place that shows agent text uses (the terminal approver, tables, `ledger
    // show`): controls, bidi and format characters, invisible ones.
    portcullis_api::visible(text).into_owned()
}

/// [`clean`], cut to `max` characters (with `…` when cut).
pub fn shorten(text: &str, max: usize) -> String {
    let text = clean(text);
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `12,000`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `rule:allow-reads`, `operator (alice: approved_once)`, `default`.
fn decided_label(kind: &str, rule: Option<&str>, operator: Option<&str>) -> String {
    let mut label = kind.to_owned();
    if let Some(rule) = rule {
        label.push(':');
        label.push_str(rule);
    }
    if let Some(op) = operator {
        label.push_str(" (");
        label.push_str(op);
        label.push(')');
    }
    label
}

/// What the execution policy said before any approval: `prompt (rule deploy)`, `forbidden`, or `-`
/// when the call was refused before the policy stage (or recorded before the ledger kept it).
pub fn policy_label(decision: Option<StoredPolicyDecision>, rule: Option<&str>) -> String {
    match (decision, rule) {
        (Some(decision), Some(rule)) => format!("{} (rule {})", decision.as_str(), clean(rule)),
        (Some(decision), None) => decision.as_str().to_owned(),
        (None, _) => "-".into(),
    }
}

/// [`policy_label`] of a listed call: `allow (contained)` for one that ran contained (stored as
/// `allow`, the column predating containment).
pub fn call_policy_label(call: &CallRow) -> String {
    let label = policy_label(call.head.policy_decision, call.head.policy_rule.as_deref());
    if call.contained { format!("{label} (contained)") } else { label }
}

/// What a call's changes came to, for a listing: `held`, `discarded`, `kept`, or `-`.
pub fn changes_label(call: &CallRow) -> String {
    call.changes.map_or_else(|| "-".into(), |c| c.as_str().to_owned())
}

/// The change set of a confined command: the counts, then each change listed with its size and short
/// digest, and why it was held or discarded (paths and reasons escaped: the agent's text).
pub fn change_lines(record: &ChangeRecord) -> Vec<String> {
    let mut lines = vec![format!(
        "changes: {} kept, {} held, {} discarded",
        count(record.kept),
        count(record.held),
        count(record.discarded)
    )];
    for entry in &record.entries {
        let what = match entry.what {
            ChangeKind::File => "file",
            ChangeKind::Symlink => "link",
            ChangeKind::Folder => "folder",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Special => "special",
            ChangeKind::Root => "root",
        };
        let size = entry.size.map(|s| format!("  {} B", count(s))).unwrap_or_default();
        let digest = entry
            .sha256
            .as_deref()
            .map(|d| format!("  sha256 {}", clean(&d.chars().take(12).collect::<String>())))
            .unwrap_or_default();
        let why = entry.why.as_deref().map(|w| format!(" — {}", clean(w))).unwrap_or_default();
        lines.push(format!(
            "  {:<9} {:<7} {}{size}{digest}{why}",
            entry.outcome.as_str(),
            what,
            clean(&entry.path)
        ));
    }
    let listed = record.entries.len() as u64;
    let all = record.kept + record.held + record.discarded;
    if record.truncated || listed < all {
        lines.push(format!("  ({} more not listed)", count(all.saturating_sub(listed))));
    }
    lines
}

/// Who decided a call, for a listing.
pub fn call_decided(call: &CallRow) -> String {
    decided_label(call.decider.kind.as_str(), call.decider.rule.as_deref(), call.decider.operator.as_deref())
}

/// Who decided a record, with the rule's source and a default's detail.
pub fn record_decided(decided: &DecidedBy) -> String {
    match decided {
        DecidedBy::Default { detail: Some(detail) } => return format!("default ({detail})"),
        DecidedBy::ProtectedPlace { kind, place, path } => return kind.describe(place, path),
        _ => {}
    }
    let decider = Decider::of(decided);
    let mut label =
        decided_label(decider.kind.as_str(), decider.rule.as_deref(), decider.operator.as_deref());
    if let Some(source) = &decider.source {
        label.push_str(" from ");
        label.push_str(source);
    }
    label
}

/// One approval on one line.
pub fn approval_line(a: &ApprovalRecord) -> String {
    let mut line = format!("requested {}", format_time(a.requested_at));
    match (a.outcome, a.resolved_at) {
        (Some(outcome), resolved) => {
            line.push_str(&format!(", {}", outcome.as_str()));
            if let Some(op) = &a.operator {
                line.push_str(&format!(" by {}", clean(op)));
            }
            if let Some(at) = resolved {
                line.push_str(&format!(" at {}", format_time(at)));
            }
        }
        (None, Some(at)) => line.push_str(&format!(", resolved at {}", format_time(at))),
        (None, None) => line.push_str(", unanswered"),
    }
    if let Some(note) = &a.note {
        line.push_str(&format!("; note \"{}\"", shorten(note, SUMMARY_CHARS)));
    }
    if let Some(rule) = &a.rule_written {
        line.push_str(&format!("; wrote rule {}", clean(rule)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(12_000), "12,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn cleans_and_shortens() {
        assert_eq!(clean("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
