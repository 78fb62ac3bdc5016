//! Bitmaps over sequence numbers: a plain one per subscriber, an atomic one for the publisher side.
//!
//! Both index `seq − base`, where `base` is the first sequence number of the level, and both
//! stop at [`MAX_SPAN`] sequence numbers per level (32 MiB of bits at most): memory is one
//! bit per sequence number of the level, never a set of ids.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// Sequence numbers one level can span (2^28).
pub const MAX_SPAN: u64 = 1 << 28;

/// Bits per chunk of an [`AtomicBitmap`] (2^16: 8 KiB).
const CHUNK_BITS: u64 = 1 << 16;
const CHUNK_WORDS: usize = (CHUNK_BITS / 64) as usize;

/// A growable bitmap over `base..base + MAX_SPAN`, for one owner.
#[derive(Debug, Clone, Default)]
pub struct SeqBitmap {
    base: u64,
    words: Vec<u64>,
    ones: u64,
}

impl SeqBitmap {
    /// Empty, starting at `base`.
    pub fn new(base: u64) -> Self {
        SeqBitmap {
            base,
            words: Vec::new(),
            ones: 0,
        }
    }

    /// The bit index of `seq`, when it is in range.
    fn index(&self, seq: u64) -> Option<u64> {
        seq.checked_sub(self.base).filter(|i| *i < MAX_SPAN)
    }

    /// Whether `seq` falls in this bitmap's range.
    pub fn covers(&self, seq: u64) -> bool {
        self.index(seq).is_some()
    }

    /// Set `seq`'s bit; true when it was clear. Out of range: false, nothing set.
    pub fn set(&mut self, seq: u64) -> bool {
        let Some(i) = self.index(seq) else {
            return false;
        };
        let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let fresh = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.ones += u64::from(fresh);
        fresh
    }

    /// Whether `seq`'s bit is set.
    pub fn get(&self, seq: u64) -> bool {
        self.index(seq).is_some_and(|i| {
            self.words
                .get((i / 64) as usize)
                .is_some_and(|w| w & (1 << (i % 64)) != 0)
        })
    }

    /// Bits set.
    pub fn ones(&self) -> u64 {
        self.ones
    }

    /// Clear every bit and start again at `base` (keeps the allocation).
    pub fn reset(&mut self, base: u64) {
        self.base = base;
        self.words.clear();
        self.ones = 0;
    }

    /// Set every bit that is set in `now` and clear in `before` (all three over the same base):
    /// what was added to a growing set between two snapshots of it.
    pub fn add_difference(&mut self, now: &SeqBitmap, before: &SeqBitmap) {
        debug_assert!(self.base == now.base && now.base == before.base);
        if self.words.len() < now.words.len() {
            self.words.resize(now.words.len(), 0);
        }
        for (w, (n, mine)) in now.words.iter().zip(self.words.iter_mut()).enumerate() {
            let added = n & !before.words.get(w).copied().unwrap_or(0);
            self.ones += u64::from((added & !*mine).count_ones());
            *mine |= added;
        }
    }
}

/// A bitmap over `base..base + MAX_SPAN` that many threads set at once without a lock.
/// Chunks of 8 KiB are allocated on first use.
#[derive(Debug)]
pub struct AtomicBitmap {
    base: AtomicU64,
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl Default for AtomicBitmap {
    fn default() -> Self {
        AtomicBitmap {
            base: AtomicU64::new(0),
            chunks: (0..MAX_SPAN / CHUNK_BITS)
                .map(|_| OnceLock::new())
                .collect(),
        }
    }
}

impl AtomicBitmap {
    fn index(&self, seq: u64) -> Option<u64> {
        seq.checked_sub(self.base.load(Relaxed))
            .filter(|i| *i < MAX_SPAN)
    }

    /// Set `seq`'s bit; true when it was clear. Out of range: false.
    pub fn set(&self, seq: u64) -> bool {
        let Some(i) = self.index(seq) else {
            return false;
        };
        let chunk = self.chunks[(i / CHUNK_BITS) as usize]
            .get_or_init(|| (0..CHUNK_WORDS).map(|_| AtomicU64::new(0)).collect());
        let j = i % CHUNK_BITS;
        let bit = 1u64 << (j % 64);
        chunk[(j / 64) as usize].fetch_or(bit, Relaxed) & bit == 0
    }

    /// Whether `seq`'s bit is set.
    pub fn get(&self, seq: u64) -> bool {
        self.index(seq).is_some_and(|i| {
            self.chunks[(i / CHUNK_BITS) as usize]
                .get()
                .is_some_and(|c| {
                    let j = i % CHUNK_BITS;
                    c[(j / 64) as usize].load(Relaxed) & (1 << (j % 64)) != 0
                })
        })
    }

