//! `shared_copy` makes one allocation for a short slice, however often it is cloned.

use keel_testkit::{CountingAllocator, allocations};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn a_short_copy_and_its_clones_allocate_once() {
    let row = b"user6284781860667377211";
    let before = allocations();
    let copy = keel_cell::shared_copy(row);
    let clones = [copy.clone(), copy.clone(), copy.slice(4..)];
    let counted = allocations() - before;
    assert_eq!(
        counted, 1,
        "one allocation for the copy, none for its clones"
    );
    assert_eq!(&clones[2][..], &row[4..]);

    // What it saves: `copy_from_slice` allocates again on its first clone.
    let before = allocations();
    let copy = bytes::Bytes::copy_from_slice(row);
    let clone = copy.clone();
    let counted = allocations() - before;
    assert_eq!(
        counted, 2,
        "copy_from_slice: the buffer, then a shared header at the clone"
    );
    assert_eq!(clone, copy);
}
