//! Body templates: a body's bytes rendered once per (tenant, channel, variant), with its
//! varying fields (holes) at fixed offsets, so an event's body is one copy and a few
//! over-writes instead of ~25 pieces.
//!
//! The renderer itself makes a template (`render_marked` says where each hole starts), so the
//! layout is written once. Holes have fixed widths only for some values (a 16-digit `sent_us`,
//! application numbers below 1,000, a user number of the template's digit count); any other
//! event, or a workload past [`TEMPLATE_BYTES`], is rendered piece by piece.

use super::digits::{digits16, digits8, TEN16};
use super::{render_marked, BodyFields, Hole, Marks};

/// The most bytes of templates a workload keeps: the templates of the first tenants that fit
/// (the most active under Zipf). More would not stay in a 2 MiB second-level cache, and a
/// copy from memory costs what it saves.
pub(crate) const TEMPLATE_BYTES: usize = 2 << 20;

/// The values that fill a template's holes.
#[derive(Debug)]
pub(crate) struct Fill<'a> {
    pub jti: &'a [u8; 36],
    /// In `10^15..10^16` (checked by [`Templates::get`]).
    pub sent_us: u64,
    pub user_id: &'a [u8; 36],
    pub application_id: &'a [u8; 36],
    /// The application number's 8 zero-padded digits ([`digits8`] as a `u64`): a number
    /// below 1,000.
    pub application: u64,
    /// The same of the user number, which has the template's digit count (registration
    /// bodies only).
    pub user: u64,
}

impl Fill<'_> {
    /// A number's digits as [`Fill`] takes them: its last 8, which is all a hole holds.
    #[inline]
    pub(crate) fn digits(n: u32) -> u64 {
        u64::from_le_bytes(digits8(n % 100_000_000))
    }
}

/// One body with holes. Offsets are `u32`s, so a hole's end cannot overflow and the writes
/// check one bound each.
#[derive(Debug, PartialEq, Eq)]
pub struct Template {
    bytes: Box<[u8]>,
    jti: u32,
    /// Where `iat`'s 13 digits start; `sent_us`'s 16 start [`SENT_US_AFTER_IAT`] later.
    times: u32,
    user_id: [u32; 2],
    application_id: u32,
    /// Where the 8 bytes that end with each 3-digit application number start.
    app_word: [u32; 2],
    /// A registration body's user numbers.
    user: Option<UserHoles>,
}

/// Where the 8 bytes that end with each of a registration body's user numbers start, and
/// which of them are not the number (a mask for [`put_digits`]).
#[derive(Debug, PartialEq, Eq)]
struct UserHoles {
    padded_word: [u32; 2],
    padded_keep: u64,
    plain_word: [u32; 2],
    plain_keep: u64,
}

/// `iat`'s 13 digits and `,"sent_us":`.
const SENT_US_AFTER_IAT: usize = 13 + 11;
/// The bytes of the 8 that end at an application number's end that are not the number.
const APP_KEEP: u64 = keep_mask(3);

/// The mask that keeps the first `8 - width` bytes of 8 (little-endian) and clears the last
/// `width` (1 to 8).
const fn keep_mask(width: usize) -> u64 {
    match width {
        8 => 0,
        w => u64::MAX >> (8 * w),
    }
}

