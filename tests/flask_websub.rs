//! flask-websub (PyPI, a hub this repository did not write) loaded in the websub dialect: hubload
//! sends thin pings, the hub fetches each topic from hubload's topic server and delivers the
//! content, signed, to a subscriber of this test's own. Counts reconcile exactly.
//!
//! Needs `python3` with `flask-websub` 0.4.x and `celery` (tests/support/flask_websub_hub.py);
//! without them the test is skipped loudly, or fails under `CI`.

use std::collections::{BTreeMap, HashMap};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use hmac::{Hmac, Mac};
use hubload::result::Class;
use hubload::workload::Workload;
use sha2::Sha256;
use tokio::time::Instant;

use crate::util::{free_port, read_summary, run};

const SECRET: &str = "flask-websub-test-secret";
const LAUNCHER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/support/flask_websub_hub.py"
);

/// Whether `python3` can import flask-websub and celery.
fn python_ready() -> bool {
    Command::new("python3")
        .args(["-c", "import flask_websub.hub, celery"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a flask-websub test can run: python3 has flask-websub and celery. Without them the
/// test `name` is skipped loudly, and under `CI` it fails.
pub(crate) fn flask_ready(name: &str) -> bool {
    if python_ready() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI: python3 with flask-websub and celery is required (see .ci/run)"
    );
    eprintln!("SKIPPED {name}: python3 cannot import flask_websub and celery (pip install 'flask-websub==0.4.1' celery)");
    false
}

/// A websub-dialect run against a flask-websub hub: its flags, its topic URL prefix and its
/// workload (to name its topics and recognise its events).
pub(crate) struct WebsubRun {
    pub(crate) prefix: String,
    pub(crate) args: Vec<String>,
    pub(crate) workload: Workload,
}

/// The flags of a run against `hub`: 2 tenants × 2 channels, the `levels` of `requests` each,
/// reports in `out`, then `extra`. The topic server listens on a port picked here so topic URLs
/// are known before the run; the hub reaches it under a prefix of our choosing, as it would a
/// Service name.
pub(crate) fn websub_run(
    hub: &str,
    out: &std::path::Path,
    levels: &[u64],
    requests: u64,
    extra: &[&str],
) -> WebsubRun {
    let topic_port = free_port();
    let prefix = format!("http://127.0.0.1:{topic_port}/feeds/");
    let levels = levels
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let listen = format!("127.0.0.1:{topic_port}");
    let mut args: Vec<String> = [
        "--hub-url",
        hub,
        "--dialect",
        "websub",
        "--topic-url-prefix",
        &prefix,
        "--topic-server-listen",
        &listen,
        "--tenants",
        "2",
        "--channels",
        "login,logout",
        "--topics",
        "per-tenant-channel",
        "--concurrency",
        &levels,
        "--requests",
        &requests.to_string(),
        "--out",
        out.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(extra.iter().map(|a| a.to_string()));
    let argv = ["hubload"]
        .iter()
        .map(|a| a.to_string())
        .chain(args.iter().cloned())
        .map(Into::into)
        .collect();
    let cli = hubload::app::parse_args(argv).unwrap();
    let workload = Workload::new(hubload::config::resolve(&cli.run).unwrap().workload);
    WebsubRun {
        prefix,
        args,
        workload,
    }
}

/// The flask-websub hub process, killed on drop; its output goes to `log`.
pub(crate) struct FlaskHub {
    child: Child,
    log: std::path::PathBuf,
    pub(crate) url: String,
}

impl FlaskHub {
    fn start(dir: &std::path::Path) -> FlaskHub {
        FlaskHub::start_logging(dir, &[])
    }

    /// Start the hub with its database in `dir`; `extra` are the launcher's further arguments
    /// (its delivery log).
    pub(crate) fn start_logging(dir: &std::path::Path, extra: &[&std::path::Path]) -> FlaskHub {
        let port = free_port();
        let log = dir.join("flask-hub.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new("python3")
            .arg(LAUNCHER)
            .arg(port.to_string())
            .arg(dir.join("hub.sqlite3"))
            .args(extra)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("python3 starts");
        FlaskHub {
            child,
            log,
            url: format!("http://127.0.0.1:{port}/hub"),
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until the hub accepts connections (Python starts slowly on a loaded machine).
    pub(crate) async fn ready(&mut self) {
        let addr = self.url["http://".len()..]
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let deadline = Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(&addr).await.is_err() {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("flask-websub hub exited ({st}):\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "flask-websub hub not up:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for FlaskHub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One content delivery as the subscriber received it.
#[derive(Debug, Clone)]
struct Delivery {
    signature_ok: bool,
    content_type: Option<String>,
    body: Bytes,
}

/// This test's subscriber: one callback per topic index, `/cb/{i}`.
#[derive(Default)]
struct Subscriber {
    /// Topic URL per topic index (what the hub must name in its verification).
    topic_urls: Vec<String>,
    verified: Mutex<Vec<bool>>,
    deliveries: Mutex<BTreeMap<usize, Vec<Delivery>>>,
}

/// WebSub §5.3: echo the challenge of a subscription this subscriber asked for.
async fn verify(
    State(s): State<Arc<Subscriber>>,
    Path(i): Path<usize>,
    Query(q): Query<HashMap<String, String>>,
) -> (StatusCode, String) {
    let get = |k: &str| q.get(k).map(String::as_str);
    let ours = s.topic_urls.get(i).map(String::as_str);
    if get("hub.mode") != Some("subscribe") || ours.is_none() || get("hub.topic") != ours {
        return (StatusCode::NOT_FOUND, String::new());
    }
    s.verified.lock().unwrap()[i] = true;
    (
        StatusCode::OK,
        get("hub.challenge").unwrap_or("").to_owned(),
    )
}

/// WebSub §7: a content delivery; its `X-Hub-Signature` is checked here, independently.
async fn receive(
    State(s): State<Arc<Subscriber>>,
    Path(i): Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let signature_ok = header("x-hub-signature")
        .and_then(|h| h.strip_prefix("sha256="))
        .and_then(|h| hex::decode(h).ok())
        .is_some_and(|sig| {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(SECRET.as_bytes()).unwrap();
            mac.update(&body);
            mac.verify_slice(&sig).is_ok()
        });
    let d = Delivery {
        signature_ok,
        content_type: header("content-type").map(str::to_owned),
        body,
    };
    s.deliveries.lock().unwrap().entry(i).or_default().push(d);
    StatusCode::NO_CONTENT
}

/// Start the subscriber on 127.0.0.1:0; its callback base URL.
async fn start_subscriber(s: Arc<Subscriber>) -> String {
    let app = axum::Router::new()
        .route("/cb/{i}", get(verify).post(receive))
        .with_state(s);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/cb/")
}

/// POST a form to `url`; the status.
async fn post_form(url: &str, form: &[(&str, &str)]) -> u16 {
    let u = url::Url::parse(url).unwrap();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let addr = format!("{}:{}", u.host_str().unwrap(), u.port().unwrap());
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let req = format!(
        "POST {} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        u.path(),
        body.len()
    );
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    String::from_utf8_lossy(&buf[9..12]).parse().unwrap()
}

const LEVELS: [u64; 2] = [1, 4];
const REQUESTS: u64 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flask_websub_fetches_every_topic_and_delivers_every_ping_signed() {
    if !flask_ready("flask_websub") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut hub = FlaskHub::start(dir.path());
    hub.ready().await;

    let out = dir.path().join("out");
    let WebsubRun {
        prefix,
        args,
        workload,
    } = websub_run(&hub.url, &out, &LEVELS, REQUESTS, &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let names: Vec<String> = workload
        .topics()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names.len(), 4);
    let sub = Arc::new(Subscriber {
        topic_urls: names.iter().map(|n| format!("{prefix}{n}")).collect(),
        verified: Mutex::new(vec![false; names.len()]),
        ..Subscriber::default()
    });
    let callbacks = start_subscriber(sub.clone()).await;
    for (i, topic_url) in sub.topic_urls.iter().enumerate() {
        let callback = format!("{callbacks}{i}");
        let form = [
            ("hub.mode", "subscribe"),
            ("hub.topic", topic_url.as_str()),
            ("hub.callback", callback.as_str()),
            ("hub.secret", SECRET),
        ];
        let status = post_form(&hub.url, &form).await;
        assert_eq!(status, 202, "subscribe {topic_url}:\n{}", hub.log());
    }
    // Celery runs eagerly: the 202 came after the hub verified the intent.
    assert!(
        sub.verified.lock().unwrap().iter().all(|v| *v),
        "{}",
        hub.log()
    );

    run(&args).await;
    let summary = read_summary(&out);
    assert_eq!(
        summary
            .topics
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>(),
        names,
        "the test subscribed to hubload's topics"
    );

    // Every publish accepted (202); per level, the hub fetched each topic exactly as often as
    // hubload pinged it, and each fetch got a new event.
    let mut accepted = vec![0u64; names.len()];
    for l in &summary.levels {
        assert_eq!(
            l.stats.counts.get(Class::Accepted),
            REQUESTS,
            "{}: {:?}\n{}",
            l.label,
            l.stats.counts,
            hub.log()
        );
        let ts = l
            .topic_server
            .as_ref()
            .expect("a websub level has a topic_server section");
        let mut level_accepted = vec![0u64; names.len()];
        for t in &l.topics {
            level_accepted[t.topic] = t.stats.counts.get(Class::Accepted);
        }
        let mut fetched = ts.by_topic.clone();
        fetched.resize(names.len(), 0);
        assert_eq!(fetched, level_accepted, "{}: fetches per topic", l.label);
        assert_eq!(
            (
                ts.fetches,
                ts.fetched_new,
                ts.fetched_again,
                ts.fetched_empty,
                ts.unknown
            ),
            (REQUESTS, REQUESTS, 0, 0, 0),
            "{}",
            l.label
        );
        for (a, b) in accepted.iter_mut().zip(&level_accepted) {
            *a += b;
        }
    }
    assert!(
        accepted.iter().all(|&n| n > 0),
        "every topic pinged: {accepted:?}"
    );

    // Deliveries per topic == accepted publishes per topic (the hub POSTs inside the publish
    // request; poll anyway, in case a delivery is still on the wire).
    let delivered = |s: &Subscriber| -> Vec<u64> {
        let d = s.deliveries.lock().unwrap();
        (0..names.len())
            .map(|i| d.get(&i).map_or(0, |v| v.len() as u64))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while delivered(&sub) != accepted && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        delivered(&sub),
        accepted,
        "deliveries per topic\n{}",
        hub.log()
    );

    // Each delivery signed, and exactly one of the events hubload published to that topic:
    // all sequence numbers of the run, each once.
    let total = REQUESTS * LEVELS.len() as u64;
    let mut seqs = Vec::new();
    for (&topic, ds) in sub.deliveries.lock().unwrap().iter() {
        for d in ds {
            assert!(
                d.signature_ok,
                "bad X-Hub-Signature on a delivery to topic {topic}"
            );
            assert_eq!(d.content_type.as_deref(), Some("application/json"));
            let (seq, sent_us) = workload
                .parse_identity(&d.body)
                .unwrap_or_else(|| panic!("not an event of this run: {:?}", d.body));
            assert_eq!(workload.event_at(seq, sent_us).body, d.body, "seq {seq}");
            assert_eq!(
                workload.topic_of_seq(seq),
                topic,
                "seq {seq} delivered to its topic"
            );
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        (0..total).collect::<Vec<_>>(),
        "every event delivered once"
    );
}
