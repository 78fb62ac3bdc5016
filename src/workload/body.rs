//! Identity-style event bodies (Security-Event-Token shaped JSON, docs/delivery.md).
//!
//! A login event is about 550 B and a registration event about 1 KB, like the real publisher's.
//! Every string written here comes from our own generator or from validated channel names
//! (`[A-Za-z0-9_-]`), so no JSON escaping is needed.

/// What one body is about.
#[derive(Debug)]
pub struct BodyFields<'a> {
    pub tenant_name: &'a str,
    pub tenant_id: u32,
    pub channel: &'a str,
    pub jti: uuid::Uuid,
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

/// Appends pieces without `core::fmt`: bodies are built once per event on the hot path, and
/// formatting machinery was the largest user-space cost after HTTP parsing.
struct Out(Vec<u8>);

impl Out {
    fn s(&mut self, x: &str) -> &mut Self {
        self.0.extend_from_slice(x.as_bytes());
        self
    }
    fn b(&mut self, x: &[u8]) -> &mut Self {
        self.0.extend_from_slice(x);
        self
    }
    fn n(&mut self, x: u64) -> &mut Self {
        self.0
            .extend_from_slice(itoa::Buffer::new().format(x).as_bytes());
        self
    }
    /// Zero-padded to `width` digits (`{:05}`).
    fn z(&mut self, x: u64, width: usize) -> &mut Self {
        let mut b = itoa::Buffer::new();
        let digits = b.format(x);
        self.0.extend(std::iter::repeat_n(
            b'0',
            width.saturating_sub(digits.len()),
        ));
        self.0.extend_from_slice(digits.as_bytes());
        self
    }
    fn u(&mut self, x: uuid::Uuid) -> &mut Self {
        self.0.extend_from_slice(&hyphenated(x));
        self
    }
}

/// `x` as 8 lowercase hex digits, most significant first, without a table: each nibble is
/// spread into a byte of a `u64`, and the ten-and-above ones are moved to `a`–`f`.
fn hex8(x: u32) -> [u8; 8] {
    let x = u64::from(x);
    let x = ((x & 0xffff_0000) << 16) | (x & 0xffff);
    let x = ((x & 0x0000_ff00_0000_ff00) << 8) | (x & 0x0000_00ff_0000_00ff);
    let x = ((x & 0x00f0_00f0_00f0_00f0) << 4) | (x & 0x000f_000f_000f_000f);
    // 1 in each byte whose nibble is 10 or more.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    (x + 0x3030_3030_3030_3030 + letters * u64::from(b'a' - b'0' - 10)).to_be_bytes()
}

/// The hyphenated lowercase form of `x` (`8-4-4-4-12`), as `uuid`'s `hyphenated()` writes it.
pub fn hyphenated(x: uuid::Uuid) -> [u8; 36] {
    let v = x.as_u128();
    let [a, b, c, d] = [
        (v >> 96) as u32,
        (v >> 64) as u32,
        (v >> 32) as u32,
        v as u32,
    ]
    .map(hex8);
    let mut out = [b'-'; 36];
    out[..8].copy_from_slice(&a);
    out[9..13].copy_from_slice(&b[..4]);
    out[14..18].copy_from_slice(&b[4..]);
    out[19..23].copy_from_slice(&c[..4]);
    out[24..28].copy_from_slice(&c[4..]);
    out[28..].copy_from_slice(&d);
    out
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
    buf.clear();
    buf.reserve(f.pad_to.unwrap_or(0).max(1200));
    let mut o = Out(std::mem::take(buf));
    let t = f.tenant_name;
    let registration = f.channel == "registration";
    o.s(concat!(r#"{"iss":""#, issuer!(), "/"))
        .s(t)
        .s(r#"","jti":""#)
        .u(f.jti)
        .s(r#"","iat":"#);
    // `iat` is `sent_us / 1000`: its digits are those of `sent_us` less the last three, so
    // one formatting serves both.
    let mut sent = itoa::Buffer::new();
    let sent = sent.format(f.sent_us);
    let ms_digits = sent.len().saturating_sub(3);
    o.s(if ms_digits == 0 {
        "0"
    } else {
        &sent[..ms_digits]
    })
    .s(r#","sent_us":"#)
    .s(sent)
    .s(concat!(r#","events":{""#, schema!(), "/"));
    match event_type(f.channel, f.failed) {
        Some(path) => o.s(path),
        None => o.s(f.channel).s("/event-type/").s(f.channel).s("Event"),
    };
    // Hex-encoded once for its two places.
    let user_id = hyphenated(f.user_id);
    o.s(r#"":{"user":{"id":""#)
        .b(&user_id)
        .s(concat!(r#"","ref":""#, issuer!(), "/"))
        .s(t)
        .s("/scim2/Users/")
        .b(&user_id);
    if registration {
        // Registration events carry the new user's claims: that is what makes them ~1 KB.
        let u = u64::from(f.user);
        o.s(r#"","claims":[{"uri":"http://wso2.org/claims/username","value":"user"#)
            .z(u, 5)
            .s("@")
            .s(t);
        o.s(r#".example.com"},{"uri":"http://wso2.org/claims/emailaddress","value":"user"#)
            .z(u, 5)
            .s("@")
            .s(t);
        o.s(r#".example.com"},{"uri":"http://wso2.org/claims/givenname","value":"Given"#)
            .n(u);
        o.s(r#""},{"uri":"http://wso2.org/claims/lastname","value":"Family"#)
            .n(u);
        o.s(r#""},{"uri":"http://wso2.org/claims/created","value":"2026-01-01T00:00:00.000Z"}],"groups":["everyone"]},"tenant":{"id":""#);
    } else {
        o.s(r#""},"tenant":{"id":""#);
    }
    let tid = 12_400 + u64::from(f.tenant_id);
    let app = u64::from(f.application);
    o.n(tid).s(r#"","name":""#).s(t);
    o.s(r#""},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":""#)
        .u(f.application_id);
    o.s(r#"","name":"app"#)
        .z(app, 3)
        .s(r#"","consumerKey":"ck"#)
        .z(app, 3)
        .n(tid);
    if registration {
        o.s(r#""},"authenticationMethods":["BasicAuthenticator"],"registrationMethod":"SELF_SIGNUP","flow":{"type":"REGISTRATION","initiator":"USER","status":"COMPLETED"}}}"#);
    } else {
        o.s(r#""},"authenticationMethods":["BasicAuthenticator"]}}"#);
    }
    let mut s = o.0;
    if let Some(pad) = f.pad_to {
        // `,"padding":""}` is 14 bytes; pad only when the exact size can be reached.
        if s.len() + 14 <= pad {
            let need = pad - s.len() - 14;
            s.extend_from_slice(b",\"padding\":\"");
            s.extend(std::iter::repeat_n(b'x', need));
            s.push(b'"');
        }
    }
    s.push(b'}');
    *buf = s;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(channel: &str, pad_to: Option<usize>) -> BodyFields<'_> {
        BodyFields {
            tenant_name: "tenant0001",
            tenant_id: 1,
            channel,
            jti: uuid::Uuid::from_u128(1),
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
