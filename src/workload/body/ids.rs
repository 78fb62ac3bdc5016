//! A workload's stable ids (users', applications') with their hex forms and the digits of
//! their numbers, worked out once per (tenant, n) when there are few: otherwise each is a hash
//! and a hex encoding per event, about 100 instructions.

/// The most ids of one kind kept (64 bytes each): all of them at the default 10 tenants × 10,
/// and the first 400 tenants' of the README's run.
pub(crate) const CACHED_IDS: usize = 4096;

use super::digits::digits8;

/// One (tenant, n)'s id.
#[derive(Debug)]
pub(crate) struct Id {
    pub id: uuid::Uuid,
    /// `id` in its hyphenated lowercase form.
    pub hex: [u8; 36],
    /// The last 8 decimal digits of `n`, zero-padded, the first in the low byte ([`digits8`]).
    pub digits: u64,
}

/// The ids of (tenant, n) for the first tenants, every n below `per_tenant`.
pub(crate) struct Ids {
    per_tenant: u32,
    /// Tenants `0..tenants` have their ids here.
    tenants: u32,
    ids: Vec<Id>,
}

impl std::fmt::Debug for Ids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ids")
            .field("tenants", &self.tenants)
            .field("per_tenant", &self.per_tenant)
            .finish_non_exhaustive()
    }
}

impl Ids {
    /// `id(t, n)` of every `n < per_tenant` for as many of the first `tenants` as fit `cap`
    /// ids.
    pub(crate) fn new(
        tenants: u32,
        per_tenant: u32,
        cap: usize,
        id: impl Fn(u32, u32) -> uuid::Uuid,
    ) -> Ids {
        let cached = (cap / (per_tenant as usize).max(1)).min(tenants as usize) as u32;
        let ids = (0..cached)
            .flat_map(|t| (0..per_tenant).map(move |n| (t, n)))
            .map(|(t, n)| {
                let id = id(t, n);
                Id {
                    id,
                    hex: super::hyphenated(id),
                    digits: u64::from_le_bytes(digits8(n % 100_000_000)),
                }
            })
            .collect();
        Ids {
            per_tenant,
            tenants: cached,
            ids,
        }
    }

    /// The id of (tenant, n), if kept.
    #[inline]
    pub(crate) fn get(&self, tenant: u32, n: u32) -> Option<&Id> {
        if tenant < self.tenants && n < self.per_tenant {
            self.ids
                .get(tenant as usize * self.per_tenant as usize + n as usize)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kept id is the one asked for, in the `uuid` crate's hex and with `format!`'s
    /// digits; the rest are not kept.
    #[test]
    fn kept_ids_are_the_ids_in_hex_with_their_digits() {
        let id = |t: u32, n: u32| {
            uuid::Uuid::from_u64_pair(u64::from(t) << 40 | 7, u64::from(n) * 0x9e37_79b9)
        };
        for (tenants, per_tenant, cap, kept) in [
            (3, 5, 100, 3),
            (30, 5, 100, 20),
            (1, 1, 1, 1),
            (4, 101, 100, 0),
            (2, 3, 0, 0),
        ] {
            let ids = Ids::new(tenants, per_tenant, cap, id);
            for t in 0..tenants + 2 {
                for n in 0..per_tenant + 2 {
                    let got = ids.get(t, n);
                    assert_eq!(got.is_some(), t < kept && n < per_tenant, "{t} {n}");
                    if let Some(x) = got {
                        assert_eq!(x.id, id(t, n));
                        assert_eq!(&x.hex[..], x.id.hyphenated().to_string().as_bytes());
                        assert_eq!(&x.digits.to_le_bytes()[..], format!("{n:08}").as_bytes());
                    }
                }
            }
        }
    }
}
