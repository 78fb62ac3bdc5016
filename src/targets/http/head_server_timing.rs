//! The `Server-Timing` values of a whole response head, read only when the head parser saw the
//! header (`Head::server_timing`): off the path of every response that does not carry one.

use crate::result::ServerTimings;
use hubload_http1::response::{header_values, SERVER_TIMING};

/// Read every `Server-Timing` header of `head` (a complete head, status line through the blank
/// line) into `out`. A head the codec's full parser does not take leaves `out` as it is: the head parser
/// accepted it already, so that does not happen.
#[cold]
#[inline(never)]
pub(crate) fn read(head: &[u8], out: &mut ServerTimings) {
    header_values(head, SERVER_TIMING, |v| out.add_header(v));
}

#[cfg(test)]
mod tests {
    use super::*;
    use hubload_http1::response::parse_head;

    /// Through the head parser, as the connection reads it: the flag, then the values.
    fn timings(head: &str) -> (bool, Vec<(&'static str, u64)>, u8) {
        let mut ct = None;
        let h = parse_head(head.as_bytes(), false, &mut ct)
            .unwrap()
            .unwrap();
        let mut t = ServerTimings::NONE;
        if h.server_timing {
            read(&head.as_bytes()[..h.len], &mut t);
        }
        (h.server_timing, t.metrics().collect(), t.malformed)
    }

    #[test]
    fn flag_and_values_in_either_parser_and_any_case() {
        // The common form (the fast scan), short and long lines.
        let fast = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nServer-Timing: broker;dur=1.5, hub;dur=0.25\r\nserver-timing: db;dur=2\r\n\r\n";
        assert_eq!(
            timings(fast),
            (true, vec![("broker", 1500), ("hub", 250), ("db", 2000)], 0)
        );
        let short = "HTTP/1.1 200 OK\r\nSERVER-TIMING:x;dur=1\r\n\r\n";
        assert_eq!(timings(short), (true, vec![("x", 1000)], 0));
        // obs-text in another header sends the head to the full parser.
        let full = "HTTP/1.1 200 OK\r\nX: \u{e9}\r\nServer-Timing: hub;dur=bad\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(timings(full), (true, vec![], 1));
        // No header: nothing read.
        let none = "HTTP/1.1 200 OK\r\nServer-Timings: hub;dur=1\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(timings(none), (false, vec![], 0));
    }
}
