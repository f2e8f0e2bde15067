//! Approvals above the harness seam: session grants, the non-interactive denier, and "always" — turning
//! an approved prompt into policy (command rules or read roots) appended atomically to a policy file,
//! only when the amended policy provably allows the approved action.

pub use crate::always_target::{AlwaysTarget, always_target, default_always_file};
use crate::always_target::{as_user_file, target_layer};
pub use crate::amendment::{Amendment, RuleScope};
use crate::document::{Access, CommandRule, Decision, PathRoot, PatternElement, PolicyDocument};
use crate::evaluation::EvalContext;
use crate::file_writes::{create_file, write_replacing};
use crate::layer::{PolicyError, PolicyLayer};
use crate::live::LivePolicy;
use crate::paths::resolve;
use crate::policy::Policy;
use crate::rule::tokens_of;
use crate::shell::analyze;
use crate::splice::append_to_array;
use async_trait::async_trait;
use portcullis_harness::{
    ActionKind, ApprovalAnswer, ApprovalRequest, Approvals, DecidedBy, ExecutionAction, OperatorOutcome,
    Receipt, Redactor, RuleRef, Timestamp, arguments_digest,
};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What an operator answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalChoice {
    /// Allow this call only.
    Once,
    /// Allow this exact action again in the same session without asking.
    Session,
    /// Allow it from now on: append the amendment to the policy file.
    Always,
    Deny,
}

/// An "allow for this session" answer: the same tool doing the same action in the same session.
#[derive(Debug, Clone, Serialize)]
pub struct SessionGrant {
    pub id: String,
    pub session_id: String,
    pub tool_name: String,
    pub action: ExecutionAction,
    pub granted_at: Timestamp,
    /// The id of the receipt of the answer that gave it (none when that answer gave no receipt).
    pub receipt: Option<String>,
}

/// The session grants in force (listed and revocable).
#[derive(Debug, Default)]
pub struct SessionGrants {
    grants: Mutex<Vec<SessionGrant>>,
    next: AtomicU64,
}

impl SessionGrants {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SessionGrant>> {
        self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What decides a request a grant covers (same session, same tool, the very same action): that
    /// grant, with the receipt that created it.
    pub fn covering(&self, request: &ApprovalRequest) -> Option<DecidedBy> {
        self.lock()
            .iter()
            .find(|g| {
                *g.session_id == *request.call.session_id
                    && g.tool_name == request.tool_name
                    && g.action == request.action
            })
            .map(|g| DecidedBy::SessionGrant { grant_id: g.id.clone(), receipt: g.receipt.clone() })
    }

    /// Records a grant for this request's session, tool and action, given by the answer whose receipt
    /// is `receipt`; returns its id.
    pub fn grant(&self, request: &ApprovalRequest, receipt: Option<&Receipt>) -> String {
        let id = format!("session-grant-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        self.lock().push(SessionGrant {
            id: id.clone(),
            session_id: request.call.session_id.to_string(),
            tool_name: request.tool_name.clone(),
            action: request.action.clone(),
            granted_at: Timestamp::now(),
            receipt: receipt.map(|r| r.id.clone()),
        });
        id
    }

    pub fn list(&self) -> Vec<SessionGrant> {
        self.lock().clone()
    }

    /// Revokes a grant; false when there was none with this id.
    pub fn revoke(&self, id: &str) -> bool {
        let mut grants = self.lock();
        let before = grants.len();
        grants.retain(|g| g.id != id);
        grants.len() != before
    }
}

/// The approver for runs nobody watches (CI): every prompt is denied, and says why.
#[derive(Debug, Default, Clone, Copy)]
pub struct DenyingApprover;

#[async_trait]
impl Approvals for DenyingApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Deny {
            reason: format!(
                "approval required ({}), but this run is non-interactive: denied",
                request.verdict.reason.as_deref().unwrap_or("the policy asks")
            ),
            decided_by: DecidedBy::Operator {
                outcome: OperatorOutcome::Denied,
                operator: Some("non-interactive".into()),
                rule_written: None,
                receipt: None,
            },
        }
    }
}

