//! Where a running level keeps its closed seconds' encoded histograms and timeline buckets: an
//! unnamed temporary file, so the level's memory stays flat however long it runs
//! (docs/soak.md).
//!
//! Each closed second is appended once; memory keeps a 16 B index entry per second, and a
//! second closed again is read back, added and appended anew. [`SecondSpill::finish`] reads
//! the file back into the same values in-memory lists give. When no temporary file can be
//! made or written, the seconds stay in memory: the report is the same.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::second_list::{add_encoded, SecondHistograms};
use super::TimelineBucket;

/// Bytes of a timeline bucket at the start of each record.
const BUCKET: usize = 32;

/// One second's newest record in the file: offset + 1 (0: the second has no record) and the
/// byte lengths of its two strings, which follow its timeline bucket.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    off1: u64,
    latency: u32,
    corrected: u32,
}

/// One second's record: its timeline bucket and its two encoded histograms.
type Record = (TimelineBucket, String, String);

/// The closed seconds of one level: in a file when one could be made, else in memory.
#[derive(Debug, Default)]
pub struct SecondSpill {
    file: Option<File>,
    /// Set once making or writing the file failed: everything is in `memory` from then on.
    in_memory: bool,
    end: u64,
    index: Vec<Entry>,
    /// Seconds + 1 of the latest second with a corrected histogram (0: none).
    corrected_len: usize,
    memory: SecondHistograms,
    /// The timeline while the seconds are in memory.
    memory_timeline: Vec<TimelineBucket>,
}

impl SecondSpill {
    /// Add second `sec`'s timeline bucket and encoded histograms (`""` for an empty one;
    /// `corrected` is `None` in the closed model) to what the level holds for it.
    pub fn put(
        &mut self,
        sec: usize,
        bucket: TimelineBucket,
        latency: String,
        corrected: Option<String>,
    ) {
        if self.file.is_none() && !self.in_memory {
            match tempfile::tempfile() {
                Ok(f) => self.file = Some(f),
                Err(e) => self.fall_back(&e),
            }
        }
        if !self.in_memory {
            match self.append(sec, bucket, latency.clone(), corrected.clone()) {
                Ok(()) => return,
                Err(e) => self.fall_back(&e),
            }
        }
        self.memory.put_encoded(sec, latency, corrected);
        if self.memory_timeline.len() <= sec {
            self.memory_timeline
                .resize(sec + 1, TimelineBucket::default());
        }
        self.memory_timeline[sec] += &bucket;
    }

    fn append(
        &mut self,
        sec: usize,
        mut bucket: TimelineBucket,
        mut latency: String,
        corrected: Option<String>,
    ) -> std::io::Result<()> {
        let file = self.file.as_ref().expect("put made the file");
        let had = self.index.get(sec).copied().unwrap_or_default();
        let mut corrected_s = corrected.clone().unwrap_or_default();
        if had.off1 > 0 {
            // The older record first, then the new one added: the order the in-memory list
            // adds in, so the encoding is the same.
            let (old_bucket, mut old_latency, mut old_corrected) = read(file, had)?;
            add_encoded(&mut old_latency, &latency);
            add_encoded(&mut old_corrected, &corrected_s);
            bucket += &old_bucket;
            (latency, corrected_s) = (old_latency, old_corrected);
        }
        let mut bytes = bucket.to_bytes().to_vec();
        bytes.extend_from_slice(latency.as_bytes());
        bytes.extend_from_slice(corrected_s.as_bytes());
        file.write_all_at(&bytes, self.end)?;
        if self.index.len() <= sec {
            self.index.resize(sec + 1, Entry::default());
        }
        self.index[sec] = Entry {
            off1: self.end + 1,
            latency: latency.len() as u32,
            corrected: corrected_s.len() as u32,
        };
        self.end += bytes.len() as u64;
        if corrected.is_some() {
            self.corrected_len = self.corrected_len.max(sec + 1);
        }
        Ok(())
    }

    /// Move what the file holds into memory and keep everything there from now on.
    fn fall_back(&mut self, why: &std::io::Error) {
        tracing::warn!(
            "per-second histograms stay in memory (the temporary file failed: {why}); \
             memory grows with the level's length"
        );
        self.in_memory = true;
        (self.memory, self.memory_timeline) = self.take_file();
    }

    /// The file's seconds as the in-memory lists, and the file closed.
    fn take_file(&mut self) -> (SecondHistograms, Vec<TimelineBucket>) {
        let mut out = SecondHistograms::default();
        let mut timeline = Vec::new();
        let Some(file) = self.file.take() else {
            return (out, timeline);
        };
        for (sec, e) in std::mem::take(&mut self.index).into_iter().enumerate() {
            // A read of an unlinked file this process wrote fails only on a device error;
            // the second is then reported empty rather than the run stopped.
            let (bucket, latency, corrected) = read(&file, e).unwrap_or_else(|err| {
                tracing::warn!("per-second histograms: second {sec} unreadable: {err}");
                Default::default()
            });
            timeline.push(bucket);
            out.latency.push(latency);
            if sec < self.corrected_len {
                out.corrected.push(corrected);
            }
        }
        self.end = 0;
        self.corrected_len = 0;
        (out, timeline)
    }

