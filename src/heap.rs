//! Counts the bytes the module's Rust code holds on the heap, for `INFO rlock`
//! (`heap_bytes`): the benchmark divides it by the number of waiters.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicI64, Ordering};

static HEAP_BYTES: AtomicI64 = AtomicI64::new(0);

pub fn bytes() -> i64 {
    HEAP_BYTES.load(Ordering::Relaxed)
}

// Unit tests run with the system allocator, unwrapped.
#[cfg_attr(test, allow(dead_code))]
pub struct Counting<A>(pub A);

// SAFETY: every call is forwarded unchanged to the wrapped allocator; only a counter is added.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HEAP_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HEAP_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HEAP_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}