/// The decimal digit count of `x`.
fn digit_count(x: u32) -> usize {
    x.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// The smallest number of `digits` digits (0 for 1 digit).
fn smallest_of(digits: usize) -> u32 {
    match digits {
        1 => 0,
        d => 10u32.pow(d as u32 - 1),
    }
}

/// Every mark the renderer makes, in order.
#[derive(Default)]
struct Found(Vec<(Hole, usize)>);

impl Marks for Found {
    fn mark(&mut self, hole: Hole, at: usize) {
        self.0.push((hole, at));
    }
}

impl Found {
    /// Where the `N` marks of `hole` are, when there are exactly `N` (in the first 4 GiB).
    fn exactly<const N: usize>(&self, hole: Hole) -> Option<[u32; N]> {
        let at: Vec<u32> = self
            .0
            .iter()
            .filter(|(h, _)| *h == hole)
            .map(|(_, at)| u32::try_from(*at).ok())
            .collect::<Option<_>>()?;
        at.try_into().ok()
    }
}

impl Template {
    /// The template of the bodies of `f`'s tenant, channel, variant and padding, and, for a
    /// registration body, of user numbers with as many digits as `f.user` (at most 8). Its
    /// other varying fields are ignored. `None` when a hole is not where it must be, or
    /// filling it with other values does not give the body the renderer writes for them.
    pub(crate) fn new(f: &BodyFields<'_>) -> Option<Template> {
        let digits = digit_count(f.user) as u32;
        if digits > 8 {
            return None;
        }
        let first = BodyFields {
            jti: &[b'0'; 36],
            sent_us: TEN16 / 10,
            user_id: uuid::Uuid::nil(),
            application_id: uuid::Uuid::nil(),
            application: 0,
            user: smallest_of(digits as usize),
            ..*f
        };
        let mut bytes = Vec::new();
        let mut found = Found::default();
        render_marked(&first, &mut bytes, &mut found);
        let [times] = found.exactly(Hole::Times)?;
        let registration = f.channel == "registration";
        let user = match registration {
            false => {
                found.exactly::<0>(Hole::UserPadded)?;
                found.exactly::<0>(Hole::UserPlain)?;
                None
            }
            true => {
                let padded = digits.max(5);
                let [p0, p1] = found.exactly(Hole::UserPadded)?;
                let [q0, q1] = found.exactly(Hole::UserPlain)?;
                Some(UserHoles {
                    padded_word: [word(p0, padded)?, word(p1, padded)?],
                    padded_keep: keep_mask(padded as usize),
                    plain_word: [word(q0, digits)?, word(q1, digits)?],
                    plain_keep: keep_mask(digits as usize),
                })
            }
        };
        let [a0, a1] = found.exactly(Hole::App)?;
        let t = Template {
            jti: found.exactly::<1>(Hole::Jti)?[0],
            times,
            user_id: found.exactly(Hole::UserId)?,
            application_id: found.exactly::<1>(Hole::AppId)?[0],
            app_word: [word(a0, 3)?, word(a1, 3)?],
            user,
            bytes: bytes.into_boxed_slice(),
        };
        let (times, sent_us) = (times as usize, times as usize + SENT_US_AFTER_IAT);
        let ends = [
            t.jti as usize + 36,
            sent_us + 16,
            t.application_id as usize + 36,
        ]
        .into_iter()
        .chain(t.user_id.map(|at| at as usize + 36))
        .chain(t.app_word.map(|w| w as usize + 8))
        .chain(t.user.iter().flat_map(|u| {
            let words = u.padded_word.into_iter().chain(u.plain_word);
            words.map(|w| w as usize + 8)
        }));
        if ends.into_iter().any(|e| e > t.bytes.len())
            || t.bytes.get(times + 13..sent_us) != Some(br#","sent_us":"#)
        {
            return None;
        }
        // Every hole at other values, each byte of each differing from the first's: a hole
        // the renderer has but did not mark would show here.
        let ids = [b'f'; 36];
        let other = BodyFields {
            jti: &ids,
            sent_us: TEN16 - 1,
            user_id: uuid::Uuid::max(),
            application_id: uuid::Uuid::max(),
            application: 999,
            user: 10u32.pow(digits) - 1,
            ..*f
        };
        let max_hex = super::hyphenated(uuid::Uuid::max());
        let mut want = Vec::new();
        render_marked(&other, &mut want, &mut ());
        let mut got = Vec::new();
        let fill = Fill {
            jti: &ids,
            sent_us: other.sent_us,
            user_id: &max_hex,
            application_id: &max_hex,
            application: Fill::digits(other.application),
            user: Fill::digits(other.user),
        };
        t.append(&fill, &mut got);
        (got == want).then_some(t)
    }

    /// The body's length, whatever fills the holes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Append the body with its holes filled by `v` to `out`: one copy of the template, then
    /// each hole written over (fixed-size writes, a few moves each).
    #[inline(always)]
    pub(crate) fn append(&self, v: &Fill<'_>, out: &mut Vec<u8>) {
        debug_assert!((TEN16 / 10..TEN16).contains(&v.sent_us));
        let at = out.len();
        out.extend_from_slice(&self.bytes);
        let d = &mut out[at..];
        let jti = self.jti as usize;
        d[jti..jti + 36].copy_from_slice(v.jti);
        // 16 digits: `iat` (ms) is the first 13.
        let times = digits16(v.sent_us).to_le_bytes();
        let ms = self.times as usize;
        d[ms..ms + 13].copy_from_slice(&times[..13]);
        let us = ms + SENT_US_AFTER_IAT;
        d[us..us + 16].copy_from_slice(&times);
        for at in self.user_id {
            let at = at as usize;
            d[at..at + 36].copy_from_slice(v.user_id);
        }
        let app = self.application_id as usize;
        d[app..app + 36].copy_from_slice(v.application_id);
        for at in self.app_word {
            put_digits(d, at, v.application, APP_KEEP);
        }
        if let Some(u) = &self.user {
            for at in u.padded_word {
                put_digits(d, at, v.user, u.padded_keep);
            }
            for at in u.plain_word {
                put_digits(d, at, v.user, u.plain_keep);
            }
        }
    }
}

/// Write the last digits of `digits` (8 zero-padded digits, the first in the low byte) into
/// the 8 bytes of `d` at `at`, as many as `keep` clears (the number ends with those 8 bytes):
/// they are read, merged and written back, one fixed-size write for any width.
#[inline(always)]
fn put_digits(d: &mut [u8], at: u32, digits: u64, keep: u64) {
    let at = at as usize;
    let w: &mut [u8; 8] = (&mut d[at..at + 8]).try_into().expect("8 bytes");
    let old = u64::from_le_bytes(*w);
    *w = ((old & keep) | (digits & !keep)).to_le_bytes();
}

/// Where the 8 bytes that end with a number of `width` digits at `at` start, if they are in
/// the body.
fn word(at: u32, width: u32) -> Option<u32> {
    at.checked_add(width)?.checked_sub(8)
}

/// The templates of a workload: for each of its first tenants, each channel, each variant
/// (success or failure, where they differ) and, for registration, each user digit count its
/// users have.
pub(crate) struct Templates {
    list: Vec<Template>,
    /// Per (tenant, channel, failed, digit count): an index into `list`, or [`NONE`].
    slots: Vec<u32>,
    /// Tenants `0..tenants` have templates.
    tenants: u32,
    per_tenant: usize,
    channels: Vec<ChannelSlots>,
    /// What the templates take, counted against the cap.
    bytes: usize,
}

/// Where a channel's slots start within a tenant's, and how many user digit counts it has
/// (1 but for registration).
#[derive(Debug)]
struct ChannelSlots {
    base: usize,
    digit_counts: usize,
    registration: bool,
}

const NONE: u32 = u32::MAX;

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("tenants", &self.tenants)
            .field("templates", &self.list.len())
            .finish_non_exhaustive()
    }
}

