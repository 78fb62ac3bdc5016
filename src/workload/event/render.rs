//! An event's body: rendered whole, as a template with holes, and read back to the event
//! it names.

use super::super::body::template::{Fill, Template};
use super::super::body::{self, BodyFields};
use super::super::identity;
use super::{Event, Workload};

impl Workload {
    /// Render the body of `e` (an event of this workload) into `buf`, cleared first: the bytes
    /// [`event_at`](Self::event_at) gives it.
    pub fn render_body(&self, e: &Event, buf: &mut Vec<u8>) {
        self.render_body_with_jti(e, &self.jti_hex(&e.jti), buf);
    }

    /// The hyphenated lowercase form of `jti`, as `uuid`'s `hyphenated()` writes it: for a
    /// `jti` of this run only its last 8 bytes are hex-encoded (the first 19 characters are
    /// the run's), any other in full.
    pub fn jti_hex(&self, jti: &uuid::Uuid) -> [u8; 36] {
        let (bytes, chars) = &self.jti_head;
        if jti.as_bytes()[..8] != bytes[..] {
            return body::hyphenated(*jti);
        }
        let mut out = [0u8; 36];
        out[..19].copy_from_slice(chars);
        out[19..].copy_from_slice(&body::hyphenated_tail(jti));
        out
    }

    /// [`render_body`](Self::render_body) with the event's `jti` already in its hex form
    /// ([`jti_hex`](Self::jti_hex)): a target that also writes it in the request's head
    /// encodes it once for both.
    pub fn render_body_with_jti(&self, e: &Event, jti: &[u8; 36], buf: &mut Vec<u8>) {
        match self.body_template(e) {
            Some(t) => {
                buf.clear();
                t.append_to(jti, buf);
            }
            None => self.render_body_in_pieces(e, jti, buf),
        }
    }

    /// The template `e`'s body is copied from, when it has one (most do: see
    /// `body/template.rs`), with what fills its holes: its length is known before it is
    /// written.
    #[inline]
    pub fn body_template<'a>(&'a self, e: &'a Event) -> Option<TemplatedBody<'a>> {
        let t = self.templates.get(
            e.tenant,
            e.channel,
            e.failed,
            e.user,
            e.application,
            e.sent_us,
        )?;
        Some(TemplatedBody { w: self, e, t })
    }

    /// [`render_body_with_jti`](Self::render_body_with_jti) without a template: every piece
    /// written by `body::render_into`.
    pub(crate) fn render_body_in_pieces(&self, e: &Event, jti: &[u8; 36], buf: &mut Vec<u8>) {
        body::render_into(
            &BodyFields {
                tenant_name: &self.tenant_names[e.tenant as usize],
                tenant_id: e.tenant,
                channel: &self.channels[e.channel],
                jti,
                sent_us: e.sent_us,
                user_id: self.stable_uuid(3, e.tenant, e.user),
                application_id: e.application_id,
                application: e.application,
                user: e.user,
                failed: e.failed,
                pad_to: self.cfg.payload_bytes,
            },
            buf,
        );
    }

    /// How many tenants (the first ones) have body templates.
    #[cfg(test)]
    pub(crate) fn templated_tenants(&self) -> u32 {
        self.templates.tenants()
    }

    /// (seq, sent_us) of a body this workload rendered (same seed); `None` for any other
    /// body. The exact expected body is then `event_at(seq, sent_us).body`.
    pub fn parse_identity(&self, body: &[u8]) -> Option<(u64, u64)> {
        let (tag, seq, sent_us) = identity::parse(body)?;
        (tag == self.tag).then_some((seq, sent_us))
    }

    /// Whether `body` is byte for byte the body of the event it names.
    pub fn is_exact_body(&self, body: &[u8]) -> bool {
        self.parse_identity(body)
            .is_some_and(|(seq, sent_us)| self.event_at(seq, sent_us).body == body)
    }
}

/// An event's body as its template and the event that fills its holes
/// ([`Workload::body_template`]).
#[derive(Debug, Clone, Copy)]
pub struct TemplatedBody<'a> {
    w: &'a Workload,
    e: &'a Event,
    t: &'a Template,
}

impl TemplatedBody<'_> {
    /// The body's length in bytes.
    pub fn body_len(&self) -> usize {
        self.t.len()
    }

    /// Append the body to `out`, with `jti` the event's in its hex form
    /// ([`Workload::jti_hex`]): the bytes [`Workload::render_body_with_jti`] writes.
    #[inline]
    pub fn append_to(&self, jti: &[u8; 36], out: &mut Vec<u8>) {
        let (w, e) = (self.w, self.e);
        let (user_hex, app_hex);
        let (user_id, user) = match w.user_ids.get(e.tenant, e.user) {
            Some(x) => (&x.hex, x.digits),
            None => {
                user_hex = body::hyphenated(w.stable_uuid(3, e.tenant, e.user));
                (&user_hex, Fill::digits(e.user))
            }
        };
        // The event's own application id, which is the cached one for an event this workload
        // made.
        let (application_id, application) = match w.app_ids.get(e.tenant, e.application) {
            Some(x) if x.id == e.application_id => (&x.hex, x.digits),
            _ => {
                app_hex = body::hyphenated(e.application_id);
                (&app_hex, Fill::digits(e.application))
            }
        };
        let fill = Fill {
            jti,
            sent_us: e.sent_us,
            user_id,
            application_id,
            application,
            user,
        };
        self.t.append(&fill, out);
    }
}
