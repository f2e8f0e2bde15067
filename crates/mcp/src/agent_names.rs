//! What the stdio relay tells the hub about the agent that started it: Claude Code's session id and
//! project folder, which it sets for the servers it starts. They travel as two headers on the relay's
//! connection; the gateway checks their shape. They label the session's rows; they grant nothing.

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// What the relay tells the hub about the agent that started it (Claude Code sets both for its servers).
#[derive(Debug, Clone, Default)]
pub struct AgentNames {
    /// `claude-<Claude Code's session id>`.
    pub session: Option<String>,
    /// The folder the agent works in.
    pub project: Option<String>,
}

/// The header the stdio relay names its agent's session in (`claude-<Claude Code's session id>`).
pub const AGENT_SESSION_HEADER: &str = "x-portcullis-agent-session";

/// The linked session a request's headers name, if well formed: `claude-` and 1 to 64 letters, digits
/// or dashes.
pub fn linked_session(context: &RequestContext<RoleServer>) -> Option<String> {
    session_of(header(context, AGENT_SESSION_HEADER)?)
}

fn header<'a>(context: &'a RequestContext<RoleServer>, name: &str) -> Option<&'a str> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    parts.headers.get(name)?.to_str().ok()
}

fn session_of(value: &str) -> Option<String> {
    let id = value.strip_prefix("claude-")?;
    let well_formed =
        (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    well_formed.then(|| value.to_owned())
}

/// The header the stdio relay names its agent's project folder in (Claude Code's `CLAUDE_PROJECT_DIR`).
pub const AGENT_PROJECT_HEADER: &str = "x-portcullis-agent-project";

/// The project folder a request's headers name, if it is an absolute path of at most 4096 bytes.
pub fn agent_project(context: &RequestContext<RoleServer>) -> Option<String> {
    project_of(header(context, AGENT_PROJECT_HEADER)?)
}

fn project_of(value: &str) -> Option<String> {
    (value.starts_with('/') && value.len() <= 4096 && !value.contains('\0')).then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_names_are_taken() {
        // (header value, taken as a session)
        let sessions = [
            ("claude-0b1c2d3e-aaaa-4bbb-8ccc-123456789abc", true),
            ("claude-x", true),
            ("claude-", false),
            ("s1-2", false),
            ("claude-../../x", false),
            ("claude-a b", false),
        ];
        for (value, taken) in sessions {
            assert_eq!(session_of(value).is_some(), taken, "{value}");
        }
        let long = format!("claude-{}", "a".repeat(65));
        assert!(session_of(&long).is_none());
        for (value, taken) in [("/srv/app", true), ("relative", false), ("", false)] {
            assert_eq!(project_of(value).is_some(), taken, "{value}");
        }
    }
}
