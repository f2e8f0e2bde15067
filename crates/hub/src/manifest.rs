//! Tool manifests: tools declared in JSON files (`<project>/.portcullis/tools/*.json`,
//! `<config>/tools/*.json`), one tool per file, validated against a committed JSON Schema. Kind `process`
//! runs an executable that reads the arguments as JSON on stdin and answers JSON on stdout (timeout,
//! output bound, process group killed); kind `fixture` answers a canned result (for policy testing).

use async_trait::async_trait;
use portcullis_coding::confined;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, CallContext, Content, ExecutionAction, Risk, Tool, ToolAnnotations, ToolError,
    ToolInvocation, ToolOutput, ToolSpec, validate_tool_name,
};
use portcullis_sandbox::SandboxLauncher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Hard caps on process tools.
pub const MAX_TIMEOUT_SECONDS: u64 = 600;
pub const MAX_OUTPUT_BYTES: u64 = 32 * 1024 * 1024;

/// Tool annotations as manifests write them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestAnnotations {
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub destructive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

/// A canned result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FixtureResult {
    /// Text blocks returned.
    #[serde(default)]
    pub text: Vec<String>,
    /// Structured content returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
}

/// What the tool is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ManifestKind {
    /// An executable: the arguments as JSON on stdin, the answer as JSON on stdout.
    Process {
        /// The program (a path, or a name looked up in PATH).
        command: String,
        #[serde(default)]
        args: Vec<String>,
        /// Environment values (the hub's environment is not inherited beyond PATH, HOME, LANG, TMPDIR, USER).
        #[serde(default)]
        env: std::collections::BTreeMap<String, String>,
        /// Seconds before the process group is killed (default 30, at most 600).
        #[serde(default = "default_timeout")]
        timeout_seconds: u64,
        /// Bytes of stdout read (default 1,000,000, at most 32 MiB); more is an error.
        #[serde(default = "default_output")]
        max_output_bytes: u64,
        /// How stdout is read: `json` (a tool output `{"content": [...]}` or any JSON value) or `text`.
        #[serde(default)]
        output: ProcessOutput,
    },
    /// A canned result, whatever the arguments.
    Fixture { result: FixtureResult },
}

/// How a process tool's stdout becomes its result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessOutput {
    #[default]
    Json,
    Text,
}

fn default_timeout() -> u64 {
    30
}

fn default_output() -> u64 {
    1_000_000
}

/// One tool manifest file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolManifest {
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Lower snake case, at most 64 bytes.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    #[serde(default)]
    pub annotations: ManifestAnnotations,
    /// The arguments whose values name one effect (top-level argument names): a call with the same
    /// values as an earlier one is a retry of it, answered with the first call's result and never run
    /// again; other arguments with the same values are a conflict. For an agent that sends no
    /// `idempotencyKey` of its own (SEP-3182).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idempotency_key: Vec<String>,
    #[serde(flatten)]
    pub kind: ManifestKind,
}

/// Most arguments a manifest's idempotency key names.
pub const MAX_KEY_ARGUMENTS: usize = 16;

/// The JSON Schema of manifests, as committed in `tool-manifests/schemas/tool-manifest.schema.json`.
pub fn manifest_json_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(ToolManifest)).unwrap_or(Value::Null)
}

/// Why a manifest was refused: the file, and where in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ManifestError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Parses and checks one manifest.
pub fn parse_manifest(file: &str, text: &str) -> Result<ToolManifest, ManifestError> {
    let fail = |line, column, message: String| ManifestError { file: file.to_owned(), line, column, message };
    let manifest: ToolManifest = serde_json::from_str(text).map_err(|e| {
        fail(e.line(), e.column(), e.to_string().split(" at line ").next().unwrap_or_default().to_owned())
    })?;
    if manifest.name.starts_with("mcp:") {
        return Err(fail(
            0,
            0,
            format!("tool name {:?}: mcp: names belong to upstream servers", manifest.name),
        ));
    }
    validate_tool_name(&manifest.name).map_err(|e| fail(0, 0, e.to_string()))?;
    if let Some(p) = &manifest.parameters
        && !p.is_object()
    {
        return Err(fail(0, 0, "\"parameters\" must be a JSON Schema object".into()));
    }
    check_idempotency_key(&manifest).map_err(|message| fail(0, 0, message))?;
    if let ManifestKind::Process { timeout_seconds, max_output_bytes, .. } = &manifest.kind {
        // (`output` needs no check: serde refuses unknown values.)
        if *timeout_seconds == 0 || *timeout_seconds > MAX_TIMEOUT_SECONDS {
            return Err(fail(0, 0, format!("timeout_seconds must be 1..={MAX_TIMEOUT_SECONDS}")));
        }
        if *max_output_bytes == 0 || *max_output_bytes > MAX_OUTPUT_BYTES {
            return Err(fail(0, 0, format!("max_output_bytes must be 1..={MAX_OUTPUT_BYTES}")));
        }
    }
    Ok(manifest)
}

