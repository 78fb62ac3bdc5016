//! Serde for a histogram field: the HdrHistogram interchange string (V2+DEFLATE, base64),
//! decoded back only in hubload's layout, so deserialized stats add to any others exactly.

use serde::{Deserialize, Deserializer, Serializer};

use crate::stats::{from_base64, to_base64, Histogram};

/// `#[serde(with = "hist_serde")]`: write the histogram as its interchange string.
pub fn serialize<S: Serializer>(h: &Histogram, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&to_base64(h).map_err(serde::ser::Error::custom)?)
}

/// Read the interchange string back; any other layout is an error naming what is wrong.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram, D::Error> {
    let b64 = String::deserialize(d)?;
    from_base64(&b64).map_err(serde::de::Error::custom)
}
