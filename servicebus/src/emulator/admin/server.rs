//! The emulator's administration endpoint: Azure's entity-management REST API (ATOM/XML over
//! HTTP/1.1, SAS in `Authorization`) on its own port, read and answered with the workspace's
//! HTTP/1.1 codec. Routes (docs/servicebus-admin.md):
//! `PUT|GET|DELETE /<queue-or-topic>`, `PUT|GET|DELETE /<topic>/Subscriptions/<name>`,
//! `GET /$Resources/Queues`, `GET /$Resources/Topics`, `GET /<topic>/Subscriptions`.

use std::sync::Arc;
use std::time::Duration;

use hubload_http1::answer::{write_full, Answer, Persist};
use hubload_http1::request::{parse_head, read_fields, Framing};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

use super::atom::{self, Description};
use crate::emulator::cbs::{covers, unix_now};
use crate::emulator::namespace::admin::Created;
use crate::emulator::rights::Right;
use crate::emulator::tier::Cost;
use crate::emulator::Shared;
use crate::sas::{urldecode, SasToken};

/// Longest wait for the next bytes of a request (and for an answer to be written).
const IDLE: Duration = Duration::from_secs(10);
/// Largest request body taken (an entity description is a few KiB).
const MAX_BODY: u64 = 1024 * 1024;
const ATOM: &str = "application/atom+xml;type=entry;charset=utf-8";
const ATOM_FEED: &str = "application/atom+xml;type=feed;charset=utf-8";
const XML: &str = "application/xml;charset=utf-8";

/// One request, as the router sees it.
struct Request<'a> {
    method: &'a str,
    path: String,
    auth: Option<&'a str>,
    if_match: bool,
    host: &'a str,
    body: &'a [u8],
}

