//! What the integration tests share, apart from the tests themselves: the harness
//! (`util`: scenarios, the built binary, the hub's counts), a headless browser (`browser`)
//! and the reference hub over TLS (`tls_hub`).

pub mod browser;
pub mod tls_hub;
pub mod util;
