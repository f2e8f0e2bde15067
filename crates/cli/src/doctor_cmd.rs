//! `portcullis doctor [claude|codex]`: checks a set-up end to end — the binary on `PATH`, the hub
//! running (its runtime file), the gateway answering an MCP `initialize` with the gateway token, and
//! each agent file's entries — one line per check (`ok`, `missing`, `wrong`) with the fix. Exit 0 when
//! everything is ok, 1 otherwise. It reads; it changes nothing (the session it opens it closes).

use crate::agent_config::{
    AgentFile, Finding, Folders, Scope, Wanted, agent_files, agent_word, check, on_path,
};
use crate::args::{AgentName, DoctorArgs};
use crate::error::CliError;
use portcullis_api::start::{RuntimeInfo, config_dir};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// One line of the report.
struct Line {
    finding: Finding,
    subject: String,
    /// What to do when it is not ok.
    fix: String,
}

pub fn doctor(args: &DoctorArgs) -> Result<ExitCode, CliError> {
    let mut lines = Vec::new();
    let exe =
        std::env::current_exe().map(|e| e.display().to_string()).unwrap_or_else(|_| "portcullis".into());
    lines.push(match on_path("portcullis") {
        Some(found) => Line {
            finding: Finding::Ok(format!("on PATH: {}", found.display())),
            subject: "portcullis".into(),
            fix: String::new(),
        },
        None => Line {
            finding: Finding::Missing(
                "not on PATH (the agents start `portcullis mcp` and `portcullis hook claude`)".into(),
            ),
            subject: "portcullis".into(),
            fix: format!("put it in a folder on PATH, e.g. `ln -s {exe} ~/.local/bin/portcullis`"),
        },
    });
    let config = match config_dir() {
        Ok(dir) => dir,
        Err(e) => {
            lines.push(Line {
                finding: Finding::Missing(e.to_string()),
                subject: "config".into(),
                fix: "set HOME".into(),
            });
            return report(&lines);
        }
    };
    let serve = "run `portcullis serve`".to_owned();
    let running = RuntimeInfo::read(&config);
    lines.push(match &running {
        Some(info) => Line {
            finding: Finding::Ok(format!("running (pid {}) at {}", info.pid, info.mcp_url)),
            subject: "hub".into(),
            fix: String::new(),
        },
        None => Line {
            finding: Finding::Missing(format!(
                "no hub runs (no live {})",
                RuntimeInfo::path(&config).display()
            )),
            subject: "hub".into(),
            fix: serve.clone(),
        },
    });
    let token = std::fs::read_to_string(config.join("token")).ok().map(|t| t.trim().to_owned());
    let gateway = match (&running, &token) {
        (None, _) => Finding::Missing("not checked: no hub runs".into()),
        (Some(_), None) => {
            Finding::Missing(format!("no gateway token ({} is missing)", config.join("token").display()))
        }
        (Some(info), Some(token)) => initialize(info, token),
    };
    lines.push(Line { finding: gateway, subject: "gateway".into(), fix: serve });
    match Folders::from_env().and_then(|f| Wanted::from_env().map(|w| (f, w))) {
        Err(e) => lines.push(Line {
            finding: Finding::Wrong(e.to_string()),
            subject: "agents".into(),
            fix: String::new(),
        }),
        Ok((folders, wanted)) => {
            let agents = match args.agent {
                Some(agent) => vec![agent],
                None => vec![AgentName::Claude, AgentName::Codex],
            };
            for agent in agents {
                for (user, project) in agent_files(agent, Scope::User).zip(agent_files(agent, Scope::Project))
                {
                    lines.extend(file_lines(&folders, &wanted, user, project));
                }
            }
        }
    }
    // Not on PATH is fine when every agent entry checked runs this binary by its full path (setup writes
    // that when `portcullis` is not on PATH).
    let entries_ok =
        lines_checked_agents(&lines) && lines.iter().skip(3).all(|l| matches!(l.finding, Finding::Ok(_)));
    if let Some(first) = lines.first_mut()
        && matches!(first.finding, Finding::Missing(_))
        && entries_ok
    {
        first.finding = Finding::Ok(format!("not on PATH; the agents' files run {exe} by its full path"));
    }
    report(&lines)
}

/// Whether any agent file was checked (the lines after the binary, hub and gateway lines).
fn lines_checked_agents(lines: &[Line]) -> bool {
    lines.len() > 3
}