impl Templates {
    /// The templates of the first tenants of `tenant_names` whose templates together fit in
    /// `cap` bytes, for bodies padded to `pad_to` and `users` users per tenant.
    pub(crate) fn new(
        tenant_names: &[impl AsRef<str>],
        channel_names: &[impl AsRef<str>],
        users: u32,
        pad_to: Option<usize>,
        cap: usize,
    ) -> Templates {
        // Users 0..users: digit counts 1 to that of the largest, at most 8.
        let user_digits = digit_count(users.saturating_sub(1)).min(8);
        let mut per_tenant = 0;
        let channels: Vec<ChannelSlots> = channel_names
            .iter()
            .map(|c| {
                let registration = c.as_ref() == "registration";
                let digit_counts = if registration { user_digits } else { 1 };
                let slots = ChannelSlots {
                    base: per_tenant,
                    digit_counts,
                    registration,
                };
                per_tenant += 2 * digit_counts;
                slots
            })
            .collect();
        let mut t = Templates {
            list: Vec::new(),
            slots: Vec::new(),
            tenants: 0,
            per_tenant,
            channels,
            bytes: 0,
        };
        // Every body is at least `pad_to` bytes: none would fit (and none is rendered).
        if pad_to.is_some_and(|p| p > cap) {
            return t;
        }
        for (tenant, name) in tenant_names.iter().enumerate() {
            let left = cap - t.bytes;
            let Some((slots, list, bytes)) =
                t.of_tenant(tenant as u32, name.as_ref(), channel_names, pad_to, left)
            else {
                break;
            };
            t.bytes += bytes;
            let first = t.list.len() as u32;
            t.slots.extend(
                slots
                    .iter()
                    .map(|&s| if s == NONE { NONE } else { first + s }),
            );
            t.list.extend(list);
            t.tenants += 1;
        }
        t
    }