/// One answer: status, content type, body.
struct Reply(u16, &'static str, String);

impl Reply {
    fn error(status: u16, detail: &str) -> Reply {
        Reply(status, XML, atom::error(status, detail))
    }
}

/// Accept connections on `listener` and serve each until it closes or idles out.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                conns.spawn(connection(stream, shared.clone()));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

async fn connection(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::with_capacity(8192);
    let mut out = Vec::with_capacity(8192);
    loop {
        let head = loop {
            match parse_head(&buf) {
                Ok(Some(h)) => break h,
                Ok(None) => {
                    if !read_more(&mut stream, &mut buf).await {
                        return;
                    }
                }
                Err(e) => {
                    out.clear();
                    let a = Answer::empty(e.status());
                    write_full(&mut out, &a, Persist::Close);
                    let _ = timeout(IDLE, stream.write_all(&out)).await;
                    return;
                }
            }
        };
        let len = match head.framing {
            Framing::Length(n) if n <= MAX_BODY => n as usize,
            Framing::Length(_) => return refuse(&mut stream, 413).await,
            // The SDKs send a Content-Length; a chunked body is refused rather than read.
            Framing::Chunked => return refuse(&mut stream, 411).await,
        };
        if head.expect_continue {
            let _ = timeout(IDLE, stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")).await;
        }
        while buf.len() < head.len + len {
            if !read_more(&mut stream, &mut buf).await {
                return;
            }
        }
        let reply = {
            let (mut auth, mut if_match, mut host) = (None, false, "");
            let parsed = read_fields(&buf, |name, value| {
                let v = std::str::from_utf8(value).ok();
                if name.eq_ignore_ascii_case("authorization") {
                    auth = v;
                } else if name.eq_ignore_ascii_case("if-match") {
                    if_match = true;
                } else if name.eq_ignore_ascii_case("host") {
                    host = v.unwrap_or("");
                }
            });
            match parsed {
                Some((method, target, _)) => {
                    let path = target.split('?').next().unwrap_or("");
                    route(
                        &Request {
                            method,
                            path: urldecode(path.trim_matches('/')),
                            auth,
                            if_match,
                            host,
                            body: &buf[head.len..head.len + len],
                        },
                        &shared,
                    )
                }
                None => Reply::error(400, "malformed request head"),
            }
        };
        shared.count(|c| c.admin_requests += 1);
        out.clear();
        let persist = Persist::of(head.keep_alive, head.http10, false);
        let answer = Answer {
            status: reply.0,
            content_type: Some(reply.1),
            fields: &[],
            body: reply.2.as_bytes(),
        };
        write_full(&mut out, &answer, persist);
        if !matches!(timeout(IDLE, stream.write_all(&out)).await, Ok(Ok(()))) {
            return;
        }
        buf.drain(..head.len + len);
        if persist == Persist::Close {
            return;
        }
    }
}

/// Read more of the request within [`IDLE`]; false at the end of the stream or the deadline.
async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    match timeout(IDLE, stream.read(&mut chunk)).await {
        Ok(Ok(n)) if n > 0 => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
        _ => false,
    }
}

async fn refuse(stream: &mut TcpStream, status: u16) {
    let mut out = Vec::new();
    write_full(&mut out, &Answer::empty(status), Persist::Close);
    let _ = timeout(IDLE, stream.write_all(&out)).await;
}

/// Check the request's SAS token as CBS does: the key, its name, the expiry, and an
/// audience that covers `path`; then the Manage right every request here needs. The reason when refused (never the token).
fn check_auth(req: &Request<'_>, shared: &Shared) -> Result<(), &'static str> {
    let t = req
        .auth
        .and_then(SasToken::parse)
        .ok_or("missing or malformed SharedAccessSignature")?;
    if t.key_name != shared.cfg.key_name || !t.signed_by(&shared.cfg.key) {
        return Err("InvalidSignature: the token has an invalid signature");
    }
    if t.expired_at(unix_now()) {
        return Err("ExpiredToken: the token is expired");
    }
    if !covers(&t.audience, &req.path) {
        return Err("InvalidAudience: the token audience does not cover the entity");
    }
    if !shared.cfg.key_rights.has(Right::Manage) {
        return Err(
            "Unauthorized access. 'Manage' claim(s) are required to perform this operation.",
        );
    }
    Ok(())
}

/// Azure's entity names: letters, digits, `.`, `-`, `_` (and `/` in a queue or topic path).
fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 260
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

fn route(req: &Request<'_>, shared: &Shared) -> Reply {
    if let Err(why) = check_auth(req, shared) {
        return Reply::error(401, why);
    }
    if shared.budget.take(Cost::Management).is_err() {
        shared.count(|c| c.throttled += 1);
        return Reply::error(503, crate::emulator::tier::SERVER_BUSY_DESCRIPTION);
    }
    let base = format!("http://{}", req.host);
    let parts: Vec<&str> = req.path.split('/').collect();
    let lower: Vec<String> = parts.iter().map(|p| p.to_lowercase()).collect();
    let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
    match (req.method, lower.as_slice()) {
        ("GET", ["$resources", "topics"]) => {
            let items: Vec<_> = shared
                .ns
                .list_topics()
                .iter()
                .map(|t| {
                    let d = Description::Topic(t.subscriptions().len());
                    (t.name.clone(), t.name.clone(), d)
                })
                .collect();
            Reply(
                200,
                ATOM_FEED,
                atom::feed(&base, "$Resources/Topics", &items),
            )
        }
        ("GET", ["$resources", "queues"]) => {
            let now = crate::emulator::clock::unix_ms();
            let queues = shared.ns.list_queues();
            let items: Vec<_> = queues
                .iter()
                .map(|q| {
                    let n = q.stats(now).active;
                    (
                        q.path.clone(),
                        q.path.clone(),
                        Description::Queue(&q.props, n),
                    )
                })
                .collect();
            Reply(
                200,
                ATOM_FEED,
                atom::feed(&base, "$Resources/Queues", &items),
            )
        }
        ("GET", [_, "subscriptions"]) => {
            let Some(t) = shared.ns.get_topic(parts[0]) else {
                return Reply::error(404, &format!("Topic '{}' not found.", parts[0]));
            };
            let now = crate::emulator::clock::unix_ms();
            let subs = t.subscriptions();
            let items: Vec<_> = subs
                .iter()
                .map(|s| {
                    let name = s.path.rsplit('/').next().unwrap_or("").to_string();
                    let n = s.stats(now).active;
                    (s.path.clone(), name, Description::Subscription(&s.props, n))
                })
                .collect();
            Reply(200, ATOM_FEED, atom::feed(&base, &req.path, &items))
        }
        (_, [_, "subscriptions", _]) => subscription(req, shared, &base, parts[0], parts[2]),
        (_, [_]) => entity(req, shared, &base, parts[0]),
        _ => Reply::error(404, "no such resource"),
    }
}

fn body_str<'a>(req: &Request<'a>) -> Result<&'a str, Reply> {
    std::str::from_utf8(req.body).map_err(|_| Reply::error(400, "the body is not UTF-8"))
}

