//! A capture server: a tiny HTTP/1.1 server on 127.0.0.1:0 that records every request's raw
//! head and body exactly as received and answers each with one fixed reply (keep-alive).
//!
//! Plain std threads, so it serves while a test waits on the built binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The reply to every request.
#[derive(Clone)]
pub struct Reply {
    /// e.g. `200 OK`.
    pub status: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

/// What the hub of the Ballerina dialect answers to a good request.
pub const ACCEPTED: Reply = Reply {
    status: "200 OK",
    content_type: "application/x-www-form-urlencoded",
    body: "hub.mode=accepted",
};

/// What flask-websub (a hub of the websub dialect) answers a Ballerina register or publish.
pub const WEBSUB_HUB_400: Reply = Reply {
    status: "400 BAD REQUEST",
    content_type: "text/html; charset=utf-8",
    body: "Missing form argument: hub.mode",
};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Request {
    /// Request line and header lines, each ending in CRLF, up to the empty line.
    pub head: String,
    pub body: Vec<u8>,
}

impl Request {
    /// The values of every header named `name` (any case), in order.
    pub fn headers(&self, name: &str) -> Vec<String> {
        self.head
            .split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
            .collect()
    }
}

/// A running capture server (its threads end with the test process).
pub struct Capture {
    /// `http://127.0.0.1:PORT/hub`.
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    connections: Arc<AtomicUsize>,
}

impl Capture {
    pub fn start(reply: Reply) -> Capture {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hub", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (reqs, conns) = (requests.clone(), connections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                conns.fetch_add(1, Ordering::SeqCst);
                let (reqs, reply) = (reqs.clone(), reply.clone());
                std::thread::spawn(move || serve(stream, &reqs, &reply));
            }
        });
        Capture {
            url,
            requests,
            connections,
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn serve(stream: TcpStream, reqs: &Mutex<Vec<Request>>, reply: &Reply) {
    let mut out = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    loop {
        let mut head = String::new();
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            head.push_str(&String::from_utf8_lossy(&line));
            if line == b"\r\n" {
                break;
            }
        }
        let head = head.strip_suffix("\r\n").unwrap_or(&head).to_string();
        let mut req = Request {
            head,
            body: Vec::new(),
        };
        let len: usize = req
            .headers("content-length")
            .first()
            .map_or(0, |v| v.parse().unwrap());
        req.body.resize(len, 0);
        if r.read_exact(&mut req.body).is_err() {
            return;
        }
        reqs.lock().unwrap().push(req);
        let answer = format!(
            "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n{}",
            reply.status,
            reply.content_type,
            reply.body.len(),
            reply.body
        );
        if out.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The summary.json a run wrote into `dir`.
pub fn summary(dir: &std::path::Path) -> serde_json::Value {
    let bytes = std::fs::read(dir.join("summary.json")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}
