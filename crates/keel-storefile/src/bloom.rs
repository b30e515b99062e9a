//! Bloom filters: one bit array per file and kind, k probes by double hashing
//! (Kirsch–Mitzenmacher) of a 64-bit hash, sized for the configured error rate (HBase
//! `io.storefile.bloom.error.rate` = 0.01). Never a false negative.

use std::path::Path;

use bytes::{BufMut, Bytes};

use crate::error::Result;
use crate::format::Cursor;

/// Which keys the general bloom filter holds (HBase `BLOOMFILTER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BloomType {
    /// No bloom filter.
    None,
    /// Rows (HBase's default).
    #[default]
    Row,
    /// Row, family and qualifier.
    RowCol,
}

impl BloomType {
    pub(crate) fn code(self) -> u8 {
        match self {
            BloomType::None => 0,
            BloomType::Row => 1,
            BloomType::RowCol => 2,
        }
    }
    pub(crate) fn from_code(code: u8) -> Option<BloomType> {
        match code {
            0 => Some(BloomType::None),
            1 => Some(BloomType::Row),
            2 => Some(BloomType::RowCol),
            _ => None,
        }
    }
}

/// A 64-bit hash of `parts` (length-delimited, so ("ab","c") ≠ ("a","bc")).
pub(crate) fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    for part in parts {
        h = mix(h ^ part.len() as u64);
        let mut chunks = part.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = mix(h ^ w);
        }
        let mut tail = 0u64;
        for (i, b) in chunks.remainder().iter().enumerate() {
            tail |= u64::from(*b) << (8 * i);
        }
        h = mix(h ^ tail ^ 0x80);
    }
    mix(h)
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Collects key hashes while a file is written.
#[derive(Debug, Default)]
pub(crate) struct BloomBuilder {
    hashes: Vec<u64>,
}

impl BloomBuilder {
    pub(crate) fn add(&mut self, h: u64) {
        // Keys arrive sorted, so repeats (a row's many cells) are adjacent.
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Serializes the filter: bits (u64), probes (u32), keys (u64), then the bit array.
    pub(crate) fn finish(mut self, error_rate: f64) -> Vec<u8> {
        self.hashes.sort_unstable();
        self.hashes.dedup();
        let n = self.hashes.len().max(1) as f64;
        let p = error_rate.clamp(1e-9, 0.5);
        let ln2 = std::f64::consts::LN_2;
        let bits = ((-n * p.ln() / (ln2 * ln2)).ceil() as u64).max(64);
        let probes = ((bits as f64 / n) * ln2).round().clamp(1.0, 30.0) as u32;
        let mut array = vec![0u8; bits.div_ceil(8) as usize];
        for &h in &self.hashes {
            for bit in probe_bits(h, bits, probes) {
                array[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        let mut out = Vec::with_capacity(array.len() + 20);
        out.put_u64_le(bits);
        out.put_u32_le(probes);
        out.put_u64_le(self.hashes.len() as u64);
        out.put_slice(&array);
        out
    }
}

fn probe_bits(h: u64, bits: u64, probes: u32) -> impl Iterator<Item = u64> {
    let h1 = h & 0xFFFF_FFFF;
    let h2 = (h >> 32) | 1;
    (0..u64::from(probes)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % bits)
}

/// A loaded filter.
#[derive(Debug, Clone)]
pub(crate) struct Bloom {
    bits: u64,
    probes: u32,
    keys: u64,
    array: Bytes,
}

impl Bloom {
    pub(crate) fn parse(path: &Path, offset: u64, payload: Bytes) -> Result<Bloom> {
        let mut c = Cursor::new(&payload, path, offset);
        let bits = c.u64()?;
        let probes = c.u32()?;
        let keys = c.u64()?;
        let header = c.pos;
        if bits == 0
            || probes == 0
            || probes > 30
            || bits.div_ceil(8) != (payload.len() - header) as u64
        {
            return Err(c.fail("bloom filter sizes disagree"));
        }
        Ok(Bloom {
            bits,
            probes,
            keys,
            array: payload.slice(header..),
        })
    }

    /// False means the key is certainly absent.
    pub(crate) fn may_contain(&self, h: u64) -> bool {
        probe_bits(h, self.bits, self.probes)
            .all(|bit| self.array[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }

    /// Keys the filter was built from.
    pub(crate) fn keys(&self) -> u64 {
        self.keys
    }
}
