//! Text for people: durations, counts, time widths, who decided, and one-line summaries of records.

use crate::error::CliError;
use portcullis_harness::{Content, DecidedBy};
use portcullis_ledger::row::decided_columns;
use portcullis_ledger::timefmt::format_rfc3339;
use portcullis_ledger::{ApprovalRecord, CallRow, StoredPolicyDecision, StoredRecord};

/// Longest argument, output or message text shown in a one-line summary.
const SUMMARY_CHARS: usize = 160;

/// The text with control characters escaped (`\n`, `\t`, `\u{1b}` ...), so it stays on one line.
pub fn clean(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
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

/// `850us`, `12.3ms`, `1.50s`, `2m05s`, `3h07m`.
pub fn duration(us: i64) -> String {
    let us = us.max(0);
    match us {
        0..1_000 => format!("{us}us"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        1_000_000..60_000_000 => format!("{:.2}s", us as f64 / 1e6),
        60_000_000..3_600_000_000 => {
            let s = us / 1_000_000;
            format!("{}m{:02}s", s / 60, s % 60)
        }
        _ => {
            let m = us / 60_000_000;
            format!("{}h{:02}m", m / 60, m % 60)
        }
    }
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

const UNITS: [(char, i64); 4] =
    [('d', 86_400_000_000), ('h', 3_600_000_000), ('m', 60_000_000), ('s', 1_000_000)];

/// Reads a time width such as `90s`, `15m`, `1h`, `7d` as microseconds.
pub fn parse_width(option: &str, text: &str) -> Result<i64, CliError> {
    let bad = || {
        CliError::BadArgument(format!(
            "{option}: cannot read {text:?} as a time width: use a whole number and s, m, h or d (90s, 15m, 1h, 7d)"
        ))
    };
    let t = text.trim();
    let unit = t.chars().last().ok_or_else(bad)?;
    let per = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, per)| *per).ok_or_else(bad)?;
    let n: i64 = t[..t.len() - 1].parse().map_err(|_| bad())?;
    if n <= 0 {
        return Err(bad());
    }
    n.checked_mul(per).ok_or_else(bad)
}

/// A time width for people: `1h`, `90s`, or `~` and a rounded duration when it is not whole seconds.
pub fn width(us: i64) -> String {
    UNITS
        .iter()
        .find(|(_, per)| us > 0 && us % per == 0)
        .map(|(unit, per)| format!("{}{unit}", us / per))
        .unwrap_or_else(|| format!("~{}", duration(us)))
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

/// Who decided a call, for a listing.
pub fn call_decided(call: &CallRow) -> String {
    decided_label(&call.decided_by, call.decided_rule.as_deref(), call.decided_operator.as_deref())
}

/// Who decided a record, with the rule's source and a default's detail.
pub fn record_decided(decided: &DecidedBy) -> String {
    if let DecidedBy::Default { detail: Some(detail) } = decided {
        return format!("default ({detail})");
    }
    let (kind, rule, source, operator) = decided_columns(decided);
    let mut label = decided_label(kind, rule, operator.as_deref());
    if let Some(source) = source {
        label.push_str(" from ");
        label.push_str(source);
    }
    label
}

/// What one record says, on one line: reason, error, arguments, action, progress, output, duration.
pub fn record_details(record: &StoredRecord) -> String {
    let body = &record.body;
    let mut parts: Vec<String> = Vec::new();
    if let Some(reason) = record.reason {
        parts.push(format!("reason {reason}"));
    }
    if let Some(error) = &body.error {
        parts.push(format!("error {}: {}", clean(&error.code), shorten(&error.message, SUMMARY_CHARS)));
    }
    if let Some(arguments) = &body.arguments {
        parts.push(format!("args {}", shorten(&arguments.to_string(), SUMMARY_CHARS)));
    }
    if let Some(action) = &body.action {
        let mut text = format!("action {}", action.operation);
        if let Some(command) = &action.command {
            text.push(' ');
            text.push_str(command);
        } else if !action.paths.is_empty() {
            let paths: Vec<String> = action.paths.iter().map(|p| p.display().to_string()).collect();
            text.push(' ');
            text.push_str(&paths.join(", "));
        }
        parts.push(shorten(&text, SUMMARY_CHARS));
    }
    if let Some(progress) = &body.progress {
        parts.push(format!("progress {}", shorten(&progress.to_string(), SUMMARY_CHARS)));
    }
    if let Some(output) = &body.output {
        let text = output.joined_text();
        let mut shown = if !text.is_empty() || output.structured.is_none() {
            format!("output \"{}\"", shorten(&text, SUMMARY_CHARS))
        } else {
            let structured = output.structured.as_ref().map(|s| s.to_string()).unwrap_or_default();
            format!("output {}", shorten(&structured, SUMMARY_CHARS))
        };
        let others = output.content.iter().filter(|c| !matches!(c, Content::Text { .. })).count();
        if others > 0 {
            shown.push_str(&format!(" (+{others} non-text blocks)"));
        }
        if output.is_error {
            shown.push_str(" (tool reported an error)");
        }
        parts.push(shown);
    }
    if let Some(d) = record.duration_us {
        parts.push(format!("took {}", duration(d)));
    }
    if record.redacted {
        parts.push("redacted".into());
    }
    parts.join("; ")
}

/// One approval on one line.
pub fn approval_line(a: &ApprovalRecord) -> String {
    let mut line = format!("requested {}", format_rfc3339(a.requested_at));
    match (a.outcome, a.resolved_at) {
        (Some(outcome), resolved) => {
            line.push_str(&format!(", {}", outcome.as_str()));
            if let Some(op) = &a.operator {
                line.push_str(&format!(" by {}", clean(op)));
            }
            if let Some(at) = resolved {
                line.push_str(&format!(" at {}", format_rfc3339(at)));
            }
        }
        (None, Some(at)) => line.push_str(&format!(", resolved at {}", format_rfc3339(at))),
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
    fn durations_and_counts() {
        assert_eq!(duration(850), "850us");
        assert_eq!(duration(12_340), "12.3ms");
        assert_eq!(duration(1_500_000), "1.50s");
        assert_eq!(duration(125_000_000), "2m05s");
        assert_eq!(duration(3 * 3_600_000_000 + 7 * 60_000_000), "3h07m");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(12_000), "12,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn widths() {
        assert_eq!(parse_width("--bucket", "1h").unwrap(), 3_600_000_000);
        assert_eq!(parse_width("--bucket", "90s").unwrap(), 90_000_000);
        assert_eq!(parse_width("--bucket", "7d").unwrap(), 7 * 86_400_000_000);
        for bad in ["", "h", "0h", "-1h", "1w", "1.5h", "99999999999999d"] {
            assert!(parse_width("--bucket", bad).is_err(), "{bad}");
        }
        assert_eq!(width(3_600_000_000), "1h");
        assert_eq!(width(90_000_000), "90s");
        assert_eq!(width(1_500), "~1.5ms");
        assert_eq!(width(919_808_932_547), "~255h30m");
    }

    #[test]
    fn cleans_and_shortens() {
        assert_eq!(clean("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
