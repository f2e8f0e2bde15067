//! The command table: every operation a front end performs on a hub, once. Each entry names a method
//! of [`Client`](super::Client), its arguments and what it returns; `streams` return a stream id and
//! send their updates to a sink until they end or are stopped (`stop_stream`). Front ends never list
//! commands by hand: they pass an adapter macro to [`operator_commands!`](crate::operator_commands),
//! which calls it with this table — the desktop app's Tauri commands, the HTTP routes under
//! `/v1/commands` and `/v1/streams` (the `operator_http` module) and [`COMMANDS`] are all made so.

/// Calls `$adapter!` with the command table:
/// `calls { $(#[doc] name(arg: Type, ...) -> Output;)* } streams { $(#[doc] name(arg: Type, ...) -> Update;)* }`.
/// Every call is `Client::name(&self, args...) -> Result<Output, ApiError>`; every stream is
/// `Client::name(&self, args..., Sink<Update>) -> Result<u32, ApiError>`.
#[macro_export]
macro_rules! operator_commands {
    ($adapter:ident) => {
        $adapter! {
            calls {
                /// Whether a hub runs here (and where agents connect), or why not.
                hub_state() -> $crate::HubState;
                /// The hub at a glance.
                hub_status() -> $crate::types::HubStatus;
                /// The calls waiting for an answer, oldest first, each with the policy's evaluation.
                pending_approvals() -> Vec<$crate::types::Approval>;
                /// Answers approval `id` (naming the `arguments_sha256` shown); the operator recorded is
                /// the client's, never the request's. The answer's receipt.
                answer_approval(id: u64, answer: $crate::types::Answer) -> $crate::types::Receipt;
                /// What answering "always" for approval `id` with `scope` would write, and what it
                /// would have changed over the ledger.
                always_preview(id: u64, scope: Option<Vec<$crate::types::RuleScope>>)
                    -> $crate::always::AlwaysPreview;
                /// The grants an operator gave for the rest of a session.
                session_grants() -> Vec<$crate::types::SessionGrant>;
                /// Revokes session grant `id`.
                revoke_session_grant(id: String) -> ();
                /// The agents' sessions.
                sessions() -> Vec<$crate::types::AgentSession>;
                /// The upstream MCP servers and their state.
                servers() -> Vec<$crate::types::UpstreamServer>;
                /// Restarts upstream server `id`.
                restart_server(id: String) -> ();
                /// Upstream tools held back because their server changed their definition.
                tool_changes() -> Vec<$crate::types::ToolChange>;
                /// Where the hub ships its ledger (a team ledger, copies) and how far behind each is.
                shipping() -> Vec<$crate::types::SinkLag>;
                /// Accepts the offered definition of a held tool (`digest`: the one shown).
                accept_tool_change(server: String, tool: String, digest: String) -> ();
                /// The effects agents' idempotency keys claimed whose outcome is unknown (the hub
                /// stopped while their call ran), then the others, newest first (at most `limit`).
                effects(limit: u32) -> Vec<$crate::EffectRow>;
                /// Says what happened to the unknown outcome of `agent`'s key `key`: done or failed
                /// (retries are answered so) or retryable (the next call with the key runs). The call
                /// whose outcome it was.
                mark_effect(agent: String, key: String, outcome: $crate::EffectMarkOutcome, note: Option<String>) -> String;
                /// The tool catalog as agents see it.
                tools() -> Vec<$crate::types::CatalogTool>;
                /// What to paste to hook Claude Code and Codex up to this hub.
                hookup_snippets() -> Vec<$crate::types::HookupSnippet>;
                /// A one-time login link to the browser console for `operator` (default: the local user).
                console_link(operator: Option<String>) -> $crate::console_link::ConsoleLink;
                /// Stops stream `id` (a feed, replay or export); false when it had already ended.
                stop_stream(id: u32) -> bool;
                /// The hub's policy layer by layer, each file with its text and version.
                policy_layers() -> $crate::workbench::PolicyLayers;
                /// A draft of policy file `file` checked as it is typed.
                check_policy_draft(file: String, text: String) -> $crate::workbench::DraftCheck;
                /// Lint findings of the hub's policy with the draft of `file` in its place.
                lint_policy_draft(file: String, text: String) -> $crate::policy_check::PolicyLint;
                /// The trace of a command or call under the policy with the draft in place.
                try_policy_draft(file: String, text: String, input: $crate::workbench::TrialInput)
                    -> $crate::workbench::DraftTrial;
                /// Every test case of the policy with the draft in place, and how each went.
                test_policy_draft(file: String, text: String) -> Vec<$crate::workbench::TestOutcome>;
                /// The draft of `file` against the file on disk.
                diff_policy_draft(file: String, text: String) -> $crate::workbench::DraftDiff;
                /// Saves the draft as `file` if the file is still `expected_version`; the new version.
                save_policy_file(file: String, text: String, expected_version: Option<String>) -> String;
                /// How the policy in force and the draft judge one recorded call, both traces.
                draft_call_traces(file: String, text: String, ledger: Option<String>, session: String, call_id: String)
                    -> $crate::draft_replay::CallTraces;
                /// What each rule decided lately, and this week's most prompted shell commands.
                rule_activity() -> $crate::rule_activity::RuleActivity;
                /// Every registered tool, visible to agents now and with the draft in place.
                grants_with_draft(file: String, text: String) -> Vec<$crate::draft_access::ToolGrant>;
                /// Whether `path` would be readable and writable under the draft.
                probe_path_draft(file: String, text: String, path: String) -> $crate::draft_access::PathProbe;
                /// A rule offered for a recorded shell command.
                candidate_rule(command: String) -> $crate::rule_activity::CandidateRule;
                /// Opens a ledger read-only (none: the hub's own); its id and summary.
                open_ledger(path: Option<String>) -> $crate::OpenedLedger;
                /// Closes ledger `id` (false when it was not open).
                close_ledger(id: u32) -> bool;
                /// Ledger `id`'s hash chain and signed checkpoints checked against the hub's key.
                verify_ledger(id: u32) -> $crate::ledger::VerifyReport;
                /// Ledger `id` at a glance, now.
                ledger_summary(id: u32) -> $crate::ledger_browse::LedgerSummary;
                /// The requests the hub refused, first seen in `[since, until)`, newest first (a file's).
                ledger_refusals(
                    id: u32,
                    since: Option<$crate::types::Timestamp>,
                    until: Option<$crate::types::Timestamp>,
                    limit: u32
                ) -> Vec<$crate::ledger::RefusalRow>;
                /// Ledger `id`'s integrity and shape: schema, counts, calls left open, unreadable bodies.
                ledger_check(id: u32) -> $crate::ledger::CheckReport;
                /// How far behind ledger `id`'s record sinks are.
                ledger_shipping(id: u32) -> Vec<$crate::ledger::SinkLag>;
                /// One page of the calls `filter` selects, in `order` after `cursor`.
                ledger_calls(
                    id: u32,
                    filter: $crate::ledger::CallFilter,
                    order: $crate::ledger_browse::CallOrder,
                    cursor: Option<$crate::ledger::Cursor>,
                    limit: u32
                ) -> $crate::ledger::CallPage;
                /// How many calls `filter` selects.
                ledger_count(id: u32, filter: $crate::ledger::CallFilter) -> u64;
                /// One call, everything the detail drawer shows.
                ledger_call(id: u32, call_id: String, session: String) -> $crate::ledger_browse::CallDetail;
                /// What the operator can still do about call `call_id` of `session` (the hub's ledger):
                /// the plan of an undo of its copy-on-write commit (or why there is none) and its
                /// changes held for the operator.
                call_changes(call_id: String, session: String) -> $crate::call_changes::CallChanges;
                /// Puts back what the commit of call `call_id` of `session` replaced, byte for byte;
                /// refused, nothing touched, when a path changed since. The paths put back.
                undo_call(call_id: String, session: String) -> $crate::call_changes::UndoDone;
                /// Keeps (commits) or discards the changes of call `call_id` of `session` held for the
                /// operator.
                answer_held(call_id: String, session: String, answer: $crate::call_changes::HeldAnswer)
                    -> $crate::call_changes::HeldAnswered;
                /// Every session's detail of call `call_id` (a call id may recur), or only `session`'s.
                ledger_call_details(id: u32, call_id: String, session: Option<String>)
                    -> Vec<$crate::ledger_browse::CallDetail>;
                /// The counts beside the filter chips.
                ledger_facets(id: u32, filter: $crate::ledger::CallFilter, exact: bool)
                    -> $crate::ledger_browse::Facets;
                /// Aggregates over the calls `filter` selects.
                ledger_stats(id: u32, filter: $crate::ledger::CallFilter, bucket_us: Option<i64>)
                    -> $crate::ledger::Stats;
                /// How the approvals asked in the filter's time range went.
                ledger_approvals(id: u32, filter: $crate::ledger::CallFilter)
                    -> $crate::ledger::ApprovalSummary;
                /// The shell commands the selected calls prompted for (or were blocked for) most.
                ledger_top_commands(
                    id: u32,
                    filter: $crate::ledger::CallFilter,
                    outcome: $crate::ledger::CommandOutcome,
                    limit: u32
                ) -> Vec<$crate::ledger::CommandCount>;
                /// Sessions started in `[since, until)`, newest first.
                ledger_sessions(
                    id: u32,
                    since: Option<$crate::ledger::Timestamp>,
                    until: Option<$crate::ledger::Timestamp>,
                    limit: u32
                ) -> Vec<$crate::ledger::SessionRow>;
                /// One session's calls over time, each on a lane.
                ledger_session_timeline(id: u32, session: String) -> $crate::ledger_browse::SessionTimeline;
                /// The recent ledgers and the saved views.
                ledger_library() -> $crate::ledger_library::LedgerLibrary;
                /// Saves a view by name; the library after.
                save_ledger_view(view: $crate::ledger_library::SavedView) -> $crate::ledger_library::LedgerLibrary;
                /// Deletes the view named `name`; the library after.
                delete_ledger_view(name: String) -> $crate::ledger_library::LedgerLibrary;
            }
            streams {
                /// The operator's event feed, from now on, in batches.
                follow_events() -> Vec<$crate::types::FeedItem>;
                /// The draft of `file` replayed over `ledger` (else the hub's) against the policy in force.
                replay_policy_draft(file: String, text: String, ledger: Option<String>)
                    -> $crate::draft_replay::DraftReplayUpdate;
                /// The calls `filter` selects in ledger `id` exported to `file` as JSONL or CSV.
                export_ledger(
                    id: u32,
                    filter: $crate::ledger::CallFilter,
                    format: $crate::ledger::ExportFormat,
                    file: String
                ) -> $crate::ExportUpdate;
            }
        }
    };
}

