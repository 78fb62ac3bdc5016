//! An HTTP/2 server (h2c, prior knowledge) on the `h2` crate's server side for the HTTP/2
//! tests that need a server to misbehave on purpose: answer, hold every request body behind a
//! stream window that never opens, or reset every stream with a given code. It counts the
//! streams it saw and keeps each request's fields as they arrived.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::net::TcpListener;

/// What the server does with each request.
#[derive(Debug, Clone, Copy)]
pub enum Behaviour {
    /// 200 `hub.mode=accepted` once the body is read.
    Answer,
    /// Streams open with a window of 0 that is never raised: no body byte can be sent once
    /// the client has our SETTINGS, and a request with a body is never answered (one
    /// without, a registration, is, like `Answer`).
    Hold,
    /// `RST_STREAM` with this code as soon as the request's fields arrive.
    Reset(h2::Reason),
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `:path` and query.
    pub path: String,
    /// The fields, names as they arrived (HTTP/2 names are lowercase), in order.
    pub fields: Vec<(String, String)>,
    /// Body bytes received (0 when the stream was reset, or held before any came).
    pub body: usize,
}

/// A running server: its URL and what it saw.
pub struct H2Server {
    /// `http://127.0.0.1:PORT/hub`.
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for H2Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl H2Server {
    /// A server on 127.0.0.1:0 doing `behaviour` to every request.
    pub async fn start(behaviour: Behaviour) -> H2Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hub", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(connection(sock, behaviour, log.clone()));
            }
        });
        H2Server { url, seen, task }
    }

    /// Every request seen so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn connection(sock: tokio::net::TcpStream, behaviour: Behaviour, log: Arc<Mutex<Vec<Seen>>>) {
    let mut b = h2::server::Builder::new();
    if let Behaviour::Hold = behaviour {
        b.initial_window_size(0);
    }
    let Ok(mut conn) = b.handshake::<_, Bytes>(sock).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        let (parts, mut body) = req.into_parts();
        let fields = parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into(),
                )
            })
            .collect();
        let path = parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let k = {
            let mut log = log.lock().unwrap();
            log.push(Seen {
                path,
                fields,
                body: 0,
            });
            log.len() - 1
        };
        match behaviour {
            Behaviour::Reset(code) => respond.send_reset(code),
            Behaviour::Hold if !body.is_end_stream() => {
                let log = log.clone();
                tokio::spawn(async move {
                    // Never answered, and no window given back: what the client managed to
                    // send before our SETTINGS reached it is counted, then nothing more comes.
                    let mut respond = respond;
                    while let Some(Ok(chunk)) = body.data().await {
                        log.lock().unwrap()[k].body += chunk.len();
                    }
                    // Dropping the stream would reset it: hold it until the client does.
                    let _ = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
                });
            }
            Behaviour::Hold | Behaviour::Answer => {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut n = 0;
                    while let Some(Ok(chunk)) = body.data().await {
                        let _ = body.flow_control().release_capacity(chunk.len());
                        n += chunk.len();
                    }
                    log.lock().unwrap()[k].body = n;
                    let resp = http::Response::builder()
                        .status(200)
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(())
                        .unwrap();
                    if let Ok(mut send) = respond.send_response(resp, false) {
                        let _ = send.send_data(Bytes::from_static(b"hub.mode=accepted"), true);
                    }
                });
            }
        }
    }
}
