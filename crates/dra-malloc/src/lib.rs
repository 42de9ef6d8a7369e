//! The global allocator of the `dra` binaries: mimalloc (v2), asked the way Rust's own
//! `System` allocator asks the C library's `malloc`.
//!
//! The `mimalloc` crate hands every request to `mi_malloc_aligned` with Rust's alignment.
//! mimalloc then checks the alignment (a power of two, whether the block at hand happens to
//! be aligned, a generic path when it is not) before it takes the same free block
//! `mi_malloc` would: about twenty instructions a call that `mi_malloc` does not spend, on
//! every allocation of a simulation (twelve million in a scored run of 10,000 nodes).
//! Every block mimalloc hands out has a size that is a multiple of the machine word and
//! starts on a word boundary, so a request aligned to at most a word (nearly all of them:
//! strings, vectors and boxes of ordinary types) is served by `mi_malloc`, `mi_zalloc` and
//! `mi_realloc` directly; larger alignments still go through the aligned entry points.
//! mimalloc's own `mi_realloc_aligned` takes the same shortcut for the same alignments.
//!
//! [`keep_freed_memory`] turns off mimalloc's purging of free pages for the short-lived
//! `dra` process, whose later phases reuse what the earlier ones freed.
//!
//! [`fresh_memory`] starts a thread that can move to another CPU before it first allocates,
//! so that the fresh memory its heap takes is zeroed there and not on its starter's CPU.

pub mod fresh_memory;

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The largest alignment every mimalloc block has: its blocks are whole words, from
/// word-aligned page starts.
const WORD_ALIGNMENT: usize = core::mem::size_of::<usize>();

/// mimalloc as Rust's global allocator (`#[global_allocator] static A: Mimalloc = Mimalloc;`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mimalloc;

// SAFETY (for the whole impl): every pointer returned comes from mimalloc for the layout's
// size, and word-aligned requests only take the unaligned entry points, whose blocks are
// word-aligned (see WORD_ALIGNMENT); `mi_free` frees blocks of either kind.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = if layout.align() <= WORD_ALIGNMENT {
            // SAFETY: a plain allocation of `size` bytes.
            unsafe { mi_malloc(layout.size()) }
        } else {
            // SAFETY: `align` is a power of two (Layout guarantees it).
            unsafe { mi_malloc_aligned(layout.size(), layout.align()) }
        };
        p.cast()
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = if layout.align() <= WORD_ALIGNMENT {
            // SAFETY: as in `alloc`.
            unsafe { mi_zalloc(layout.size()) }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { mi_zalloc_aligned(layout.size(), layout.align()) }
        };
        p.cast()
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = if layout.align() <= WORD_ALIGNMENT {
            // SAFETY: `ptr` came from this allocator; the new block is word-aligned.
            unsafe { mi_realloc(ptr.cast::<c_void>(), new_size) }
        } else {
            // SAFETY: `ptr` came from this allocator with this alignment.
            unsafe { mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()) }
        };
        p.cast()
    }
}

/// mimalloc's `mi_option_purge_delay` (`mimalloc.h`, `mi_option_e`; the `libmimalloc-sys`
/// crate declares the option calls only behind a feature that pulls in another crate).
const MI_OPTION_PURGE_DELAY: i32 = 15;

#[allow(unsafe_code)]
unsafe extern "C" {
    /// `void mi_option_set(mi_option_t option, long value)`.
    fn mi_option_set(option: i32, value: core::ffi::c_long);
}