/// One entry of the table, as a front end's test or a listing sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: &'static str,
    /// The arguments' names, as the method takes them (snake case).
    pub args: &'static [&'static str],
    /// A stream: it returns an id and sends updates until it ends or is stopped.
    pub stream: bool,
}

impl CommandInfo {
    /// The arguments' names as a request's JSON object spells them (`call_id` is `callId`), the same
    /// keys the desktop app's bindings send.
    pub fn json_args(&self) -> Vec<String> {
        self.args.iter().map(|a| camel_case(a)).collect()
    }
}

/// `call_id` as `callId`.
pub fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

macro_rules! command_list {
    (
        calls { $( $(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $out:ty ; )* }
        streams { $( $(#[$sdoc:meta])* $sname:ident ( $($sarg:ident : $sty:ty),* $(,)? ) -> $sout:ty ; )* }
    ) => {
        /// Every command of the table, calls first, in table order.
        pub const COMMANDS: &[CommandInfo] = &[
            $( CommandInfo { name: stringify!($name), args: &[$(stringify!($arg)),*], stream: false }, )*
            $( CommandInfo { name: stringify!($sname), args: &[$(stringify!($sarg)),*], stream: true }, )*
        ];
    };
}

crate::operator_commands!(command_list);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_streams_can_be_stopped() {
        let names: HashSet<_> = COMMANDS.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), COMMANDS.len());
        assert!(names.contains("stop_stream"));
        assert_eq!(COMMANDS.iter().filter(|c| c.stream).count(), 3);
    }

    #[test]
    fn arguments_are_spelt_as_the_window_sends_them() {
        assert_eq!(camel_case("call_id"), "callId");
        assert_eq!(camel_case("expected_version"), "expectedVersion");
        assert_eq!(camel_case("id"), "id");
    }
}
