//! A small writer of one flat JSON object, for the stream's once-a-second record: fields are
//! appended to one string, with no tree of values built and dropped each second. Numbers and
//! strings are written by serde_json, so they read back exactly as a `json!` tree writes them.

use serde::Serialize;

/// One JSON object being written.
pub struct JsonObject {
    out: Vec<u8>,
    /// No field written yet in the object open now.
    first: bool,
}

impl Default for JsonObject {
    fn default() -> Self {
        JsonObject::with_capacity(512)
    }
}

impl JsonObject {
    /// An empty object, with room for `bytes` bytes.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut out = Vec::with_capacity(bytes);
        out.push(b'{');
        JsonObject { out, first: true }
    }

    fn key(&mut self, k: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    /// `"k": v` for any value serde_json writes (a number, a string, a bool, `None` as null,
    /// a map, a `Value`). `k` is written as given: a plain name, nothing to escape.
    pub fn field<T: Serialize + ?Sized>(&mut self, k: &str, v: &T) -> &mut Self {
        self.key(k);
        if serde_json::to_writer(&mut self.out, v).is_err() {
            self.out.extend_from_slice(b"null");
        }
        self
    }

    /// `"k": {…}`, with the fields `fill` writes.
    pub fn object(&mut self, k: &str, fill: impl FnOnce(&mut JsonObject)) -> &mut Self {
        self.key(k);
        self.out.push(b'{');
        self.first = true;
        fill(self);
        self.out.push(b'}');
        self.first = false;
        self
    }

    /// The object, closed.
    pub fn finish(mut self) -> String {
        self.out.push(b'}');
        // Only valid UTF-8 was written: ASCII punctuation, the keys and serde_json's output.
        String::from_utf8(self.out).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// What it writes parses back to the tree `json!` makes of the same fields.
    #[test]
    fn writes_what_json_macro_writes() {
        let mut o = JsonObject::default();
        o.field("t", &3u64)
            .field("label", &Some("200/s \"x\""))
            .field("none", &None::<f64>)
            .field("ms", &1.25f64)
            .field("pct", &95.0f64)
            .field("paused", &false)
            .object("by_class", |c| {
                c.field("accepted", &7u64).field("http_503", &1u64);
            })
            .object("empty", |_| {})
            .field("server", &json!({"round": 1}));
        let got: Value = serde_json::from_str(&o.finish()).unwrap();
        assert_eq!(
            got,
            json!({"t": 3, "label": "200/s \"x\"", "none": null, "ms": 1.25, "pct": 95.0,
                "paused": false, "by_class": {"accepted": 7, "http_503": 1}, "empty": {},
                "server": {"round": 1}})
        );
        assert_eq!(JsonObject::default().finish(), "{}");
    }
}
