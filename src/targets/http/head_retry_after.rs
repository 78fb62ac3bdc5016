//! The `Retry-After` of a whole response head, read only on a 429 or a 503: off the path of
//! every other response.

use crate::result::RetryAfter;
use hubload_http1::response::header_values;

/// The field's name, lower case (the codec compares names in any case).
const RETRY_AFTER: &[u8] = b"retry-after";

/// Read every `Retry-After` field of `head` (a complete head, status line through the blank
/// line) into `out`.
#[cold]
#[inline(never)]
pub(crate) fn read(head: &[u8], out: &mut RetryAfter) {
    header_values(head, RETRY_AFTER, |v| out.add_header(v));
}

#[cfg(test)]
mod tests {
    use super::*;
    use hubload_http1::response::parse_head;

    fn read_head(head: &str) -> Option<u32> {
        let h = parse_head(head.as_bytes(), false, &mut None)
            .unwrap()
            .unwrap();
        let mut r = RetryAfter::NONE;
        read(&head.as_bytes()[..h.len], &mut r);
        r.secs()
    }

    #[test]
    fn any_case_and_repeated_fields() {
        let h = "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nRetry-After: 3\r\n\r\n";
        assert_eq!(read_head(h), Some(3));
        let h = "HTTP/1.1 503 Service Unavailable\r\nretry-after:  7 \r\nRETRY-AFTER: 7\r\n\r\n";
        assert_eq!(read_head(h), Some(7));
        let h = "HTTP/1.1 429 x\r\nRetry-After: 1\r\nRetry-After: 2\r\n\r\n";
        assert_eq!(read_head(h), None);
        let h = "HTTP/1.1 429 x\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n";
        assert_eq!(read_head(h), None);
        let h = "HTTP/1.1 429 x\r\nRetry-Afterwards: 2\r\n\r\n";
        assert_eq!(read_head(h), None);
    }
}
