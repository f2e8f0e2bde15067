//! What a confined command changed in its write roots, as the call's record keeps it: every change (up
//! to [`MAX_ENTRIES`], the counts always whole) with what it is, its size, the SHA-256 of a file's new
//! content (where it was cheap enough to read) and what became of it — kept (committed into the real
//! tree), held for the operator, or discarded — with why. Recorded with the call, never shown to the
//! agent (the `changes` of a tool's output). Paths and reasons hold the agent's text: escape them
//! where a person reads them ([`crate::untrusted::visible`]).

use serde::{Deserialize, Serialize};

/// At most this many changes are listed in one record; past it `truncated` is set (the counts stay
/// whole).
pub const MAX_ENTRIES: usize = 2_000;

/// What became of a change. Ordered by how much it asks of a person: held (the operator decides) above
/// discarded above kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ChangeOutcome {
    /// Committed into the real tree.
    Kept,
    /// Not committed: never kept (a special file, a command that did not end, a conflict, ...).
    Discarded,
    /// Not committed yet: kept aside for the operator, who keeps or discards it.
    Held,
}

impl ChangeOutcome {
    pub const ALL: [ChangeOutcome; 3] = [ChangeOutcome::Kept, ChangeOutcome::Held, ChangeOutcome::Discarded];

    pub fn as_str(self) -> &'static str {
        match self {
            ChangeOutcome::Kept => "kept",
            ChangeOutcome::Held => "held",
            ChangeOutcome::Discarded => "discarded",
        }
    }

    pub fn parse(text: &str) -> Option<ChangeOutcome> {
        ChangeOutcome::ALL.into_iter().find(|o| o.as_str() == text)
    }

    /// The most serious outcome among calls with `kept`, `held` and `discarded` changes (none when
    /// there was no change): held, then discarded, then kept.
    pub fn most_serious(kept: u64, held: u64, discarded: u64) -> Option<ChangeOutcome> {
        if held > 0 {
            Some(ChangeOutcome::Held)
        } else if discarded > 0 {
            Some(ChangeOutcome::Discarded)
        } else if kept > 0 {
            Some(ChangeOutcome::Kept)
        } else {
            None
        }
    }
}

/// What one change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A regular file created or changed.
    File,
    Symlink,
    /// A folder made, replaced, or whose mode changed.
    Folder,
    /// A file or folder deleted.
    Deleted,
    /// A FIFO, socket or device (never kept).
    Special,
    /// Not one change: a whole write root whose changes could not be read or were past their bounds.
    Root,
}

/// One change of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ChangeEntry {
    /// Where, as an absolute path (the agent's text).
    pub path: String,
    pub what: ChangeKind,
    /// A file's size in bytes (none for what has no content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The SHA-256 (hex) of a file's new content: the committed file for a kept change, the held copy
    /// for a held one. `None` where it was not read: not a file, past the digest bounds, discarded, or
    /// gone before it could be read.
    #[serde(default)]
    pub sha256: Option<String>,
    pub outcome: ChangeOutcome,
    /// Why it was held or discarded (none for a kept change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Every change of a call (bounded), and how many of each outcome there were.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ChangeRecord {
    pub kept: u64,
    pub held: u64,
    pub discarded: u64,
    /// The changes in the order the review met them (write root by write root); at most
    /// [`MAX_ENTRIES`].
    pub entries: Vec<ChangeEntry>,
    /// More changes than `entries` holds (the counts are whole).
    #[serde(default)]
    pub truncated: bool,
}

impl ChangeRecord {
    /// The most serious outcome of its changes (see [`ChangeOutcome::most_serious`]).
    pub fn most_serious(&self) -> Option<ChangeOutcome> {
        ChangeOutcome::most_serious(self.kept, self.held, self.discarded)
    }

    /// Adds one change: counted always, listed while there is room.
    pub fn push(&mut self, entry: ChangeEntry) {
        self.push_with(entry.outcome, || entry);
    }

    /// Adds one change of `outcome`: counted always; `entry` is made (a path written out, a file
    /// digested) only while there is room to list it.
    pub fn push_with(&mut self, outcome: ChangeOutcome, entry: impl FnOnce() -> ChangeEntry) {
        match outcome {
            ChangeOutcome::Kept => self.kept += 1,
            ChangeOutcome::Held => self.held += 1,
            ChangeOutcome::Discarded => self.discarded += 1,
        }
        if self.entries.len() < MAX_ENTRIES {
            self.entries.push(ChangeEntry { outcome, ..entry() });
        } else {
            self.truncated = true;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.kept + self.held + self.discarded == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(outcome: ChangeOutcome) -> ChangeEntry {
        ChangeEntry {
            path: "/p/a".into(),
            what: ChangeKind::File,
            size: Some(1),
            sha256: None,
            outcome,
            why: None,
        }
    }

    #[test]
    fn counts_stay_whole_past_the_bound_and_the_most_serious_outcome_wins() {
        let mut record = ChangeRecord::default();
        assert_eq!(record.most_serious(), None);
        for _ in 0..MAX_ENTRIES + 5 {
            record.push(entry(ChangeOutcome::Kept));
        }
        assert_eq!(
            (record.kept, record.entries.len(), record.truncated),
            (MAX_ENTRIES as u64 + 5, MAX_ENTRIES, true)
        );
        assert_eq!(record.most_serious(), Some(ChangeOutcome::Kept));
        record.push(entry(ChangeOutcome::Discarded));
        assert_eq!(record.most_serious(), Some(ChangeOutcome::Discarded));
        record.push(entry(ChangeOutcome::Held));
        assert_eq!(record.most_serious(), Some(ChangeOutcome::Held));
        let text = serde_json::to_string(&entry(ChangeOutcome::Held)).unwrap_or_default();
        assert_eq!(text, r#"{"path":"/p/a","what":"file","size":1,"sha256":null,"outcome":"held"}"#);
        assert_eq!(ChangeOutcome::parse("held"), Some(ChangeOutcome::Held));
        assert_eq!(ChangeOutcome::parse("x"), None);
    }
}
