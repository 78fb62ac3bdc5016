//! What the integration tests share, apart from the tests themselves: the harness
//! (`util`: scenarios, the built binary, the hub's counts), a headless browser (`browser`),
//! the reference hub over TLS (`tls_hub`), a hub stand-in that records what it is sent
//! (`capture`), HTTP/2 servers that misbehave on purpose (`h2_server`, `h2_raw`) and the
//! deadline tests' bound (`lateness`).

pub mod browser;
pub mod capture;
pub mod h2_raw;
pub mod h2_server;
pub mod lateness;
pub mod tls_hub;
pub mod util;
