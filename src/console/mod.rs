//! Where hubload's messages go: stderr, or stdout in a shard, so that a shard's log is one
//! ordered stream.
//!
//! Why: a container runtime copies stdout and stderr into the log through separate readers,
//! so a stderr line can land inside a `HUBLOAD-SHARD` line. Each message is one `write` of a
//! whole line, so concurrent messages do not mix. Errors that end the run stay on stderr: no
//! artifact line follows them.

pub mod banner;
pub mod progress;

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static TO_STDOUT: AtomicBool = AtomicBool::new(false);

/// From now on, messages go to stdout (a shard calls this once its shard spec is known).
pub fn messages_to_stdout() {
    TO_STDOUT.store(true, Ordering::Relaxed);
}

/// Print one message: `args` and a newline (unless it ends in one), in one write.
pub fn message(args: fmt::Arguments<'_>) {
    let mut s = args.to_string();
    if !s.ends_with('\n') {
        s.push('\n');
    }
    let _ = writer().write_all(s.as_bytes());
}

/// Print a message line (`format!` syntax) to where messages go; see [`message`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::console::message(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// Where messages go now: stderr, or stdout in a shard. Also the log events' writer.
pub fn writer() -> Console {
    if TO_STDOUT.load(Ordering::Relaxed) {
        Console::Stdout(io::stdout())
    } else {
        Console::Stderr(io::stderr())
    }
}

/// A handle on the messages' stream, for [`writer`].
#[derive(Debug)]
pub enum Console {
    /// Messages go to stderr (the default).
    Stderr(io::Stderr),
    /// Messages go to stdout (a shard).
    Stdout(io::Stdout),
}

impl Write for Console {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Console::Stderr(e) => e.write(buf),
            Console::Stdout(o) => o.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        // Under the stream's lock, so a whole message goes out before any other output.
        match self {
            Console::Stderr(e) => e.lock().write_all(buf),
            Console::Stdout(o) => {
                let mut o = o.lock();
                o.write_all(buf)?;
                o.flush()
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Console::Stderr(e) => e.flush(),
            Console::Stdout(o) => o.flush(),
        }
    }
}
