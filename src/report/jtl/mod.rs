//! `--jtl FILE`: one row per attempt in JMeter's default CSV (JTL) format, streamed to disk.
//!
//! Readable by `jmeter -g file.jtl -o dir` (docs/protocol.md §4): JMeter's header, status and
//! reason phrase, and for transport failures JMeter's own `Non HTTP response code` with the
//! Java exception its sampler would have reported. [`channel_writer`]'s thread writes rows as
//! attempts arrive through a bounded queue and syncs at every level end and stop, so a killed
//! run keeps its finished levels' rows.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;
use std::thread::JoinHandle;

use crate::engine::{attempt_queue, AttemptRecord, AttemptSender, Handout, Load};
use crate::result::Outcome;

/// JMeter's default JTL CSV header, exactly.
pub const JTL_HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

/// Rows the queue of [`channel_writer`] holds before senders wait (about 10 MB of rows).
pub const JTL_QUEUE_ROWS: usize = 65_536;

/// The `BufWriter` capacity in front of the file.
const FILE_BUFFER: usize = 256 * 1024;

/// One attempt, as a JTL row. The strings are borrowed: the writer thread formats the label
/// and thread name into buffers it reuses.
#[derive(Debug, Clone)]
pub struct JtlRow<'a> {
    /// When the attempt started, ms since the Unix epoch (JMeter `timeStamp`).
    pub timestamp_ms: u64,
    /// Start to end, ms (`elapsed`).
    pub elapsed_ms: u64,
    /// The level and channel, e.g. `c200 login` (see [`sample_label`]).
    pub label: &'a str,
    /// What the attempt ended in.
    pub outcome: Outcome,
    /// The HTTP status, or 0 when no response head was read.
    pub status: u16,
    /// The worker, JMeter style (see [`thread_name`]).
    pub thread_name: &'a str,
    /// Bytes received: status line, headers and body.
    pub bytes: u64,
    /// Bytes sent: request line, headers and body.
    pub sent_bytes: u64,
    /// Active workers in this level (`grpThreads`).
    pub grp_threads: u32,
    /// Active workers in the whole run (`allThreads`).
    pub all_threads: u32,
    /// The request URL (never carrying a secret).
    pub url: &'a str,
    /// Start to the first response byte, ms (`Latency`); 0 when nothing was received.
    pub latency_ms: u64,
    /// Time spent connecting, ms (`Connect`); 0 on a reused connection.
    pub connect_ms: u64,
}

/// The short name of a level in JTL labels and thread names: `c200` (concurrency 200,
/// closed model) or `r500` (500 events/s, open model).
pub fn level_tag(concurrency: Option<u64>, rate: Option<f64>) -> String {
    match (concurrency, rate) {
        (Some(c), _) => format!("c{c}"),
        (None, Some(r)) => format!("r{r}"),
        (None, None) => "level".to_string(),
    }
}

/// The JTL label of a level and channel: `c200 login`.
pub fn sample_label(level_tag: &str, channel: &str) -> String {
    format!("{level_tag} {channel}")
}

/// A JMeter-style thread name, `<group> 1-<n>`, with the level as the thread group, so
/// JMeter's dashboard shows active threads per level. `worker` counts from 0.
pub fn thread_name(level_tag: &str, worker: usize) -> String {
    format!("{level_tag} 1-{}", worker + 1)
}

fn write_row<W: io::Write>(w: &mut csv::Writer<W>, row: &JtlRow<'_>) -> csv::Result<()> {
    let r = reasons::response(row.outcome, row.status);
    let mut buf = itoa::Buffer::new();
    let mut num = |w: &mut csv::Writer<W>, v: u64| w.write_field(buf.format(v));
    num(w, row.timestamp_ms)?;
    num(w, row.elapsed_ms)?;
    w.write_field(row.label)?;
    w.write_field(&r.code)?;
    w.write_field(&r.message)?;
    w.write_field(row.thread_name)?;
    w.write_field("text")?;
    w.write_field(if r.success { "true" } else { "false" })?;
    w.write_field(r.failure)?;
    num(w, row.bytes)?;
    num(w, row.sent_bytes)?;
    num(w, u64::from(row.grp_threads))?;
    num(w, u64::from(row.all_threads))?;
    w.write_field(row.url)?;
    num(w, row.latency_ms)?;
    // IdleTime: hubload never pauses inside a sample.
    num(w, 0)?;
    num(w, row.connect_ms)?;
    w.write_record(None::<&[u8]>)
}

