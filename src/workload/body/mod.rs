//! Identity-style event bodies (Security-Event-Token shaped JSON, docs/delivery.md).
//!
//! A login event is about 550 B and a registration event about 1 KB, like the real publisher's.
//! Every string written here comes from our own generator or from validated channel names
//! (`[A-Za-z0-9_-]`), so no JSON escaping is needed. This renderer makes the templates most
//! bodies are copied from (`template/`), and every body that has none.

mod digits;
pub(super) mod ids;
pub(super) mod template;

use digits::{digits16, digits8, hex32, TEN16, ZEROS, ZEROS16};
pub use digits::{hyphenated, hyphenated_tail};

/// What one body is about.
#[derive(Debug)]
pub struct BodyFields<'a> {
    pub tenant_name: &'a str,
    pub tenant_id: u32,
    pub channel: &'a str,
    /// The event's `jti` in its hyphenated lowercase form: hex-encoded once per event, for
    /// the body and the request header both (`Workload::jti_hex`).
    pub jti: &'a [u8; 36],
    /// Publish send time, wall clock µs since the Unix epoch: `iat` carries it in ms (as the
    /// real publisher does) and the `sent_us` claim in µs, for end-to-end latency.
    pub sent_us: u64,
    pub user_id: uuid::Uuid,
    pub application_id: uuid::Uuid,
    pub application: u32,
    pub user: u32,
    /// Picks the success or failure variant (e.g. `loginFailed` for 1 in 10 logins).
    pub failed: bool,
    /// Pad the body to at least this many bytes.
    pub pad_to: Option<usize>,
}

// Literals, so the constant runs of a body are joined at compile time (`concat!`) and each
// is appended with one copy.
macro_rules! schema {
    () => {
        "https://schemas.identity.wso2.org/events"
    };
}
macro_rules! issuer {
    () => {
        "https://api.asgardeo.io/t"
    };
}

/// The event-type path of a known channel, as in `login/event-type/loginSuccess`; `None` for
/// any other channel `c`, whose path is `c/event-type/cEvent`.
fn event_type(channel: &str, failed: bool) -> Option<&'static str> {
    Some(match (channel, failed) {
        ("login", false) => "login/event-type/loginSuccess",
        ("login", true) => "login/event-type/loginFailed",
        ("registration", false) => "registration/event-type/registrationSuccess",
        ("registration", true) => "registration/event-type/registrationFailed",
        ("credential", _) => "credential/event-type/credentialUpdated",
        ("session", _) => "session/event-type/sessionEstablished",
        ("user", _) => "user/event-type/userProfileUpdated",
        ("consent", _) => "consent/event-type/consentAdded",
        ("tenant", _) => "tenant/event-type/tenantCreated",
        _ => return None,
    })
}

/// The most a body takes beyond 3 times its tenant name and 2 times its channel name: the
/// constant runs of a login body (512 bytes), its event-type path beyond the channel names
/// (at most 26 bytes, for `user`), its numbers at their widest (77), and 16 for the
/// fixed-size over-writes past the end ([`Out::over`]), rounded up. Checked by the tests
/// against the widest bodies.
const MOST_OTHER: usize = 640;
/// The same for a registration body beyond 5 times its tenant name: 989 bytes of constant
/// runs, 43 of path, 117 of numbers, 16 of over-writes.
const MOST_REGISTRATION: usize = 1_180;

/// Writes a body into a buffer already sized for the largest body the fields can give: no
/// capacity check per piece (the `extend_from_slice` of each piece was a fifth of the body's
/// cost), and a constant piece is a fixed-size copy the compiler turns into a few moves.
struct Out<'a> {
    d: &'a mut [u8],
    at: usize,
}