    /// One tenant's slots (indices into its own list), templates and their bytes; `None` as
    /// soon as they take more than `cap` bytes.
    fn of_tenant(
        &self,
        tenant: u32,
        name: &str,
        channel_names: &[impl AsRef<str>],
        pad_to: Option<usize>,
        cap: usize,
    ) -> Option<(Vec<u32>, Vec<Template>, usize)> {
        let mut slots = vec![NONE; self.per_tenant];
        let mut list: Vec<Template> = Vec::new();
        let mut bytes = 0;
        for (c, channel) in self.channels.iter().zip(channel_names) {
            for digits in 1..=c.digit_counts {
                for failed in [false, true] {
                    let f = BodyFields {
                        tenant_name: name,
                        tenant_id: tenant,
                        channel: channel.as_ref(),
                        jti: &[0; 36],
                        sent_us: 0,
                        user_id: uuid::Uuid::nil(),
                        application_id: uuid::Uuid::nil(),
                        application: 0,
                        user: smallest_of(digits),
                        failed,
                        pad_to,
                    };
                    let Some(x) = Template::new(&f) else { continue };
                    // The failure variant of most channels is the success one: kept once.
                    let i = match list.last() {
                        Some(last) if failed && *last == x => list.len() - 1,
                        _ => {
                            bytes += x.len() + size_of::<Template>();
                            if bytes > cap {
                                return None;
                            }
                            list.push(x);
                            list.len() - 1
                        }
                    };
                    slots[c.base + usize::from(failed) * c.digit_counts + digits - 1] = i as u32;
                }
            }
        }
        Some((slots, list, bytes))
    }

    /// How many tenants (the first ones) have templates.
    #[cfg(test)]
    pub(crate) fn tenants(&self) -> u32 {
        self.tenants
    }

    /// The template of a body of (tenant, channel, failed) with user number `user`,
    /// application number `application` and send time `sent_us`, if its holes fit them.
    #[inline]
    pub(crate) fn get(
        &self,
        tenant: u32,
        channel: usize,
        failed: bool,
        user: u32,
        application: u32,
        sent_us: u64,
    ) -> Option<&Template> {
        if tenant >= self.tenants || application >= 1000 || !(TEN16 / 10..TEN16).contains(&sent_us)
        {
            return None;
        }
        let c = self.channels.get(channel)?;
        let digits = match c.registration {
            true => digit_count(user),
            false => 1,
        };
        if digits > c.digit_counts {
            return None;
        }
        let slot = tenant as usize * self.per_tenant
            + c.base
            + usize::from(failed) * c.digit_counts
            + digits
            - 1;
        match self.slots[slot] {
            NONE => None,
            i => Some(&self.list[i as usize]),
        }
    }
}

#[cfg(test)]
mod tests;
