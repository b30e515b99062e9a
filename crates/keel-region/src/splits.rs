//! Split keys for pre-split tables: HBase's `RegionSplitter` algorithms.
//!
//! ```
//! let keys = keel_region::splits::hex_string(4);
//! assert_eq!(keys, ["40000000", "80000000", "c0000000"]);
//! let keys = keel_region::splits::uniform(2);
//! assert_eq!(&keys[0][..], &[0x80, 0, 0, 0, 0, 0, 0, 0]);
//! ```

use bytes::Bytes;

/// `HexStringSplit`: `regions` regions over row keys that are 8 lowercase hex digits
/// ("00000000" to "ffffffff"), as an MD5-prefixed or hashed key space has: `regions - 1` keys.
pub fn hex_string(regions: u32) -> Vec<Bytes> {
    even(regions, u64::from(u32::MAX) + 1)
        .into_iter()
        .map(|k| Bytes::from(format!("{k:08x}")))
        .collect()
}

/// `UniformSplit`: `regions` regions over the whole space of 8-byte keys (uniformly random
/// binary row keys): `regions - 1` keys, each 8 bytes big-endian.
pub fn uniform(regions: u32) -> Vec<Bytes> {
    even(regions, u128::from(u64::MAX) + 1)
        .into_iter()
        .map(|k| Bytes::copy_from_slice(&(k as u64).to_be_bytes()))
        .collect()
}

/// The `regions - 1` boundaries splitting [0, space) into `regions` equal parts.
fn even<T: Into<u128> + Copy>(regions: u32, space: T) -> Vec<u128> {
    let space: u128 = space.into();
    (1..u128::from(regions.max(1)))
        .map(|i| space * i / u128::from(regions))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_ordered_distinct_and_as_many_as_asked() {
        for n in [1, 2, 3, 8, 100, 1000] {
            for keys in [hex_string(n), uniform(n)] {
                assert_eq!(keys.len(), n as usize - 1);
                assert!(keys.windows(2).all(|w| w[0] < w[1]));
            }
        }
        assert_eq!(uniform(4)[1][..], [0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(hex_string(16)[0], "10000000");
    }
}
