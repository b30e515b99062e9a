//! A global allocator that counts heap allocations, for benchmarks whose figure is
//! "allocations per operation" (a count, unlike a time, is the same on a noisy machine).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting every allocation and reallocation of every thread. A
/// benchmark installs it with `#[global_allocator] static A: CountingAllocator =
/// CountingAllocator;` and reads [`allocations`] before and after the work it measures.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingAllocator;

/// Allocations and reallocations made so far through [`CountingAllocator`] (0 when it is not
/// the global allocator).
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counting is a relaxed
// atomic increment, which neither allocates nor touches the memory handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`; `ptr` and `layout` come from this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`, as our caller promises.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_passes_through_it() {
        let a = CountingAllocator;
        let layout = Layout::from_size_align(64, 8).expect("layout");
        let before = allocations();
        // SAFETY: a non-zero-sized layout; the block is freed below with the same layout,
        // after being grown with `realloc` (whose new layout keeps the alignment).
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            let p = a.realloc(p, layout, 128);
            assert!(!p.is_null());
            a.dealloc(p, Layout::from_size_align(128, 8).expect("layout"));
        }
        // Other tests run beside this one, but none through this allocator: exactly two.
        assert_eq!(allocations() - before, 2);
    }
}
