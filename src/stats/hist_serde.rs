//! Serde for a histogram field: the HdrHistogram interchange string (V2+DEFLATE, base64),
//! decoded back only in hubload's layout, so deserialized stats add to any others exactly.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{from_base64, to_base64, Histogram};

/// `#[serde(with = "hist_serde")]`: write the histogram as its interchange string.
pub fn serialize<S: Serializer>(h: &Histogram, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&to_base64(h).map_err(serde::ser::Error::custom)?)
}

/// Read the interchange string back; any other layout is an error naming what is wrong.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram, D::Error> {
    let b64 = String::deserialize(d)?;
    from_base64(&b64).map_err(serde::de::Error::custom)
}

/// `#[serde(with = "hist_serde::by_name")]`: a map of histograms, each as its interchange string.
pub mod by_name {
    use super::*;

    /// Write every histogram as its interchange string.
    pub fn serialize<S: Serializer>(
        m: &BTreeMap<String, Histogram>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let encoded = m
            .iter()
            .map(|(k, h)| Ok((k, to_base64(h)?)))
            .collect::<Result<BTreeMap<_, _>, String>>()
            .map_err(serde::ser::Error::custom)?;
        encoded.serialize(s)
    }

    /// Read every histogram back; the error names the entry.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Histogram>, D::Error> {
        BTreeMap::<String, String>::deserialize(d)?
            .into_iter()
            .map(|(k, b64)| {
                let h =
                    from_base64(&b64).map_err(|e| serde::de::Error::custom(format!("{k}: {e}")))?;
                Ok((k, h))
            })
            .collect()
    }
}
