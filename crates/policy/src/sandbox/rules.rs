//! The merged `sandbox` sections of a policy's layers (mode and resource limits, strictest wins), kept
//! apart from the profile a command gets (`sandbox`, which reads a loaded policy) because the policy
//! merges them as it loads: settings below the policy, the profile above it.

use crate::document::{SandboxLimitSettings, SandboxMode, SandboxSettings};
use portcullis_harness::SandboxLimits;

/// The merged `sandbox` sections of a policy's layers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxRules {
    mode: Option<SandboxMode>,
    memory_mb: Option<u32>,
    cpu_seconds: Option<u32>,
    processes: Option<u32>,
    file_size_mb: Option<u32>,
    open_files: Option<u32>,
}

/// Each limit: its name, the range it must lie in, and where it is in the settings and the rules.
type LimitRow = (
    &'static str,
    u32,
    u32,
    fn(&SandboxLimitSettings) -> Option<u32>,
    fn(&mut SandboxRules) -> &mut Option<u32>,
);

const LIMIT_ROWS: &[LimitRow] = &[
    ("memory_mb", 16, 1 << 20, |s| s.memory_mb, |r| &mut r.memory_mb),
    ("cpu_seconds", 1, 86_400, |s| s.cpu_seconds, |r| &mut r.cpu_seconds),
    ("processes", 16, 65_536, |s| s.processes, |r| &mut r.processes),
    ("file_size_mb", 1, 1 << 20, |s| s.file_size_mb, |r| &mut r.file_size_mb),
    ("open_files", 16, 1 << 20, |s| s.open_files, |r| &mut r.open_files),
];

impl SandboxRules {
    /// Adds one layer's section: `required` wins, and the smallest value of each limit holds.
    pub fn merge(&mut self, settings: &SandboxSettings) -> Result<(), String> {
        if let Some(mode) = settings.mode {
            self.mode = Some(self.mode.map_or(mode, |m| m.max(mode)));
        }
        for (name, low, high, get, slot) in LIMIT_ROWS {
            if let Some(value) = get(&settings.limits) {
                if !(*low..=*high).contains(&value) {
                    return Err(format!("sandbox.limits.{name} is {value}; expected {low} to {high}"));
                }
                let slot = slot(self);
                *slot = Some(slot.map_or(value, |v| v.min(value)));
            }
        }
        Ok(())
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode.unwrap_or(SandboxMode::Preferred)
    }

    pub fn limits(&self) -> SandboxLimits {
        let d = SandboxLimits::default();
        SandboxLimits {
            memory_mb: self.memory_mb.unwrap_or(d.memory_mb),
            cpu_seconds: self.cpu_seconds.unwrap_or(d.cpu_seconds),
            processes: self.processes.unwrap_or(d.processes),
            file_size_mb: self.file_size_mb.unwrap_or(d.file_size_mb),
            open_files: self.open_files.unwrap_or(d.open_files),
        }
    }
}