impl Policy {
    /// The amendment that would make `action` allowed from now on, checked against an amended copy of
    /// this policy; an error says why no rule can do it (a prompt or forbidden rule matched, or the
    /// command has parts no rule can vouch for, such as `eval` or interpreter code).
    pub fn always_amendment(
        &self,
        action: &ExecutionAction,
        ctx: &EvalContext,
        target_source: &str,
        operator: &str,
    ) -> Result<Amendment, String> {
        let (target, _) = target_layer(self, target_source)?;
        let before = self.evaluate_action(action, ctx);
        if before.decision != Decision::Prompt {
            return Err(format!("the policy says {}, not prompt", before.decision.as_str()));
        }
        let mut amendment = Amendment::default();
        let stamp = Timestamp::now().0 / 1_000_000;
        let existing: std::collections::HashSet<&str> =
            self.layers()[target].document.commands.rules.iter().map(|r| r.id.as_str()).collect();
        let cwd = action.cwd.clone().unwrap_or_else(|| ctx.cwd.clone());
        match action.kind {
            ActionKind::Execute => {
                let command = action.command.as_deref().unwrap_or_default();
                let analysis = analyze(command);
                let mut seen = std::collections::HashSet::new();
                for simple in &analysis.commands {
                    let tokens: Vec<String> = tokens_of(simple).into_iter().map(str::to_owned).collect();
                    if !seen.insert(tokens.clone()) || self.allowed_by_rule(target, &tokens) {
                        continue;
                    }
                    let mut n = amendment.rules.len() + 1;
                    let mut id = format!("always-{stamp}-{n}");
                    while existing.contains(id.as_str()) {
                        n += 1;
                        id = format!("always-{stamp}-{n}");
                    }
                    let example = tokens
                        .iter()
                        .map(|t| portcullis_harness::shell_words::word(t))
                        .collect::<Vec<_>>()
                        .join(" ");
                    amendment.rules.push(CommandRule {
                        id,
                        pattern: tokens.into_iter().map(PatternElement::Token).collect(),
                        exact: true,
                        decision: Decision::Allow,
                        justification: Some(format!(
                            "approved always by {operator} for `{}`",
                            command.chars().take(200).collect::<String>()
                        )),
                        network: crate::document::NetworkGrant::default(),
                        other_hosts: crate::document::OtherHosts::default(),
                        direct_writes: false,
                        examples: vec![example],
                        not_match: Vec::new(),
                    });
                }
                for redirection in analysis.redirections.iter().filter(|r| !r.write && !r.dynamic) {
                    if let Ok(path) = resolve(&redirection.target, &cwd, ctx.home.as_deref()) {
                        self.add_read_root(&path, &mut amendment);
                    }
                }
            }
            ActionKind::Read => {
                for path in &action.paths {
                    self.add_read_root(path, &mut amendment);
                }
            }
            _ => return Err(format!("a {} action is not decided by command rules", action.operation)),
        }
        if !amendment.read_roots.is_empty() && self.layers()[target].document.paths.roots.is_empty() {
            // A first root would confine that layer to it (a layer without roots abstains).
            return Err(format!("{target_source} declares no path roots; a read root cannot be added to it"));
        }
        if amendment.rules.is_empty() && amendment.read_roots.is_empty() {
            return Err(format!(
                "no rule or root would change it: {}",
                before.deciding_reason.unwrap_or_else(|| "the policy asks".into())
            ));
        }
        let amended =
            self.amended(target, &amendment, None).map_err(|e| format!("the amended policy fails: {e}"))?;
        let after = amended.evaluate_action(action, ctx);
        if after.decision != Decision::Allow {
            return Err(format!(
                "an allow rule would not change it: {}",
                after.deciding_reason.unwrap_or_else(|| after.decision.as_str().to_owned())
            ));
        }
        Ok(amendment)
    }

    /// Whether some allow rule of layer `target` matches these tokens (each layer judges on its own).
    fn allowed_by_rule(&self, target: usize, tokens: &[String]) -> bool {
        self.layers().iter().skip(target).take(1).flat_map(|l| &l.document.commands.rules).any(|rule| {
            rule.decision == Decision::Allow
                && crate::document::pattern_matches(&rule.pattern, rule.exact, tokens)
        })
    }

    fn add_read_root(&self, path: &Path, amendment: &mut Amendment) {
        let inside = self.inside_roots(path, Access::Read);
        let text = path.display().to_string();
        if !inside && !amendment.read_roots.iter().any(|r| r.path == text) {
            amendment.read_roots.push(PathRoot { path: text, access: Access::Read });
        }
    }

    /// This policy with `amendment` added to the layer loaded from `target_source` (not written
    /// anywhere), that layer's text before and after. For a file "always" creates, "before" is the
    /// built-in default it starts from, so a diff shows what the operator adds, not ninety new lines.
    pub fn with_amendment(
        &self,
        target_source: &str,
        amendment: &Amendment,
    ) -> Result<(Policy, String, String), String> {
        let (target, creates) = target_layer(self, target_source)?;
        let amended = self
            .amended(target, amendment, creates.then_some(target_source))
            .map_err(|e| format!("the amended policy fails: {e}"))?;
        let mut layer = self.layers()[target].clone();
        if creates {
            as_user_file(&mut layer, target_source);
        }
        let before = layer.text.unwrap_or_default();
        let text = amended.layers()[target].text.clone().unwrap_or_default();
        Ok((amended, before, text))
    }