/// The declared idempotency key names arguments the tool has: at most [`MAX_KEY_ARGUMENTS`], each once,
/// each a property of `parameters` when it lists them.
fn check_idempotency_key(manifest: &ToolManifest) -> Result<(), String> {
    let names = &manifest.idempotency_key;
    if names.len() > MAX_KEY_ARGUMENTS {
        return Err(format!("idempotency_key names {} arguments; at most {MAX_KEY_ARGUMENTS}", names.len()));
    }
    let properties =
        manifest.parameters.as_ref().and_then(|p| p.get("properties")).and_then(Value::as_object);
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() || names[..i].contains(name) {
            return Err(format!("idempotency_key: {name:?} is empty or named twice"));
        }
        if let Some(properties) = properties
            && !properties.contains_key(name)
        {
            return Err(format!("idempotency_key: {name:?} is not one of the tool's parameters"));
        }
    }
    Ok(())
}

/// Loads every `*.json` of `dirs` (missing folders are skipped), in name order; any bad file fails all.
pub fn load_manifests(
    dirs: &[PathBuf],
    project: &Path,
    launcher: Option<&SandboxLauncher>,
) -> Result<Vec<Arc<dyn Tool>>, ManifestError> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for file in files {
            let shown = file.display().to_string();
            let text = std::fs::read_to_string(&file).map_err(|e| ManifestError {
                file: shown.clone(),
                line: 0,
                column: 0,
                message: e.to_string(),
            })?;
            let manifest = parse_manifest(&shown, &text)?;
            if tools.iter().any(|t| t.spec().name == manifest.name) {
                return Err(ManifestError {
                    file: shown,
                    line: 0,
                    column: 0,
                    message: format!("another manifest already declares {:?}", manifest.name),
                });
            }
            let tool = ManifestTool::new(manifest, project.to_path_buf()).with_sandbox(launcher.cloned());
            tools.push(Arc::new(tool));
        }
    }
    Ok(tools)
}

/// A manifest's tool.
pub struct ManifestTool {
    spec: ToolSpec,
    kind: ManifestKind,
    effect_key: Vec<String>,
    project: PathBuf,
    /// Runs its process inside the sandbox the policy chose.
    sandbox: Option<SandboxLauncher>,
}

impl ManifestTool {
    pub fn new(manifest: ToolManifest, project: PathBuf) -> Self {
        let a = &manifest.annotations;
        let mut spec = ToolSpec::new(manifest.name, manifest.description).with_annotations(ToolAnnotations {
            read_only: a.read_only,
            destructive: a.destructive,
            idempotent: a.idempotent,
            open_world: a.open_world,
        });
        spec.parameters = Some(manifest.parameters.unwrap_or_else(|| serde_json::json!({"type": "object"})));
        ManifestTool {
            spec,
            kind: manifest.kind,
            effect_key: manifest.idempotency_key,
            project,
            sandbox: None,
        }
    }

