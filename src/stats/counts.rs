//! Attempt counts per outcome class and per reason: fixed arrays, merged with `+=`.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use crate::result::{Class, Reason};

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
}

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
}

impl AddAssign<&Reasons> for Reasons {
    fn add_assign(&mut self, rhs: &Reasons) {
        for (a, b) in self.0.iter_mut().zip(rhs.0.iter()) {
            *a += b;
        }
    }
}