    /// This policy with `amendment` added to layer `target` (not written anywhere); `becomes`: the
    /// built-in default's layer turns into the user's policy file of that name (see
    /// [`crate::always_target`]).
    fn amended(
        &self,
        target: usize,
        amendment: &Amendment,
        becomes: Option<&str>,
    ) -> Result<Policy, PolicyError> {
        let mut layers: Vec<PolicyLayer> = self.layers().to_vec();
        let layer = &mut layers[target];
        if let Some(file) = becomes {
            as_user_file(layer, file);
        }
        let text = amended_text(layer, amendment)?;
        layer.document.commands.rules.extend(amendment.rules.iter().cloned());
        layer.document.paths.roots.extend(amendment.read_roots.iter().cloned());
        crate::host_approval::add_hosts(&mut layer.document, &amendment.hosts);
        layer.text = Some(text);
        let protected = self.protected().clone();
        Policy::from_layers(layers).map(|p| p.with_protected(|z| *z = protected))
    }
}

/// The layer's text with the amendment appended: spliced into the existing arrays when the result
/// parses back to exactly the amended document, else the whole document rewritten.
fn amended_text(layer: &PolicyLayer, amendment: &Amendment) -> Result<String, PolicyError> {
    let mut document = layer.document.clone();
    document.commands.rules.extend(amendment.rules.iter().cloned());
    document.paths.roots.extend(amendment.read_roots.iter().cloned());
    crate::host_approval::add_hosts(&mut document, &amendment.hosts);
    let spliced = layer.text.as_deref().and_then(|text| {
        let rules: Vec<String> =
            amendment.rules.iter().map(|r| serde_json::to_string(r).ok()).collect::<Option<_>>()?;
        let roots: Vec<String> =
            amendment.read_roots.iter().map(|r| serde_json::to_string(r).ok()).collect::<Option<_>>()?;
        let text = append_to_array(text, &["commands", "rules"], &rules)?;
        let text = append_to_array(&text, &["paths", "roots"], &roots)?;
        crate::host_approval::splice_hosts(&text, &amendment.hosts)
    });
    if let Some(text) = spliced
        && serde_json::from_str::<PolicyDocument>(&text).is_ok_and(|d| d == document)
    {
        return Ok(text);
    }
    serde_json::to_string_pretty(&document)
        .map(|t| t + "\n")
        .map_err(|e| PolicyError::Invalid { file: layer.source.clone(), message: e.to_string() })
}

static WRITING: Mutex<()> = Mutex::new(());

/// Appends `amendment` to the policy file `target_source` (one of `policy`'s layers) atomically: the file
/// must be unchanged since it was loaded, the amended policy must load (examples included), and the new
/// text replaces the old by rename. Returns the amended policy and the rules written.
pub fn append_amendment(
    policy: &Policy,
    target_source: &str,
    amendment: &Amendment,
) -> Result<(Policy, Vec<RuleRef>), PolicyError> {
    let _writing = WRITING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let invalid = |message: String| PolicyError::Invalid { file: target_source.to_owned(), message };
    let (target, creates) = target_layer(policy, target_source).map_err(invalid)?;
    let path = PathBuf::from(target_source);
    if creates {
        let amended = policy.amended(target, amendment, Some(target_source))?;
        let text = amended.layers()[target].text.clone().unwrap_or_default();
        create_file(&path, &text)
            .map_err(|source| PolicyError::Io { file: target_source.to_owned(), source })?;
        tracing::info!(file = target_source, rules = amendment.rules.len(), "the user's policy file created");
        return Ok((amended, written_refs(target_source, amendment)));
    }
    let loaded_text = policy.layers()[target].text.clone();
    let on_disk = std::fs::read_to_string(&path)
        .map_err(|source| PolicyError::Io { file: target_source.to_owned(), source })?;
    if loaded_text.as_deref() != Some(on_disk.as_str()) {
        return Err(invalid("the file changed since it was loaded; reload it and answer again".into()));
    }
    let amended = policy.amended(target, amendment, None)?;
    let text = amended.layers()[target].text.clone().unwrap_or_default();
    write_replacing(&path, &text, &on_disk)
        .map_err(|source| PolicyError::Io { file: target_source.to_owned(), source })?;
    let written = written_refs(target_source, amendment);
    tracing::info!(
        file = target_source,
        rules = amendment.rules.len(),
        roots = amendment.read_roots.len(),
        "policy amended"
    );
    Ok((amended, written))
}