/// Keeps the memory the process frees for its own later allocations instead of handing it
/// back to the kernel.
///
/// By default mimalloc purges pages that stay free for 10 ms (`madvise(MADV_DONTNEED)`).
/// A `dra` command frees much of what it read once the simulation's snapshot holds what it
/// needs, and then allocates again: the kernel splits the transparent huge pages the purges
/// cut into and zeroes every page again when the allocations come back to them. A command
/// is one short process whose peak is reached before it frees, so keeping the pages costs
/// no peak memory. Call it first thing in `main`: a segment decides at its creation whether
/// it may purge. The environment variable `MIMALLOC_PURGE_DELAY`, when set, still wins: its
/// value in milliseconds (an integer; -1 never purges), or mimalloc's default if it is not
/// one. mimalloc itself reads no environment in this build (`MI_NO_GETENV`,
/// `.cargo/config.toml`), so the variable is read here.
pub fn keep_freed_memory() {
    let delay = match std::env::var_os("MIMALLOC_PURGE_DELAY") {
        None => -1,
        Some(value) => match value.to_str().and_then(|v| v.trim().parse().ok()) {
            Some(delay) => delay,
            None => return,
        },
    };
    // SAFETY: sets one of mimalloc's options (a plain store into its option table); -1 is
    // the documented value for "never purge".
    #[allow(unsafe_code)]
    unsafe {
        mi_option_set(MI_OPTION_PURGE_DELAY, delay)
    };
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    fn fill(p: *mut u8, size: usize) {
        for i in 0..size {
            // SAFETY: `p` holds at least `size` bytes (the callers' blocks).
            unsafe { *p.add(i) = (i % 251) as u8 };
        }
    }

    fn holds_fill(p: *const u8, size: usize) -> bool {
        // SAFETY: `p` holds at least `size` initialised bytes (the callers' blocks).
        (0..size).all(|i| unsafe { *p.add(i) } == (i % 251) as u8)
    }

    /// Allocates, fills, grows, shrinks and frees blocks of many sizes and alignments, and
    /// checks each pointer's alignment and that reallocation keeps the contents.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let allocator = Mimalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [
                1usize,
                3,
                7,
                8,
                15,
                16,
                24,
                40,
                100,
                1000,
                5000,
                70_000,
                1 << 20,
            ] {
                let layout = Layout::from_size_align(size, align).unwrap();
                for new_size in [size * 3 + 5, size / 2 + 1] {
                    // SAFETY: non-zero sizes; each block is freed once, with its layout.
                    unsafe {
                        let p = allocator.alloc(layout);
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "alloc size {size} align {align}");
                        fill(p, size);
                        let q = allocator.realloc(p, layout, new_size);
                        assert!(!q.is_null());
                        assert_eq!(
                            q as usize % align,
                            0,
                            "realloc {size}->{new_size} align {align}"
                        );
                        assert!(
                            holds_fill(q, size.min(new_size)),
                            "realloc {size}->{new_size}"
                        );
                        allocator.dealloc(q, Layout::from_size_align(new_size, align).unwrap());
                    }
                }
                // SAFETY: as above.
                unsafe {
                    let z = allocator.alloc_zeroed(layout);
                    assert!(!z.is_null());
                    assert_eq!(
                        z as usize % align,
                        0,
                        "alloc_zeroed size {size} align {align}"
                    );
                    assert!((0..size).all(|i| *z.add(i) == 0), "zeroed size {size}");
                    allocator.dealloc(z, layout);
                }
            }
        }
    }

    unsafe extern "C" {
        /// `long mi_option_get(mi_option_t option)`.
        fn mi_option_get(option: i32) -> core::ffi::c_long;
    }

    /// The option number is mimalloc's purge delay (its default is 10 ms), and the call sets
    /// it to "never" unless the environment chose a value.
    #[test]
    fn freed_memory_is_kept_unless_the_environment_says_otherwise() {
        // SAFETY: reads one of mimalloc's options.
        let before = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
        keep_freed_memory();
        // SAFETY: as above.
        let after = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
        match std::env::var("MIMALLOC_PURGE_DELAY") {
            Err(_) => {
                assert_eq!(before, 10, "mimalloc's default purge delay");
                assert_eq!(after, -1);
            }
            Ok(value) => match value.trim().parse::<core::ffi::c_long>() {
                Ok(delay) => assert_eq!(after, delay),
                Err(_) => assert_eq!(after, before),
            },
        }
    }
}
