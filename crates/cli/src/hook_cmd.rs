//! `portcullis hook claude`: Claude Code's PreToolUse hook. It asks the running hub (so the operator can
//! be prompted) or, when none runs, judges with the policies itself; either way the decision is in the
//! ledger. Tools the policy does not govern get no decision (`{}`: Claude Code's own permissions
//! decide). Whatever goes wrong, the answer is deny (fail closed), with the reason.

use crate::args::HookArgs;
use crate::error::CliError;
use portcullis_hub::config::{RuntimeInfo, default_ledger_path, load_or_create_token, user_config_dir};
use portcullis_hub::hook::{HookAnswer, MAX_HOOK_INPUT_BYTES, parse_input};
use portcullis_hub::{Hub, HubConfig};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::Duration;

pub fn hook_claude(args: &HookArgs) -> Result<ExitCode, CliError> {
    let mut input = Vec::new();
    let read = std::io::stdin().take(MAX_HOOK_INPUT_BYTES as u64 + 1).read_to_end(&mut input);
    let answer = match read {
        Err(e) => HookAnswer::deny(format!("Portcullis could not read the hook input: {e}")),
        Ok(_) => match String::from_utf8(input) {
            Err(_) => HookAnswer::deny("Portcullis refused a hook input that is not UTF-8"),
            Ok(text) => decide(args, &text),
        },
    };
    if answer.decision == portcullis_hub::hook::HookDecision::Deny {
        let _ = writeln!(std::io::stderr().lock(), "portcullis hook: {}", answer.reason);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", answer.to_hook_output())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn decide(args: &HookArgs, text: &str) -> HookAnswer {
    let input = match parse_input(text) {
        Ok(input) => input,
        Err(why) => return HookAnswer::deny(format!("Portcullis refused a malformed hook input: {why}")),
    };
    if let Some(dir) = user_config_dir()
        && let Some(info) = RuntimeInfo::read(&dir)
    {
        return match ask_hub(&info, &dir, text, args.wait) {
            Ok(answer) => answer,
            Err(why) => HookAnswer::deny(format!("Portcullis could not reach the running hub: {why}")),
        };
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return HookAnswer::deny(format!("Portcullis could not start: {e}")),
    };
    runtime.block_on(async {
        let db = match args.db.clone().map_or_else(default_ledger_path, Ok) {
            Ok(db) => db,
            Err(e) => return HookAnswer::deny(format!("Portcullis has no ledger to record in: {e}")),
        };
        let config = HubConfig {
            policy_files: args.policies.clone(),
            shutdown_grace: Duration::from_secs(2),
            unattended: true,
            // The agent runs the commands a hook judges itself: no launcher, no probe on each call.
            sandbox_launcher: None,
            ..HubConfig::new(input.cwd.clone(), db)
        };
        let hub = match Hub::open(config).await {
            Ok(hub) => hub,
            Err(e) => {
                return HookAnswer::deny(format!("Portcullis could not load its policy or ledger: {e}"));
            }
        };
        let answer = hub.decide_hook(&input, Duration::from_secs(args.wait)).await;
        if let Err(e) = hub.close().await {
            return HookAnswer::deny(format!("Portcullis could not record the decision: {e}"));
        }
        answer
    })
}

/// Posts the hook input to the hub's `/v1/hook/claude` and returns its answer.
fn ask_hub(info: &RuntimeInfo, dir: &std::path::Path, body: &str, wait: u64) -> Result<HookAnswer, String> {
    let token = load_or_create_token(dir).map_err(|e| format!("token: {e}"))?;
    let rest = info.api_url.strip_prefix("http://").ok_or("the hub's API is not http://")?;
    let (host, base) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(host).map_err(|e| format!("{host}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(wait + 10))).map_err(|e| e.to_string())?;
    let request = format!(
        "POST {base}/hook/claude?wait={wait} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream.take(1024 * 1024).read_to_end(&mut response).map_err(|e| e.to_string())?;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response.split_once("\r\n\r\n").ok_or("the hub's answer is not HTTP")?;
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        return Err(format!(
            "the hub answered HTTP {status}: {}",
            body.chars().take(300).collect::<String>()
        ));
    }
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("the hub's answer is not JSON: {e}"))?;
    if value.as_object().is_some_and(serde_json::Map::is_empty) {
        return Ok(HookAnswer {
            decision: portcullis_hub::hook::HookDecision::Pass,
            reason: "the hub does not govern this tool".into(),
        });
    }
    let output = &value["hookSpecificOutput"];
    let decision = match output["permissionDecision"].as_str() {
        Some("allow") => portcullis_hub::hook::HookDecision::Allow,
        Some("ask") => portcullis_hub::hook::HookDecision::Ask,
        Some("deny") => portcullis_hub::hook::HookDecision::Deny,
        other => return Err(format!("the hub answered an unknown decision {other:?}")),
    };
    Ok(HookAnswer {
        decision,
        reason: output["permissionDecisionReason"].as_str().unwrap_or_default().to_owned(),
    })
}