    /// Runs confined processes through `launcher`.
    pub fn with_sandbox(mut self, launcher: Option<SandboxLauncher>) -> Self {
        self.sandbox = launcher;
        self
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "_./=:,@%+-".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[async_trait]
impl Tool for ManifestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn effect_key(&self) -> &[String] {
        &self.effect_key
    }

    fn describe_action(&self, _arguments: &Value, _call: &CallContext) -> Result<ExecutionAction, ToolError> {
        Ok(match &self.kind {
            // The policy judges the program that will run, like any shell command.
            ManifestKind::Process { command, args, .. } => {
                let line =
                    std::iter::once(command).chain(args).map(|w| quote(w)).collect::<Vec<_>>().join(" ");
                let risk = if self.spec.annotations.read_only { Risk::Low } else { Risk::Medium };
                ExecutionAction::new(ActionKind::Execute, "exec")
                    .with_command(line)
                    .with_cwd(self.project.clone())
                    .with_risk(risk)
            }
            ManifestKind::Fixture { .. } => ExecutionAction::none(),
        })
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        match &self.kind {
            ManifestKind::Fixture { result } => Ok(ToolOutput {
                content: result.text.iter().map(|t| Content::Text { text: t.clone() }).collect(),
                structured: result.structured.clone(),
                is_error: result.is_error,
                ..ToolOutput::default()
            }),
            ManifestKind::Process { command, args, env, timeout_seconds, max_output_bytes, output } => {
                let cwd = invocation.action.cwd.clone().unwrap_or_else(|| self.project.clone());
                let limits = (Duration::from_secs(*timeout_seconds), *max_output_bytes, *output);
                run_process(command, args, env, &cwd, &invocation, limits, self.sandbox.as_ref()).await
            }
        }
    }
}

async fn run_process(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: &Path,
    invocation: &ToolInvocation,
    (timeout, max_output, output): (Duration, u64, ProcessOutput),
    launcher: Option<&SandboxLauncher>,
) -> Result<ToolOutput, ToolError> {
    let input = serde_json::to_vec(&invocation.arguments).unwrap_or_default();
    let environment: Vec<(String, String)> = crate::config::CHILD_ENV
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .chain(env.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let confined_profile = invocation.action.sandbox.as_deref().filter(|p| p.is_confined());
    let (mut child, launch) = match (confined_profile, launcher) {
        (Some(_), None) => {
            return Err(ToolError::new(
                CallErrorCode::SandboxFailed,
                "the policy confines this process, but this hub has no sandbox launcher: it did not run",
            ));
        }
        (Some(profile), Some(launcher)) => confined::launch(
            launcher,
            profile,
            confined::Command {
                program: PathBuf::from(command),
                args: args.to_vec(),
                env: environment,
                cwd: cwd.to_path_buf(),
                stdin: Some(String::from_utf8_lossy(&input).into_owned()),
                shown: std::iter::once(command.to_owned())
                    .chain(args.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" "),
                // A manifest tool's changes are committed like a command's; undo keeps the shell's.
                undo: None,
            },
            invocation.asks.as_ref(),
        )
        .map(|(child, launch)| (child, Some(launch)))?,
        (None, _) => {
            let child = tokio::process::Command::new(command)
                .args(args)
                .env_clear()
                .envs(environment)
                .current_dir(cwd)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| {
                    ToolError::new(CallErrorCode::ProcessFailed, format!("cannot start {command}: {e}"))
                })?;
            (child, None)
        }
    };
    let pid = child.id();
    let kill_group = move || {
        if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
            let _ =
                nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    };
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let work = async {
        if let Some(mut s) = stdin.take() {
            let _ = s.write_all(&input).await;
        }
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read_out = async {
            if let Some(s) = stdout.as_mut() {
                let _ = s.take(max_output + 1).read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr.as_mut() {
                let _ = s.take(64 * 1024).read_to_end(&mut err).await;
            }
        };
        tokio::join!(read_out, read_err);
        let status = child.wait().await;
        (out, err, status)
    };
    let (out, err, status) = tokio::select! {
        done = tokio::time::timeout(timeout, work) => match done {
            Ok(done) => done,
            Err(_) => {
                kill_group();
                return Err(ToolError::new(CallErrorCode::Timeout, format!("{command} did not finish within {} s; its process group was killed", timeout.as_secs())));
            }
        },
        () = invocation.cancel.cancelled() => {
            kill_group();
            return Err(ToolError::new(CallErrorCode::Cancelled, "the call was cancelled; the process group was killed"));
        }
    };
    kill_group();
    if out.len() as u64 > max_output {
        return Err(ToolError::new(
            CallErrorCode::TooLarge,
            format!("{command} wrote more than {max_output} bytes"),
        ));
    }
    let status = status.map_err(|e| ToolError::new(CallErrorCode::ProcessFailed, e.to_string()))?;
    let mut connections = Vec::new();
    let mut changes = None;
    let (success, status) = match launch {
        None => (status.success(), status.to_string()),
        Some(launch) => {
            let (outcome, profile, _) = confined::finish(launch, Duration::from_millis(500)).await;
            connections = confined::connections(&outcome);
            changes = confined::change_record(&outcome);
            if let Some((step, message)) = &outcome.failed {
                return Err(confined::walls_failed(step, message));
            }
            let limit =
                outcome.limit.as_deref().map(|l| format!(" at {}", confined::limit_text(l, &profile)));
            match (outcome.exit_code, outcome.signal) {
                (Some(0), _) => (true, "exit status: 0".to_owned()),
                (Some(code), _) => (false, format!("exit status: {code}{}", limit.unwrap_or_default())),
                (None, Some(sig)) => (false, format!("signal: {sig}{}", limit.unwrap_or_default())),
                (None, None) => (false, "an unknown status (the sandbox gave none)".to_owned()),
            }
        }
    };
    let stderr_tail = String::from_utf8_lossy(&err)
        .chars()
        .rev()
        .take(2000)
        .collect::<String>()
        .chars()
        .rev()
        .collect::<String>();
    if !success {
        return Ok(ToolOutput {
            content: vec![Content::Text { text: format!("{command} exited with {status}: {stderr_tail}") }],
            structured: None,
            is_error: true,
            connections,
            changes,
        });
    }
    if output == ProcessOutput::Text {
        return Ok(ToolOutput {
            connections,
            changes,
            ..ToolOutput::text(String::from_utf8_lossy(&out).into_owned())
        });
    }
    let answer: Value = serde_json::from_slice(&out).map_err(|e| {
        ToolError::new(CallErrorCode::InvalidOutput, format!("{command} did not answer JSON on stdout: {e}"))
    })?;
    // `{"content": [...], "structured"?, "is_error"?}` is a tool output; anything else is structured content.
    if answer.get("content").is_some_and(Value::is_array)
        && let Ok(output) = serde_json::from_value::<ToolOutput>(answer.clone())
    {
        // What the proxy and the review saw, never what the tool says it did.
        return Ok(ToolOutput { connections, changes, ..output });
    }
    Ok(ToolOutput {
        content: vec![Content::Text { text: answer.to_string() }],
        structured: Some(answer),
        is_error: false,
        connections,
        changes,
    })
}
