//! Identity-style event bodies (Security-Event-Token shaped JSON, PROTOCOL.md §3).
//!
//! A login event is about 550 B and a registration event about 1 KB, like the real publisher's.
//! Every string written here comes from our own generator or from validated channel names
//! (`[A-Za-z0-9_-]`), so no JSON escaping is needed.

use std::fmt::Write;

/// What one body is about.
#[derive(Debug)]
pub struct BodyFields<'a> {
    pub tenant_name: &'a str,
    pub tenant_id: u32,
    pub channel: &'a str,
    pub jti: uuid::Uuid,
    pub iat_ms: u64,
    pub user_id: uuid::Uuid,
    pub application_id: uuid::Uuid,
    pub application: u32,
    pub user: u32,
    /// Picks the success or failure variant (e.g. `loginFailed` for 1 in 10 logins).
    pub failed: bool,
    /// Pad the body to at least this many bytes.
    pub pad_to: Option<usize>,
}

const SCHEMA: &str = "https://schemas.identity.wso2.org/events";
const ISSUER: &str = "https://api.asgardeo.io/t";

fn event_type(channel: &str, failed: bool) -> String {
    match (channel, failed) {
        ("login", false) => "login/event-type/loginSuccess".into(),
        ("login", true) => "login/event-type/loginFailed".into(),
        ("registration", false) => "registration/event-type/registrationSuccess".into(),
        ("registration", true) => "registration/event-type/registrationFailed".into(),
        ("credential", _) => "credential/event-type/credentialUpdated".into(),
        ("session", _) => "session/event-type/sessionEstablished".into(),
        ("user", _) => "user/event-type/userProfileUpdated".into(),
        ("consent", _) => "consent/event-type/consentAdded".into(),
        ("tenant", _) => "tenant/event-type/tenantCreated".into(),
        (c, _) => format!("{c}/event-type/{c}Event"),
    }
}

/// Render the JSON body.
pub fn render(f: &BodyFields<'_>) -> Vec<u8> {
    let mut s = String::with_capacity(f.pad_to.unwrap_or(0).max(1200));
    let t = f.tenant_name;
    let _ = write!(
        s,
        r#"{{"iss":"{ISSUER}/{t}","jti":"{jti}","iat":{iat},"events":{{"{SCHEMA}/{ty}":{{"user":{{"id":"{uid}","ref":"{ISSUER}/{t}/scim2/Users/{uid}""#,
        jti = f.jti,
        iat = f.iat_ms,
        ty = event_type(f.channel, f.failed),
        uid = f.user_id,
    );
    if f.channel == "registration" {
        // Registration events carry the new user's claims: that is what makes them ~1 KB.
        let u = f.user;
        let _ = write!(
            s,
            r#","claims":[{{"uri":"http://wso2.org/claims/username","value":"user{u:05}@{t}.example.com"}},{{"uri":"http://wso2.org/claims/emailaddress","value":"user{u:05}@{t}.example.com"}},{{"uri":"http://wso2.org/claims/givenname","value":"Given{u}"}},{{"uri":"http://wso2.org/claims/lastname","value":"Family{u}"}},{{"uri":"http://wso2.org/claims/created","value":"2026-01-01T00:00:00.000Z"}}],"groups":["everyone"]"#
        );
    }
    let _ = write!(
        s,
        r#"}},"tenant":{{"id":"{tid}","name":"{t}"}},"userStore":{{"id":"UFJJTUFSWQ==","name":"PRIMARY"}},"application":{{"id":"{aid}","name":"app{app:03}","consumerKey":"ck{app:03}{tid}"}},"authenticationMethods":["BasicAuthenticator"]"#,
        tid = 12_400 + f.tenant_id,
        aid = f.application_id,
        app = f.application,
    );
    if f.channel == "registration" {
        s.push_str(r#","registrationMethod":"SELF_SIGNUP","flow":{"type":"REGISTRATION","initiator":"USER","status":"COMPLETED"}"#);
    }
    s.push_str("}}");
    if let Some(pad) = f.pad_to {
        // `,"padding":""}` is 14 bytes; pad only when the exact size can be reached.
        if s.len() + 14 <= pad {
            let need = pad - s.len() - 14;
            s.push_str(",\"padding\":\"");
            s.extend(std::iter::repeat_n('x', need));
            s.push('"');
        }
    }
    s.push('}');
    s.into_bytes()
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
            iat_ms: 1_764_460_800_000,
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
            let ev = v["events"].as_object().unwrap().values().next().unwrap();
            assert_eq!(ev["tenant"]["name"], "tenant0001");
            assert_eq!(
                ev["application"]["id"],
                "00000000-0000-0000-0000-000000000003"
            );
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
