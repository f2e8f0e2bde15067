//! The hook's side of a sandboxed `Bash` command: the answer Claude Code gets (its command replaced by
//! `portcullis run --ticket`), and `portcullis run` itself, which redeems the ticket at the running hub
//! and passes the command's output, exit code and final folder on as if it had run here.

use base64::Engine as _;
use portcullis_hub::RunUpdate;
use portcullis_hub::{HookAnswer, HookDecision};
use portcullis_hub::{RuntimeInfo, load_or_create_token, user_config_dir};
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

/// The command Claude Code runs for a ticketed `Bash` call: `portcullis run` prints the output, exits
/// with the command's status and hands the folder the command ended in back on fd 3, so that Claude
/// Code's shell follows a `cd` as if the command had run there.
pub fn ticket_command(exe: &Path, ticket: &str, config: Option<&Path>) -> String {
    let exe = portcullis_harness::shell_words::quoted(&exe.to_string_lossy());
    // The hook was told its config folder; Claude Code's shell, which runs this, was not.
    let env = config
        .map(|dir| {
            format!(
                "PORTCULLIS_CONFIG_DIR={} ",
                portcullis_harness::shell_words::quoted(&dir.to_string_lossy())
            )
        })
        .unwrap_or_default();
    format!(
        "{{ __portcullis_folder=$({env}{exe} run --ticket {ticket} --folder-to /dev/fd/3 3>&1 1>&4 4>&-); }} 4>&1; \
         __portcullis_status=$?; [ -n \"$__portcullis_folder\" ] && cd -- \"$__portcullis_folder\"; \
         (exit $__portcullis_status)"
    )
}

/// What the hook process prints for Claude Code: the answer, with a ticketed command in place of the
/// `Bash` command (the rest of its input kept).
pub fn claude_code_output(input_text: &str, answer: &HookAnswer) -> Value {
    if answer.ticket.is_some() && answer.decision != HookDecision::Deny {
        let exe = std::env::current_exe().ok();
        let input: Value = serde_json::from_str(input_text).unwrap_or(Value::Null);
        if let (Some(exe), Some(tool_input)) = (exe, input.get("tool_input")) {
            let config = std::env::var_os("PORTCULLIS_CONFIG_DIR").map(std::path::PathBuf::from);
            return answer
                .to_claude_code(tool_input, |ticket| ticket_command(&exe, ticket, config.as_deref()));
        }
        // No way to name this binary: the call cannot be carried out as judged.
        return HookAnswer::deny(
            "Portcullis could not name its own binary to run the command in its sandbox",
        )
        .to_hook_output();
    }
    let mut output = answer.to_hook_output();
    if let Some(map) = output.as_object_mut() {
        map.remove("portcullisTicket");
    }
    output
}

/// `portcullis run --ticket T`: the exit status to end with.
pub fn run_ticket(ticket: &str, folder_to: Option<&Path>) -> u8 {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(&format!("could not start: {e}")),
    };
    let Some(dir) = user_config_dir() else { return fail("no config folder: no hub to run the command") };
    let Some(info) = RuntimeInfo::read(&dir) else {
        return fail("no hub is running: the command was allowed for a hub that has stopped; it did not run");
    };
    match runtime.block_on(redeem(&info, &dir, ticket)) {
        Ok(end) => finish(end, folder_to),
        Err(why) => fail(&format!("the command did not run: {why}")),
    }
}

fn fail(message: &str) -> u8 {
    let _ = writeln!(std::io::stderr().lock(), "portcullis run: {message}");
    1
}

fn finish(end: RunUpdate, folder_to: Option<&Path>) -> u8 {
    let RunUpdate::End { exit_code, signal, folder, notes } = end else { return 1 };
    let mut err = std::io::stderr().lock();
    for note in notes {
        let _ = writeln!(err, "portcullis: {}", portcullis_harness::untrusted::visible(&note));
    }
    if let (Some(to), Some(folder)) = (folder_to, folder)
        && let Ok(mut out) = std::fs::OpenOptions::new().write(true).open(to)
    {
        let _ = out.write_all(folder.as_bytes());
    }
    match (exit_code, signal) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from((128 + signal) & 0xff).unwrap_or(1),
        (None, None) => 1,
    }
}

/// Redeems the ticket and copies the run's output here as it comes; the run's end.
async fn redeem(info: &RuntimeInfo, dir: &Path, ticket: &str) -> Result<RunUpdate, String> {
    let token = load_or_create_token(dir).map_err(|e| format!("token: {e}"))?;
    if !(info.api_url.starts_with("http://") || info.api_url.starts_with("https://")) {
        return Err(format!("the hub's API {:?} is not http:// or https://", info.api_url));
    }
    let client = crate::operator_remote::hub_http_client(info.tls_cert.as_deref())?
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let mut response = client
        .post(format!("{}/hook/claude/run", info.api_url))
        .bearer_auth(token.trim())
        .json(&json!({ "ticket": ticket }))
        .send()
        .await
        .map_err(|e| format!("{}: {e}", info.api_url))?;
    if response.status() != reqwest::StatusCode::OK {
        let status = response.status().as_u16();
        let text = crate::hook_process::read_bounded(response).await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or(text);
        return Err(format!("the hub answered HTTP {status}: {message}"));
    }
    let mut pending: Vec<u8> = Vec::new();
    let decode = |data: &str| base64::engine::general_purpose::STANDARD.decode(data).unwrap_or_default();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("the run's stream broke: {e}"))? {
        pending.extend_from_slice(&chunk);
        while let Some(at) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=at).collect();
            let update: RunUpdate = serde_json::from_slice(&line)
                .map_err(|e| format!("the hub sent a line that is not a run update: {e}"))?;
            match update {
                RunUpdate::Stdout { data } => {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(&decode(&data));
                    let _ = out.flush();
                }
                RunUpdate::Stderr { data } => {
                    let _ = std::io::stderr().lock().write_all(&decode(&data));
                }
                end @ RunUpdate::End { .. } => return Ok(end),
            }
        }
        if pending.len() > 1024 * 1024 {
            return Err("the hub sent a line over a megabyte".into());
        }
    }
    Err("the hub ended the run's stream before the command ended".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ticket_command_keeps_the_status_and_follows_the_folder() {
        // A stand-in for `portcullis run`: prints, hands a folder back on fd 3, exits 7.
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("fake run");
        std::fs::write(&fake, "#!/bin/sh\necho out\necho err >&2\nprintf /tmp >&3\nexit 7\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let script = format!("{}; echo \"status=$? pwd=$PWD\"", ticket_command(&fake, "abc", None));
        let out =
            std::process::Command::new("bash").arg("-c").arg(&script).current_dir("/").output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out\nstatus=7 pwd=/tmp\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    }

    #[test]
    fn only_a_ticketed_answer_changes_the_command() {
        let input = r#"{"tool_input": {"command": "ls", "description": "list"}}"#;
        let mut answer = HookAnswer::new(HookDecision::Allow, "ok");
        let plain = claude_code_output(input, &answer);
        assert!(plain["hookSpecificOutput"].get("updatedInput").is_none());
        answer.ticket = Some("ab".repeat(32));
        let ticketed = claude_code_output(input, &answer);
        let updated = &ticketed["hookSpecificOutput"]["updatedInput"];
        assert_eq!(updated["description"], "list");
        assert!(updated["command"].as_str().unwrap().contains(&format!("run --ticket {}", "ab".repeat(32))));
        assert!(ticketed.get("portcullisTicket").is_none());
    }
}
