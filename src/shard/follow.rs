//! `merge --follow`'s readers: one thread per input (a file that grows, or stdin) turning its
//! lines into records as they are written, and handing them over a bounded channel.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use super::assemble::{Input, Keyed};
use super::files::{read_line, LineRead};
use super::logs::LogError;

/// How often a reader looks again at a file that has no new bytes (or does not exist yet).
pub const POLL: Duration = Duration::from_millis(100);

/// What a reader says.
#[derive(Debug)]
pub enum Event {
    /// Records input `usize` completed.
    Records(usize, Vec<Keyed>),
    /// Input `usize` reached its end (stdin closed): the records only its end completes, and
    /// the shards it left without their end.
    Ended(usize, Vec<Keyed>, Vec<LogError>),
    /// Input `usize` cannot be read, or holds something that is not a shard stream.
    Failed(usize, anyhow::Error),
}

/// Start one reader per input (`-` is stdin); each stops when `stop` is set, at its input's
/// end (stdin), or at its first error.
pub fn follow(inputs: &[PathBuf], stop: &Arc<AtomicBool>) -> Receiver<Event> {
    // A few records in flight per input at most: a slow merge holds the readers back.
    let (tx, rx) = sync_channel(4 * inputs.len().max(1));
    for (i, path) in inputs.iter().enumerate() {
        let (tx, stop, path) = (tx.clone(), stop.clone(), path.clone());
        std::thread::spawn(move || {
            let stdin = path.as_os_str() == "-";
            let ended = if stdin {
                read(i, std::io::stdin().lock(), false, &stop, &tx)
            } else {
                match wait_open(&path, &stop) {
                    Some(Ok(f)) => read(i, BufReader::new(f), true, &stop, &tx),
                    Some(Err(e)) => Err(anyhow::Error::new(e)),
                    None => return,
                }
            };
            let name = if stdin {
                "stdin".to_string()
            } else {
                path.display().to_string()
            };
            let _ = match ended {
                Ok(Some(input)) => {
                    let unended = input.unended();
                    match input.end() {
                        Ok(last) => tx.send(Event::Ended(i, last, unended)),
                        Err(_) => tx.send(Event::Ended(i, Vec::new(), unended)),
                    }
                }
                Ok(None) => Ok(()),
                Err(e) => tx.send(Event::Failed(i, e.context(name))),
            };
        });
    }
    rx
}

/// Open `path` once it exists (a shard may not have started yet); `None` once `stop` is set.
fn wait_open(path: &Path, stop: &AtomicBool) -> Option<std::io::Result<std::fs::File>> {
    loop {
        match std::fs::File::open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            other => return Some(other),
        }
        if stop.load(Ordering::Acquire) {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Read `r` line by line into records until `stop` (`Ok(None)`) or, when it does not `grow`,
/// its end (`Ok(Some(input))`, for the caller to end). A file grows: at its end the reader
/// waits for more.
fn read(
    i: usize,
    mut r: impl BufRead,
    grow: bool,
    stop: &AtomicBool,
    tx: &SyncSender<Event>,
) -> anyhow::Result<Option<Input>> {
    let mut input = Input::default();
    let mut buf = Vec::new();
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(None);
        }
        match read_line(&mut r, &mut buf, input.max_line())? {
            LineRead::Line => {}
            LineRead::Pending if grow => {
                std::thread::sleep(POLL);
                continue;
            }
            LineRead::Pending if buf.is_empty() => return Ok(Some(input)),
            // The last line of a closed stream has no newline.
            LineRead::Pending => {}
        }
        let records = input.line(&String::from_utf8_lossy(&buf))?;
        buf.clear();
        if !records.is_empty() && tx.send(Event::Records(i, records)).is_err() {
            return Ok(None);
        }
    }
}
