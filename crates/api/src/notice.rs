//! A waiting call said in two short lines — which agent asks, and what it would run — for the places
//! that have a line or two to say it: the desktop app's notifications, a tray, a terminal title. The
//! text is the agent's, so it is made visible ([`visible`]) and shortened here, once, for every front end.

use super::types::Approval;
use super::visible;
use portcullis_harness::ActionKind;

/// At most this many characters of the agent's name in a notice's title.
pub const AGENT_CHARS: usize = 40;
/// At most this many characters of what the call would do in a notice's body.
pub const ACTION_CHARS: usize = 160;

/// What a notification about a waiting call says: who asks (title) and for what (body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalNotice {
    /// `claude-code asks to run a command`.
    pub title: String,
    /// The command line (or the tool and its arguments, or the paths), then the session and approval id.
    pub body: String,
}

/// The notice for `approval`, asked by the agent whose client calls itself `client` (`None` when the
/// session is gone or never said). Control and invisible characters are written as visible escapes,
/// then each part is shortened to its limit with `…`.
pub fn approval_notice(approval: &Approval, client: Option<&str>) -> ApprovalNotice {
    let agent = match client.map(str::trim) {
        Some(name) if !name.is_empty() => shortened(&visible(name), AGENT_CHARS),
        _ => "An agent".to_owned(),
    };
    let action = &approval.action;
    let (asks, what) = match (&action.command, action.paths.first()) {
        (Some(command), _) => ("to run a command".to_owned(), visible(command).into_owned()),
        (None, Some(first)) => {
            let mut what =
                format!("{} {}", visible(&action.operation), visible(&first.display().to_string()));
            if action.paths.len() > 1 {
                what.push_str(&format!(" and {} more", action.paths.len() - 1));
            }
            (format!("to {} a file", visible(&action.operation)), what)
        }
        (None, None) => {
            let tool = visible(&approval.tool);
            let verb = if action.kind == ActionKind::Mcp { "call" } else { "use" };
            (
                format!("to {verb} {}", shortened(&tool, AGENT_CHARS)),
                format!("{tool} {}", visible(&approval.arguments.to_string())),
            )
        }
    };
    ApprovalNotice {
        title: format!("{agent} asks {asks}"),
        body: format!(
            "{}\nsession {} · approval #{}",
            shortened(&what, ACTION_CHARS),
            shortened(&visible(&approval.session_id), 12),
            approval.id
        ),
    }
}

/// `text` cut to at most `max` characters, the last of them `…` when anything was cut.
pub fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AlwaysOffer, ExecutionAction, Timestamp};
    use serde_json::json;
    use std::path::PathBuf;

    fn asking(tool: &str, action: ExecutionAction, arguments: serde_json::Value) -> Approval {
        Approval {
            id: 7,
            session_id: "3f2a9c1e-0000-4000-8000-000000000000".into(),
            call_id: "c1".into(),
            tool: tool.into(),
            arguments_sha256: portcullis_harness::arguments_digest(&arguments),
            arguments,
            policy_version: None,
            action,
            reason: None,
            matched_rules: Vec::new(),
            requested_at: Timestamp(0),
            deadline: Timestamp(0),
            always: AlwaysOffer::No { why: "test".into() },
            evaluation: None,
            file_change: None,
            hub: None,
        }
    }

    fn shell(command: &str) -> Approval {
        let action = ExecutionAction::new(ActionKind::Execute, "exec").with_command(command);
        asking("shell", action, json!({ "command": command }))
    }

    #[test]
    fn a_command_names_the_agent_and_the_command_line() {
        let notice = approval_notice(&shell("git push origin main"), Some("claude-code"));
        assert_eq!(notice.title, "claude-code asks to run a command");
        assert_eq!(notice.body, "git push origin main\nsession 3f2a9c1e-00… · approval #7");
    }

    #[test]
    fn control_characters_and_ansi_are_made_visible() {
        let notice =
            approval_notice(&shell("rm -rf x\r\x1b[2Kls -la\n\u{202e}txt"), Some("evil\x1b[31m\u{7}"));
        assert_eq!(notice.title, "evil\\x1b[31m\\x07 asks to run a command");
        assert!(notice.body.starts_with("rm -rf x\\r\\x1b[2Kls -la\\n\\u{202e}txt\n"), "{}", notice.body);
        let first_line = notice.body.lines().next().unwrap_or_default();
        assert!(!first_line.chars().any(portcullis_harness::untrusted::is_hidden_or_control));
        assert!(!notice.title.chars().any(portcullis_harness::untrusted::is_hidden_or_control));
    }

    #[test]
    fn long_text_is_shortened_with_an_ellipsis() {
        let long = format!("echo {}", "a".repeat(500));
        let notice = approval_notice(&shell(&long), Some(&"n".repeat(100)));
        let line = notice.body.lines().next().unwrap_or_default();
        assert_eq!(line.chars().count(), ACTION_CHARS);
        assert!(line.ends_with('…'));
        assert_eq!(notice.title, format!("{}… asks to run a command", "n".repeat(AGENT_CHARS - 1)));
        assert_eq!(shortened("héllo", 5), "héllo");
        assert_eq!(shortened("héllo!", 5), "héll…");
    }

    #[test]
    fn an_unknown_agent_is_said_so() {
        assert!(approval_notice(&shell("ls"), None).title.starts_with("An agent asks"));
        assert!(approval_notice(&shell("ls"), Some("  ")).title.starts_with("An agent asks"));
    }

    #[test]
    fn a_tool_call_shows_the_tool_and_its_arguments() {
        let action = ExecutionAction::new(ActionKind::Mcp, "call");
        let notice = approval_notice(
            &asking("github__create_issue", action, json!({"title": "x\ny"})),
            Some("cursor"),
        );
        assert_eq!(notice.title, "cursor asks to call github__create_issue");
        assert!(notice.body.starts_with(r#"github__create_issue {"title":"x\ny"}"#), "{}", notice.body);
    }

    #[test]
    fn a_file_action_shows_the_operation_and_paths() {
        let action = ExecutionAction::new(ActionKind::Write, "write")
            .with_paths(vec![PathBuf::from("/p/.envrc"), PathBuf::from("/p/b")]);
        let notice = approval_notice(&asking("write_file", action, json!({})), Some("codex"));
        assert_eq!(notice.title, "codex asks to write a file");
        assert!(notice.body.starts_with("write /p/.envrc and 1 more\n"), "{}", notice.body);
    }
}
