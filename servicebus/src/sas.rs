//! Shared Access Signature tokens: make one (the sender) and check one (the emulator).
//!
//! Format (docs/protocol.md §6): `SharedAccessSignature sr=<enc(audience)>&sig=<enc(sig)>&se=<expiry
//! unix s>&skn=<key name>`, where sig is base64(HMAC-SHA256(key, enc(audience) "\n" expiry)).
//! The key string's UTF-8 bytes are the HMAC key; it is not base64-decoded.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type HmacSha256 = Hmac<Sha256>;

/// The CBS token type for SAS tokens.
pub const SAS_TOKEN_TYPE: &str = "servicebus.windows.net:sastoken";

/// `application/x-www-form-urlencoded` encoding, as the Azure SDKs apply to `sr` and `sig`.
pub fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `application/x-www-form-urlencoded` decoding (`+` is a space).
pub fn urldecode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn mac(key: &str, encoded_audience: &str, expiry: u64) -> HmacSha256 {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = HmacSha256::new_from_slice(key.as_bytes()).expect("HMAC takes any key length");
    mac.update(encoded_audience.as_bytes());
    mac.update(b"\n");
    mac.update(expiry.to_string().as_bytes());
    mac
}

/// The base64 signature of `encoded_audience` and `expiry` under `key`.
pub fn signature(key: &str, encoded_audience: &str, expiry: u64) -> String {
    STANDARD.encode(mac(key, encoded_audience, expiry).finalize().into_bytes())
}

/// A SAS token for `audience`, valid until `expiry` (unix seconds).
pub fn sas_token(audience: &str, key_name: &str, key: &str, expiry: u64) -> String {
    let sr = urlencode(audience);
    let sig = urlencode(&signature(key, &sr, expiry));
    format!(
        "SharedAccessSignature sr={sr}&sig={sig}&se={expiry}&skn={}",
        urlencode(key_name)
    )
}

/// The expiry (unix seconds) of a token made now that lasts at least `ttl`: rounded up, so a
/// token never lasts less than asked.
pub fn expiry_after(ttl: Duration) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (now + ttl).as_secs_f64().ceil() as u64
}

/// A parsed SAS token, as the emulator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SasToken {
    /// `sr` as sent (still url-encoded): the signed string.
    pub encoded_audience: String,
    /// `sr` decoded: the audience.
    pub audience: String,
    /// `sig`, decoded from url-encoding (still base64).
    pub signature: String,
    /// `se`, unix seconds.
    pub expiry: u64,
    /// `skn`, decoded.
    pub key_name: String,
}

impl SasToken {
    /// Parse `SharedAccessSignature k=v&…`; `None` if any of sr, sig, se, skn is missing.
    pub fn parse(token: &str) -> Option<SasToken> {
        let rest = token.trim().strip_prefix("SharedAccessSignature ")?;
        let (mut sr, mut sig, mut se, mut skn) = (None, None, None, None);
        for pair in rest.split('&') {
            let (k, v) = pair.split_once('=')?;
            match k {
                "sr" => sr = Some(v),
                "sig" => sig = Some(v),
                "se" => se = Some(v),
                "skn" => skn = Some(v),
                _ => {}
            }
        }
        let sr = sr?;
        Some(SasToken {
            encoded_audience: sr.to_string(),
            audience: urldecode(sr),
            signature: urldecode(sig?),
            expiry: se?.parse().ok()?,
            key_name: urldecode(skn?),
        })
    }

    /// Whether `key` produced this signature (constant-time comparison).
    pub fn signed_by(&self, key: &str) -> bool {
        let Ok(sig) = STANDARD.decode(&self.signature) else {
            return false;
        };
        mac(key, &self.encoded_audience, self.expiry)
            .verify_slice(&sig)
            .is_ok()
    }

    /// Whether the token has expired at unix time `now_s`.
    pub fn expired_at(&self, now_s: u64) -> bool {
        self.expiry <= now_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vector computed independently with Python's standard library:
    //   enc = urllib.parse.quote_plus(aud)
    //   base64.b64encode(hmac.new(key.encode(), (enc+"\n"+"1700000000").encode(), hashlib.sha256).digest())
    const AUD: &str = "amqps://myns.servicebus.windows.net/orders";
    const KEY: &str = "SGVsbG8gV29ybGQhIG5vdCBhIHJlYWwga2V5";

    #[test]
    fn matches_hand_computed_vector() {
        assert_eq!(
            urlencode(AUD),
            "amqps%3A%2F%2Fmyns.servicebus.windows.net%2Forders"
        );
        assert_eq!(
            signature(KEY, &urlencode(AUD), 1_700_000_000),
            "YkjE8ha5dCxgkeSOpujme6tpaB5aOUmq6NVh3fb9Gb0="
        );
        assert_eq!(
            sas_token(AUD, "RootManageSharedAccessKey", KEY, 1_700_000_000),
            "SharedAccessSignature sr=amqps%3A%2F%2Fmyns.servicebus.windows.net%2Forders\
             &sig=YkjE8ha5dCxgkeSOpujme6tpaB5aOUmq6NVh3fb9Gb0%3D&se=1700000000&skn=RootManageSharedAccessKey"
        );
    }

    #[test]
    fn parse_and_verify_round_trip() {
        let t = sas_token(AUD, "my key", KEY, 1_700_000_000);
        let p = SasToken::parse(&t).unwrap();
        assert_eq!(p.audience, AUD);
        assert_eq!(p.key_name, "my key");
        assert_eq!(p.expiry, 1_700_000_000);
        assert!(p.signed_by(KEY));
        assert!(!p.signed_by("another key"));
        assert!(p.expired_at(1_700_000_000));
        assert!(!p.expired_at(1_699_999_999));
        // A tampered expiry or audience breaks the signature.
        let mut q = p.clone();
        q.expiry += 1;
        assert!(!q.signed_by(KEY));
        let mut r = p;
        r.encoded_audience = urlencode("amqps://myns.servicebus.windows.net/other");
        assert!(!r.signed_by(KEY));
    }

    #[test]
    fn parse_rejects_incomplete_tokens() {
        for bad in [
            "",
            "Bearer x",
            "SharedAccessSignature sr=a&sig=b&se=1",
            "SharedAccessSignature sr=a&sig=b&se=soon&skn=n",
            "SharedAccessSignature sr=a&sig",
        ] {
            assert_eq!(SasToken::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn expiry_is_rounded_up() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let e = expiry_after(Duration::from_secs(2));
        assert!(e as f64 >= now.as_secs_f64() + 2.0);
        assert!(e <= now.as_secs() + 4);
    }
}
