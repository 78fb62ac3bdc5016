//! The live page: one HTML document with its style and script inline, embedded in the binary
//! (nothing loads from the network). Its script reads `/v1/events` and drives `/v1/*`.

/// The page (`src/web/page.html`).
pub const PAGE: &str = include_str!("page.html");
