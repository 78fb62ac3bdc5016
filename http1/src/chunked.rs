//! The `Transfer-Encoding: chunked` body decoder, trailers included: a byte-wise state
//! machine tolerant of any split of the input across reads.

/// A chunked body that breaks the grammar or a limit (a size past 64 bits, an extension past
/// 4 KiB, trailers past 64 KiB, a missing line end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadChunk;

/// Longest chunk extension (after the size, up to the end of the line), bytes.
const MAX_CHUNK_EXT: u32 = 4 * 1024;
/// Longest trailer section, bytes (the head limit, as for the head).
const MAX_TRAILERS: u32 = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading the hex size.
    Size,
    /// Inside a chunk extension, up to the end of the size line.
    Ext,
    /// Saw CR after the size; expecting LF.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// After chunk data; expecting CR (or a bare LF).
    DataCr,
    /// After chunk data and CR; expecting LF.
    DataLf,
    /// At the start of a trailer line (or of the final blank line).
    TrailerStart,
    /// Inside a trailer field line.
    TrailerLine,
    /// Saw CR on the final blank line; expecting LF.
    EndLf,
    /// The body is complete.
    Done,
}

/// Incremental decoder for a `Transfer-Encoding: chunked` body, trailers included.
#[derive(Debug, Clone)]
pub struct Chunked {
    state: ChunkState,
    /// The size being read, then the data left in the current chunk.
    size: u64,
    digits: u8,
    /// Bytes of the current chunk extension, then of the trailer section (both bounded).
    extra: u32,
}

impl Default for Chunked {
    fn default() -> Self {
        Self {
            state: ChunkState::Size,
            size: 0,
            digits: 0,
            extra: 0,
        }
    }
}

impl Chunked {
    /// Whether the terminating chunk and trailers have been read.
    pub fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Decode as much of `input` as possible, appending data to `out` while `out` is shorter
    /// than `cap` (the rest is read and dropped). Returns the bytes consumed; it stops right
    /// after the end of the body, so any further bytes are not part of it.
    pub fn decode(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        cap: usize,
    ) -> Result<usize, BadChunk> {
        let mut i = 0;
        while i < input.len() && self.state != ChunkState::Done {
            if self.state == ChunkState::Data {
                let n = (input.len() - i).min(usize::try_from(self.size).unwrap_or(usize::MAX));
                append_capped(out, &input[i..i + n], cap);
                i += n;
                self.size -= n as u64;
                if self.size == 0 {
                    self.state = ChunkState::DataCr;
                }
                continue;
            }
            let b = input[i];
            i += 1;
            if matches!(
                self.state,
                ChunkState::Ext | ChunkState::TrailerStart | ChunkState::TrailerLine
            ) {
                self.extra += 1;
                let limit = if self.state == ChunkState::Ext {
                    MAX_CHUNK_EXT
                } else {
                    MAX_TRAILERS
                };
                if self.extra > limit {
                    return Err(BadChunk);
                }
            }
            self.state = match (self.state, b) {
                (ChunkState::Size, b) if b.is_ascii_hexdigit() => {
                    if self.size > u64::MAX >> 4 {
                        return Err(BadChunk);
                    }
                    self.size = self.size << 4 | u64::from(hex_value(b));
                    self.digits = self.digits.saturating_add(1);
                    ChunkState::Size
                }
                (ChunkState::Size, b';' | b' ' | b'\t') => ChunkState::Ext,
                (ChunkState::Size, b'\r') => ChunkState::SizeLf,
                (ChunkState::Size | ChunkState::Ext | ChunkState::SizeLf, b'\n') => {
                    self.end_of_size_line()?
                }
                (ChunkState::Size, _) => return Err(BadChunk),
                (ChunkState::Ext, _) => ChunkState::Ext,
                (ChunkState::SizeLf, _) => return Err(BadChunk),
                (ChunkState::DataCr, b'\r') => ChunkState::DataLf,
                (ChunkState::DataCr | ChunkState::DataLf, b'\n') => {
                    self.size = 0;
                    self.digits = 0;
                    self.extra = 0;
                    ChunkState::Size
                }
                (ChunkState::DataCr | ChunkState::DataLf, _) => return Err(BadChunk),
                (ChunkState::TrailerStart, b'\r') => ChunkState::EndLf,
                (ChunkState::TrailerStart | ChunkState::EndLf, b'\n') => ChunkState::Done,
                (ChunkState::TrailerLine, b'\n') => ChunkState::TrailerStart,
                (ChunkState::TrailerStart | ChunkState::TrailerLine, _) => ChunkState::TrailerLine,
                (ChunkState::EndLf, _) => return Err(BadChunk),
                // Data is copied in bulk above and the loop stops at Done.
                (ChunkState::Data | ChunkState::Done, _) => self.state,
            };
        }
        Ok(i)
    }

