//! Tests of the JTL writer: exact header, exact rows per outcome, quoting, and the shared writer.

use super::*;
use crate::result::{ClientReason, ConnErrorKind, OtherReason, TimeoutKind, TlsReason};

fn row(outcome: Outcome, status: u16) -> JtlRow<'static> {
    JtlRow {
        timestamp_ms: 1_764_470_400_123,
        elapsed_ms: 12,
        label: "c200 login",
        outcome,
        status,
        thread_name: "c200 1-7",
        bytes: 187,
        sent_bytes: 712,
        grp_threads: 200,
        all_threads: 200,
        url: "http://127.0.0.1:41237/hub",
        latency_ms: 11,
        connect_ms: 3,
    }
}

/// The attempt record `row` is the row of (level c200, channel 1, worker 6).
fn record(outcome: Outcome, status: u16) -> AttemptRecord {
    AttemptRecord {
        start_unix_us: 1_764_470_400_123_456,
        elapsed_us: 12_345,
        outcome,
        status,
        bytes_received: 187,
        bytes_sent: 712,
        channel: 1,
        worker: 6,
        load: Load::Closed { concurrency: 200 },
        workers: 200,
    }
}

fn names() -> JtlNames {
    JtlNames {
        url: "http://127.0.0.1:41237/hub".into(),
        channels: vec!["registration".into(), "login".into()],
    }
}

#[test]
fn a_record_becomes_the_row_it_describes() {
    let mut b = RowBuilder::new(names());
    let got = written(&[b.row(&record(Outcome::Http503, 503))]);
    let want = written(&[JtlRow {
        elapsed_ms: 12,
        latency_ms: 12,
        connect_ms: 0,
        ..row(Outcome::Http503, 503)
    }]);
    assert_eq!(got, want);
    let open = AttemptRecord {
        load: Load::Open {
            rate: 2.5,
            max_inflight: 10,
        },
        worker: 0,
        channel: 0,
        bytes_received: 0,
        ..record(Outcome::Accepted, 200)
    };
    let r = b.row(&open);
    assert_eq!(
        (r.label, r.thread_name, r.latency_ms),
        ("r2.5 registration", "r2.5 1-1", 0)
    );
}

/// A sync makes every row queued before it readable in the file while the writer still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_puts_every_queued_row_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jtl");
    let (tx, handle) = channel_writer(&path, names()).unwrap();
    for n in [3u64, 500] {
        for _ in 0..n {
            assert!(tx.send(record(Outcome::Accepted, 200)).await);
        }
        tx.sync().await.unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1 + 503);
    assert!(text.ends_with('\n'));
    drop(tx);
    assert_eq!(handle.join().unwrap().unwrap(), 503);
}

