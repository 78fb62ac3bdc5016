//! hubload-http1: the one HTTP/1.1 codec of hubload and its reference hub (docs/http1-codec.md).
//!
//! Pure functions and state machines over bytes, no I/O: each caller does its own reads and
//! writes (and keeps its own deadlines), so every split of the input can be tested here.
//!
//! - [`request`]: a request head a server reads, with its body's framing and every limit;
//! - [`answer`]: the answers a server writes;
//! - [`chunked`]: the `Transfer-Encoding: chunked` decoder, any split of the input;
//! - [`response`]: a response head a client reads (a fast scan, else `httparse`), and a memo of
//!   the last head for servers whose heads repeat;
//! - [`proxy`]: which HTTP proxy a connection goes through (curl's variables and `NO_PROXY`),
//!   and the CONNECT exchange's bytes.

pub mod answer;
pub mod chunked;
pub mod proxy;
pub mod request;
pub mod response;
