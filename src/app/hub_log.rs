//! The embedded hub's own log during a load run: its warnings (e.g. `accept failed: Too many
//! open files`, once per connection) are counted and summarised in one line at the end,
//! never printed per request. `hubload hub` logs as usual.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Set for a load run: the hub in this process is the embedded one.
static EMBEDDED: AtomicBool = AtomicBool::new(false);
static WARNINGS: AtomicU64 = AtomicU64::new(0);
static FIRST: OnceLock<Mutex<Option<String>>> = OnceLock::new();

/// From now on the hub's warnings are counted rather than printed.
pub fn count_from_now() {
    EMBEDDED.store(true, Ordering::Relaxed);
}

fn from_hub(m: &Metadata<'_>) -> bool {
    m.target().starts_with("hubload_hub")
}

/// For the printing layer: false for the embedded hub's events during a load run.
pub fn printed(m: &Metadata<'_>) -> bool {
    !(EMBEDDED.load(Ordering::Relaxed) && from_hub(m))
}

/// The layer that counts the embedded hub's warnings and errors.
#[derive(Debug)]
pub struct HubWarnings;

impl<S: Subscriber> Layer<S> for HubWarnings {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let m = event.metadata();
        if !EMBEDDED.load(Ordering::Relaxed) || !from_hub(m) || *m.level() > Level::WARN {
            return;
        }
        if WARNINGS.fetch_add(1, Ordering::Relaxed) == 0 {
            let mut text = Text(String::new());
            event.record(&mut text);
            *FIRST
                .get_or_init(Mutex::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(text.0);
        }
    }
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push_str(", ");
        }
        if field.name() == "message" {
            self.0.push_str(&format!("{value:?}"));
        } else {
            self.0.push_str(&format!("{}: {value:?}", field.name()));
        }
    }
}

/// The one summary line, when the embedded hub warned at all.
pub fn summary() -> Option<String> {
    let n = WARNINGS.load(Ordering::Relaxed);
    if n == 0 {
        return None;
    }
    let first = FIRST
        .get()
        .and_then(|m| m.lock().ok()?.clone())
        .unwrap_or_default();
    Some(format!(
        "hubload: the embedded hub logged {n} warning(s), counted rather than printed (first: {first})"
    ))
}
