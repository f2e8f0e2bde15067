//! Portcullis desktop app: a Tauri 2 shell over the hub it runs in-process. Its commands are the hub's
//! command table made into Tauri commands (`commands`; streams reach the window through channels),
//! the calls waiting show in the title, the tray and notifications (`pending`), and the TypeScript
//! contract (`ui/src/backend/bindings.ts`) is generated from the builder here by
//! tauri-specta.

pub mod commands;
pub mod hub_host;
pub mod notifications;
pub mod pending;
pub mod tray;
pub mod window;
pub mod window_table;

use hub_host::{HubHost, StartOptions};
use notifications::Notifier;
use serde::{Deserialize, Serialize};
use std::process::ExitCode;
use tauri::{Manager, RunEvent, WindowEvent};
use tray::Tray;

/// Sent to the window when the operator closes it while calls wait for an answer: the window asks
/// before it quits (`commands::quit`).
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct CloseAsked {
    /// How many calls wait for an answer now.
    pub pending: u32,
}

/// The typed contract: every command and event the window may use, with the types they carry.
pub fn bindings_builder() -> tauri_specta::Builder<tauri::Wry> {
    tauri_specta::Builder::<tauri::Wry>::new()
        .commands(commands::window_commands())
        .events(tauri_specta::collect_events![CloseAsked])
        // The characters agent text shows escaped (`lib/visible.ts` reads this, the terminal the same
        // table): one table, so every place shows the same text the same way.
        .constant("ESCAPED_RANGES", portcullis_api::escaped_ranges())
        // How each kind of protected place is named after "decided by" (`ProtectedKind::words`).
        .constant("PROTECTED_KIND_WORDS", protected_kind_words())
        // Every kind of decider, in the order the ledger browser offers them (`DeciderKind::ALL`).
        .constant("DECIDER_KINDS", portcullis_api::types::DeciderKind::ALL)
        // How each kind of decider is named where the ledger browser shows it (`DeciderKind::words`).
        .constant("DECIDER_KIND_WORDS", decider_kind_words())
        // Every error code a call can fail with that this build knows (`CallErrorCode::KNOWN`); a
        // ledger may hold others, kept as written.
        .constant("CALL_ERROR_CODES", portcullis_api::types::CallErrorCode::KNOWN.as_slice())
        // The command table as the HTTP backend calls it (`backend/http.ts`): each command's arguments
        // in order, as the request's JSON spells them, and whether it streams.
        .constant("COMMAND_TABLE", command_table())
        // Who is logged in to a browser console (`/console/v1/me`): the HTTP backend reads it.
        .typ::<portcullis_api::console_link::ConsoleSession>()
        // Ids, counters and microsecond timestamps stay far below 2^53 (timestamps until the year 2255).
        .dangerously_cast_bigints_to_number()
        // One TypeScript type per Rust type: the window reads what Rust serializes and sends what it reads.
        .disable_serde_phases()
}

/// `{"answer_approval": {"args": ["id", "answer"], "stream": false}, ...}`: the hub's table.
fn command_table() -> serde_json::Map<String, serde_json::Value> {
    (portcullis_api::COMMANDS.iter())
        .map(|c| (c.name.to_owned(), serde_json::json!({ "args": c.json_args(), "stream": c.stream })))
        .collect()
}

/// `{"policy": "protected place (policy)", ...}`: every kind's words, keyed as the kind serializes.
fn protected_kind_words() -> serde_json::Map<String, serde_json::Value> {
    (portcullis_api::types::ProtectedKind::ALL.into_iter())
        .filter_map(|kind| {
            let key = serde_json::to_value(kind).ok()?.as_str()?.to_owned();
            Some((key, serde_json::Value::from(kind.words())))
        })
        .collect()
}

/// `{"default": "policy default", "protected_place": "protected place", ...}`: every kind's words,
/// keyed as the kind serializes (the ledger's `decided_by` column).
fn decider_kind_words() -> serde_json::Map<String, serde_json::Value> {
    (portcullis_api::types::DeciderKind::ALL.into_iter())
        .map(|kind| (kind.as_str().to_owned(), serde_json::Value::from(kind.words())))
        .collect()
}

/// Writes the bindings the window is compiled against (`ui/src/backend/bindings.ts`) to `path`.
pub fn export_bindings(path: &std::path::Path) -> Result<(), String> {
    let typescript = specta_typescript::Typescript::default()
        .header("// Generated from the Rust commands by tauri-specta (src-tauri/src/lib.rs). Do not edit.\n// Regenerate: PORTCULLIS_WRITE_BINDINGS=1 cargo test -p portcullis-app --test bindings\n");
    bindings_builder().export(typescript, path).map_err(|e| e.to_string())
}

/// Runs the app: starts the hub, opens the window, and shuts the hub down cleanly on exit.
/// What to say on a machine with no display for a window (no `DISPLAY`, no `WAYLAND_DISPLAY`): the
/// hub runs headless there, with its console in a browser.
pub fn no_display() -> Option<String> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    (!set("DISPLAY") && !set("WAYLAND_DISPLAY")).then(|| {
        "portcullis-app: this machine has no display for a window (DISPLAY and WAYLAND_DISPLAY are unset). \
Run the hub headless instead: `portcullis serve` (or `cargo run --release -p portcullis -- serve`) serves \
the same views in a browser: open the login link it prints (over `ssh -L 7391:127.0.0.1:7391 HOST` from \
another machine)."
            .to_owned()
    })
}

pub fn run() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,portcullis_app=info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let options = match StartOptions::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(why) => {
            tracing::error!("{why}");
            return ExitCode::from(2);
        }
    };
    if let Some(why) = no_display() {
        // GTK would panic with a backtrace: say what to run instead.
        tracing::error!("{why}");
        return ExitCode::from(3);
    }
    let builder = bindings_builder();
    let app = tauri::Builder::default()
        // First: a second launch only focuses this window.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| window::bring(app)))
        // Open and save dialogs, called from Rust only (the window holds no dialog permission).
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(builder.invoke_handler())
        .setup(move |app| {
            builder.mount_events(app);
            let host = tauri::async_runtime::block_on(HubHost::start(&options));
            let connected = host.connected();
            // Managed first: the follower reads the window's table from the app's state.
            app.manage(host);
            if connected {
                let (tray, notifier) = (Tray::create(app.handle()), Notifier::start(app.handle().clone()));
                pending::follow(app.handle().clone(), tray, notifier);
            }
            exit_on_signal(app.handle().clone());
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::CloseRequested { api, .. } = event
                && window::ask_before_quitting(window.app_handle())
            {
                api.prevent_close();
            }
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("the window did not open: {e}");
            return ExitCode::FAILURE;
        }
    };
    app.run(|app, event| {
        if let RunEvent::Exit = event
            && let Some(host) = app.try_state::<HubHost>()
        {
            tauri::async_runtime::block_on(host.shutdown());
        }
    });
    ExitCode::SUCCESS
}

/// SIGTERM and SIGINT end the app as closing it does: the hub shuts down cleanly (`RunEvent::Exit`).
fn exit_on_signal(app: tauri::AppHandle) {
    tauri::async_runtime::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut term), Ok(mut int)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tracing::info!("signal received: stopping");
            app.exit(0);
        }
    });
}
