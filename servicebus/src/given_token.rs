//! A pre-made SAS token given in a connection string (`SharedAccessSignature=SharedAccessSignature
//! sr=…&sig=…&se=…&skn=…`): what may be shown of it (the key name, the audience, the expiry)
//! read once, the token itself kept private and never shown.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sas::SasToken;

/// A token the connection string carries instead of a key. `Debug` shows no signature.
#[derive(Clone, PartialEq, Eq)]
pub struct GivenToken {
    token: String,
    /// `skn`: the policy the token was signed with.
    pub key_name: String,
    /// `sr`, decoded: what the token is for (the namespace, or one entity).
    pub audience: String,
    /// `se`: when it expires, unix seconds.
    pub expiry: u64,
}

impl GivenToken {
    /// Read the field's value; the reason when it is not a SAS token (never quoting it).
    pub fn parse(value: &str) -> Result<GivenToken, &'static str> {
        let t = SasToken::parse(value)
            .ok_or("must be `SharedAccessSignature sr=…&sig=…&se=…&skn=…`")?;
        if t.key_name.is_empty() || t.audience.is_empty() || t.signature.is_empty() {
            return Err("has an empty sr, sig or skn");
        }
        Ok(GivenToken {
            token: value.trim().to_string(),
            key_name: t.key_name,
            audience: t.audience,
            expiry: t.expiry,
        })
    }

    /// The token as given, to put over CBS or send in an `Authorization` header. Never log it.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// How long it is still valid at unix time `now_s`; `None` once expired.
    pub fn left_at(&self, now_s: u64) -> Option<Duration> {
        (self.expiry > now_s).then(|| Duration::from_secs(self.expiry - now_s))
    }

    /// [`Self::left_at`] now.
    pub fn left(&self) -> Option<Duration> {
        self.left_at(unix_now())
    }

    /// The expiry as UTC, `2026-12-07T09:00:00Z`.
    pub fn expiry_utc(&self) -> String {
        humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(self.expiry)).to_string()
    }
}

impl fmt::Debug for GivenToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GivenToken")
            .field("token", &"<redacted>")
            .field("key_name", &self.key_name)
            .field("audience", &self.audience)
            .field("expiry", &self.expiry)
            .finish()
    }
}

/// Seconds since the epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sas::sas_token;

    const KEY: &str = "c2VjcmV0LWtleS1ub3QtcmVhbA==";

    #[test]
    fn reads_what_may_be_shown_and_hides_the_rest() {
        let token = sas_token("sb://ns.example/", "SendOnly", KEY, 1_796_634_000);
        let g = GivenToken::parse(&token).unwrap();
        assert_eq!(g.key_name, "SendOnly");
        assert_eq!(g.audience, "sb://ns.example/");
        assert_eq!(g.expiry_utc(), "2026-12-07T09:00:00Z");
        assert_eq!(g.token(), token);
        assert_eq!(g.left_at(1_796_634_000), None);
        assert_eq!(g.left_at(1_796_633_940), Some(Duration::from_secs(60)));
        let shown = format!("{g:?}");
        let sig = token
            .split("sig=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap();
        assert!(!shown.contains(sig), "{shown}");
    }

    #[test]
    fn refuses_what_is_not_a_token_without_quoting_it() {
        for bad in [
            "sr=a&sig=b&se=1&skn=c",
            "SharedAccessSignature sr=a&sig=b&skn=c",
            "SharedAccessSignature sr=&sig=b&se=1&skn=c",
        ] {
            let why = GivenToken::parse(bad).unwrap_err();
            assert!(!why.contains("sig=b"), "{why}");
        }
    }
}
