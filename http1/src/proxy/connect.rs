//! The CONNECT exchange's bytes: the request that asks a proxy for a tunnel, and the verdict
//! on its answer's head, read with a limit whatever the proxy sends.

use crate::response::{parse_head_full, ResponseError};

/// Largest answer head to a CONNECT, bytes; a longer one fails the tunnel.
pub const CONNECT_HEAD_LIMIT: usize = 64 * 1024;

/// `CONNECT host:port HTTP/1.1` with `Host` and, when given, `Proxy-Authorization`.
pub fn connect_request(host: &str, port: u16, authorization: Option<&str>) -> Vec<u8> {
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut r = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(a) = authorization {
        r.push_str("Proxy-Authorization: ");
        r.push_str(a);
        r.push_str("\r\n");
    }
    r.push_str("User-Agent: hubload\r\n\r\n");
    r.into_bytes()
}

/// What the bytes read so far from the proxy say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectAnswer {
    /// Not a whole head yet (and under the limit): read more.
    Incomplete,
    /// A 2xx: the tunnel is open after the head's `head_len` bytes.
    Established {
        /// Bytes of the head; what follows is the tunnel's.
        head_len: usize,
    },
    /// Any other status: the proxy refused the tunnel.
    Refused {
        /// The proxy's status code (407: it wants credentials).
        status: u16,
    },
    /// Not an HTTP/1.x answer, or a malformed one.
    Malformed,
    /// [`CONNECT_HEAD_LIMIT`] bytes without the head's end.
    TooLarge,
}

impl ConnectAnswer {
    /// The failure's reason as reports name it: `proxy_407`, `proxy_malformed_answer`,
    /// `proxy_head_too_large`; `None` for an open tunnel or an incomplete head.
    pub fn reason(self) -> Option<String> {
        match self {
            ConnectAnswer::Refused { status } => Some(format!("proxy_{status}")),
            ConnectAnswer::Malformed => Some("proxy_malformed_answer".into()),
            ConnectAnswer::TooLarge => Some("proxy_head_too_large".into()),
            ConnectAnswer::Incomplete | ConnectAnswer::Established { .. } => None,
        }
    }
}

/// The verdict on the first bytes the proxy sent after a CONNECT.
pub fn read_connect_answer(buf: &[u8]) -> ConnectAnswer {
    let limited = &buf[..buf.len().min(CONNECT_HEAD_LIMIT)];
    match parse_head_full(limited, false, &mut None) {
        Ok(Some(h)) if (200..300).contains(&h.status) => {
            ConnectAnswer::Established { head_len: h.len }
        }
        Ok(Some(h)) => ConnectAnswer::Refused { status: h.status },
        Ok(None) if buf.len() >= CONNECT_HEAD_LIMIT => ConnectAnswer::TooLarge,
        Ok(None) => ConnectAnswer::Incomplete,
        Err(
            ResponseError::NotHttp
            | ResponseError::MalformedStatusLine
            | ResponseError::MalformedHead
            | ResponseError::TooManyHeaders,
        ) => ConnectAnswer::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_the_target_and_carries_credentials_only_when_given() {
        assert_eq!(
            connect_request("sb.example", 443, None),
            b"CONNECT sb.example:443 HTTP/1.1\r\nHost: sb.example:443\r\nUser-Agent: hubload\r\n\r\n"
        );
        assert_eq!(
            connect_request("::1", 4443, Some("Basic dTpw")),
            b"CONNECT [::1]:4443 HTTP/1.1\r\nHost: [::1]:4443\r\nProxy-Authorization: Basic dTpw\r\nUser-Agent: hubload\r\n\r\n"
        );
    }

    #[test]
    fn every_split_of_an_answer_gives_the_same_verdict() {
        for (answer, want) in [
            (
                &b"HTTP/1.1 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\n"[..],
                // The whole answer (37 + 31 + 2 bytes) is the head.
                ConnectAnswer::Established { head_len: 70 },
            ),
            (
                b"HTTP/1.0 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n",
                ConnectAnswer::Refused { status: 407 },
            ),
            (
                b"HTTP/1.1 403 Forbidden\r\n\r\n",
                ConnectAnswer::Refused { status: 403 },
            ),
            (b"SSH-2.0-OpenSSH_9.2\r\n\r\n", ConnectAnswer::Malformed),
        ] {
            assert_eq!(read_connect_answer(answer), want);
            for cut in 1..answer.len() {
                let got = read_connect_answer(&answer[..cut]);
                assert!(
                    got == ConnectAnswer::Incomplete || got == want,
                    "cut at {cut}: {got:?}"
                );
            }
        }
        assert_eq!(
            ConnectAnswer::Refused { status: 407 }.reason().as_deref(),
            Some("proxy_407")
        );
    }

    #[test]
    fn a_head_that_never_ends_is_too_large_at_the_limit() {
        let mut endless = b"HTTP/1.1 200 OK\r\n".to_vec();
        while endless.len() < CONNECT_HEAD_LIMIT - 10 {
            endless.extend_from_slice(b"X: y\r\n");
        }
        // Fewer than 64 fields would fail first as too many headers: so one long field.
        let mut long = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        long.resize(CONNECT_HEAD_LIMIT - 1, b'a');
        assert_eq!(read_connect_answer(&long), ConnectAnswer::Incomplete);
        long.push(b'a');
        assert_eq!(read_connect_answer(&long), ConnectAnswer::TooLarge);
        assert_eq!(read_connect_answer(&endless), ConnectAnswer::Malformed);
    }
}