    /// Everything put, as the list of histograms and the timeline (the file, if any, is read
    /// back and closed).
    pub fn finish(&mut self) -> (SecondHistograms, Vec<TimelineBucket>) {
        let (mut out, mut timeline) = self.take_file();
        out += &std::mem::take(&mut self.memory);
        let memory = std::mem::take(&mut self.memory_timeline);
        if timeline.len() < memory.len() {
            timeline.resize(memory.len(), TimelineBucket::default());
        }
        for (a, b) in timeline.iter_mut().zip(&memory) {
            *a += b;
        }
        (out, timeline)
    }

    /// Bytes of encoded histograms held in memory (0 while the file holds them): what the
    /// tests check stays flat.
    #[cfg(test)]
    pub fn memory_bytes(&self) -> usize {
        let m = &self.memory;
        m.latency.iter().chain(&m.corrected).map(String::len).sum()
    }
}

/// The timeline bucket and two strings of entry `e` (a second without a record: empty).
fn read(file: &File, e: Entry) -> std::io::Result<Record> {
    let Some(off) = e.off1.checked_sub(1) else {
        return Ok(Default::default());
    };
    let mut buf = vec![0u8; BUCKET + (e.latency + e.corrected) as usize];
    file.read_exact_at(&mut buf, off)?;
    let mut latency = buf.split_off(BUCKET);
    let bucket = TimelineBucket::from_bytes(buf[..].try_into().expect("32 bytes"));
    let corrected = latency.split_off(e.latency as usize);
    let utf8 = |b: Vec<u8>| {
        String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    };
    Ok((bucket, utf8(latency)?, utf8(corrected)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, record, to_base64};

    /// Second `sec`'s `n`-th put: a few latencies that differ by second and by put, and the
    /// timeline bucket of the raw ones.
    fn encoded(sec: usize, n: u64) -> (TimelineBucket, String, String) {
        let (mut raw, mut corrected) = (new_histogram(), new_histogram());
        let mut bucket = TimelineBucket::default();
        for i in 0..(3 + sec as u64 % 5) {
            let us = 100 + 37 * i + 1000 * n + sec as u64;
            record(&mut raw, us);
            bucket.record(us, i % 2 == 1);
            record(&mut corrected, 150 + 41 * i + 1000 * n + sec as u64);
        }
        (
            bucket,
            to_base64(&raw).unwrap(),
            to_base64(&corrected).unwrap(),
        )
    }

    /// Twelve seconds, second 7 empty, seconds 2 and 5 closed again later (stragglers), and
    /// corrected histograms only up to second 9: the file gives exactly the in-memory list,
    /// and memory holds no histogram bytes while the file does.
    fn puts() -> Vec<(usize, TimelineBucket, String, Option<String>)> {
        let mut out = Vec::new();
        for sec in 0..12 {
            let (bucket, raw, corrected) = if sec == 7 {
                Default::default()
            } else {
                encoded(sec, 0)
            };
            out.push((sec, bucket, raw, (sec < 10).then_some(corrected)));
            if sec == 8 {
                for again in [2, 5] {
                    let (bucket, raw, corrected) = encoded(again, 1);
                    out.push((again, bucket, raw, Some(corrected)));
                }
            }
        }
        out
    }

    /// What the in-memory lists give: the histograms added by `put_encoded`, the buckets
    /// second by second.
    fn reference() -> (SecondHistograms, Vec<TimelineBucket>) {
        let mut want = SecondHistograms::default();
        let mut timeline = vec![TimelineBucket::default(); 12];
        for (sec, bucket, raw, corrected) in puts() {
            want.put_encoded(sec, raw, corrected);
            timeline[sec] += &bucket;
        }
        (want, timeline)
    }

    #[test]
    fn the_file_gives_back_exactly_the_in_memory_list() {
        let mut spill = SecondSpill::default();
        for (sec, bucket, raw, corrected) in puts() {
            spill.put(sec, bucket, raw, corrected);
            assert!(spill.file.is_some(), "a temporary file is made");
            assert_eq!(spill.memory_bytes(), 0);
            assert!(spill.memory_timeline.is_empty());
        }
        let (want, timeline) = reference();
        assert_eq!((want.latency.len(), want.corrected.len()), (12, 10));
        assert_ne!(want.latency[2], encoded(2, 0).1, "the straggler was added");
        assert_eq!(timeline[2].count, 2 * encoded(2, 0).0.count);
        assert!(timeline[7].is_empty() && !timeline[11].is_empty());
        assert_eq!(spill.finish(), (want, timeline));
        assert!(spill.file.is_none(), "finish closes the file");
    }

    #[test]
    fn a_file_that_fails_moves_everything_to_memory_and_loses_nothing() {
        let mut spill = SecondSpill::default();
        let all = puts();
        let (before, after) = all.split_at(5);
        for (sec, bucket, raw, corrected) in before.iter().cloned() {
            spill.put(sec, bucket, raw, corrected);
        }
        spill.fall_back(&std::io::Error::other("a full disk, say"));
        assert!(spill.file.is_none() && spill.in_memory);
        assert!(spill.memory_bytes() > 0);
        for (sec, bucket, raw, corrected) in after.iter().cloned() {
            spill.put(sec, bucket, raw, corrected);
        }
        assert_eq!(spill.finish(), reference());
    }

    #[test]
    fn a_bucket_survives_its_bytes() {
        let b = TimelineBucket {
            count: 7,
            errors: 2,
            sum_us: u64::MAX - 3,
            max_us: 1 << 40,
        };
        assert_eq!(TimelineBucket::from_bytes(&b.to_bytes()), b);
    }
}