impl Out<'_> {
    #[inline(always)]
    fn b(&mut self, x: &[u8]) -> &mut Self {
        self.d[self.at..self.at + x.len()].copy_from_slice(x);
        self.at += x.len();
        self
    }

    #[inline(always)]
    fn s(&mut self, x: &str) -> &mut Self {
        self.b(x.as_bytes())
    }

    /// Writes all of `x` but keeps only its first `n` bytes (`n ≤ N`): a fixed-size copy (a
    /// few moves) instead of a variable-length one (a `memcpy` call). The bytes past `n` are
    /// overwritten by the next piece, or lie past the body's end.
    #[inline(always)]
    fn over<const N: usize>(&mut self, x: [u8; N], n: usize) -> &mut Self {
        debug_assert!(n <= N);
        self.d[self.at..self.at + N].copy_from_slice(&x);
        self.at += n;
        self
    }

    /// A short string of any length (tenant and channel names): 8 to 16 bytes as two
    /// overlapping 8-byte copies, which is most tenant names (`tenant0001`), instead of a
    /// `memcpy` call.
    #[inline(always)]
    fn v(&mut self, x: &str) -> &mut Self {
        let x = x.as_bytes();
        let n = x.len();
        if (8..=16).contains(&n) {
            let d = &mut self.d[self.at..self.at + n];
            d[..8].copy_from_slice(&x[..8]);
            d[n - 8..].copy_from_slice(&x[n - 8..]);
            self.at += n;
            self
        } else {
            self.b(x)
        }
    }

    /// `x` in decimal, zero-padded to `width` digits (1 to 8, `{:0width$}`).
    #[inline(always)]
    fn n(&mut self, x: u64, width: usize) -> &mut Self {
        self.num(Num::new(x, width))
    }

    /// A number formatted by [`Num::new`].
    #[inline(always)]
    fn num(&mut self, n: Num) -> &mut Self {
        if n.len > 0 {
            self.over(n.digits.to_le_bytes(), n.len)
        } else {
            self.n_wide(n.x)
        }
    }

    /// `x ≥ 10^8` in decimal, out of line: user and application numbers above 99,999,999
    /// and send times after the year 2286 are for tests only.
    #[inline(never)]
    fn n_wide(&mut self, x: u64) -> &mut Self {
        if x >= TEN16 {
            self.n(x / TEN16, 1);
            return self.over(digits16(x % TEN16).to_le_bytes(), 16);
        }
        let a = digits16(x);
        let lead = ((a ^ ZEROS16).trailing_zeros() as usize / 8).min(15);
        self.over((a >> (8 * lead)).to_le_bytes(), 16 - lead)
    }

    /// `sent_us / 1000` `,"sent_us":` `sent_us`, from one conversion: the ms are the µs
    /// digits less the last three.
    #[inline(always)]
    fn times(&mut self, sent_us: u64) -> &mut Self {
        if sent_us >= TEN16 {
            return self
                .n_wide(sent_us / 1000)
                .s(r#","sent_us":"#)
                .n_wide(sent_us);
        }
        let a = digits16(sent_us);
        let lead = ((a ^ ZEROS16).trailing_zeros() as usize / 8).min(15);
        // Shifting left by 3 bytes drops the last three digits and puts three zero bytes in
        // front, which the 3 more leading bytes skip; at most 15 are skipped, leaving "0"
        // below 1,000 µs.
        let ms_lead = (lead + 3).min(15);
        self.over(((a << 24) >> (8 * ms_lead)).to_le_bytes(), 16 - ms_lead)
            .s(r#","sent_us":"#)
            .over((a >> (8 * lead)).to_le_bytes(), 16 - lead)
    }

    /// `x` in the hyphenated lowercase form, as [`hyphenated`], written in place (building
    /// the 36 bytes first and copying them cost a third more).
    #[inline(always)]
    fn u(&mut self, x: &uuid::Uuid) -> &mut Self {
        let [c0, c1, c2, c3] = hex32(x.as_bytes());
        let d = &mut self.d[self.at..self.at + 36];
        d[..8].copy_from_slice(&c0.to_le_bytes());
        d[8] = b'-';
        d[9..13].copy_from_slice(&(c1 as u32).to_le_bytes());
        d[13] = b'-';
        d[14..18].copy_from_slice(&((c1 >> 32) as u32).to_le_bytes());
        d[18] = b'-';
        d[19..23].copy_from_slice(&(c2 as u32).to_le_bytes());
        d[23] = b'-';
        d[24..28].copy_from_slice(&((c2 >> 32) as u32).to_le_bytes());
        d[28..].copy_from_slice(&c3.to_le_bytes());
        self.at += 36;
        self
    }

    /// The 36 bytes written at `from` again (a UUID named twice, hex-encoded once).
    #[inline(always)]
    fn again36(&mut self, from: usize) -> &mut Self {
        self.d.copy_within(from..from + 36, self.at);
        self.at += 36;
        self
    }
}

/// A number's decimal digits, formatted once for the places it is written.
#[derive(Clone, Copy)]
struct Num {
    x: u64,
    /// The digits, first in the low byte, when `x < 10^8` (`len > 0`); else [`Out::n_wide`]
    /// writes `x`.
    digits: u64,
    len: usize,
}

impl Num {
    /// `x` zero-padded to `width` digits (1 to 8).
    #[inline(always)]
    fn new(x: u64, width: usize) -> Num {
        debug_assert!((1..=8).contains(&width));
        if x < 100_000_000 {
            let a = u64::from_le_bytes(digits8(x as u32));
            let lead = ((a ^ ZEROS).trailing_zeros() as usize / 8).min(8 - width);
            // Little-endian: the first digits are the low bytes, so shifting right drops them.
            Num {
                x,
                digits: a >> (8 * lead),
                len: 8 - lead,
            }
        } else {
            Num {
                x,
                digits: 0,
                len: 0,
            }
        }
    }
}

/// Render the JSON body.
#[cfg(test)]
pub fn render(f: &BodyFields<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    render_into(f, &mut out);
    out
}

/// Render the JSON body into `buf` (cleared first), reusing its allocation: the hot path keeps
/// one buffer per worker.
pub fn render_into(f: &BodyFields<'_>, buf: &mut Vec<u8>) {
    render_marked(f, buf, &mut ());
}

/// A field of a body that varies within one template (`template.rs`): where it starts is
/// told to [`Marks::mark`] as the body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hole {
    /// The `jti`, 36 bytes.
    Jti,
    /// `iat` (ms) then `,"sent_us":` then `sent_us` (µs).
    Times,
    /// The user's id, 36 bytes (twice).
    UserId,
    /// The application's id, 36 bytes.
    AppId,
    /// The application number, `{a:03}` (twice).
    App,
    /// A registration's user number as `{u:05}` (twice).
    UserPadded,
    /// A registration's user number as `{u}` (twice).
    UserPlain,
}

