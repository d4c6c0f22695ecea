//! The global allocator of `karmada-scheduler` and `karmada-descheduler`.
//!
//! With the estimators on, the scheduler's CPU goes largely to allocating and freeing the
//! small buffers of hundreds of concurrent estimator calls per cycle; glibc's malloc spent a
//! quarter of the profile there (docs/bench/estimators-1ms.md). jemalloc's per-thread caches
//! make that cheaper, and its decay returns freed memory to the system within a second, so
//! the peak of a burst does not stay resident.
//!
//! jemalloc is the default (cargo feature `jemalloc`). The system allocator stays reachable
//! two ways: `KARMADA_ALLOCATOR=system` in the environment at start, or a build without the
//! feature. jemalloc's own settings can be changed with `_RJEM_MALLOC_CONF` (read after the
//! defaults below, so it overrides them).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// Environment variable choosing the allocator at start: `system` or `jemalloc`.
pub const ENV: &str = "KARMADA_ALLOCATOR";

/// jemalloc's settings: a background thread purges freed pages (instead of the threads
/// that free), dirty pages go back to the system after 1 s, and two arenas (the tokio
/// workers each keep a thread cache in front of them).
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8; 70] =
    b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:2\0";

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const JEMALLOC: u8 = 2;

static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// Which allocator a value of [`ENV`] selects (anything but `system` keeps the default).
pub fn choose(env: Option<&[u8]>) -> &'static str {
    match (env, cfg!(feature = "jemalloc")) {
        (_, false) | (Some(b"system"), _) => "system",
        _ => "jemalloc",
    }
}

/// The allocator in use, decided at the first allocation from [`ENV`] and never changed
/// after it (every block is freed by the allocator that made it).
fn choice() -> u8 {
    let c = CHOICE.load(Ordering::Relaxed);
    if c != UNDECIDED {
        return c;
    }
    // SAFETY: getenv reads the environment without allocating; the pointer, if any, is a
    // NUL-terminated string that is only read here, before anything could change it.
    let env = unsafe {
        let p = libc::getenv(c"KARMADA_ALLOCATOR".as_ptr());
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_bytes())
    };
    let c = if choose(env) == "system" {
        SYSTEM
    } else {
        JEMALLOC
    };
    // Two threads deciding at once decide the same.
    CHOICE.store(c, Ordering::Relaxed);
    c
}

/// jemalloc or the system allocator, as [`ENV`] says.
pub struct Allocator;

#[cfg(feature = "jemalloc")]
static JEMALLOC_ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

macro_rules! dispatch {
    ($method:ident($($arg:expr),*)) => {
        // SAFETY: forwarded unchanged to the allocator chosen once for the whole process.
        unsafe {
            #[cfg(feature = "jemalloc")]
            if choice() == JEMALLOC {
                return JEMALLOC_ALLOC.$method($($arg),*);
            }
            System.$method($($arg),*)
        }
    };
}

// SAFETY: every method forwards to one allocator, the same for the whole process, so a block
// is always freed or resized by the allocator that made it.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        dispatch!(alloc(layout))
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        dispatch!(alloc_zeroed(layout))
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        dispatch!(dealloc(ptr, layout))
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        dispatch!(realloc(ptr, layout, new_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_system_selects_the_system_allocator() {
        assert_eq!(choose(Some(b"system")), "system");
        let default = if cfg!(feature = "jemalloc") {
            "jemalloc"
        } else {
            "system"
        };
        assert_eq!(choose(None), default);
        assert_eq!(choose(Some(b"jemalloc")), default);
        assert_eq!(choose(Some(b"")), default);
    }

    #[cfg(feature = "jemalloc")]
    #[test]
    fn the_configuration_is_one_c_string_of_key_value_pairs() {
        let end = malloc_conf.iter().position(|&b| b == 0).expect("NUL");
        assert_eq!(end, malloc_conf.len() - 1);
        let conf = std::str::from_utf8(&malloc_conf[..end]).expect("ASCII");
        assert!(conf.split(',').all(|kv| kv.split_once(':').is_some()));
    }
}
