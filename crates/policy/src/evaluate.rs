//! A policy's entry points: a shell command, a path, or the action a tool described, each judged under
//! one filesystem snapshot from a canonical working folder. Above the loaded policy (`policy`) and the
//! judges it calls (`judge`, `judge_files`); what they answer is an [`Evaluation`].

use crate::document::{Access, Decision};
use crate::evaluation::{EvalContext, Evaluation, PartKind, shorten};
use crate::policy::Policy;
use crate::shell::{FileRole, analyze};
use portcullis_harness::{ActionKind, ExecutionAction};

/// The operation of a write that leaves the file executable (the coding `write` tool's `executable:
/// true`, `portcullis_coding::write::WRITE_EXECUTABLE`): at least a prompt, whatever the roots say.
pub const EXECUTABLE_WRITE: &str = "write_executable";

/// The evaluation given when the working folder itself cannot be resolved: nothing relative to it can
/// be proven inside a root.
fn unresolvable_cwd(ctx: &EvalContext) -> Evaluation {
    let mut eval = Evaluation::new();
    eval.raise(
        Decision::Forbidden,
        format!("the working folder {} cannot be resolved", ctx.cwd.display()),
        None,
    );
    eval
}

impl Policy {
    /// Evaluates a shell command run from `ctx.cwd`.
    pub fn evaluate_command(&self, command: &str, ctx: &EvalContext) -> Evaluation {
        self.evaluate_analyzed(&Analyzed::of(command), ctx)
    }

    /// Evaluates a shell command already analyzed (several policies judging one command share its
    /// analysis: a replay judges each call by the policy in force and by a draft).
    pub fn evaluate_analyzed(&self, analyzed: &Analyzed, ctx: &EvalContext) -> Evaluation {
        crate::snapshot::within(|| self.judge_analyzed(&analyzed.command, &analyzed.analysis, ctx))
    }

    fn judge_analyzed(
        &self,
        command: &str,
        analysis: &crate::shell::ShellAnalysis,
        ctx: &EvalContext,
    ) -> Evaluation {
        let Some(ctx) = &ctx.canonical() else { return unresolvable_cwd(ctx) };
        let mut eval = Evaluation::new();
        if analysis.parse_errors {
            eval.judge_part(PartKind::Unseen, shorten(command), true, |part| {
                part.raise(
                    self.unknown,
                    "the command does not parse cleanly; it cannot be proven harmless".into(),
                    None,
                );
            });
        }
        for opaque in &analysis.opaque {
            eval.judge_part(PartKind::Unseen, shorten(&opaque.text), true, |part| {
                part.raise(
                    self.unreadable(opaque.kind),
                    format!("{:?} cannot be judged statically: {}", opaque.kind, shorten(&opaque.text)),
                    None,
                );
            });
        }
        if analysis.commands.is_empty() && analysis.opaque.is_empty() && !analysis.parse_errors {
            if analysis.expands {
                eval.judge_part(PartKind::Unseen, shorten(command), true, |part| {
                    part.raise(
                        self.unknown,
                        "bash expands values here at run time; no command is seen, but only a script without any expansion is known to run nothing".into(),
                        None,
                    );
                });
            } else {
                eval.reasons.push("no command to run".into());
            }
        }
        // `cd` moves where relative paths land: each is judged from every folder the script may be in.
        let folders = crate::judge::working_folders(analysis, ctx, self.unknown, &mut eval);
        let mut budget = crate::judge_files::FileBudget::new();
        for command in &analysis.commands {
            eval.commands.push(command.argv.clone());
            eval.judge_part(PartKind::Command, shorten(&command.argv.join(" ")), command.dynamic, |part| {
                self.judge_command(command, part);
                for here in &folders {
                    self.judge_operands(command, here, part);
                    self.judge_listings(command, here, part, &mut budget);
                    for file in &command.files {
                        self.judge_file(file, here, part, &mut budget);
                    }
                }
            });
        }
        for redirection in &analysis.redirections {
            let text = shorten(&format!("{} {}", redirection.op, redirection.target));
            eval.judge_part(PartKind::Redirection, text, redirection.dynamic, |part| {
                if redirection.dynamic {
                    let access = if redirection.write { Access::Write } else { Access::Read };
                    part.judge_access(&redirection.target, access, false, &redirection.op, |one| {
                        one.raise(
                            self.unknown,
                            format!("redirection target {:?} is computed at run time", redirection.target),
                            None,
                        );
                    });
                    return;
                }
                // Bash expands braces and patterns in the target too (more than one word is an error):
                // each expansion is judged, as a file a program names is.
                let file = crate::shell::FileOperand {
                    path: redirection.target.clone(),
                    role: if redirection.write { FileRole::Write } else { FileRole::Read },
                    recursive: false,
                    dynamic: false,
                    follows_links: false,
                    via: redirection.op.clone(),
                };
                for here in &folders {
                    self.judge_file(&file, here, part, &mut budget);
                }
            });
        }
        eval
    }

