//! Shared by the fuzz targets: an allocator that refuses any single allocation over
//! [`MAX_ALLOCATION`], so that a size taken on trust from the input (a length prefix, a
//! count, an exponent) is a crash with the input saved, not a slow run that happens to fit
//! in memory. libFuzzer's own `-malloc_limit_mb` needs a sanitizer's allocation hooks, and
//! the targets are built without one (hack/fuzz.sh); this works with any build.
//!
//! Every target installs it:
//! `#[global_allocator] static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;`

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

/// Largest single allocation a target may make: far above any legitimate one (the biggest is
/// the 4 MiB the estimator decoder reserves for a frame at the response size limit).
pub const MAX_ALLOCATION: usize = 128 << 20;

/// [`System`], aborting on an allocation over [`MAX_ALLOCATION`].
pub struct LimitedAlloc;

#[cold]
fn refuse(size: usize) -> ! {
    // No allocation from here on: the message is assembled on the stack.
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"==karmada-fuzz== allocation of ");
    let _ = err.write_all(&digits[i..]);
    let _ = err.write_all(b" bytes is over the limit of the fuzz targets (MAX_ALLOCATION)\n");
    std::process::abort();
}

// SAFETY: every call is forwarded to `System` unchanged, or the process aborts first.
unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            refuse(layout.size());
        }
        // SAFETY: the caller's contract is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            refuse(layout.size());
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION {
            refuse(new_size);
        }
        // SAFETY: as for `dealloc`; the new size is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
