//! The client's running streams (event feeds, draft replays, exports), by id, so that a front end can
//! stop one; a stream also stops on its own when its receiver is gone (the sink answers false). Ids are
//! shared by every kind, so one id never names two streams of a client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Where a stream's updates go; `false` means the receiver is gone and the stream stops.
pub type Sink<T> = Box<dyn FnMut(T) -> bool + Send>;

/// The most streams one client runs at once; the next is refused until one ends.
pub const MAX_STREAMS: usize = 64;

/// How a stream is stopped: a flag its blocking loop reads, or its async task aborted.
pub(super) enum Stop {
    Flag(Arc<AtomicBool>),
    Task(tokio::task::AbortHandle),
}

impl Stop {
    fn stop(self) {
        match self {
            Stop::Flag(flag) => flag.store(true, Ordering::Relaxed),
            Stop::Task(task) => task.abort(),
        }
    }
}

#[derive(Default)]
pub(super) struct Jobs {
    next: AtomicU32,
    running: Mutex<HashMap<u32, Stop>>,
}

impl Jobs {
    fn lock(&self) -> MutexGuard<'_, HashMap<u32, Stop>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh id, or none when [`MAX_STREAMS`] run already.
    pub(super) fn reserve(&self) -> Option<u32> {
        (self.lock().len() < MAX_STREAMS).then(|| self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    pub(super) fn insert(&self, id: u32, stop: Stop) {
        self.lock().insert(id, stop);
    }

    /// Forgets stream `id` once it ended by itself.
    pub(super) fn ended(&self, id: u32) {
        self.lock().remove(&id);
    }

    /// Stops stream `id`; false when none of that id runs.
    pub(super) fn stop(&self, id: u32) -> bool {
        self.lock().remove(&id).map(Stop::stop).is_some()
    }

    #[cfg(test)]
    pub(super) fn running(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_flag_is_raised_and_forgotten() {
        let jobs = Jobs::default();
        let id = jobs.reserve().unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        jobs.insert(id, Stop::Flag(flag.clone()));
        assert!(jobs.stop(id));
        assert!(flag.load(Ordering::Relaxed));
        assert!(!jobs.stop(id), "stopped once");
        assert_eq!(jobs.running(), 0);
    }

    #[test]
    fn streams_are_bounded() {
        let jobs = Jobs::default();
        for _ in 0..MAX_STREAMS {
            let id = jobs.reserve().unwrap();
            jobs.insert(id, Stop::Flag(Arc::default()));
        }
        assert_eq!(jobs.reserve(), None);
        jobs.ended(1);
        assert!(jobs.reserve().is_some());
    }
}
