//! What the hub and the launcher say to each other over the socket on its standard input: the walls
//! (one line, only to a launcher started ahead for a profile), one request down, newline-separated JSON
//! reports up.

use portcullis_harness::SandboxProfile;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One command to run inside a profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaunchRequest {
    pub profile: SandboxProfile,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The whole environment of the command.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// The command's own temporary folder (writable; `/tmp` inside where no granted tree lies there).
    pub private_tmp: PathBuf,
    /// Bytes for the command's standard input (none: `/dev/null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// The hub's egress gate for this command (a Unix socket): with it, a profile whose rules name hosts
    /// gets loopback, the proxy variables and a relay to it; without, no network at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<PathBuf>,
}

/// The walls a launcher started ahead builds before its request comes: the profile of the commands it
/// is for and the private temporary folder made for it. Sent as one line; the request that follows must
/// name the same profile and folder (and no egress gate), else the command does not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Walls {
    pub profile: SandboxProfile,
    pub private_tmp: PathBuf,
}

impl Walls {
    /// Whether `request` is for these walls: the whole profile, the same folder, no egress gate.
    pub fn fit(&self, request: &LaunchRequest) -> bool {
        request.profile == self.profile && request.private_tmp == self.private_tmp && request.gate.is_none()
    }
}

/// What the walls hold once they are up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The Landlock ABI used, and whether every right was enforced.
    pub landlock_abi: u8,
    pub landlock: String,
    /// The namespaces made (user, mount, pid, net, ipc).
    pub namespaces: Vec<String>,
    /// How the process count is bounded.
    pub processes: String,
    /// Steps that could not be taken and what stood in for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A report from the launcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LaunchReport {
    /// The walls are up and the command started inside them.
    Confined { applied: Applied },
    /// The walls could not be built: the command did not run.
    Failed { step: String, message: String },
    /// The command ended (or was ended at a limit), and no process it started is left: the last report.
    Ended {
        exit_code: Option<i32>,
        signal: Option<i32>,
        /// The limit that ended it, when the launcher knows (`processes`, `file_size`, `cpu`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<String>,
    },
}

impl LaunchReport {
    pub fn failed(step: &str, message: impl std::fmt::Display) -> Self {
        LaunchReport::Failed { step: step.to_owned(), message: message.to_string() }
    }
}
