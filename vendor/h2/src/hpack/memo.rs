//! hubload patch: the decoder's memory of recently decoded literal values.
//!
//! A peer that does not index a field (nginx sends every response field as a literal without
//! indexing) repeats the same encoded bytes on every response: `server`, `content-type`, the
//! same `date` for a second. Decoding them (Huffman, validation, a copy) was about a quarter of
//! an HTTP/2 client's instructions per request in hubload's benchmark. Decoding is a pure
//! function of the name and the encoded bytes, so the header decoded the first time is reused
//! when the same static-table name arrives with the same encoded value again.
//!
//! Only names from the static table are remembered: a dynamic-table index names a different
//! field once the table moves. Never-indexed fields are not remembered either (the caller
//! leaves them out): they carry secrets.

use super::Header;

/// How many values are remembered; the oldest is replaced first.
const SLOTS: usize = 8;

/// Encoded values longer than this (length prefix included) are not remembered.
pub(super) const MAX_RAW: usize = 64;

#[derive(Debug, Default)]
pub(super) struct Memo {
    slots: [Option<Entry>; SLOTS],
    next: usize,
}

#[derive(Debug)]
struct Entry {
    /// The name's index in the static table (1..=61).
    index: u8,
    len: u8,
    /// The value as encoded: its length prefix (with the Huffman flag) and its octets.
    raw: [u8; MAX_RAW],
    header: Header,
}

impl Memo {
    /// The header decoded before from static name `index` and the encoded value `raw`.
    pub(super) fn get(&self, index: usize, raw: &[u8]) -> Option<Header> {
        self.slots
            .iter()
            .flatten()
            .find(|e| usize::from(e.index) == index && &e.raw[..usize::from(e.len)] == raw)
            .map(|e| e.header.clone())
    }

    /// Remember `header`, decoded from static name `index` and the encoded value `raw`.
    pub(super) fn put(&mut self, index: usize, raw: &[u8], header: &Header) {
        let (Ok(index), Ok(len)) = (u8::try_from(index), u8::try_from(raw.len())) else {
            return;
        };
        if raw.len() > MAX_RAW || index == 0 || index > 61 {
            return;
        }
        let mut entry = Entry {
            index,
            len,
            raw: [0; MAX_RAW],
            header: header.clone(),
        };
        entry.raw[..raw.len()].copy_from_slice(raw);
        self.slots[self.next] = Some(entry);
        self.next = (self.next + 1) % SLOTS;
    }
}