    fn end_of_size_line(&mut self) -> Result<ChunkState, BadChunk> {
        if self.digits == 0 {
            return Err(BadChunk);
        }
        self.extra = 0;
        Ok(if self.size == 0 {
            ChunkState::TrailerStart
        } else {
            ChunkState::Data
        })
    }
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// Append `data` to `out`, keeping at most `cap` bytes in `out`.
#[inline]
pub fn append_capped(out: &mut Vec<u8>, data: &[u8], cap: usize) {
    let room = cap.saturating_sub(out.len());
    out.extend_from_slice(&data[..data.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = b"5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\nNEXT";

    /// Decode `input` fed in the given pieces; returns (body, bytes consumed).
    fn decode_pieces(pieces: &[&[u8]]) -> (Vec<u8>, usize) {
        let mut dec = Chunked::default();
        let mut out = Vec::new();
        let mut used = 0;
        for p in pieces {
            let n = dec.decode(p, &mut out, usize::MAX).unwrap();
            used += n;
            if dec.is_done() {
                break;
            }
            assert_eq!(n, p.len(), "a piece is consumed whole before the end");
        }
        assert!(dec.is_done());
        (out, used)
    }

    #[test]
    fn chunked_every_split_and_byte_by_byte() {
        let want = (b"helloabcdefghijklmnopqrstuvwxyz".to_vec(), BODY.len() - 4);
        assert_eq!(decode_pieces(&[BODY]), want);
        for i in 0..BODY.len() {
            let (a, b) = BODY.split_at(i);
            assert_eq!(decode_pieces(&[a, b]), want, "split at {i}");
        }
        let bytes: Vec<&[u8]> = BODY.chunks(1).collect();
        assert_eq!(decode_pieces(&bytes), want);
    }

    #[test]
    fn chunked_bare_lf_and_no_trailers() {
        assert_eq!(decode_pieces(&[b"3\nabc\n0\n\n"]), (b"abc".to_vec(), 9));
        assert_eq!(decode_pieces(&[b"0\r\n\r\n"]), (Vec::new(), 5));
    }

    #[test]
    fn chunked_cap_drops_but_consumes() {
        let mut dec = Chunked::default();
        let mut out = Vec::new();
        let n = dec.decode(BODY, &mut out, 7).unwrap();
        assert_eq!(
            (out.as_slice(), n, dec.is_done()),
            (&b"helloab"[..], BODY.len() - 4, true)
        );
    }

    #[test]
    fn chunked_errors() {
        for bad in [
            &b"x\r\n"[..],
            b"\r\n",
            b"3\r\nabcX",
            b"3\rX",
            b"0\r\n\rX",
            b"11111111111111111\r\n",
            &[b"1;".as_slice(), &[b'x'; 5000]].concat(),
            &[b"0\r\n".as_slice(), &b"X: y\r\n".repeat(12_000)].concat(),
        ] {
            let mut dec = Chunked::default();
            assert!(
                dec.decode(bad, &mut Vec::new(), usize::MAX).is_err(),
                "{bad:?}"
            );
        }
    }
}
