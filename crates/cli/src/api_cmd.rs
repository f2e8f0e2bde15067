//! `portcullis api`: any command of the operator's command table on the running hub, over HTTP (the
//! hub's `start::RemoteHub`), so a headless operator has every operation the desktop app has: the
//! answer as JSON on stdout, a stream's updates one JSON line each, failures as the hub's own codes.

use crate::args::ApiArgs;
use crate::error::CliError;
use portcullis_api::start::{RemoteHub, user_config_dir};
use portcullis_api::{ApiError, COMMANDS, ErrorCode};
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;

pub fn api(args: &ApiArgs) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    if args.list {
        for c in COMMANDS {
            let arguments = c.json_args();
            let kind = if c.stream { "stream" } else { "call" };
            writeln!(out, "{:<26} {kind:<6} {{{}}}", c.name, arguments.join(", "))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let name = args.command.as_deref().unwrap_or_default();
    let Some(command) = COMMANDS.iter().find(|c| c.name == name) else {
        return Err(CliError::Api(ApiError::new(
            ErrorCode::CommandUnknown,
            format!("no command {name:?} (portcullis api --list lists them)"),
            json!({ "command": name }),
        )));
    };
    let arguments: Value = serde_json::from_str(&args.arguments).map_err(|e| {
        CliError::Api(ApiError::new(
            ErrorCode::BadRequest,
            format!("the arguments are not JSON: {e}"),
            json!({ "command": name }),
        ))
    })?;
    let (hub, runtime) = running_hub()?;
    if command.stream {
        let mut failed: Option<std::io::Error> = None;
        runtime.block_on(hub.stream(
            name,
            &arguments,
            &mut |id| {
                let _ = writeln!(std::io::stderr(), "portcullis: stream {id} (Ctrl-C stops it)");
            },
            &mut |update| match writeln!(out, "{update}").and_then(|()| out.flush()) {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
        ))?;
        if let Some(e) = failed {
            return Err(e.into());
        }
    } else {
        let answer = runtime.block_on(hub.call(name, &arguments))?;
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The hub this user runs (its runtime file and operator token in the config folder), and a runtime
/// to call it on.
fn running_hub() -> Result<(RemoteHub, tokio::runtime::Runtime), CliError> {
    let dir = user_config_dir().ok_or_else(|| {
        CliError::Api(ApiError::new(ErrorCode::HubUnavailable, "no config folder (set HOME)", json!({})))
    })?;
    let hub = RemoteHub::running(&dir)?;
    Ok((hub, tokio::runtime::Builder::new_current_thread().enable_all().build()?))
}

/// `portcullis operator link`: the running hub's `console_link` command, the URL on stdout.
pub fn operator_link(args: &crate::args::LinkArgs) -> Result<ExitCode, CliError> {
    let (hub, runtime) = running_hub()?;
    let link = runtime.block_on(hub.call("console_link", &json!({ "operator": args.name })))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{link}")?;
    } else {
        writeln!(out, "{}", link["url"].as_str().unwrap_or_default())?;
        let _ = writeln!(
            std::io::stderr(),
            "portcullis: logs {} in once, within 10 minutes",
            crate::render::clean(link["operator"].as_str().unwrap_or_default())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `portcullis operator add-agent NAME`: makes (or finds) the named agent's token in the user's config
/// folder and prints its file (never the token: it is read from the file by whoever runs the agent).
pub fn add_agent(args: &crate::args::AddAgentArgs) -> Result<ExitCode, CliError> {
    let dir = user_config_dir()
        .ok_or_else(|| CliError::BadArgument("no config folder: set HOME or XDG_CONFIG_HOME".into()))?;
    let file = portcullis_api::start::create_named_agent(&dir, &args.name)
        .map_err(|e| CliError::BadArgument(e.to_string()))?;
    writeln!(std::io::stdout().lock(), "{}", file.display())?;
    let _ = writeln!(
        std::io::stderr(),
        "portcullis: agent {} holds the token in that file; a running hub admits it after its next start",
        crate::render::clean(&args.name)
    );
    Ok(ExitCode::SUCCESS)
}
