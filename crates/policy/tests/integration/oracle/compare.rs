//! What the analysis reported against what really happened. A program executed, or a file written, that
//! the analysis did not report is a mismatch; so is a file read outside the project (the policy's read
//! root) that it did not report. Whatever a row of the implicit table names is accepted, and counted.

use super::implicit::IMPLICIT;
use super::scratch::Scratch;
use super::trace::{Event, Kind};
use portcullis_policy::{Access, Evaluation};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What the analysis said the command does.
pub struct Reported {
    programs: BTreeSet<String>,
    /// (path, written, whole tree)
    files: Vec<(PathBuf, bool, bool)>,
}

impl Reported {
    pub fn of(evaluation: &Evaluation) -> Reported {
        let programs = evaluation
            .commands
            .iter()
            .filter_map(|argv| argv.first())
            .map(|p| Path::new(p).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
            .collect();
        let files = evaluation
            .accesses
            .iter()
            .map(|a| (PathBuf::from(&a.path), a.access == Access::Write, a.recursive))
            .collect();
        Reported { programs, files }
    }

    /// A file the analysis reported (for a write: reported written), itself or below a whole tree.
    fn covers(&self, path: &Path, write: bool) -> bool {
        let forms = forms(path);
        self.files.iter().any(|(reported, written, tree)| {
            (*written || !write) && forms.iter().any(|p| p == reported || (*tree && p.starts_with(reported)))
        })
    }

    /// `mkdir -p a/b/c` creates the folders on the way to a reported write.
    fn on_the_way_to_a_write(&self, path: &Path) -> bool {
        let forms = forms(path);
        self.files.iter().any(|(reported, written, _)| {
            *written && forms.iter().any(|p| reported.starts_with(p) && reported != p)
        })
    }
}

/// A path as seen, and with its folder (or itself) resolved now: the analysis reports canonical paths.
fn forms(path: &Path) -> Vec<PathBuf> {
    let mut forms = vec![path.to_path_buf()];
    // `/proc/self/...` names the traced process's own things; resolved here it would name the test's.
    if path.starts_with("/proc") {
        return forms;
    }
    if let Ok(real) = path.canonicalize() {
        forms.push(real);
    }
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name())
        && let Ok(parent) = parent.canonicalize()
    {
        forms.push(parent.join(name));
    }
    forms
}

/// The mismatches of one run; `hits[i]` counts the events row `i` of the implicit table accepted.
pub fn mismatches(
    reported: &Reported,
    events: &[Event],
    scratch: &Scratch,
    hits: &mut [usize],
) -> Vec<String> {
    let mut places: Vec<(&str, PathBuf)> =
        vec![("home", scratch.home.clone()), ("proj", scratch.proj.clone()), ("tmp", scratch.tmp.clone())];
    for (path, written, _) in &reported.files {
        if *written && let Some(folder) = path.parent() {
            places.push(("written_dir", folder.to_path_buf()));
        }
    }
    let proj = &scratch.proj;
    let mut found = BTreeSet::new();
    for event in events {
        let accepted = match event.kind {
            Kind::Exec => {
                let name =
                    event.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                reported.programs.contains(&name)
            }
            Kind::Write => {
                reported.covers(&event.path, true)
                    || (event.call.starts_with("mkdir") && reported.on_the_way_to_a_write(&event.path))
            }
            Kind::Read => {
                forms(&event.path).iter().any(|p| p.starts_with(proj)) || reported.covers(&event.path, false)
            }
        };
        if accepted {
            continue;
        }
        let seen = forms(&event.path);
        let by = (event.parent.as_str(), event.program.as_str());
        let row =
            IMPLICIT.iter().position(|row| seen.iter().any(|p| row.matches(event.kind, by, p, &places)));
        if let Some(i) = row {
            hits[i] += 1;
            continue;
        }
        let what = match event.kind {
            Kind::Exec => "executed",
            Kind::Read => "read",
            Kind::Write => "wrote",
        };
        let failed = if event.ok { "" } else { " (the call failed)" };
        found.insert(format!(
            "`{}` {what} {} by {}{failed}",
            event.program,
            event.path.display(),
            event.call
        ));
    }
    found.into_iter().collect()
}