/// The findings of one entry: in the project's file when it has Portcullis's entry there, else in the
/// user's.
fn file_lines(folders: &Folders, wanted: &Wanted, user: &AgentFile, project: &AgentFile) -> Vec<Line> {
    let findings_of = |row: &AgentFile| {
        let path = folders.path(row);
        let text = std::fs::read_to_string(&path).ok();
        (folders.shown(&path), check(row.entry, wanted, text.as_deref()))
    };
    let (project_shown, project_findings) = findings_of(project);
    let in_project = project_findings.iter().any(|f| !matches!(f, Finding::Missing(_)));
    let (row, shown, findings) = if in_project {
        (project, project_shown, project_findings)
    } else {
        let (shown, findings) = findings_of(user);
        (user, shown, findings)
    };
    let fix = format!("run `portcullis setup {} {}`", agent_word(row.agent), row.scope.flag());
    findings.into_iter().map(|finding| Line { finding, subject: shown.clone(), fix: fix.clone() }).collect()
}

/// An MCP `initialize` at the gateway with the token: ok on 200 (the session it opens is closed).
fn initialize(info: &RuntimeInfo, token: &str) -> Finding {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return Finding::Wrong(format!("no runtime for the check: {e}")),
    };
    runtime.block_on(async {
        let mut builder = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(10));
        if let Some(cert) = &info.tls_cert {
            match std::fs::read(cert).ok().and_then(|pem| reqwest::Certificate::from_pem(&pem).ok()) {
                Some(cert) => builder = builder.add_root_certificate(cert),
                None => return Finding::Wrong(format!("the hub's certificate {cert} cannot be read")),
            }
        }
        let client = match builder.build() {
            Ok(client) => client,
            Err(e) => return Finding::Wrong(format!("no HTTP client: {e}")),
        };
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "portcullis-doctor", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        let sent = client
            .post(&info.mcp_url)
            .bearer_auth(token)
            .header("Accept", "application/json, text/event-stream")
            .json(&body)
            .send()
            .await;
        match sent {
            Err(e) => Finding::Missing(format!("{} does not answer: {e}", info.mcp_url)),
            Ok(response) if response.status() == reqwest::StatusCode::OK => {
                if let Some(session) = response.headers().get("mcp-session-id").cloned() {
                    let _ = client.delete(&info.mcp_url).bearer_auth(token).header("mcp-session-id", session).send().await;
                }
                Finding::Ok(format!("initialize at {} answered 200 with the gateway token", info.mcp_url))
            }
            Ok(response) if response.status() == reqwest::StatusCode::UNAUTHORIZED => Finding::Wrong(format!(
                "{} refuses the token in the config folder (401): the hub runs with another config folder",
                info.mcp_url
            )),
            Ok(response) => Finding::Wrong(format!("initialize at {} answered {}", info.mcp_url, response.status())),
        }
    })
}

/// Prints the lines; exit 0 when all are ok.
fn report(lines: &[Line]) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    for line in lines {
        let (state, text) = match &line.finding {
            Finding::Ok(t) => ("ok", t),
            Finding::Missing(t) => ("missing", t),
            Finding::Wrong(t) => ("wrong", t),
        };
        let fix = if line.finding.is_ok() || line.fix.is_empty() {
            String::new()
        } else {
            format!(" — {}", line.fix)
        };
        writeln!(out, "{state:<7} {}: {text}{fix}", line.subject)?;
    }
    out.flush()?;
    Ok(if lines.iter().all(|l| l.finding.is_ok()) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Doctor pairs each agent's user file with its project file by their order in the table: the pair
    /// must hold the same entry (the server in either form, the hook, Codex's relay).
    #[test]
    fn user_and_project_rows_pair_up() {
        use crate::agent_config::Entry;
        for agent in [AgentName::Claude, AgentName::Codex] {
            let users: Vec<_> = agent_files(agent, Scope::User).collect();
            let projects: Vec<_> = agent_files(agent, Scope::Project).collect();
            assert_eq!(users.len(), projects.len());
            for (u, p) in users.iter().zip(&projects) {
                let same = matches!(
                    (u.entry, p.entry),
                    (Entry::ClaudeMcpRelay, Entry::ClaudeMcpRelay)
                        | (Entry::ClaudeHook, Entry::ClaudeHook)
                        | (Entry::CodexRelay, Entry::CodexRelay)
                );
                assert!(same, "{u:?} / {p:?}");
            }
        }
    }
}