/// The rules of `amendment` as written to `file` (a rule a host was added to included).
fn written_refs(file: &str, amendment: &Amendment) -> Vec<RuleRef> {
    let added = amendment.rules.iter().map(|r| RuleRef {
        id: r.id.clone(),
        source: file.to_owned(),
        decision: Some(r.decision.as_str().to_owned()),
    });
    let widened = amendment.hosts.iter().map(|h| RuleRef {
        id: h.rule.clone(),
        source: file.to_owned(),
        decision: None,
    });
    added.chain(widened).collect()
}

/// What an operator is shown: the request and whether "always" is on offer (and what it would write).
#[derive(Debug, Clone)]
pub struct ApprovalPrompt {
    pub request: ApprovalRequest,
    /// The amendment "always" would append, or why it is not offered.
    pub always: Result<Amendment, String>,
    /// Where "always" writes (and whether it creates the file).
    pub always_target: Option<AlwaysTarget>,
}

/// Asks a person (a terminal, the desktop app ...). An error means nobody could be asked: denied.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Who answers, as recorded in the ledger.
    fn operator(&self) -> String;
    /// Through which front end (`terminal`, `app`...), as the answer's receipt records it.
    fn channel(&self) -> &'static str;
    async fn ask(&self, prompt: &ApprovalPrompt) -> Result<ApprovalChoice, String>;
}

/// The approver that asks an operator through a [`Prompter`]: session grants answer repeated actions,
/// "always" amends the policy file and puts the amended policy in force.
pub struct OperatorApprover {
    prompter: Arc<dyn Prompter>,
    grants: Arc<SessionGrants>,
    live: Arc<LivePolicy>,
    always_target: Option<AlwaysTarget>,
    /// Secrets this redactor finds are never written into an "always" rule.
    redactor: Option<Redactor>,
}

impl OperatorApprover {
    /// `always_target`: where "always" writes (none: "always" is not offered).
    pub fn new(
        prompter: Arc<dyn Prompter>,
        grants: Arc<SessionGrants>,
        live: Arc<LivePolicy>,
        always_target: Option<AlwaysTarget>,
    ) -> Self {
        OperatorApprover { prompter, grants, live, always_target, redactor: None }
    }

    /// "Always" is not offered for an action holding a secret this redactor knows.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = Some(redactor);
        self
    }
}

/// What "always" would write for this request, or why it is not offered: no policy file, a rule or
/// construct an allow rule cannot override (see [`Policy::always_amendment`]), or a secret the redactor
/// knows (the rule would write it into the file).
pub fn always_offer(
    live: &LivePolicy,
    request: &ApprovalRequest,
    file: Option<&str>,
    operator: &str,
    redactor: Option<&Redactor>,
) -> Result<Amendment, String> {
    let file =
        file.ok_or("no policy file to write to (no user config folder: set HOME or PORTCULLIS_CONFIG_DIR)")?;
    if crate::host_approval::asks_for_host(&request.action) {
        return Err("a host goes into the rule that asked, not a new rule".into());
    }
    let ctx = live.context_for(request.call.cwd.as_deref());
    let amendment = live.current().always_amendment(&request.action, &ctx, file, operator)?;
    let text = serde_json::to_string(&amendment).unwrap_or_default();
    if redactor.is_some_and(|r| r.redact_str(&text).is_some()) {
        return Err("the command holds a secret, which a rule would write into the policy file".into());
    }
    Ok(amendment)
}

/// The operator's answer to an approval prompt, bound to what it approved: the receipt of `choice` for
/// `request` (its arguments' digest, the policy version in force now), given by `operator` through
/// `channel` on `approval_id`.
pub fn receipt_of(
    choice: ApprovalChoice,
    request: &ApprovalRequest,
    approval_id: &str,
    operator: &str,
    channel: &str,
    live: &LivePolicy,
) -> Receipt {
    Receipt::identified(Receipt {
        id: String::new(),
        approval_id: approval_id.to_owned(),
        session_id: request.call.session_id.to_string(),
        call_id: request.call.call_id.to_string(),
        tool: request.tool_name.clone(),
        arguments_sha256: arguments_digest(&request.arguments),
        policy_version: Some(live.current().version().to_string()),
        operator: operator.to_owned(),
        channel: channel.to_owned(),
        outcome: choice.outcome(),
        at: Timestamp::now(),
    })
}

