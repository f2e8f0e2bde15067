//! The literal values `literal_variables` found for the script being walked, installed per thread: word
//! resolution (`words`) reads them at each `$NAME` without a parameter through every walk, and the
//! analysis asks which names and assignments they cover. A leaf: finding the values resolves words, so
//! the finder sits above `words` and this store below it.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use tree_sitter::Node;

/// What is known of one script's variables.
#[derive(Debug, Default)]
pub(crate) struct Known {
    /// The script the byte positions are of: its address and length.
    pub(super) script: (usize, usize),
    /// The value of each read the judge resolves, by the read's first byte.
    pub(super) values: HashMap<usize, String>,
    /// The names resolved somewhere.
    pub(super) names: HashSet<String>,
    /// The first bytes of the assignments that give them their values.
    pub(super) definite: HashSet<usize>,
}

thread_local! {
    /// The script being walked on this thread (a `bash -c` string parsed inside it installs its own,
    /// and the outer one is back when it is done).
    static KNOWN: Cell<Option<Rc<Known>>> = const { Cell::new(None) };
}

/// Puts back what was known before when dropped.
pub(crate) struct Installed {
    previous: Option<Rc<Known>>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        KNOWN.with(|k| k.set(previous));
    }
}

/// Makes `known` what `resolve` reads until the result is dropped.
pub(crate) fn install(known: Known) -> Installed {
    Installed { previous: KNOWN.with(|k| k.replace(Some(Rc::new(known)))) }
}

/// Runs `f` on what is known of the script `src`, if anything.
fn with_known<T>(src: &str, f: impl FnOnce(&Known) -> Option<T>) -> Option<T> {
    KNOWN.with(|k| {
        let current = k.take();
        let result = current.as_deref().filter(|known| known.script == identity(src)).and_then(f);
        k.set(current);
        result
    })
}

/// Which script `src` is: its address and length.
pub(super) fn identity(src: &str) -> (usize, usize) {
    (src.as_ptr() as usize, src.len())
}

/// The literal value of the read `node` (`$NAME`, `${NAME}`) of the script `src`, if known.
pub(crate) fn value_of(node: Node<'_>, src: &str) -> Option<String> {
    with_known(src, |known| known.values.get(&node.start_byte()).cloned())
}

/// Whether `name` is read as a literal value somewhere in the script being walked.
pub(crate) fn is_resolved(name: &str) -> bool {
    current(|known| known.names.contains(name))
}

/// Whether the assignment starting at `start` in the script being walked is one of those that give the
/// resolved names their values.
pub(crate) fn is_definite(start: usize) -> bool {
    current(|known| known.definite.contains(&start))
}

/// Asks `f` about the script being walked (false when nothing is known).
fn current(f: impl FnOnce(&Known) -> bool) -> bool {
    KNOWN.with(|k| {
        let known = k.take();
        let answer = known.as_deref().is_some_and(f);
        k.set(known);
        answer
    })
}
