//! The `portcullis hook claude` process: Claude Code's PreToolUse hook input in, its answer out. It asks
//! the running hub (so the operator can be prompted) over HTTP with a maintained client (reqwest), or,
//! when no hub runs, judges with the policies itself, opening the ledger to record the decision. Whatever
//! goes wrong, the answer is deny (fail closed) with the reason.

use portcullis_hub::{HookAnswer, HookDecision, parse_hook_input};
use portcullis_hub::{Hub, HubConfig};
use portcullis_hub::{RuntimeInfo, default_ledger_path, load_or_create_token, user_config_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the hook process decides: how long to wait for an operator, and, without a running hub, which
/// policies and ledger to use.
#[derive(Debug, Clone, Default)]
pub struct HookOptions {
    /// Seconds to wait for an operator's answer.
    pub wait: u64,
    /// Without a running hub: policy files (none: the user's and the project's).
    pub policies: Vec<PathBuf>,
    /// Without a running hub: the ledger (none: the user's).
    pub db: Option<PathBuf>,
}

/// The answer to the hook input `text` (already read, at most [`portcullis_hub::MAX_HOOK_INPUT_BYTES`]).
pub fn answer_claude_hook(text: &str, options: &HookOptions) -> HookAnswer {
    let input = match parse_hook_input(text) {
        Ok(input) => input,
        Err(why) => return HookAnswer::deny(format!("Portcullis refused a malformed hook input: {why}")),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return HookAnswer::deny(format!("Portcullis could not start: {e}")),
    };
    if let Some(dir) = user_config_dir()
        && let Some(info) = RuntimeInfo::read(&dir)
    {
        return match runtime.block_on(ask_hub(&info, &dir, text, options.wait)) {
            Ok(answer) => answer,
            Err(why) => HookAnswer::deny(format!("Portcullis could not reach the running hub: {why}")),
        };
    }
    runtime.block_on(async {
        let db = match options.db.clone().map_or_else(default_ledger_path, Ok) {
            Ok(db) => db,
            Err(e) => return HookAnswer::deny(format!("Portcullis has no ledger to record in: {e}")),
        };
        let config = HubConfig {
            policy_files: options.policies.clone(),
            shutdown_grace: Duration::from_secs(2),
            unattended: true,
            // The agent runs the commands a hook judges itself: no launcher, no probe on each call.
            sandbox_launcher: None,
            // Shipping is left to the next hub of this ledger (it resumes from the ledger's cursor).
            team_ledger: portcullis_hub::TeamLedgerChoice::Off,
            ..HubConfig::new(input.cwd.clone(), db)
        };
        let hub = match Hub::open(config).await {
            Ok(hub) => hub,
            Err(e) => {
                return HookAnswer::deny(format!("Portcullis could not load its policy or ledger: {e}"));
            }
        };
        let answer = hub.decide_hook(&input, Duration::from_secs(options.wait)).await;
        if let Err(e) = hub.close().await {
            return HookAnswer::deny(format!("Portcullis could not record the decision: {e}"));
        }
        answer
    })
}

/// Posts the hook input to the hub's `/v1/hook/claude` (with the agents' token: the hook speaks for the
/// agent) and reads its answer.
async fn ask_hub(info: &RuntimeInfo, dir: &Path, body: &str, wait: u64) -> Result<HookAnswer, String> {
    let token = load_or_create_token(dir).map_err(|e| format!("token: {e}"))?;
    if !(info.api_url.starts_with("http://") || info.api_url.starts_with("https://")) {
        return Err(format!("the hub's API {:?} is not http:// or https://", info.api_url));
    }
    let client = crate::operator_remote::hub_http_client(info.tls_cert.as_deref())?
        .timeout(Duration::from_secs(wait + 10))
        .build()
        .map_err(|e| e.to_string())?;
    let response = client
        .post(format!("{}/hook/claude?wait={wait}", info.api_url))
        .bearer_auth(token.trim())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_owned())
        .send()
        .await
        .map_err(|e| format!("{}: {e}", info.api_url))?;
    let status = response.status();
    let text = read_bounded(response).await?;
    if status != reqwest::StatusCode::OK {
        return Err(format!(
            "the hub answered HTTP {}: {}",
            status.as_u16(),
            text.chars().take(300).collect::<String>()
        ));
    }
    answer_of_hub(&text)
}

/// The answer's body, refused past a megabyte (the hub's answers are small).
pub(crate) async fn read_bounded(mut response: reqwest::Response) -> Result<String, String> {
    const MAX: usize = 1024 * 1024;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX {
            return Err("the hub's answer is over a megabyte".into());
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| "the hub's answer is not UTF-8".into())
}

/// The hook answer in the hub's JSON (`{}`: the hub does not govern the tool).
fn answer_of_hub(text: &str) -> Result<HookAnswer, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the hub's answer is not JSON: {e}"))?;
    if value.as_object().is_some_and(serde_json::Map::is_empty) {
        return Ok(HookAnswer::new(HookDecision::Pass, "the hub does not govern this tool"));
    }
    let output = &value["hookSpecificOutput"];
    let decision = match output["permissionDecision"].as_str() {
        Some("allow") => HookDecision::Allow,
        Some("ask") => HookDecision::Ask,
        Some("deny") => HookDecision::Deny,
        other => return Err(format!("the hub answered an unknown decision {other:?}")),
    };
    let mut answer =
        HookAnswer::new(decision, output["permissionDecisionReason"].as_str().unwrap_or_default());
    // Only a 64-hex-digit ticket: it goes into a command line.
    answer.ticket = value["portcullisTicket"]
        .as_str()
        .filter(|t| t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned);
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hubs_answers_are_read_and_anything_else_refused() {
        assert_eq!(answer_of_hub("{}").unwrap().decision, HookDecision::Pass);
        let deny =
            r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}"#;
        let answer = answer_of_hub(deny).unwrap();
        assert_eq!((answer.decision, answer.reason.as_str()), (HookDecision::Deny, "no"));
        assert!(answer_of_hub(r#"{"hookSpecificOutput": {"permissionDecision": "yes"}}"#).is_err());
        assert!(answer_of_hub("allow").is_err());
    }
}
