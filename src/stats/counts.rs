//! Attempt counts per outcome class and per reason: fixed arrays, merged with `+=`, serialized
//! as `name → count` maps.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::result::{Class, Reason};

/// The JSON schema of a `name → count` map, for a type that serializes as one.
macro_rules! name_map_schema {
    ($t:ty) => {
        impl schemars::JsonSchema for $t {
            fn schema_name() -> String {
                <BTreeMap<String, u64>>::schema_name()
            }
            fn schema_id() -> std::borrow::Cow<'static, str> {
                <BTreeMap<String, u64>>::schema_id()
            }
            fn json_schema(g: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
                <BTreeMap<String, u64>>::json_schema(g)
            }
            fn is_referenceable() -> bool {
                false
            }
        }
    };
}

/// Counts per [`Class`], indexed by [`Class::index`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts(pub [u64; Class::COUNT]);

impl Default for Counts {
    fn default() -> Self {
        Counts([0; Class::COUNT])
    }
}

impl Counts {
    /// The count of one class.
    pub fn get(&self, c: Class) -> u64 {
        self.0[c.index()]
    }
    /// Add one to a class.
    pub fn bump(&mut self, c: Class) {
        self.0[c.index()] += 1;
    }
    /// Add `n` to a class.
    pub fn add(&mut self, c: Class, n: u64) {
        self.0[c.index()] += n;
    }
    /// Sum over all classes.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// Sum over the classes for which `f` is true.
    pub fn sum_where(&self, f: impl Fn(Class) -> bool) -> u64 {
        Class::ALL
            .iter()
            .filter(|c| f(**c))
            .map(|c| self.get(*c))
            .sum()
    }
    /// Counts as a `name → count` map, every class present (zeros included).
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        Class::ALL
            .iter()
            .map(|c| (c.name().to_string(), self.get(*c)))
            .collect()
    }

    /// The non-zero counts as a `name → count` map.
    pub fn nonzero_map(&self) -> BTreeMap<String, u64> {
        let mut m = self.to_map();
        m.retain(|_, v| *v > 0);
        m
    }

    /// Counts from a `name → count` map (a missing class counts 0); `Err` names an unknown class.
    pub fn from_map(m: &BTreeMap<String, u64>) -> Result<Self, String> {
        let mut c = Counts::default();
        for (name, v) in m {
            let class =
                Class::from_name(name).ok_or_else(|| format!("unknown outcome class {name:?}"))?;
            c.0[class.index()] = *v;
        }
        Ok(c)
    }
}

/// Every class by name, zeros included (`summary.json`'s `counts`, a shard's `counts`).
impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // By name, as a map sorts them (the order summary.json has always had).
        self.to_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Counts::from_map(&BTreeMap::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

name_map_schema!(Counts);

impl AddAssign<&Counts> for Counts {
    fn add_assign(&mut self, rhs: &Counts) {
        for (a, b) in self.0.iter_mut().zip(rhs.0.iter()) {
            *a += b;
        }
    }
}

/// Counts per [`Reason`] (of `other`, `tls_error`, `client_error`), indexed by
/// [`Reason::index`]. Touched only by attempts that carry a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reasons(pub [u64; Reason::COUNT]);

impl Default for Reasons {
    fn default() -> Self {
        Reasons([0; Reason::COUNT])
    }
}

impl Reasons {
    /// The count of one reason.
    pub fn get(&self, r: Reason) -> u64 {
        self.0[r.index()]
    }
    /// Add `n` to a reason.
    pub fn add(&mut self, r: Reason, n: u64) {
        self.0[r.index()] += n;
    }
    /// The reasons seen, `class.reason → count` (zeros left out).
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        Reason::ALL
            .iter()
            .filter(|r| self.get(**r) > 0)
            .map(|r| (r.name().to_string(), self.get(*r)))
            .collect()
    }

    /// Whether no reason was counted.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|n| *n == 0)
    }
}

/// The reasons seen by name (`class.reason → count`).
impl Serialize for Reasons {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Reasons {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut r = Reasons::default();
        for (name, v) in BTreeMap::<String, u64>::deserialize(d)? {
            let reason = Reason::from_name(&name).ok_or_else(|| {
                serde::de::Error::custom(format!("unknown outcome reason {name:?}"))
            })?;
            r.add(reason, v);
        }
        Ok(r)
    }
}

name_map_schema!(Reasons);

impl AddAssign<&Reasons> for Reasons {
    fn add_assign(&mut self, rhs: &Reasons) {
        for (a, b) in self.0.iter_mut().zip(rhs.0.iter()) {
            *a += b;
        }
    }
}
