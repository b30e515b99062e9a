//! HBase's `BucketAllocator`, simplified: the area is cut into equal buckets; a bucket is given
//! to one size class when a block of that class needs room and no bucket of the class has a free
//! slot, and goes back to the free buckets when its last slot is freed, so space moves between
//! classes as the block-size mix changes.

/// HBase's default bucket sizes (`hbase.bucketcache.bucket.sizes`): each a power-of-two-ish block
/// size plus 1 KiB, so that a "64 KiB block plus its last cell" fits the 65 KiB class.
pub const DEFAULT_SIZE_CLASSES: [usize; 14] = [
    5 * 1024,
    9 * 1024,
    17 * 1024,
    33 * 1024,
    41 * 1024,
    49 * 1024,
    57 * 1024,
    65 * 1024,
    97 * 1024,
    129 * 1024,
    193 * 1024,
    257 * 1024,
    385 * 1024,
    513 * 1024,
];

#[derive(Debug)]
struct Bucket {
    /// The size class it serves, or `None` while completely free.
    class: Option<usize>,
    free_slots: Vec<u32>,
    used: u32,
}

#[derive(Debug)]
pub(crate) struct Allocator {
    classes: Vec<usize>,
    bucket_size: usize,
    buckets: Vec<Bucket>,
    /// Buckets with no class.
    free_buckets: Vec<usize>,
    /// Per class, buckets that have at least one free slot.
    partial: Vec<Vec<usize>>,
}

impl Allocator {
    /// An allocator over `capacity` bytes (rounded down to whole buckets of 4 × the largest
    /// class, as HBase does).
    pub(crate) fn new(capacity: usize, classes: &[usize]) -> Allocator {
        let mut classes = classes.to_vec();
        classes.sort_unstable();
        classes.dedup();
        let largest = classes.last().copied().unwrap_or(1).max(1);
        let bucket_size = 4 * largest;
        let count = capacity / bucket_size;
        Allocator {
            partial: vec![Vec::new(); classes.len()],
            classes,
            bucket_size,
            buckets: (0..count)
                .map(|_| Bucket {
                    class: None,
                    free_slots: Vec::new(),
                    used: 0,
                })
                .collect(),
            free_buckets: (0..count).rev().collect(),
        }
    }

    /// Bytes the area must have for these buckets.
    pub(crate) fn area_len(&self) -> usize {
        self.buckets.len() * self.bucket_size
    }

    /// The slot size a block of `len` bytes takes, or `None` if no class fits it.
    pub(crate) fn slot_size(&self, len: usize) -> Option<usize> {
        self.classes.iter().copied().find(|&c| c >= len)
    }

    /// A free slot for a block of `len` bytes: its offset, or `None` if the area is full for that
    /// class (the caller evicts and retries) or no class fits.
    pub(crate) fn allocate(&mut self, len: usize) -> Option<usize> {
        let class = self.classes.iter().position(|&c| c >= len)?;
        let slot_size = self.classes[class];
        let index = match self.partial[class].last().copied() {
            Some(index) => index,
            None => {
                let index = self.free_buckets.pop()?;
                let slots = (self.bucket_size / slot_size) as u32;
                let bucket = &mut self.buckets[index];
                bucket.class = Some(class);
                bucket.free_slots = (0..slots).rev().collect();
                self.partial[class].push(index);
                index
            }
        };
        let bucket = &mut self.buckets[index];
        let slot = bucket.free_slots.pop()?;
        bucket.used += 1;
        if bucket.free_slots.is_empty() {
            self.partial[class].retain(|&b| b != index);
        }
        Some(index * self.bucket_size + slot as usize * slot_size)
    }

    /// Frees the slot at `offset` (from [`Allocator::allocate`]).
    pub(crate) fn free(&mut self, offset: usize) {
        let index = offset / self.bucket_size;
        let Some(bucket) = self.buckets.get_mut(index) else {
            return;
        };
        let Some(class) = bucket.class else { return };
        let slot_size = self.classes[class];
        let slot = ((offset % self.bucket_size) / slot_size) as u32;
        let was_full = bucket.free_slots.is_empty();
        bucket.free_slots.push(slot);
        bucket.used -= 1;
        if bucket.used == 0 {
            bucket.class = None;
            bucket.free_slots = Vec::new();
            self.partial[class].retain(|&b| b != index);
            self.free_buckets.push(index);
        } else if was_full {
            self.partial[class].push(index);
        }
    }

    /// Bytes of slots in use (by slot size, not block size).
    pub(crate) fn used_bytes(&self) -> usize {
        self.buckets
            .iter()
            .filter_map(|b| b.class.map(|c| b.used as usize * self.classes[c]))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_of_a_class_fill_a_bucket_and_buckets_move_between_classes() {
        let mut a = Allocator::new(4 * 16 * 1024, &[1024, 4096]);
        assert_eq!(a.area_len(), 65_536);
        assert_eq!(a.slot_size(1000), Some(1024));
        assert_eq!(a.slot_size(5000), None);
        // A 16 KiB bucket holds 16 slots of 1 KiB.
        let small: Vec<usize> = (0..16).map(|_| a.allocate(100).unwrap()).collect();
        let mut sorted = small.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 16, "distinct slots");
        assert!(sorted.iter().all(|o| o % 1024 == 0));
        let bucket_of_small = small[0] / 16_384;
        assert!(
            small.iter().all(|o| o / 16_384 == bucket_of_small),
            "one bucket"
        );
        // Three more buckets for 4 KiB blocks: 12 slots; then the area is full for that class.
        let large: Vec<usize> = (0..12).map(|_| a.allocate(4096).unwrap()).collect();
        assert!(a.allocate(4096).is_none());
        assert_eq!(a.used_bytes(), 16 * 1024 + 12 * 4096);
        // Freeing every small slot returns their bucket, which 4 KiB blocks can then use.
        for o in small {
            a.free(o);
        }
        assert!(a.allocate(4096).is_some());
        for o in large {
            a.free(o);
        }
        a.free(1_000_000); // outside the area: ignored
        assert_eq!(a.used_bytes(), 4096);
    }
}
