//! Tests: the body renderer against a reference written the plain way (`format!`), byte for
//! byte, on many random and edge-case fields; its number and hex pieces against `format!` and
//! the `uuid` crate.

use super::*;

/// The body as the wire shape (docs/delivery.md) spells it.
fn reference(f: &BodyFields<'_>) -> String {
    let t = f.tenant_name;
    let c = f.channel;
    let ok = if f.failed { "Failed" } else { "Success" };
    let ev = match c {
        "login" | "registration" => format!("{c}/event-type/{c}{ok}"),
        "credential" => "credential/event-type/credentialUpdated".into(),
        "session" => "session/event-type/sessionEstablished".into(),
        "user" => "user/event-type/userProfileUpdated".into(),
        "consent" => "consent/event-type/consentAdded".into(),
        "tenant" => "tenant/event-type/tenantCreated".into(),
        _ => format!("{c}/event-type/{c}Event"),
    };
    let iss = format!("https://api.asgardeo.io/t/{t}");
    let (u, a, uid) = (f.user, f.application, f.user_id);
    let tid = 12_400 + u64::from(f.tenant_id);
    let reg = c == "registration";
    let claims = if reg {
        let claim = |name: &str, value: String| {
            format!(r#"{{"uri":"http://wso2.org/claims/{name}","value":"{value}"}}"#)
        };
        let mail = format!("user{u:05}@{t}.example.com");
        format!(
            r#","claims":[{},{},{},{},{}],"groups":["everyone"]"#,
            claim("username", mail.clone()),
            claim("emailaddress", mail),
            claim("givenname", format!("Given{u}")),
            claim("lastname", format!("Family{u}")),
            claim("created", "2026-01-01T00:00:00.000Z".into()),
        )
    } else {
        String::new()
    };
    let flow = if reg {
        r#","registrationMethod":"SELF_SIGNUP","flow":{"type":"REGISTRATION","initiator":"USER","status":"COMPLETED"}"#
    } else {
        ""
    };
    let event = format!(
        r#"{{"user":{{"id":"{uid}","ref":"{iss}/scim2/Users/{uid}"{claims}}},"tenant":{{"id":"{tid}","name":"{t}"}},"userStore":{{"id":"UFJJTUFSWQ==","name":"PRIMARY"}},"application":{{"id":"{}","name":"app{a:03}","consumerKey":"ck{a:03}{tid}"}},"authenticationMethods":["BasicAuthenticator"]{flow}}}"#,
        f.application_id
    );
    let doc = format!(
        r#"{{"iss":"{iss}","jti":"{}","iat":{},"sent_us":{},"events":{{"https://schemas.identity.wso2.org/events/{ev}":{event}}}"#,
        std::str::from_utf8(f.jti).unwrap(),
        f.sent_us / 1000,
        f.sent_us
    );
    let padding = match f.pad_to {
        Some(p) if doc.len() + 14 <= p => {
            format!(r#","padding":"{}""#, "x".repeat(p - doc.len() - 14))
        }
        _ => String::new(),
    };
    format!("{doc}{padding}}}")
}

/// xorshift64*, so the tests do not lean on the generator the workload uses (the template
/// tests use it too).
pub(super) struct Rng(pub(super) u64);
impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub(super) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    /// Edge values often, else any magnitude.
    fn u64(&mut self) -> u64 {
        let r = self.next();
        match r % 8 {
            0 => [0, 1, 9, 10, 99, 999, 1_000, u64::MAX, u64::MAX - 1][(r >> 8) as usize % 9],
            1 => 10u64.pow((r >> 8) as u32 % 20) - (r >> 16) % 2,
            _ => self.next() >> ((r >> 8) % 64),
        }
    }
    fn u32(&mut self) -> u32 {
        match self.next() % 6 {
            0 => u32::MAX,
            1 => 0,
            _ => (self.u64() % (1 << 32)) as u32,
        }
    }
    /// A channel or tenant name: 1 to 30 of `[A-Za-z0-9_-]`.
    pub(super) fn name(&mut self) -> String {
        const ABC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        let n = 1 + self.below(30) as usize;
        (0..n).map(|_| self.pick(ABC) as char).collect()
    }
    pub(super) fn uuid(&mut self) -> uuid::Uuid {
        uuid::Uuid::from_u64_pair(self.next(), self.next())
    }
}

/// The channels whose event-type path is spelled out (`body::event_type`).
pub(super) const KNOWN_CHANNELS: [&str; 7] = [
    "login",
    "registration",
    "credential",
    "session",
    "user",
    "consent",
    "tenant",
];

#[test]
fn bodies_match_the_reference_renderer() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let mut buf = Vec::new();
    for i in 0..20_000 {
        let tenant = match i % 3 {
            0 => format!("tenant{:04}", r.u32()),
            _ => r.name(),
        };
        let channel = match r.next() % 3 {
            0 => r.name(),
            _ => r.pick(&KNOWN_CHANNELS).to_string(),
        };
        // The hex form as the uuid crate writes it (the workload's own is checked against it
        // in the event module's tests).
        let jti: [u8; 36] = r
            .uuid()
            .hyphenated()
            .to_string()
            .into_bytes()
            .try_into()
            .unwrap();
        let f = BodyFields {
            tenant_name: &tenant,
            tenant_id: r.u32(),
            channel: &channel,
            jti: &jti,
            sent_us: r.u64(),
            user_id: r.uuid(),
            application_id: r.uuid(),
            application: r.u32(),
            user: r.u32(),
            failed: r.next() % 2 == 0,
            pad_to: match r.next() % 4 {
                0 => Some(r.next() as usize % 3_000),
                _ => None,
            },
        };
        // Into a used buffer, as the hot path does.
        render_into(&f, &mut buf);
        assert_eq!(
            String::from_utf8(buf.clone()).unwrap(),
            reference(&f),
            "{f:?}"
        );
    }
}

