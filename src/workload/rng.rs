//! A tiny portable PRNG (SplitMix64), so the event stream is identical on every platform and build.

/// SplitMix64 (Steele, Lea, Flood 2014): one u64 of state, full period, good enough for picking.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator for sequence number `seq` of stream `seed`: independent streams per event,
    /// so any event can be produced without producing the ones before it.
    pub fn for_event(seed: u64, seq: u64) -> Self {
        let mut s = SplitMix64(seed ^ 0x6a09_e667_f3bc_c909);
        let base = s.next_u64();
        SplitMix64(base ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift (Lemire), bias below 2^-32 for our n.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A random (version 4) UUID.
    pub fn uuid(&mut self) -> uuid::Uuid {
        let hi = self.next_u64().to_be_bytes();
        let lo = self.next_u64().to_be_bytes();
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&hi);
        b[8..].copy_from_slice(&lo);
        uuid::Builder::from_random_bytes(b).into_uuid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_independent_per_event() {
        let a: Vec<u64> = (0..4)
            .map(|i| SplitMix64::for_event(7, i).next_u64())
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|i| SplitMix64::for_event(7, i).next_u64())
            .collect();
        assert_eq!(a, b);
        let mut d = a.clone();
        d.dedup();
        assert_eq!(d.len(), 4);
        assert_ne!(SplitMix64::for_event(8, 0).next_u64(), a[0]);
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = SplitMix64::for_event(1, 1);
        let mut hist = [0u32; 10];
        for _ in 0..100_000 {
            hist[r.below(10) as usize] += 1;
        }
        for h in hist {
            assert!((9_000..11_000).contains(&h), "{hist:?}");
        }
    }
}
