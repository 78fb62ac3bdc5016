//! SplitMix64 (Steele, Lea, Flood 2014): the one portable PRNG of the workspace.
//!
//! The event generator uses the sequential form ([`SplitMix64`]); the hub's fault draws and
//! the Service Bus emulator's throttling hash a (seed, sequence number) pair with the same
//! finaliser ([`mix`]) and map it to [0, 1) with [`unit()`]. Identical on every platform and build.

/// The SplitMix64 increment (the golden ratio, 2^64 / φ).
pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The SplitMix64 output function (a variant of MurmurHash3's 64-bit finaliser).
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The top 53 bits of `bits` as a uniform value in [0, 1).
pub fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// SplitMix64: one u64 of state, full period, good enough for picking.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose first output is `mix(state + GAMMA)`.
    pub const fn new(state: u64) -> Self {
        SplitMix64(state)
    }

    /// A generator for sequence number `seq` of stream `seed`: independent streams per event,
    /// so any event can be produced without producing the ones before it.
    pub fn for_event(seed: u64, seq: u64) -> Self {
        let mut s = SplitMix64(seed ^ 0x6a09_e667_f3bc_c909);
        let base = s.next_u64();
        SplitMix64(base ^ seq.wrapping_mul(GAMMA))
    }

    /// The part of [`for_event`](Self::for_event) that depends on `seed` only, for a caller
    /// that draws many events of one stream: `at(stream(seed), seq)` is `for_event(seed, seq)`
    /// with one [`mix`] fewer per event.
    pub fn stream(seed: u64) -> u64 {
        SplitMix64(seed ^ 0x6a09_e667_f3bc_c909).next_u64()
    }

    /// The generator for sequence number `seq` of the stream `stream` ([`stream`](Self::stream)).
    pub fn at(stream: u64, seq: u64) -> Self {
        SplitMix64(stream ^ seq.wrapping_mul(GAMMA))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift (Lemire), bias below 2^-32 for our n.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        unit(self.next_u64())
    }

    /// A random (version 4) UUID from the next 128 bits.
    #[cfg(feature = "uuid")]
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
    fn matches_the_reference_vector() {
        // Vigna's splitmix64.c seeded with 1234567: the first outputs.
        let mut r = SplitMix64::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
    }

    #[test]
    fn mix_of_zero_is_zero_and_unit_spans_the_interval() {
        assert_eq!(mix(0), 0);
        assert_eq!(unit(0), 0.0);
        assert_eq!(unit(u64::MAX), 1.0 - (1.0 / (1u64 << 53) as f64));
    }

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

    /// The two-step form against the one-step one, on edge and random (seed, seq).
    #[test]
    fn stream_then_at_is_for_event() {
        let mut r = SplitMix64::new(99);
        for i in 0..10_000u64 {
            let (seed, seq) = match i {
                0 => (0, 0),
                1 => (u64::MAX, u64::MAX),
                _ => (r.next_u64(), r.next_u64() >> (i % 64)),
            };
            let mut a = SplitMix64::for_event(seed, seq);
            let mut b = SplitMix64::at(SplitMix64::stream(seed), seq);
            for _ in 0..3 {
                assert_eq!(a.next_u64(), b.next_u64(), "{seed} {seq}");
            }
        }
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
