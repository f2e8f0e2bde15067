//! The terminal approver: shows a pending call on the controlling terminal (`/dev/tty`, never stdin or
//! stdout, which carry data) and reads the operator's answer: once, session, always, deny.

use async_trait::async_trait;
use portcullis_api::one_call::{Amendment, ApprovalChoice, ApprovalPrompt, Prompter};
use portcullis_api::types::{AlwaysOffer, Approval, ExecutionAction, Timestamp};
use portcullis_api::visible;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;

/// Asks on a terminal device.
pub struct TerminalPrompter {
    device: PathBuf,
    operator: String,
}

impl TerminalPrompter {
    /// The controlling terminal, if this process has one.
    pub fn controlling() -> Option<Self> {
        let device = PathBuf::from("/dev/tty");
        OpenOptions::new().read(true).write(true).open(&device).ok()?;
        Some(TerminalPrompter { device, operator: terminal_operator() })
    }
}

/// Who answers on this terminal, as the ledger records it: `alice (terminal)`, or `terminal` when the
/// user is not known (never "operator", which the texts around it already say).
pub fn terminal_operator() -> String {
    match std::env::var("USER") {
        Ok(user) if !user.is_empty() => format!("{user} (terminal)"),
        _ => "terminal".into(),
    }
}

/// The action's lines of a question: command, folder, paths, and why the policy asks. Everything here
/// comes from the agent, so control and invisible characters are shown escaped (a command cannot draw
/// another command over itself).
fn action_lines(text: &mut String, action: &ExecutionAction, reason: Option<&str>) {
    if portcullis_api::types::asks_for_host(action)
        && let Some(host) = &action.target
    {
        text.push_str(&format!(
            "  a running command asks to reach {} (its rule does not name it)\n",
            visible(host)
        ));
    }
    if let Some(command) = &action.command {
        text.push_str(&format!("  command: {}\n", visible(command)));
    }
    if let Some(cwd) = &action.cwd {
        text.push_str(&format!("  in:      {}\n", visible(&cwd.display().to_string())));
    }
    for path in &action.paths {
        text.push_str(&format!(
            "  path:    {} ({})\n",
            visible(&path.display().to_string()),
            visible(&action.operation)
        ));
    }
    if let Some(reason) = reason {
        text.push_str(&format!("  why:     {}\n", visible(reason)));
    }
}

/// What "always" would write: the rules and roots it adds, the file, and whether it creates that file.
struct AlwaysLine<'a> {
    adds: Vec<String>,
    file: &'a str,
    creates: bool,
}

/// The answers on offer; `always` is what "always" would add and to which file, or why it is not offered.
fn choice_line(text: &mut String, always: Result<AlwaysLine<'_>, &str>) {
    text.push_str("  [o] allow once   [s] allow for this session   ");
    match always {
        Ok(AlwaysLine { adds, file, creates: false }) => {
            text.push_str(&format!("[a] always (adds {} to {})   ", adds.join(", "), visible(file)));
        }
        Ok(AlwaysLine { adds, file, creates: true }) => {
            text.push_str(&format!(
                "[a] always (creates your policy {}: the built-in default's rules and {})   ",
                visible(file),
                adds.join(", ")
            ));
        }
        Err(why) => text.push_str(&format!("(always unavailable: {})   ", visible(why))),
    }
    text.push_str("[d] deny\n> ");
}

fn rule_added(id: &str, example: &str) -> String {
    format!("rule {id} ({})", visible(example))
}

fn read_root_added(path: &str) -> String {
    format!("read root {}", visible(path))
}

fn amendment_adds(amendment: &Amendment) -> Vec<String> {
    let rules =
        amendment.rules.iter().map(|r| rule_added(&r.id, r.examples.first().map_or("", String::as_str)));
    rules.chain(amendment.read_roots.iter().map(|r| read_root_added(&r.path))).collect()
}

/// The question, as shown.
pub fn describe(prompt: &ApprovalPrompt) -> String {
    let request = &prompt.request;
    let mut text = format!("\nportcullis: approval needed for `{}`\n", visible(&request.tool_name));
    action_lines(&mut text, &request.action, request.verdict.reason.as_deref());
    text.push_str(&format!(
        "  session: {}  call: {}\n",
        visible(request.call.session_id.as_ref()),
        visible(request.call.call_id.as_ref())
    ));
    let always = match (&prompt.always, &prompt.always_target) {
        (Ok(amendment), Some(target)) => Ok(AlwaysLine {
            adds: amendment_adds(amendment),
            file: target.file.as_str(),
            creates: target.creates,
        }),
        (Err(why), _) => Err(why.as_str()),
        (Ok(_), None) => Err("no policy file to write to"),
    };
    choice_line(&mut text, always);
    text
}

