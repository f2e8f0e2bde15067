//! One record of a call on one line — its reason, error, arguments, action, progress, output, duration —
//! as the ledger browser's timeline and `portcullis ledger show` both print it. The text is the
//! record's own (agent text included, each part cut to [`SUMMARY_CHARS`]): every display escapes it.

use super::notice::shortened;
use super::times::format_duration;
use portcullis_harness::Content;
use portcullis_ledger::StoredRecord;

/// The longest argument, output or message text in a one-line summary.
pub const SUMMARY_CHARS: usize = 160;

/// `reason execution_denied; error execution_denied: …; args {…}; action exec rm -rf /; took 3 ms`.
pub fn record_summary(record: &StoredRecord) -> String {
    let body = &record.body;
    let cut = |text: &str| shortened(text, SUMMARY_CHARS);
    let mut parts: Vec<String> = Vec::new();
    if let Some(reason) = record.head.reason {
        parts.push(format!("reason {reason}"));
    }
    if let Some(error) = &body.error {
        parts.push(format!("error {}: {}", error.code, cut(&error.message)));
    }
    if let Some(arguments) = &body.arguments {
        parts.push(format!("args {}", cut(&arguments.to_string())));
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
        parts.push(cut(&text));
    }
    if let Some(progress) = &body.progress {
        parts.push(format!("progress {}", cut(&progress.to_string())));
    }
    if let Some(output) = &body.output {
        let text = output.joined_text();
        let mut shown = if !text.is_empty() || output.structured.is_none() {
            format!("output \"{}\"", cut(&text))
        } else {
            let structured = output.structured.as_ref().map(|s| s.to_string()).unwrap_or_default();
            format!("output {}", cut(&structured))
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
    if let Some(d) = record.head.duration_us {
        parts.push(format!("took {}", format_duration(d)));
    }
    if record.head.redacted {
        parts.push("redacted".into());
    }
    parts.join("; ")
}