/// A queue or topic.
fn entity(req: &Request<'_>, shared: &Shared, base: &str, name: &str) -> Reply {
    if !valid_name(name) {
        return Reply::error(400, "invalid entity name");
    }
    let ns = &shared.ns;
    let describe = |created: bool| {
        let status = if created { 201 } else { 200 };
        if let Some(t) = ns.get_topic(name) {
            let d = Description::Topic(t.subscriptions().len());
            return Reply(status, ATOM, atom::entry(base, &t.name, &t.name, &d));
        }
        if let Some(q) = ns.get_queue(name) {
            let n = q.stats(crate::emulator::clock::unix_ms()).active;
            let d = Description::Queue(&q.props, n);
            return Reply(status, ATOM, atom::entry(base, &q.path, &q.path, &d));
        }
        Reply::error(
            404,
            &format!("The messaging entity '{name}' could not be found."),
        )
    };
    match req.method {
        "GET" => describe(false),
        "DELETE" => {
            if ns.delete_topic(name) || ns.delete_queue(name) {
                deleted(shared);
                Reply(200, XML, String::new())
            } else {
                Reply::error(
                    404,
                    &format!("The messaging entity '{name}' could not be found."),
                )
            }
        }
        "PUT" => {
            let body = match body_str(req) {
                Ok(b) => b,
                Err(r) => return r,
            };
            let created = match atom::kind_of(body) {
                Some("TopicDescription") => ns.create_topic(name),
                Some("QueueDescription") => match atom::props_of(body, &ns.defaults) {
                    Ok(p) => ns.create_queue(name, p),
                    Err(e) => return Reply::error(400, &e),
                },
                _ => {
                    return Reply::error(
                        400,
                        "the body holds no QueueDescription or TopicDescription",
                    )
                }
            };
            put_answer(req, shared, created, describe)
        }
        _ => Reply::error(405, "method not allowed"),
    }
}

/// A subscription of `topic`.
fn subscription(req: &Request<'_>, shared: &Shared, base: &str, topic: &str, name: &str) -> Reply {
    if !valid_name(topic) || !valid_name(name) || name.len() > 50 {
        return Reply::error(400, "invalid topic or subscription name");
    }
    let ns = &shared.ns;
    let describe = |created: bool| {
        let status = if created { 201 } else { 200 };
        let Some(t) = ns.get_topic(topic) else {
            return Reply::error(404, &format!("Topic '{topic}' could not be found."));
        };
        let Some(s) = t.subscription(name) else {
            return Reply::error(
                404,
                &format!("Subscription '{topic}/Subscriptions/{name}' could not be found."),
            );
        };
        let n = s.stats(crate::emulator::clock::unix_ms()).active;
        let title = s.path.rsplit('/').next().unwrap_or(name).to_string();
        let d = Description::Subscription(&s.props, n);
        Reply(status, ATOM, atom::entry(base, &s.path, &title, &d))
    };
    match req.method {
        "GET" => describe(false),
        "DELETE" => {
            if ns.delete_subscription(topic, name) {
                deleted(shared);
                Reply(200, XML, String::new())
            } else {
                Reply::error(
                    404,
                    &format!("Subscription '{topic}/Subscriptions/{name}' could not be found."),
                )
            }
        }
        "PUT" => {
            let body = match body_str(req) {
                Ok(b) => b,
                Err(r) => return r,
            };
            let props = match atom::props_of(body, &ns.defaults) {
                Ok(p) => p,
                Err(e) => return Reply::error(400, &e),
            };
            match ns.create_subscription(topic, name, props) {
                Ok(Some(c)) => put_answer(req, shared, c, describe),
                Ok(None) => Reply::error(404, &format!("Topic '{topic}' could not be found.")),
                Err(e) => Reply::error(403, &format!("{e:?}")),
            }
        }
        _ => Reply::error(405, "method not allowed"),
    }
}

/// A create's answer: 201 and the entity; 409 when it was there and the request was a
/// create; an update (`If-Match: *`) of an existing entity is not supported (501: the
/// emulator keeps an entity's settings for its life).
fn put_answer(
    req: &Request<'_>,
    shared: &Shared,
    created: Created,
    describe: impl Fn(bool) -> Reply,
) -> Reply {
    match (created, req.if_match) {
        (Created::New, _) => {
            shared.count(|c| c.entity_creates += 1);
            describe(true)
        }
        (Created::Exists, false) => Reply::error(409, "The messaging entity already exists."),
        (Created::Exists, true) => Reply::error(501, "this emulator does not update entities"),
    }
}

/// Count a delete and wake the links, so those on the deleted entity detach.
fn deleted(shared: &Shared) {
    shared.count(|c| c.entity_deletes += 1);
    shared.deletions.send_modify(|n| *n += 1);
}