fn csv_to_io(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

/// Writes a JTL file row by row. Call [`JtlWriter::finish`] to flush; a dropped writer
/// flushes too, but cannot report an error.
#[derive(Debug)]
pub struct JtlWriter {
    csv: csv::Writer<BufWriter<File>>,
    rows: u64,
}

impl JtlWriter {
    /// Create (or truncate) `path` and write the header.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = BufWriter::with_capacity(FILE_BUFFER, File::create(path)?);
        let mut csv = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(file);
        csv.write_record(JTL_HEADER.split(',')).map_err(csv_to_io)?;
        Ok(JtlWriter { csv, rows: 0 })
    }

    /// Append one row.
    pub fn write(&mut self, row: &JtlRow<'_>) -> io::Result<()> {
        write_row(&mut self.csv, row).map_err(csv_to_io)?;
        self.rows += 1;
        Ok(())
    }

    /// Push every row written so far to the file (one `write` of the buffer; no fsync: a
    /// killed process loses nothing the kernel has, and a crashed kernel is out of scope).
    pub fn flush(&mut self) -> io::Result<()> {
        self.csv.flush()
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flush everything to the file and close it; returns the rows written.
    pub fn finish(self) -> io::Result<u64> {
        let rows = self.rows;
        let file = self
            .csv
            .into_inner()
            .map_err(|e| io::Error::other(e.error().to_string()))?;
        // Flushes the BufWriter; the file closes when dropped.
        file.into_inner().map_err(|e| e.into_error())?;
        Ok(rows)
    }
}

/// What a JTL row names besides the attempt itself (never a secret).
#[derive(Debug, Clone)]
pub struct JtlNames {
    /// The request URL of every row.
    pub url: String,
    /// Channel names by index (the second word of each label).
    pub channels: Vec<String>,
}

/// The short name of a level's load in labels: see [`level_tag`].
fn load_tag(load: Load) -> String {
    match load {
        Load::Closed { concurrency } => level_tag(Some(u64::from(concurrency)), None),
        Load::Open { rate, .. } => level_tag(None, Some(rate)),
    }
}

/// Turns attempt records into rows, reusing its label and thread-name buffers.
#[derive(Debug)]
struct RowBuilder {
    names: JtlNames,
    load: Option<Load>,
    tag: String,
    label: String,
    thread: String,
}

impl RowBuilder {
    fn new(names: JtlNames) -> Self {
        RowBuilder {
            names,
            load: None,
            tag: String::new(),
            label: String::new(),
            thread: String::new(),
        }
    }

    /// The row of `r`: `c200 login`, thread `c200 1-7`.
    fn row(&mut self, r: &AttemptRecord) -> JtlRow<'_> {
        use std::fmt::Write;
        if self.load != Some(r.load) {
            self.tag = load_tag(r.load);
            self.load = Some(r.load);
        }
        let channel = self
            .names
            .channels
            .get(r.channel as usize)
            .map_or("", String::as_str);
        self.label.clear();
        let _ = write!(self.label, "{} {channel}", self.tag);
        self.thread.clear();
        let _ = write!(self.thread, "{} 1-{}", self.tag, u64::from(r.worker) + 1);
        let ms = r.elapsed_us / 1000;
        JtlRow {
            timestamp_ms: r.start_unix_us / 1000,
            elapsed_ms: ms,
            label: &self.label,
            outcome: r.outcome,
            status: r.status,
            thread_name: &self.thread,
            bytes: r.bytes_received,
            sent_bytes: r.bytes_sent,
            grp_threads: r.workers,
            all_threads: r.workers,
            url: &self.names.url,
            latency_ms: if r.bytes_received > 0 { ms } else { 0 },
            connect_ms: 0,
        }
    }
}

/// One writer thread fed by a bounded queue of [`JTL_QUEUE_ROWS`] attempt records.
///
/// Backpressure: a full queue makes `AttemptSender::send` wait rather than drop rows or buffer
/// without bound. The queue absorbs bursts (64 Ki rows is seconds of load at the rates one
/// process reaches), and the writer thread sustains far more rows per second than a worker
/// pool produces (see the `throughput` test), so in practice senders never wait; when the
/// disk truly cannot keep up, the run slows down visibly instead of lying.
///
/// A [`Handout::Sync`] flushes the buffer to the file before it is answered. The thread ends
/// when every sender is dropped; join it for the row count or the first IO error (after an
/// error it stops reading, and later sends return false).
pub fn channel_writer(
    path: &Path,
    names: JtlNames,
) -> io::Result<(AttemptSender, JoinHandle<io::Result<u64>>)> {
    let mut writer = JtlWriter::create(path)?;
    let (tx, mut rx) = attempt_queue(JTL_QUEUE_ROWS);
    let handle = std::thread::Builder::new()
        .name("hubload-jtl".into())
        .spawn(move || {
            let mut rows = RowBuilder::new(names);
            while let Some(item) = rx.blocking_recv() {
                match item {
                    Handout::Attempt(r) => writer.write(&rows.row(&r))?,
                    Handout::Sync(ack) => {
                        let flushed = writer.flush();
                        let failed = flushed
                            .as_ref()
                            .err()
                            .map(|e| io::Error::new(e.kind(), e.to_string()));
                        let _ = ack.send(flushed);
                        if let Some(e) = failed {
                            return Err(e);
                        }
                    }
                }
            }
            writer.finish()
        })?;
    Ok((tx, handle))
}

mod reasons;
#[cfg(test)]
mod tests;
