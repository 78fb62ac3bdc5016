//! hubload-http1: the one HTTP/1.1 codec of hubload and its reference hub (docs/http1-codec.md).
//!
//! Pure functions and state machines over bytes, no I/O: each caller does its own reads and
//! writes (and keeps its own deadlines), so every split of the input can be tested here.
//! [`request`]: a request head a server reads; [`answer`]: what a server writes; [`chunked`]:
//! the chunked decoder; [`response`]: a response head a client reads; [`proxy`]: which proxy
//! a connection goes through, and the CONNECT exchange.

pub mod answer;
pub mod chunked;
pub mod proxy;
pub mod request;
pub mod response;
