//! What starts a hub, and the other entry points a front end's process needs: the configuration and
//! where its files live, `launch` (the served hub), the stdio gateway, the sandbox's re-exec entry and
//! the Claude Code hook process. Front ends (the CLI, the desktop app) use this and [`crate::api`] and
//! nothing else of the hub or the crates below it (`crates/cli/tests/integration/fence.rs` holds them
//! to it).

pub use crate::console::ConsoleSettings;
pub use crate::hook_process::{HookOptions, answer_claude_hook};
pub use crate::hook_run_client::{claude_code_output, run_ticket};
pub use crate::launch::{LaunchError, LaunchedHub, launch};
pub use crate::operator_remote::RemoteHub;
pub use crate::stdio::{StdioOptions, serve_stdio};
pub use portcullis_hub::HubConfig;
pub use portcullis_hub::HubError;
pub use portcullis_hub::OtlpSettings;
pub use portcullis_hub::TlsSource;
pub use portcullis_hub::{
    DEFAULT_PORT, RuntimeInfo, config_dir, create_named_agent, default_ledger_path, load_or_create_token,
    user_config_dir,
};
pub use portcullis_hub::{HookAnswer, HookDecision, MAX_HOOK_INPUT_BYTES};
pub use portcullis_hub::{JsonlFileSink, RecordSink, RecordSinks};
pub use portcullis_hub::{TeamLedgerChoice, TeamLedgerSetting};
pub use portcullis_hub::{UndoReport, undo_call};
pub use portcullis_hub::{default_launcher, sandbox_entry_point};
pub use portcullis_hub::{discard_held, held_lines, keep_held};
pub use portcullis_mcp::sessions::SessionLimits;
pub use portcullis_sandbox::egress::Resolver as EgressResolver;