    /// Call `f(seq)` for every set bit, in increasing order.
    pub fn for_each(&self, mut f: impl FnMut(u64)) {
        let base = self.base.load(Relaxed);
        for (c, chunk) in self.chunks.iter().enumerate() {
            let Some(chunk) = chunk.get() else { continue };
            for (w, word) in chunk.iter().enumerate() {
                let mut bits = word.load(Relaxed);
                while bits != 0 {
                    let b = u64::from(bits.trailing_zeros());
                    bits &= bits - 1;
                    f(base + c as u64 * CHUNK_BITS + w as u64 * 64 + b);
                }
            }
        }
    }

    /// A copy of the bits set so far (a bit set during the copy may or may not be in it).
    pub fn snapshot(&self) -> SeqBitmap {
        let base = self.base.load(Relaxed);
        let mut words = Vec::new();
        for (c, chunk) in self.chunks.iter().enumerate() {
            let Some(chunk) = chunk.get() else { continue };
            let at = c * CHUNK_WORDS;
            if words.len() < at + CHUNK_WORDS {
                words.resize(at + CHUNK_WORDS, 0);
            }
            for (w, word) in chunk.iter().enumerate() {
                words[at + w] = word.load(Relaxed);
            }
        }
        let used = words.iter().rposition(|w| *w != 0).map_or(0, |i| i + 1);
        words.truncate(used);
        let ones = words.iter().map(|w| u64::from(w.count_ones())).sum();
        SeqBitmap { base, words, ones }
    }

    /// Clear every bit and start at `base`. Only between levels: no `set` may run meanwhile.
    pub fn reset(&self, base: u64) {
        for chunk in self.chunks.iter().filter_map(OnceLock::get) {
            chunk.iter().for_each(|w| w.store(0, Relaxed));
        }
        self.base.store(base, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_and_their_difference_give_what_was_added_between() {
        let a = AtomicBitmap::default();
        a.reset(1_000);
        for seq in [1_000, 1_001, 1_000 + CHUNK_BITS + 5] {
            a.set(seq);
        }
        let before = a.snapshot();
        assert_eq!(before.ones(), 3);
        assert!(before.get(1_000 + CHUNK_BITS + 5) && !before.get(1_002));
        for seq in [1_002, 1_000 + 3 * CHUNK_BITS, 1_001] {
            a.set(seq);
        }
        let now = a.snapshot();
        let mut gap = SeqBitmap::new(1_000);
        gap.set(1_001); // already there: not counted twice
        gap.add_difference(&now, &before);
        let set: Vec<u64> = (1_000..1_000 + 4 * CHUNK_BITS)
            .filter(|s| gap.get(*s))
            .collect();
        assert_eq!(set, [1_001, 1_002, 1_000 + 3 * CHUNK_BITS]);
        assert_eq!(gap.ones(), 3);
    }

    #[test]
    fn seq_bitmap_sets_once_and_counts() {
        let mut b = SeqBitmap::new(100);
        assert!(!b.set(99), "below the base");
        assert!(b.set(100));
        assert!(!b.set(100), "second set is not fresh");
        assert!(b.set(100 + 64 * 3 + 5));
        assert!(!b.set(100 + MAX_SPAN), "beyond the span");
        assert!(b.get(100) && b.get(100 + 197) && !b.get(101) && !b.get(99));
        assert_eq!(b.ones(), 2);
        b.reset(0);
        assert_eq!((b.ones(), b.get(100)), (0, false));
        assert!(b.covers(0) && !b.covers(MAX_SPAN));
    }

    #[test]
    fn atomic_bitmap_matches_a_set() {
        let b = AtomicBitmap::default();
        b.reset(1_000);
        let seqs = [
            1_000,
            1_001,
            1_063,
            1_064,
            1_000 + CHUNK_BITS,
            1_000 + 3 * CHUNK_BITS + 7,
        ];
        for s in seqs {
            assert!(b.set(s));
            assert!(!b.set(s));
        }
        assert!(!b.set(999));
        let mut got = Vec::new();
        b.for_each(|s| got.push(s));
        assert_eq!(got, seqs);
        assert!(b.get(1_063) && !b.get(1_062));
        b.reset(0);
        let mut n = 0;
        b.for_each(|_| n += 1);
        assert_eq!(n, 0);
    }

    #[test]
    fn atomic_bitmap_from_many_threads() {
        let b = std::sync::Arc::new(AtomicBitmap::default());
        let fresh: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let b = b.clone();
                    s.spawn(move || (0..10_000u64).filter(|i| b.set(i * 3)).count() as u64)
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        // Every bit is fresh exactly once, whichever thread won it.
        assert_eq!(fresh, 10_000);
    }
}
