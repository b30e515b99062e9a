//! A file-block cache on keel-blockcache alone: four threads read random 4 KiB blocks of a
//! 1 MiB file through an LRU cache with room for half of it. A block is read from the file
//! only on a miss, and only once however many threads miss it together (single-flight
//! loading); every block returned is checked against the file.
//!
//! `cargo run -p keel-blockcache --example file_blocks`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::error::Error;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use keel_blockcache::{BlockCache, BlockCacheExt, BlockKey, LruBlockCache, LruOptions};

const BLOCK: u64 = 4096;
const BLOCKS: u64 = 256;

/// The byte at `offset` of the file: a pattern, so any block can be checked.
fn byte_at(offset: u64) -> u8 {
    (offset.wrapping_mul(31) ^ (offset >> 12)) as u8
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("data");
    let contents: Vec<u8> = (0..BLOCK * BLOCKS).map(byte_at).collect();
    std::fs::write(&path, &contents)?;
    let file = std::fs::File::open(&path)?;

    let options = LruOptions {
        capacity_bytes: BLOCK * BLOCKS / 2,
        ..LruOptions::default()
    };
    // The evictor runs in the background (HBase's default), so the cache may pass its
    // capacity until it catches up, but never its hard limit: inserts are refused above it.
    let hard_limit = (options.capacity_bytes as f64 * options.hard_limit_factor) as u64;
    let cache = LruBlockCache::new(options);
    let file_reads = AtomicU64::new(0);
    let read_block = |offset: u64| -> std::io::Result<Bytes> {
        file_reads.fetch_add(1, Ordering::Relaxed);
        let mut buf = vec![0u8; BLOCK as usize];
        file.read_exact_at(&mut buf, offset)?;
        Ok(Bytes::from(buf))
    };
    let reads_per_thread = 5_000u64;
    std::thread::scope(|s| -> Result<(), String> {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let (cache, read_block) = (&cache, &read_block);
                s.spawn(move || -> Result<(), String> {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                    for _ in 0..reads_per_thread {
                        // A skewed choice (xorshift; low blocks far more often), as real reads are.
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let n = (x % BLOCKS) * (x % BLOCKS) / BLOCKS;
                        let key = BlockKey {
                            file_id: 1,
                            offset: n * BLOCK,
                        };
                        let block = cache
                            .get_or_load(key, false, || read_block(key.offset))
                            .map_err(|e| e.to_string())?;
                        let expected = (key.offset..key.offset + BLOCK).map(byte_at);
                        if !block.iter().copied().eq(expected) {
                            return Err(format!("block at {} differs from the file", key.offset));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| "a reader panicked".to_string())??;
        }
        Ok(())
    })?;

    let stats = cache.stats();
    let reads = file_reads.load(Ordering::Relaxed);
    let total = 4 * reads_per_thread;
    println!(
        "{total} block reads: {} from the cache, {reads} from the file (hit ratio {:.3}), {} blocks cached",
        total - reads,
        stats.hit_ratio(),
        stats.blocks
    );
    if stats.size_bytes > hard_limit {
        return Err(format!(
            "the cache holds {} bytes, over its hard limit {hard_limit}",
            stats.size_bytes
        )
        .into());
    }
    if reads >= total / 2 {
        return Err(
            format!("{reads} of {total} reads went to the file: the cache did not help").into(),
        );
    }
    Ok(())
}
