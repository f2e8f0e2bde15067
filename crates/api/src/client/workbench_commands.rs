//! The policy workbench's commands: layers, a draft checked as typed (the examples' parse cache kept
//! in the client), linted, tried, tested, diffed and saved; what each rule decided lately; grants and
//! path probes under the draft; and the draft's replay over a ledger, streamed until it ends or stops.

use super::jobs::{Sink, Stop};
use super::{Client, blocking};
use crate::draft_access::{PathProbe, ToolGrant};
use crate::draft_replay::{CallTraces, DraftReplayUpdate};
use crate::error::ApiError;
use crate::policy_check::PolicyLint;
use crate::rule_activity::{CandidateRule, RuleActivity, candidate_rule};
use crate::workbench::{DraftCheck, DraftDiff, DraftTrial, PolicyLayers, TrialInput};
use portcullis_policy::TestOutcome;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

impl Client {
    /// The hub's policy layer by layer, each file with its text and version.
    pub async fn policy_layers(&self) -> Result<PolicyLayers, ApiError> {
        self.api()?.policy_layers()
    }

    /// A draft of policy file `file` checked as it is typed: where it does not load, every example.
    pub async fn check_policy_draft(&self, file: String, text: String) -> Result<DraftCheck, ApiError> {
        let api = self.api()?;
        api.check_policy_draft(&file, &text, &mut self.examples())
    }

    /// Lint findings of the hub's policy with the draft of `file` in its place.
    pub async fn lint_policy_draft(&self, file: String, text: String) -> Result<PolicyLint, ApiError> {
        self.api()?.lint_policy_draft(&file, &text)
    }

    /// The trace of a command or call under the hub's policy with the draft of `file` in its place.
    pub async fn try_policy_draft(
        &self,
        file: String,
        text: String,
        input: TrialInput,
    ) -> Result<DraftTrial, ApiError> {
        self.api()?.try_policy_draft(&file, &text, input).await
    }

    /// Every test case of the hub's policy with the draft of `file` in its place, and how each went.
    pub async fn test_policy_draft(&self, file: String, text: String) -> Result<Vec<TestOutcome>, ApiError> {
        self.api()?.test_policy_draft(&file, &text).await
    }

    /// The draft of `file` against the file on disk.
    pub async fn diff_policy_draft(&self, file: String, text: String) -> Result<DraftDiff, ApiError> {
        self.api()?.diff_policy_draft(&file, &text)
    }

    /// Saves the draft as `file` if the file on disk is still `expected_version`; the new version.
    pub async fn save_policy_file(
        &self,
        file: String,
        text: String,
        expected_version: Option<String>,
    ) -> Result<String, ApiError> {
        self.api()?.save_policy_file(&file, &text, expected_version.as_deref())
    }

    /// What each rule decided in the hub's ledger over the last day and week, and this week's most
    /// prompted shell commands (read on the blocking pool: a large week takes a while).
    pub async fn rule_activity(&self) -> Result<RuleActivity, ApiError> {
        let api = self.api()?.clone();
        blocking(move || api.rule_activity()).await
    }

    /// Every registered tool, visible to agents now and with the draft of `file` in place.
    pub async fn grants_with_draft(&self, file: String, text: String) -> Result<Vec<ToolGrant>, ApiError> {
        self.api()?.grants_with_draft(&file, &text)
    }

    /// Whether `path` would be readable and writable by the `read` and `write` tools under the draft.
    pub async fn probe_path_draft(
        &self,
        file: String,
        text: String,
        path: String,
    ) -> Result<PathProbe, ApiError> {
        self.api()?.probe_path_draft(&file, &text, &path).await
    }

    /// How the policy in force and the draft of `file` judge one recorded call, both traces.
    pub async fn draft_call_traces(
        &self,
        file: String,
        text: String,
        ledger: Option<String>,
        session: String,
        call_id: String,
    ) -> Result<CallTraces, ApiError> {
        let api = self.api()?.clone();
        let ledger = ledger.map(PathBuf::from);
        blocking(move || api.draft_call_traces(&file, &text, ledger.as_deref(), &session, &call_id)).await
    }

    /// A rule offered for a recorded shell command: its words when it is one simple command.
    pub async fn candidate_rule(&self, command: String) -> Result<CandidateRule, ApiError> {
        Ok(candidate_rule(&command))
    }

    /// Replays the draft of `file` over `ledger` (else the hub's) against the policy in force on the
    /// blocking pool, streaming its updates to `sink` (the last one `done` or `failed`); returns the
    /// stream's id for [`Client::stop_stream`].
    pub async fn replay_policy_draft(
        &self,
        file: String,
        text: String,
        ledger: Option<String>,
        mut sink: Sink<DraftReplayUpdate>,
    ) -> Result<u32, ApiError> {
        let api = self.api()?.clone();
        let id = self.reserve_stream()?;
        let stop = Arc::new(AtomicBool::new(false));
        self.inner.jobs.insert(id, Stop::Flag(stop.clone()));
        let jobs = self.clone();
        tokio::task::spawn_blocking(move || {
            let ledger = ledger.map(PathBuf::from);
            let last = match api.replay_policy_draft(&file, &text, ledger.as_deref(), &stop, &mut *sink) {
                Ok(outcome) => DraftReplayUpdate::Done { outcome },
                Err(error) => DraftReplayUpdate::Failed { error },
            };
            let _ = sink(last);
            jobs.inner.jobs.ended(id);
        });
        Ok(id)
    }
}