impl ApprovalChoice {
    /// The outcome this answer records when carried out as given.
    pub fn outcome(self) -> OperatorOutcome {
        match self {
            ApprovalChoice::Once => OperatorOutcome::ApprovedOnce,
            ApprovalChoice::Session => OperatorOutcome::ApprovedForSession,
            ApprovalChoice::Always => OperatorOutcome::ApprovedAlways,
            ApprovalChoice::Deny => OperatorOutcome::Denied,
        }
    }
}

/// `amendment` with the receipt that approved it named in each rule's justification, so the rule in the
/// policy file says which answer created it.
fn stamped(amendment: &Amendment, receipt: Option<&Receipt>) -> Amendment {
    let mut stamped = amendment.clone();
    if let Some(receipt) = receipt {
        for rule in &mut stamped.rules {
            let said = rule.justification.take().unwrap_or_default();
            let sep = if said.is_empty() { "" } else { "; " };
            rule.justification = Some(format!("{said}{sep}receipt {}", receipt.id));
        }
    }
    stamped
}

/// Carries out an operator's answer: once; a session grant; "always" (the offered amendment appended to
/// `file` and the amended policy put in force — allowed once if it cannot be written); or deny. The
/// `receipt` of the answer travels with it (the dispatcher checks it covers the call), is kept by the
/// session grant it gives and named in the rules "always" writes.
pub fn settle(
    choice: ApprovalChoice,
    request: &ApprovalRequest,
    always: Option<(&str, &Amendment)>,
    operator: &str,
    receipt: Option<&Receipt>,
    grants: &SessionGrants,
    live: &LivePolicy,
) -> ApprovalAnswer {
    let said = |outcome, rule_written| DecidedBy::Operator {
        outcome,
        operator: Some(operator.to_owned()),
        rule_written,
        receipt: receipt.map(|r| Box::new(r.clone())),
    };
    match choice {
        ApprovalChoice::Once => {
            ApprovalAnswer::Allow { decided_by: said(OperatorOutcome::ApprovedOnce, None) }
        }
        ApprovalChoice::Session => {
            let _grant = grants.grant(request, receipt);
            ApprovalAnswer::Allow { decided_by: said(OperatorOutcome::ApprovedForSession, None) }
        }
        ApprovalChoice::Always => {
            // "Always" not on offer: the operator still allowed this call.
            let Some((file, amendment)) = always else {
                return ApprovalAnswer::Allow { decided_by: said(OperatorOutcome::ApprovedOnce, None) };
            };
            match append_amendment(&live.current(), file, &stamped(amendment, receipt)) {
                Ok((amended, written)) => {
                    live.replace(amended);
                    ApprovalAnswer::Allow {
                        decided_by: said(
                            OperatorOutcome::ApprovedAlways,
                            written.into_iter().next().map(Box::new),
                        ),
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the always-rule was not written; allowing this call once");
                    ApprovalAnswer::Allow { decided_by: said(OperatorOutcome::ApprovedOnce, None) }
                }
            }
        }
        ApprovalChoice::Deny => ApprovalAnswer::Deny {
            reason: format!("denied by the operator ({operator})"),
            decided_by: said(OperatorOutcome::Denied, None),
        },
    }
}

#[async_trait]
impl Approvals for OperatorApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalAnswer {
        if let Some(decided_by) = self.grants.covering(&request) {
            return ApprovalAnswer::Allow { decided_by };
        }
        let operator = self.prompter.operator();
        let always = always_offer(
            &self.live,
            &request,
            self.always_target.as_ref().map(|t| t.file.as_str()),
            &operator,
            self.redactor.as_ref(),
        );
        let prompt = ApprovalPrompt { request, always, always_target: self.always_target.clone() };
        let choice = match self.prompter.ask(&prompt).await {
            Ok(choice) => choice,
            Err(why) => {
                return ApprovalAnswer::Deny {
                    reason: format!("the operator could not be asked ({why}): denied"),
                    decided_by: DecidedBy::Operator {
                        outcome: OperatorOutcome::Denied,
                        operator: Some(operator),
                        rule_written: None,
                        receipt: None,
                    },
                };
            }
        };
        let offered = match (&prompt.always, &self.always_target) {
            (Ok(amendment), Some(target)) => Some((target.file.as_str(), amendment)),
            _ => None,
        };
        let approval_id = prompt.request.call.call_id.to_string();
        let receipt =
            receipt_of(choice, &prompt.request, &approval_id, &operator, self.prompter.channel(), &self.live);
        settle(choice, &prompt.request, offered, &operator, Some(&receipt), &self.grants, &self.live)
    }
}