/// Told where each [`Hole`] of a body starts; `()` is told nothing (the plain render).
pub(super) trait Marks {
    fn mark(&mut self, hole: Hole, at: usize);
}

impl Marks for () {
    #[inline(always)]
    fn mark(&mut self, _: Hole, _: usize) {}
}

/// [`render_into`], telling `m` where each varying field starts: the one description of a
/// body's layout, for the bodies rendered here and for the templates both.
#[inline(always)]
pub(super) fn render_marked<M: Marks>(f: &BodyFields<'_>, buf: &mut Vec<u8>, m: &mut M) {
    let t = f.tenant_name;
    let registration = f.channel == "registration";
    let most = if registration {
        MOST_REGISTRATION + 5 * t.len()
    } else {
        MOST_OTHER + 3 * t.len() + 2 * f.channel.len()
    };
    let most = most.max(f.pad_to.unwrap_or(0));
    // The old bytes are written over; only what the buffer lacks is zeroed (a body is
    // written whole, so nothing of the previous one survives `truncate`).
    if buf.len() < most {
        buf.resize(most, 0);
    }
    let mut o = Out { d: buf, at: 0 };
    o.s(concat!(r#"{"iss":""#, issuer!(), "/"))
        .v(t)
        .s(r#"","jti":""#);
    m.mark(Hole::Jti, o.at);
    o.b(f.jti).s(r#"","iat":"#);
    m.mark(Hole::Times, o.at);
    o.times(f.sent_us)
        .s(concat!(r#","events":{""#, schema!(), "/"));
    match event_type(f.channel, f.failed) {
        Some(path) => o.s(path),
        None => o.v(f.channel).s("/event-type/").v(f.channel).s("Event"),
    };
    o.s(r#"":{"user":{"id":""#);
    let user_id = o.at;
    m.mark(Hole::UserId, o.at);
    o.u(&f.user_id)
        .s(concat!(r#"","ref":""#, issuer!(), "/"))
        .v(t)
        .s("/scim2/Users/");
    m.mark(Hole::UserId, o.at);
    o.again36(user_id);
    if registration {
        // Registration events carry the new user's claims: that is what makes them ~1 KB.
        let u = u64::from(f.user);
        o.s(r#"","claims":[{"uri":"http://wso2.org/claims/username","value":"user"#);
        m.mark(Hole::UserPadded, o.at);
        o.n(u, 5).s("@").v(t);
        o.s(r#".example.com"},{"uri":"http://wso2.org/claims/emailaddress","value":"user"#);
        m.mark(Hole::UserPadded, o.at);
        o.n(u, 5).s("@").v(t);
        o.s(r#".example.com"},{"uri":"http://wso2.org/claims/givenname","value":"Given"#);
        m.mark(Hole::UserPlain, o.at);
        o.n(u, 1);
        o.s(r#""},{"uri":"http://wso2.org/claims/lastname","value":"Family"#);
        m.mark(Hole::UserPlain, o.at);
        o.n(u, 1);
        o.s(r#""},{"uri":"http://wso2.org/claims/created","value":"2026-01-01T00:00:00.000Z"}],"groups":["everyone"]},"tenant":{"id":""#);
    } else {
        o.s(r#""},"tenant":{"id":""#);
    }
    let tid = Num::new(12_400 + u64::from(f.tenant_id), 1);
    let app = Num::new(u64::from(f.application), 3);
    o.num(tid).s(r#"","name":""#).v(t);
    o.s(r#""},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":""#);
    m.mark(Hole::AppId, o.at);
    o.u(&f.application_id);
    o.s(r#"","name":"app"#);
    m.mark(Hole::App, o.at);
    o.num(app).s(r#"","consumerKey":"ck"#);
    m.mark(Hole::App, o.at);
    o.num(app).num(tid);
    if registration {
        o.s(r#""},"authenticationMethods":["BasicAuthenticator"],"registrationMethod":"SELF_SIGNUP","flow":{"type":"REGISTRATION","initiator":"USER","status":"COMPLETED"}}}"#);
    } else {
        o.s(r#""},"authenticationMethods":["BasicAuthenticator"]}}"#);
    }
    if let Some(pad) = f.pad_to {
        // `,"padding":""}` is 14 bytes; pad only when the exact size can be reached.
        if o.at + 14 <= pad {
            let need = pad - o.at - 14;
            o.s(r#","padding":""#);
            o.d[o.at..o.at + need].fill(b'x');
            o.at += need;
            o.s(r#"""#);
        }
    }
    o.s("}");
    let len = o.at;
    buf.truncate(len);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(channel: &str, pad_to: Option<usize>) -> BodyFields<'_> {
        BodyFields {
            tenant_name: "tenant0001",
            tenant_id: 1,
            channel,
            jti: b"00000000-0000-0000-0000-000000000001",
            sent_us: 1_764_460_800_000_123,
            user_id: uuid::Uuid::from_u128(2),
            application_id: uuid::Uuid::from_u128(3),
            application: 4,
            user: 5,
            failed: false,
            pad_to,
        }
    }

    #[test]
    fn sizes_match_the_real_publisher() {
        let login = render(&fields("login", None));
        let reg = render(&fields("registration", None));
        assert!((500..650).contains(&login.len()), "login {}", login.len());
        assert!(
            (900..1150).contains(&reg.len()),
            "registration {}",
            reg.len()
        );
    }

    #[test]
    fn bodies_are_valid_json_with_the_ids() {
        for ch in ["login", "registration", "credential", "session", "custom_x"] {
            let b = render(&fields(ch, None));
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            assert_eq!(v["jti"], "00000000-0000-0000-0000-000000000001");
            let user = v["events"].as_object().unwrap().values().next().unwrap()["user"].clone();
            assert_eq!(user["id"], "00000000-0000-0000-0000-000000000002");
            assert_eq!(
                user["ref"],
                "https://api.asgardeo.io/t/tenant0001/scim2/Users/00000000-0000-0000-0000-000000000002"
            );
            let ev = v["events"].as_object().unwrap().values().next().unwrap();
            assert_eq!(ev["tenant"]["name"], "tenant0001");
            assert_eq!(
                ev["application"]["id"],
                "00000000-0000-0000-0000-000000000003"
            );
        }
    }

    /// `iat` is cut from the digits of `sent_us`: checked against the division, read back by
    /// a JSON parser, at the edges (fewer than four digits, `u64::MAX`) and in between.
    #[test]
    fn iat_is_sent_us_in_milliseconds() {
        for sent_us in [
            0,
            1,
            999,
            1_000,
            1_001,
            9_999,
            10_000,
            123_456_789,
            u64::MAX,
        ] {
            let f = BodyFields {
                sent_us,
                ..fields("login", None)
            };
            let v: serde_json::Value = serde_json::from_slice(&render(&f)).unwrap();
            assert_eq!(v["iat"].as_u64(), Some(sent_us / 1000), "{sent_us}");
            assert_eq!(v["sent_us"].as_u64(), Some(sent_us), "{sent_us}");
        }
    }

    #[test]
    fn hyphenated_matches_the_uuid_crate() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u128;
        for v in [0u128, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210]
            .into_iter()
            .chain((0..1000).map(|_| {
                rng = rng.wrapping_mul(0x2545_f491_4f6c_dd1d_2545_f491_4f6c_dd1d) ^ (rng >> 61);
                rng
            }))
        {
            let u = uuid::Uuid::from_u128(v);
            assert_eq!(hyphenated(u), u.hyphenated().to_string().as_bytes(), "{u}");
        }
    }

    #[test]
    fn rendering_into_a_used_buffer_gives_the_same_body() {
        let mut buf = render(&fields("registration", Some(4096)));
        render_into(&fields("login", None), &mut buf);
        assert_eq!(buf, render(&fields("login", None)));
    }

    /// The exact bytes, written out by hand from the wire shape (docs/delivery.md): the body is
    /// assembled from joined constant runs, and a wrong join would show here.
    #[test]
    fn bodies_are_exactly_the_documented_bytes() {
        let cases = [
            (
                "login",
                r#"{"iss":"https://api.asgardeo.io/t/tenant0001","jti":"00000000-0000-0000-0000-000000000001","iat":1764460800000,"sent_us":1764460800000123,"events":{"https://schemas.identity.wso2.org/events/login/event-type/loginSuccess":{"user":{"id":"00000000-0000-0000-0000-000000000002","ref":"https://api.asgardeo.io/t/tenant0001/scim2/Users/00000000-0000-0000-0000-000000000002"},"tenant":{"id":"12401","name":"tenant0001"},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":"00000000-0000-0000-0000-000000000003","name":"app004","consumerKey":"ck00412401"},"authenticationMethods":["BasicAuthenticator"]}}}"#,
            ),
            (
                "registration",
                r#"{"iss":"https://api.asgardeo.io/t/tenant0001","jti":"00000000-0000-0000-0000-000000000001","iat":1764460800000,"sent_us":1764460800000123,"events":{"https://schemas.identity.wso2.org/events/registration/event-type/registrationSuccess":{"user":{"id":"00000000-0000-0000-0000-000000000002","ref":"https://api.asgardeo.io/t/tenant0001/scim2/Users/00000000-0000-0000-0000-000000000002","claims":[{"uri":"http://wso2.org/claims/username","value":"user00005@tenant0001.example.com"},{"uri":"http://wso2.org/claims/emailaddress","value":"user00005@tenant0001.example.com"},{"uri":"http://wso2.org/claims/givenname","value":"Given5"},{"uri":"http://wso2.org/claims/lastname","value":"Family5"},{"uri":"http://wso2.org/claims/created","value":"2026-01-01T00:00:00.000Z"}],"groups":["everyone"]},"tenant":{"id":"12401","name":"tenant0001"},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":"00000000-0000-0000-0000-000000000003","name":"app004","consumerKey":"ck00412401"},"authenticationMethods":["BasicAuthenticator"],"registrationMethod":"SELF_SIGNUP","flow":{"type":"REGISTRATION","initiator":"USER","status":"COMPLETED"}}}}"#,
            ),
            (
                "custom_x",
                r#"{"iss":"https://api.asgardeo.io/t/tenant0001","jti":"00000000-0000-0000-0000-000000000001","iat":1764460800000,"sent_us":1764460800000123,"events":{"https://schemas.identity.wso2.org/events/custom_x/event-type/custom_xEvent":{"user":{"id":"00000000-0000-0000-0000-000000000002","ref":"https://api.asgardeo.io/t/tenant0001/scim2/Users/00000000-0000-0000-0000-000000000002"},"tenant":{"id":"12401","name":"tenant0001"},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":"00000000-0000-0000-0000-000000000003","name":"app004","consumerKey":"ck00412401"},"authenticationMethods":["BasicAuthenticator"]}}}"#,
            ),
        ];
        for (channel, want) in cases {
            let got = render(&fields(channel, None));
            assert_eq!(String::from_utf8(got).unwrap(), want, "{channel}");
        }
    }

    #[test]
    fn padding_reaches_the_size_exactly() {
        for pad in [700, 1024, 4096] {
            let b = render(&fields("login", Some(pad)));
            assert_eq!(b.len(), pad);
            serde_json::from_slice::<serde_json::Value>(&b).unwrap();
        }
        // Padding never shrinks a body.
        let b = render(&fields("registration", Some(10)));
        assert_eq!(b, render(&fields("registration", None)));
    }
}

/// The renderer against a reference written the plain way (`format!`), byte for byte, on many
/// random and edge-case fields.
#[cfg(test)]
mod reference_tests;
