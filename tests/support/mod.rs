//! What the integration tests share, apart from the tests themselves: the harness
//! (`util`: scenarios, the built binary, the hub's counts) and a headless browser (`browser`).

pub mod browser;
pub mod util;