/// Reads one answer; `None` for an unknown word.
pub fn parse_answer(line: &str, always_offered: bool) -> Option<ApprovalChoice> {
    match line.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => Some(ApprovalChoice::Once),
        "s" | "session" => Some(ApprovalChoice::Session),
        "a" | "always" if always_offered => Some(ApprovalChoice::Always),
        "d" | "deny" | "n" | "no" => Some(ApprovalChoice::Deny),
        _ => None,
    }
}

fn ask_blocking(device: &PathBuf, question: &str, always_offered: bool) -> Result<ApprovalChoice, String> {
    let tty = OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
        .map_err(|e| format!("{}: {e}", device.display()))?;
    let mut writer = tty.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(tty);
    writer.write_all(question.as_bytes()).map_err(|e| e.to_string())?;
    for _ in 0..3 {
        writer.flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the terminal closed".into());
        }
        if let Some(choice) = parse_answer(&line, always_offered) {
            return Ok(choice);
        }
        let options = if always_offered { "o, s, a or d" } else { "o, s or d" };
        writer.write_all(format!("answer {options}\n> ").as_bytes()).map_err(|e| e.to_string())?;
    }
    Err("no valid answer after three tries".into())
}

#[async_trait]
impl Prompter for TerminalPrompter {
    fn operator(&self) -> String {
        self.operator.clone()
    }

    fn channel(&self) -> &'static str {
        "terminal"
    }

    async fn ask(&self, prompt: &ApprovalPrompt) -> Result<ApprovalChoice, String> {
        let question = describe(prompt);
        let always_offered = prompt.always.is_ok() && prompt.always_target.is_some();
        let device = self.device.clone();
        tokio::task::spawn_blocking(move || ask_blocking(&device, &question, always_offered))
            .await
            .map_err(|e| format!("the terminal prompt failed: {e}"))?
    }
}

/// A pending approval of the hub, as shown on the terminal.
pub fn describe_pending(p: &Approval) -> String {
    let mut text = format!(
        "\nportcullis: approval #{} needed for `{}` (session {})\n",
        p.id,
        visible(&p.tool),
        visible(&p.session_id)
    );
    action_lines(&mut text, &p.action, p.reason.as_deref());
    let seconds = (p.deadline.0 - Timestamp::now().0).max(0) / 1_000_000;
    text.push_str(&format!("  denied automatically in {seconds} s\n"));
    // What an answer here is bound to (the hub refuses it for other arguments).
    let policy = p.policy_version.as_deref().map_or("none", |v| v.get(..12).unwrap_or(v));
    text.push_str(&format!(
        "  answers bind arguments sha256 {}… under policy {}\n",
        p.arguments_sha256.get(..12).unwrap_or(&p.arguments_sha256),
        visible(policy)
    ));
    let always = match &p.always {
        AlwaysOffer::Yes { file, creates, rules, read_roots, .. } => {
            let rules = rules.iter().map(|r| rule_added(&r.id, &r.example));
            let adds = rules.chain(read_roots.iter().map(|r| read_root_added(r))).collect();
            Ok(AlwaysLine { adds, file: file.as_str(), creates: *creates })
        }
        AlwaysOffer::No { why } => Err(why.as_str()),
    };
    choice_line(&mut text, always);
    text
}

impl TerminalPrompter {
    /// Every line typed on the terminal, read by one thread for the life of the process (a prompt that
    /// is settled elsewhere does not leave a read behind to swallow the next answer).
    pub fn lines(&self) -> Result<tokio::sync::mpsc::UnboundedReceiver<String>, String> {
        let tty = OpenOptions::new()
            .read(true)
            .open(&self.device)
            .map_err(|e| format!("{}: {e}", self.device.display()))?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("terminal-approver".into())
            .spawn(move || {
                for line in BufReader::new(tty).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(rx)
    }

    /// Writes to the terminal.
    pub fn show(&self, text: &str) {
        if let Ok(mut tty) = OpenOptions::new().write(true).open(&self.device) {
            let _ = tty.write_all(text.as_bytes());
            let _ = tty.flush();
        }
    }
}