/// The largest bodies leave room for the fixed-size over-writes in what is reserved.
#[test]
fn the_widest_bodies_fit_what_is_reserved() {
    for t in ["t", "tenant0001", &"T".repeat(64)] {
        for channel in ["registration", "login", &"c".repeat(40)] {
            let f = BodyFields {
                tenant_name: t,
                tenant_id: u32::MAX,
                channel,
                jti: b"ffffffff-ffff-ffff-ffff-ffffffffffff",
                sent_us: u64::MAX,
                user_id: uuid::Uuid::max(),
                application_id: uuid::Uuid::max(),
                application: u32::MAX,
                user: u32::MAX,
                failed: true,
                pad_to: None,
            };
            let most = match channel {
                "registration" => MOST_REGISTRATION + 5 * t.len(),
                _ => MOST_OTHER + 3 * t.len() + 2 * channel.len(),
            };
            let len = render(&f).len();
            assert!(len + 16 <= most, "{len} of {most}: {t} {channel}");
        }
    }
}

#[test]
fn numbers_match_format() {
    let mut r = Rng(77);
    let mut d = [0u8; 128];
    for i in 0..200_000u64 {
        let x = match i {
            0..=20 => 10u64.saturating_pow(i as u32),
            21..=41 => 10u64.saturating_pow(i as u32 - 21) - 1,
            42..=1_041 => i - 42,
            _ => r.u64(),
        };
        let width = 1 + (i % 8) as usize;
        let mut o = Out { d: &mut d, at: 0 };
        o.n(x, width).s("|").times(x);
        let at = o.at;
        let got = d[..at].to_vec();
        let want = format!("{x:0width$}|{},\"sent_us\":{x}", x / 1000);
        assert_eq!(String::from_utf8(got).unwrap(), want);
    }
}

#[test]
fn hex_digits_match_the_uuid_crate() {
    let mut r = Rng(5);
    for i in 0..100_000 {
        let u = match i {
            0 => uuid::Uuid::nil(),
            1 => uuid::Uuid::max(),
            _ => r.uuid(),
        };
        let want = u.simple().to_string();
        let text = |c: [u64; 4]| String::from_utf8(c.map(u64::to_le_bytes).concat()).unwrap();
        assert_eq!(text(hex32(u.as_bytes())), want);
    }
}
