//! Publishes over HTTP/2: each topic's request head converted once before the load, so an
//! attempt clones it and fills in only what changes per event (the id, the length, the body).

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH};

use crate::result::Outcome;
use crate::targets::h2::{unchanged, H2Head, H2Local, H2Pool, Outgoing};
use crate::targets::http::Response;
use crate::targets::request::{Dialect, ACTIVITY_ID};
use tokio::time::Instant;

/// `\r\nContent-Length: ` and the blank line after its digits: what HTTP/1.1 adds around the
/// length after the id, counted in a publish's size.
const LENGTH_FIELD_BYTES: usize = "\r\nContent-Length: ".len() + "\r\n\r\n".len();

/// The HTTP/2 publish requests of every topic, in topic order.
#[derive(Debug)]
pub(super) struct H2Publishes {
    dialect: Dialect,
    /// Per topic: the head (Ballerina: with slots for the id and the length).
    heads: Vec<H2Head>,
    /// Per topic: the thin ping's body (websub); empty for Ballerina.
    bodies: Vec<Bytes>,
    /// Per topic: the HTTP/1.1 rendering's size (Ballerina: up to the id's value).
    sizes: Vec<usize>,
    activity_id: HeaderName,
}

impl H2Publishes {
    /// The requests of `publish_heads` (the HTTP/1.1 renderings of `WebSubTarget`: a
    /// Ballerina head up to the id's value, or a complete thin ping), for `pool`.
    pub(super) fn new(pool: &H2Pool, dialect: Dialect, publish_heads: &[Vec<u8>]) -> Self {
        let activity_id = HeaderName::from_static(ACTIVITY_ID);
        let mut p = H2Publishes {
            dialect,
            heads: Vec::with_capacity(publish_heads.len()),
            bodies: Vec::with_capacity(publish_heads.len()),
            sizes: publish_heads.iter().map(Vec::len).collect(),
            activity_id,
        };
        for raw in publish_heads {
            let (head, body) = match dialect {
                Dialect::Websub => pool.prepare(raw),
                Dialect::Ballerina => {
                    // The head ends in the id's name, its value to follow: complete it
                    // without that field, which each attempt adds.
                    let field = format!("{ACTIVITY_ID}: ");
                    let mut complete = raw.strip_suffix(field.as_bytes()).unwrap_or(raw).to_vec();
                    complete.extend_from_slice(b"\r\n");
                    pool.prepare(&complete).map(|(head, body)| {
                        let head = head.with_slot(p.activity_id.clone());
                        (head.with_slot(CONTENT_LENGTH), body)
                    })
                }
            }
            // `request.rs` renders complete heads; a failure here is a bug of ours.
            .expect("a rendered request converts to HTTP/2");
            p.heads.push(head);
            p.bodies.push(body);
        }
        p
    }

    /// The websub thin ping of topic `topic`.
    pub(super) async fn thin_ping(
        &self,
        pool: &H2Pool,
        topic: usize,
        deadline: Instant,
        local: &mut H2Local,
        resp: &mut Response,
    ) -> Result<(), Outcome> {
        debug_assert_eq!(self.dialect, Dialect::Websub);
        let body = self.bodies[topic].clone();
        let out = Outgoing::new(
            &self.heads[topic],
            unchanged,
            body,
            self.sizes[topic] as u64,
        );
        pool.send_prepared(out, deadline, local, resp).await
    }

    /// The Ballerina publish of topic `topic` with `rendered` (from [`render`]).
    pub(super) async fn publish(
        &self,
        pool: &H2Pool,
        topic: usize,
        rendered: Rendered,
        deadline: Instant,
        local: &mut H2Local,
        resp: &mut Response,
    ) -> Result<(), Outcome> {
        let Rendered { all, body_len } = rendered;
        let digits = all.len() - ID - body_len;
        let size = self.sizes[topic] + ID + LENGTH_FIELD_BYTES + digits + body_len;
        let body = all.slice(ID..ID + body_len);
        // The fields are cut from `all` where the request is made (`fill` runs once unless
        // the connection was lost under it): a value made here and cloned into the request
        // would take and drop one more reference to the buffer. Both are from `request.rs`'s
        // rendering: the id is hex and hyphens, the length digits, so neither can fail.
        let fill = |h: &mut http::HeaderMap| {
            let mut id = HeaderValue::from_maybe_shared(all.slice(..ID)).expect("hex");
            // Unique per request: indexing it in HPACK's dynamic table would only push out
            // the fields that repeat.
            id.set_sensitive(true);
            h.insert(&self.activity_id, id);
            let length = all.slice(ID + body_len..);
            h.insert(
                CONTENT_LENGTH,
                HeaderValue::from_maybe_shared(length).expect("digits"),
            );
        };
        let out = Outgoing::new(&self.heads[topic], fill, body, size as u64);
        pool.send_prepared(out, deadline, local, resp).await
    }
}

/// The length of an event id in its hex form.
const ID: usize = 36;

/// A publish's event id, body and body length (its digits), in one buffer.
pub(super) struct Rendered {
    /// The id (36 bytes), the body, the body's length in decimal.
    all: Bytes,
    body_len: usize,
}

/// The event id and body `write` writes (the id first), with the body's length after them,
/// as a slice of this thread's arena: most publishes allocate nothing for them. The arena's
/// memory is reused once every request cut from it has been sent and dropped.
pub(super) fn render(write: impl FnOnce(&mut Vec<u8>)) -> Rendered {
    RENDER.with_borrow_mut(|buf| {
        buf.clear();
        write(buf);
        let body_len = buf.len() - ID;
        buf.extend_from_slice(itoa::Buffer::new().format(body_len).as_bytes());
        let all = ARENA.with_borrow_mut(|arena| {
            if arena.capacity() < buf.len() {
                // Reclaims the arena when every slice of it is gone, else takes a new one.
                arena.reserve(buf.len().max(ARENA_BYTES));
            }
            arena.extend_from_slice(buf);
            arena.split().freeze()
        });
        if buf.capacity() > ARENA_BYTES {
            *buf = Vec::new();
        }
        Rendered { all, body_len }
    })
}

/// The arena's size: room for about a hundred common publishes before it is reused or
/// replaced.
const ARENA_BYTES: usize = 64 * 1024;

thread_local! {
    /// Where a publish's id and body are written first (reused).
    static RENDER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Where they are copied to, to be shared with the connection until sent.
    static ARENA: std::cell::RefCell<BytesMut> = std::cell::RefCell::new(BytesMut::new());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_is_the_id_the_body_and_its_length_cut_from_one_arena() {
        let id = [b'a'; ID];
        let one = render(|buf| {
            buf.extend_from_slice(&id);
            buf.extend_from_slice(b"{\"n\":1}");
        });
        assert_eq!(one.body_len, 7);
        assert_eq!(&one.all[..ID], &id[..]);
        assert_eq!(&one.all[ID..], b"{\"n\":1}7");
        // The next publish is cut from the same memory, right after the first.
        let two = render(|buf| {
            buf.extend_from_slice(&id);
            buf.extend_from_slice(&[b'x'; 120]);
        });
        assert_eq!(&two.all[ID + 120..], b"120");
        let end_of_one = one.all.as_ptr().wrapping_add(one.all.len());
        assert_eq!(two.all.as_ptr(), end_of_one);
    }
}
