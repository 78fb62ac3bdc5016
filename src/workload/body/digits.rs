//! Decimal digits and lowercase hex without a loop per digit: the number and UUID pieces of a
//! body (`body.rs`) and of its templates' holes (`template.rs`).

pub(super) const TEN16: u64 = 10_000_000_000_000_000;
/// Eight ASCII `0`s, and sixteen.
pub(super) const ZEROS: u64 = 0x3030_3030_3030_3030;
pub(super) const ZEROS16: u128 = ((ZEROS as u128) << 64) | ZEROS as u128;

/// The 8 decimal digits of `x < 10^8`, zero-padded, without a division per digit: the two
/// halves of 4 digits go to two 32-bit lanes of a `u64`, then each lane splits into 2 + 2 and
/// 1 + 1 digits by multiplying with a scaled reciprocal (exact for these ranges: x·10486 >>
/// 20 is x / 100 below 10,000, x·103 >> 10 is x / 10 below 179).
pub(super) fn digits8(x: u32) -> [u8; 8] {
    let x = u64::from(x);
    let v = (x / 10_000) | ((x % 10_000) << 32);
    let h = ((v * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let v = h | ((v - h * 100) << 16);
    let h = ((v * 103) >> 10) & 0x000f_000f_000f_000f;
    let v = h | ((v - h * 10) << 8);
    (v | ZEROS).to_le_bytes()
}

/// The 16 decimal digits of `x < 10^16`, zero-padded, first digit in the low byte.
#[inline(always)]
pub(super) fn digits16(x: u64) -> u128 {
    let hi = u64::from_le_bytes(digits8((x / 100_000_000) as u32));
    let lo = u64::from_le_bytes(digits8((x % 100_000_000) as u32));
    (u128::from(lo) << 64) | u128::from(hi)
}

/// `x` as 8 lowercase hex digits, most significant first, without a table: each nibble is
/// spread into a byte of a `u64`, and the ten-and-above ones are moved to `a`–`f`.
pub(super) fn hex8(x: u32) -> [u8; 8] {
    let x = u64::from(x);
    let x = ((x & 0xffff_0000) << 16) | (x & 0xffff);
    let x = ((x & 0x0000_ff00_0000_ff00) << 8) | (x & 0x0000_00ff_0000_00ff);
    let x = ((x & 0x00f0_00f0_00f0_00f0) << 4) | (x & 0x000f_000f_000f_000f);
    // 1 in each byte whose nibble is 10 or more.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    (x + 0x3030_3030_3030_3030 + letters * u64::from(b'a' - b'0' - 10)).to_be_bytes()
}

/// The 32 lowercase hex digits of `b`, 8 per `u64`, first digit in the low byte.
#[inline(always)]
pub(super) fn hex32(b: &[u8; 16]) -> [u64; 4] {
    // Written out, not `[0, 4, 8, 12].map(..)`: the array `map` was left as an out-of-line
    // loop, 500 instructions a body.
    let word = |i: usize| {
        let w = u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        u64::from_le_bytes(hex8(w))
    };
    [word(0), word(4), word(8), word(12)]
}

/// The hyphenated lowercase form of `x` (`8-4-4-4-12`), as `uuid`'s `hyphenated()` writes it.
#[inline(always)]
pub fn hyphenated(x: uuid::Uuid) -> [u8; 36] {
    let [c0, c1, c2, c3] = hex32(x.as_bytes());
    let (c0, c1, c2, c3) = (
        c0.to_le_bytes(),
        c1.to_le_bytes(),
        c2.to_le_bytes(),
        c3.to_le_bytes(),
    );
    let mut out = [b'-'; 36];
    out[..8].copy_from_slice(&c0);
    out[9..13].copy_from_slice(&c1[..4]);
    out[14..18].copy_from_slice(&c1[4..]);
    out[19..23].copy_from_slice(&c2[..4]);
    out[24..28].copy_from_slice(&c2[4..]);
    out[28..].copy_from_slice(&c3);
    out
}

/// The last 17 characters of [`hyphenated`] (`xxxx-xxxxxxxxxxxx`, from bytes 8–15), for a
/// caller that already has the first 19.
pub fn hyphenated_tail(x: &uuid::Uuid) -> [u8; 17] {
    let b = x.as_bytes();
    let hi = hex8(u32::from_be_bytes([b[8], b[9], b[10], b[11]]));
    let lo = hex8(u32::from_be_bytes([b[12], b[13], b[14], b[15]]));
    let mut out = [b'-'; 17];
    out[..4].copy_from_slice(&hi[..4]);
    out[5..9].copy_from_slice(&hi[4..]);
    out[9..].copy_from_slice(&lo);
    out
}
