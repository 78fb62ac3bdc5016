//! The first failure of each outcome class in a level, as one line of what the hub said:
//! recorded once per class, so the hot path pays one atomic load per failed attempt.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::result::Class;

// One bit per class.
const _: () = assert!(Class::COUNT <= 64);

/// Per class, the first failure's text. Shared by every worker of a level (`&self`).
#[derive(Debug, Default)]
pub struct FirstFailures {
    /// Bit `Class::index()` is set once that class has been recorded.
    seen: AtomicU64,
    texts: Mutex<Vec<(Class, String)>>,
}

impl FirstFailures {
    /// Record `text()` for `class` unless a failure of that class was recorded already; the
    /// text is formatted only for the first one.
    pub fn note(&self, class: Class, text: impl FnOnce() -> String) {
        let bit = 1u64 << class.index();
        if self.seen.load(Ordering::Relaxed) & bit != 0 {
            return;
        }
        if self.seen.fetch_or(bit, Ordering::Relaxed) & bit != 0 {
            return; // another worker won the race
        }
        let t = text();
        self.texts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((class, t));
    }

    /// Class name → text, for the level's report.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        self.texts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(c, t)| (c.name().to_string(), t.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn once_per_class_and_formatted_once() {
        let f = FirstFailures::default();
        let formatted = Cell::new(0);
        for (class, text) in [
            (Class::Http503, "first 503"),
            (Class::Http503, "second 503"),
            (Class::Denied, "denied"),
            (Class::Http503, "third 503"),
        ] {
            f.note(class, || {
                formatted.set(formatted.get() + 1);
                text.to_string()
            });
        }
        assert_eq!(formatted.get(), 2);
        let want: BTreeMap<String, String> = [("denied", "denied"), ("http_503", "first 503")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(f.snapshot(), want);
    }

    #[test]
    fn racing_workers_record_one_text() {
        let f = std::sync::Arc::new(FirstFailures::default());
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let f = f.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        f.note(Class::ConnReset, || format!("worker {i}"));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(f.snapshot().len(), 1);
        assert_eq!(f.texts.lock().unwrap().len(), 1);
    }
}
