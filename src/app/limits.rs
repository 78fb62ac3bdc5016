//! The process's own limits at start: the soft open-files limit raised to the hard one, so
//! the generator's descriptors run out as late as the system allows.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Raise the soft `RLIMIT_NOFILE` to the hard limit. Best effort: when it cannot be raised
/// the run sizes itself from the soft limit it has (`config::inflight_default`).
pub fn raise_open_files() {
    let lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        let raised = Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!("cannot raise the open-files limit: {e}");
        }
    }
}
