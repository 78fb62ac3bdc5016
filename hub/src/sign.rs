//! `X-Hub-Signature` (WebSub §7.1): HMAC-SHA256 of a delivery's body under the subscriber's secret.
//!
//! The key is absorbed once per subscription ([`Signer::new`]); each delivery clones that keyed
//! state, so signing costs the body's blocks only, and the header value is written into a
//! buffer on the stack.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// `sha256=` and 64 hex digits.
pub(crate) const SIGNATURE_LEN: usize = 7 + 64;

/// A subscriber's secret, as a keyed HMAC state.
#[derive(Clone)]
pub(crate) struct Signer(Hmac<Sha256>);

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The keyed state is the secret: never printed.
        f.write_str("Signer(..)")
    }
}

impl Signer {
    pub fn new(secret: &[u8]) -> Signer {
        // HMAC accepts keys of any length, so this cannot fail.
        Signer(<Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length"))
    }

    /// `sha256=<hex HMAC-SHA256(secret, body)>`, written into `out`.
    pub fn sign<'a>(&self, body: &[u8], out: &'a mut [u8; SIGNATURE_LEN]) -> &'a str {
        let mut mac = self.0.clone();
        mac.update(body);
        out[..7].copy_from_slice(b"sha256=");
        // 32 bytes into 64 hex digits: the lengths match, so this cannot fail.
        let _ = hex::encode_to_slice(mac.finalize().into_bytes(), &mut out[7..]);
        std::str::from_utf8(&out[..]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_a_known_vector() {
        // RFC 4231 test case 2; a second use of the same signer gives the same answer.
        let s = Signer::new(b"Jefe");
        let mut buf = [0; SIGNATURE_LEN];
        let want = "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        assert_eq!(s.sign(b"what do ya want for nothing?", &mut buf), want);
        assert_eq!(s.sign(b"what do ya want for nothing?", &mut buf), want);
        assert_ne!(s.sign(b"what do ya want for nothing!", &mut buf), want);
        assert_eq!(format!("{s:?}"), "Signer(..)");
    }
}