/// Write `rows` to a fresh JTL file and return its lines.
fn written(rows: &[JtlRow<'_>]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jtl");
    let mut w = JtlWriter::create(&path).unwrap();
    for r in rows {
        w.write(r).unwrap();
    }
    assert_eq!(w.rows(), rows.len() as u64);
    assert_eq!(w.finish().unwrap(), rows.len() as u64);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn header_is_jmeters_default() {
    let lines = written(&[]);
    assert_eq!(
        lines,
        ["timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect"]
    );
}

#[test]
fn rows_per_outcome() {
    use ConnErrorKind::*;
    use TimeoutKind::*;
    const HEAD: &str = "1764470400123,12,c200 login,";
    const TAIL: &str = ",187,712,200,200,http://127.0.0.1:41237/hub,11,0,3";
    let cases: Vec<(Outcome, u16, &str)> = vec![
        (Outcome::Accepted, 202, "202,Accepted,c200 1-7,text,true,"),
        (Outcome::Accepted, 0, "200,OK,c200 1-7,text,true,"),
        (Outcome::Denied, 404, "404,Not Found,c200 1-7,text,false,hub.mode=denied"),
        (Outcome::Denied, 200, "200,OK,c200 1-7,text,false,hub.mode=denied"),
        (Outcome::Http503, 503, "503,Service Unavailable,c200 1-7,text,false,"),
        (Outcome::Http502, 0, "502,Bad Gateway,c200 1-7,text,false,"),
        (Outcome::Http504, 504, "504,Gateway Timeout,c200 1-7,text,false,"),
        (Outcome::Http4xx(413), 413, "413,Payload Too Large,c200 1-7,text,false,"),
        (Outcome::Http5xx(500), 500, "500,Internal Server Error,c200 1-7,text,false,"),
        (
            Outcome::Other(OtherReason::UnexpectedBody),
            200,
            "200,OK,c200 1-7,text,false,unexpected response (no hub.mode=accepted)",
        ),
        (
            Outcome::Timeout(Response),
            0,
            "Non HTTP response code: java.net.SocketTimeoutException,Non HTTP response message: Read timed out,c200 1-7,text,false,",
        ),
        (
            Outcome::Timeout(PoolWait),
            0,
            "Non HTTP response code: org.apache.http.conn.ConnectionPoolTimeoutException,Non HTTP response message: Timeout waiting for connection from pool,c200 1-7,text,false,",
        ),
        (
            Outcome::Timeout(Connect),
            0,
            "Non HTTP response code: org.apache.http.conn.ConnectTimeoutException,Non HTTP response message: Connect timed out,c200 1-7,text,false,",
        ),
        (
            Outcome::ConnError(Refused),
            0,
            "Non HTTP response code: java.net.ConnectException,Non HTTP response message: Connection refused,c200 1-7,text,false,",
        ),
        (
            Outcome::ConnError(Reset),
            0,
            "Non HTTP response code: java.net.SocketException,Non HTTP response message: Connection reset,c200 1-7,text,false,",
        ),
        (
            Outcome::ConnError(Closed),
            0,
            "Non HTTP response code: org.apache.http.NoHttpResponseException,Non HTTP response message: The target server failed to respond,c200 1-7,text,false,",
        ),
        (
            Outcome::Throttled,
            0,
            "Non HTTP response code: com.microsoft:server-busy,Non HTTP response message: The request was throttled,c200 1-7,text,false,throttled",
        ),
        (
            Outcome::Unauthorized,
            0,
            "Non HTTP response code: amqp:unauthorized-access,Non HTTP response message: Unauthorized access,c200 1-7,text,false,",
        ),
        (
            Outcome::NotFound,
            0,
            "Non HTTP response code: amqp:not-found,Non HTTP response message: The entity was not found,c200 1-7,text,false,",
        ),
        (
            Outcome::TooLarge,
            0,
            "Non HTTP response code: amqp:link:message-size-exceeded,Non HTTP response message: The message is too large,c200 1-7,text,false,",
        ),
        (
            Outcome::Rejected,
            0,
            "Non HTTP response code: amqp:rejected,Non HTTP response message: The message was rejected,c200 1-7,text,false,",
        ),
        (
            Outcome::Other(OtherReason::Unknown),
            0,
            "Non HTTP response code: java.io.IOException,Non HTTP response message: Unexpected error,c200 1-7,text,false,other.unknown",
        ),
        (
            Outcome::Other(OtherReason::HeadTooLarge),
            0,
            "Non HTTP response code: org.apache.http.MessageConstraintException,Non HTTP response message: Maximum line length limit exceeded,c200 1-7,text,false,other.head_too_large",
        ),
        (
            Outcome::TlsError(TlsReason::UnknownIssuer),
            0,
            "Non HTTP response code: javax.net.ssl.SSLHandshakeException,Non HTTP response message: unable to find valid certification path to requested target,c200 1-7,text,false,tls_error.unknown_issuer",
        ),
        (
            Outcome::ClientError(ClientReason::TooManyOpenFiles),
            0,
            "Non HTTP response code: java.net.SocketException,Non HTTP response message: Too many open files,c200 1-7,text,false,client_error.too_many_open_files",
        ),
        (
            Outcome::Cancelled,
            0,
            "Non HTTP response code: java.io.InterruptedIOException,Non HTTP response message: Request cancelled,c200 1-7,text,false,",
        ),
        (
            Outcome::ProtocolError(crate::result::ProtocolReason::FrameSize),
            0,
            "Non HTTP response code: java.net.ProtocolException,Non HTTP response message: HTTP/2 protocol error,c200 1-7,text,false,protocol_error.frame_size",
        ),
        (
            Outcome::StreamReset(crate::result::H2Code::InternalError),
            0,
            "Non HTTP response code: okhttp3.internal.http2.StreamResetException,Non HTTP response message: stream was reset,c200 1-7,text,false,stream_reset.internal_error",
        ),
    ];
    let rows: Vec<JtlRow> = cases.iter().map(|(o, s, _)| row(*o, *s)).collect();
    let lines = written(&rows);
    assert_eq!(lines.len(), cases.len() + 1);
    for ((o, s, middle), line) in cases.iter().zip(&lines[1..]) {
        assert_eq!(*line, format!("{HEAD}{middle}{TAIL}"), "{o:?} status {s}");
    }
}

#[test]
fn labels_with_commas_and_quotes_are_quoted() {
    let mut r = row(Outcome::Accepted, 200);
    r.label = "c200 \"login, eu\"";
    r.url = "http://127.0.0.1:1/hub?a=1,2";
    let lines = written(&[r]);
    assert_eq!(
        lines[1],
        "1764470400123,12,\"c200 \"\"login, eu\"\"\",200,OK,c200 1-7,text,true,,187,712,200,200,\"http://127.0.0.1:1/hub?a=1,2\",11,0,3"
    );
    // And it reads back as 17 fields with the label intact.
    let text = lines.join("\n");
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let rec = rd.records().next().unwrap().unwrap();
    assert_eq!(rec.len(), 17);
    assert_eq!(&rec[2], "c200 \"login, eu\"");
}

#[test]
fn labels_and_thread_names() {
    assert_eq!(level_tag(Some(200), None), "c200");
    assert_eq!(level_tag(None, Some(500.0)), "r500");
    assert_eq!(level_tag(None, Some(2.5)), "r2.5");
    assert_eq!(sample_label("c20", "registration"), "c20 registration");
    assert_eq!(thread_name("r500", 0), "r500 1-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_share_one_writer() {
    const WORKERS: usize = 4;
    const ROWS: u64 = 5_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jtl");
    let (tx, handle) = channel_writer(&path, names()).unwrap();
    let tasks: Vec<_> = (0..WORKERS)
        .map(|w| {
            let tx = tx.clone();
            tokio::spawn(async move {
                for i in 0..ROWS {
                    let r = AttemptRecord {
                        worker: w as u32,
                        start_unix_us: i * 1000,
                        ..record(Outcome::Accepted, 200)
                    };
                    assert!(tx.send(r).await);
                }
            })
        })
        .collect();
    drop(tx);
    for t in tasks {
        t.await.unwrap();
    }
    let written = tokio::task::spawn_blocking(move || handle.join().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(written, WORKERS as u64 * ROWS);
    let mut rd = csv::Reader::from_path(&path).unwrap();
    assert_eq!(
        rd.headers().unwrap().iter().collect::<Vec<_>>().join(","),
        JTL_HEADER
    );
    // Every worker's rows arrive, in that worker's order.
    let mut next = [0u64; WORKERS];
    for rec in rd.records() {
        let rec = rec.unwrap();
        let w: usize = rec[5].rsplit('-').next().unwrap().parse::<usize>().unwrap() - 1;
        assert_eq!(rec[0].parse::<u64>().unwrap(), next[w]);
        next[w] += 1;
    }
    assert_eq!(next, [ROWS; WORKERS]);
}

#[test]
fn create_fails_in_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let err = channel_writer(&dir.path().join("missing/run.jtl"), names()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

/// A full disk stops the writer; senders learn it (send returns false) instead of blocking,
/// and the join handle reports the error.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_stops_the_writer_and_is_reported() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    let (tx, handle) = channel_writer(full, names()).unwrap();
    let mut sent = 0u64;
    // Bounded: the writer fails at its first flush (a few thousand rows), then closes the queue.
    while sent < 10_000_000 && tx.blocking_send(record(Outcome::Accepted, 200)) {
        sent += 1;
    }
    assert!(sent < 10_000_000, "sends never failed");
    let err = handle.join().unwrap().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(28), "ENOSPC: {err}");
}

/// Writer throughput through the shared queue (prints rows/s):
/// `cargo test --release -p hubload --lib jtl_throughput -- --ignored --nocapture`.
#[test]
#[ignore = "measurement"]
fn jtl_throughput() {
    const ROWS: u64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jtl");
    let (tx, handle) = channel_writer(&path, names()).unwrap();
    let start = std::time::Instant::now();
    let senders: Vec<_> = (0..4)
        .map(|_| {
            let tx = tx.clone();
            let r = record(Outcome::Timeout(TimeoutKind::Response), 0);
            std::thread::spawn(move || {
                for _ in 0..ROWS / 4 {
                    assert!(tx.blocking_send(r));
                }
            })
        })
        .collect();
    drop(tx);
    for s in senders {
        s.join().unwrap();
    }
    let n = handle.join().unwrap().unwrap();
    let secs = start.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).unwrap().len();
    println!(
        "channel, 4 senders: {n} rows in {secs:.2} s: {:.0} rows/s, {:.1} MB/s",
        n as f64 / secs,
        bytes as f64 / secs / 1e6
    );
    // The writer alone, one thread, no queue.
    let start = std::time::Instant::now();
    let mut w = JtlWriter::create(&path).unwrap();
    let r = row(Outcome::Timeout(TimeoutKind::Response), 0);
    for _ in 0..ROWS {
        w.write(&r).unwrap();
    }
    w.finish().unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "writer alone: {ROWS} rows in {secs:.2} s: {:.0} rows/s",
        ROWS as f64 / secs
    );
}