    /// Evaluates reading or writing a path (the read/write/edit tools).
    pub fn evaluate_path(&self, raw: &str, access: Access, ctx: &EvalContext) -> Evaluation {
        crate::snapshot::within(|| {
            let Some(ctx) = &ctx.canonical() else { return unresolvable_cwd(ctx) };
            let mut eval = Evaluation::new();
            eval.judge_access(raw, access, false, "path", |one| self.judge_path(raw, access, ctx, one));
            eval
        })
    }

    /// Evaluates what a tool described it would do (the harness's execution-policy seam): `execute` →
    /// its command from its cwd, `read`/`write` → each canonical path, no side effect → allow. Other
    /// kinds (network, MCP, other) have nothing to judge here; their grants let them through.
    pub fn evaluate_action(&self, action: &ExecutionAction, ctx: &EvalContext) -> Evaluation {
        self.evaluate_action_analyzed(action, ctx, None)
    }

    /// [`Policy::evaluate_action`] with the analysis of its command when the caller has it (one not of
    /// this action's command is not used).
    pub fn evaluate_action_analyzed(
        &self,
        action: &ExecutionAction,
        ctx: &EvalContext,
        analyzed: Option<&Analyzed>,
    ) -> Evaluation {
        crate::snapshot::within(|| self.judge_action(action, ctx, analyzed))
    }

    fn judge_action(
        &self,
        action: &ExecutionAction,
        ctx: &EvalContext,
        analyzed: Option<&Analyzed>,
    ) -> Evaluation {
        match action.kind {
            ActionKind::Execute => {
                let Some(command) = action.command.as_deref() else {
                    let mut eval = Evaluation::new();
                    eval.raise(
                        Decision::Forbidden,
                        "an execute action without a command cannot be judged".into(),
                        None,
                    );
                    return eval;
                };
                let fresh;
                let analyzed = match analyzed.filter(|a| a.command == command) {
                    Some(analyzed) => analyzed,
                    None => {
                        fresh = Analyzed::of(command);
                        &fresh
                    }
                };
                match &action.cwd {
                    Some(cwd) => self.evaluate_analyzed(
                        analyzed,
                        &EvalContext { cwd: cwd.clone(), home: ctx.home.clone() },
                    ),
                    None => self.evaluate_analyzed(analyzed, ctx),
                }
            }
            ActionKind::Read | ActionKind::Write => {
                let Some(ctx) = &ctx.canonical() else { return unresolvable_cwd(ctx) };
                let mut eval = Evaluation::new();
                let access = if action.kind == ActionKind::Write { Access::Write } else { Access::Read };
                if action.paths.is_empty() {
                    eval.raise(
                        Decision::Prompt,
                        format!(
                            "a {} action names no path; it cannot be proven inside a root",
                            action.operation
                        ),
                        None,
                    );
                }
                for path in &action.paths {
                    let raw = path.to_string_lossy();
                    eval.judge_access(&raw, access, false, &action.operation, |one| {
                        self.judge_path(&raw, access, ctx, one);
                    });
                }
                if action.operation == EXECUTABLE_WRITE {
                    eval.raise(
                        Decision::Prompt,
                        "the file is written executable: what it holds can then be run".into(),
                        None,
                    );
                }
                eval
            }
            ActionKind::None => {
                let mut eval = Evaluation::new();
                eval.reasons.push("no side effect".into());
                eval
            }
            ActionKind::Network | ActionKind::Mcp | ActionKind::Other => {
                let mut eval = Evaluation::new();
                eval.reasons.push(format!(
                    "a {} action has no command or path to judge; its grant allows it",
                    action.operation
                ));
                eval
            }
        }
    }
}

/// A shell command with its analysis, made once and judged by any number of policies.
#[derive(Debug, Clone)]
pub struct Analyzed {
    command: String,
    analysis: crate::shell::ShellAnalysis,
}

impl Analyzed {
    pub fn of(command: &str) -> Self {
        Analyzed { command: command.to_owned(), analysis: analyze(command) }
    }
}
