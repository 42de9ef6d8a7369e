//! The x86-64 versions, and their C names in musl builds.
#![allow(unsafe_code)]

use core::arch::asm;
use core::ptr::{read_unaligned, write_unaligned};

/// Copies up to 64 bytes with every load before any store, so `dst` and `src` may overlap.
///
/// # Safety
///
/// `n <= 64`; `src` is readable and `dst` writable for `n` bytes.
#[inline(always)]
unsafe fn copy_short(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= 64);
    // SAFETY (whole body): every offset below lies in 0..n, which the caller vouches for;
    // the reads and writes are unaligned ones.
    unsafe {
        if n >= 16 {
            let first = read_unaligned(src.cast::<u128>());
            let last = read_unaligned(src.add(n - 16).cast::<u128>());
            if n > 32 {
                let second = read_unaligned(src.add(16).cast::<u128>());
                let before_last = read_unaligned(src.add(n - 32).cast::<u128>());
                write_unaligned(dst.add(16).cast::<u128>(), second);
                write_unaligned(dst.add(n - 32).cast::<u128>(), before_last);
            }
            write_unaligned(dst.cast::<u128>(), first);
            write_unaligned(dst.add(n - 16).cast::<u128>(), last);
        } else if n >= 8 {
            let first = read_unaligned(src.cast::<u64>());
            let last = read_unaligned(src.add(n - 8).cast::<u64>());
            write_unaligned(dst.cast::<u64>(), first);
            write_unaligned(dst.add(n - 8).cast::<u64>(), last);
        } else if n >= 4 {
            let first = read_unaligned(src.cast::<u32>());
            let last = read_unaligned(src.add(n - 4).cast::<u32>());
            write_unaligned(dst.cast::<u32>(), first);
            write_unaligned(dst.add(n - 4).cast::<u32>(), last);
        } else if n >= 2 {
            let first = read_unaligned(src.cast::<u16>());
            let last = read_unaligned(src.add(n - 2).cast::<u16>());
            write_unaligned(dst.cast::<u16>(), first);
            write_unaligned(dst.add(n - 2).cast::<u16>(), last);
        } else if n == 1 {
            *dst = *src;
        }
    }
}

/// From this length on, `rep movsb` copies; below it, 64-byte blocks, whose loop costs less
/// than the string instruction's start-up. The GNU library switches at 2 KiB or more on most
/// CPUs; 512 is a round number below that, not a tuned one.
const REP_MOVSB_FROM: usize = 512;

/// Copies 64 bytes, all four loads before the first store.
///
/// # Safety
///
/// `src` is readable and `dst` writable for 64 bytes.
#[inline(always)]
unsafe fn copy_block(dst: *mut u8, src: *const u8) {
    // SAFETY: the caller's; unaligned reads and writes inside the 64 bytes.
    unsafe {
        let a = read_unaligned(src.cast::<u128>());
        let b = read_unaligned(src.add(16).cast::<u128>());
        let c = read_unaligned(src.add(32).cast::<u128>());
        let d = read_unaligned(src.add(48).cast::<u128>());
        write_unaligned(dst.cast::<u128>(), a);
        write_unaligned(dst.add(16).cast::<u128>(), b);
        write_unaligned(dst.add(32).cast::<u128>(), c);
        write_unaligned(dst.add(48).cast::<u128>(), d);
    }
}

/// Copies more than 64 bytes front to back, 64 at a time, the last 64 loaded before any
/// store, so that a `dst` starting before `src` may overlap it.
///
/// # Safety
///
/// `n > 64`; `src` is readable and `dst` writable for `n` bytes.
#[inline(always)]
unsafe fn copy_blocks_forward(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n > 64);
    // SAFETY (whole body): every offset lies in 0..n. A block's store lands `src - dst`
    // bytes below its source, never on a source byte still to be read (all above the block);
    // the tail was read first.
    unsafe {
        let tail = src.add(n - 64);
        let t0 = read_unaligned(tail.cast::<u128>());
        let t1 = read_unaligned(tail.add(16).cast::<u128>());
        let t2 = read_unaligned(tail.add(32).cast::<u128>());
        let t3 = read_unaligned(tail.add(48).cast::<u128>());
        let mut at = 0;
        while at + 64 < n {
            copy_block(dst.add(at), src.add(at));
            at += 64;
        }
        let tail = dst.add(n - 64);
        write_unaligned(tail.cast::<u128>(), t0);
        write_unaligned(tail.add(16).cast::<u128>(), t1);
        write_unaligned(tail.add(32).cast::<u128>(), t2);
        write_unaligned(tail.add(48).cast::<u128>(), t3);
    }
}

/// Copies `n` bytes from `src` to `dst` front to back (C's `memcpy`): correct for regions
/// that do not overlap and for a `dst` that starts before `src`.
///
/// # Safety
///
/// `src` is readable and `dst` writable for `n` bytes.
#[inline]
pub unsafe fn copy_forward(dst: *mut u8, src: *const u8, n: usize) {
    if n <= 64 {
        // SAFETY: the caller's.
        unsafe { copy_short(dst, src, n) }
    } else if n < REP_MOVSB_FROM {
        // SAFETY: the caller's.
        unsafe { copy_blocks_forward(dst, src, n) }
    } else {
        // SAFETY: the caller's; `rep movsb` copies `rcx` bytes from `rsi` to `rdi` upwards
        // (the ABI keeps the direction flag clear), with the result of a byte-by-byte copy
        // even where the regions overlap.
        unsafe {
            asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags)
            );
        }
    }
}

/// Copies `n` bytes from `src` to `dst`, which may overlap in any way (C's `memmove`).
///
/// # Safety
///
/// `src` is readable and `dst` writable for `n` bytes.
#[inline]
pub unsafe fn copy_overlapping(dst: *mut u8, src: *const u8, n: usize) {
    let dst_after_src_start = (dst as usize).wrapping_sub(src as usize);
    if n <= 64 || dst_after_src_start >= n {
        // Short, or `dst` starts before `src` or past its end: front to back is right.
        // SAFETY: the caller's.
        unsafe { copy_forward(dst, src, n) };
        return;
    }
    // `dst` starts inside `src`: back to front, 64 bytes at a time. Each block is loaded
    // before it is stored, and a store lands `dst - src` bytes above the block it copies,
    // never on a source byte still to be read (all below the block).
    let mut left = n;
    while left > 64 {
        left -= 64;
        // SAFETY: `left..left + 64` lies in 0..n.
        unsafe { copy_block(dst.add(left), src.add(left)) };
    }
    // The first `left` (1 to 64) bytes of `src` have not been written over: every store so
    // far landed at or above `left + (dst - src)`.
    // SAFETY: the caller's.
    unsafe { copy_short(dst, src, left) }
}

/// -1, 0 or 1 as `a` is below, equal to or above `b`.
#[inline(always)]
fn sign(a: u64, b: u64) -> i32 {
    i32::from(a > b) - i32::from(a < b)
}

/// Orders two words read (little-endian) from memory as their bytes compare in memory order.
#[inline(always)]
fn order(a: u64, b: u64) -> i32 {
    sign(a.swap_bytes(), b.swap_bytes())
}

/// The first pair of words of type `W`, read from `a` and `b` at the same offsets, that
/// differ: word after word from the start, then the word that ends at `n`, which overlaps
/// bytes already found equal, so that the pair holds the first differing byte of the whole.
/// `None` when all `n` bytes are equal.
///
/// # Safety
///
/// `a` and `b` are readable for `n` bytes, and `n` is at least one word.
#[inline(always)]
unsafe fn first_unequal_words<W: Copy + PartialEq>(
    a: *const u8,
    b: *const u8,
    n: usize,
) -> Option<(W, W)> {
    let size = core::mem::size_of::<W>();
    // SAFETY (whole body): every read lies in 0..n.
    unsafe {
        let mut at = 0;
        while at + size < n {
            let x = read_unaligned(a.add(at).cast::<W>());
            let y = read_unaligned(b.add(at).cast::<W>());
            if x != y {
                return Some((x, y));
            }
            at += size;
        }
        let x = read_unaligned(a.add(n - size).cast::<W>());
        let y = read_unaligned(b.add(n - size).cast::<W>());
        (x != y).then_some((x, y))
    }
}

/// Compares `n` bytes as unsigned bytes, first difference first (C's `memcmp`): negative,
/// zero or positive.
///
/// # Safety
///
/// `a` and `b` are readable for `n` bytes.
#[inline]
pub unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY (whole body): every read lies in 0..n.
    unsafe {
        if n >= 8 {
            return first_unequal_words::<u64>(a, b, n).map_or(0, |(x, y)| order(x, y));
        }
        if n >= 4 {
            // The first and the last four bytes, each read big-endian, in one number whose
            // first half decides unless equal.
            let x = u64::from(read_unaligned(a.cast::<u32>()).swap_bytes()) << 32
                | u64::from(read_unaligned(a.add(n - 4).cast::<u32>()).swap_bytes());
            let y = u64::from(read_unaligned(b.cast::<u32>()).swap_bytes()) << 32
                | u64::from(read_unaligned(b.add(n - 4).cast::<u32>()).swap_bytes());
            return sign(x, y);
        }
        if n >= 2 {
            let x = u64::from(read_unaligned(a.cast::<u16>()).swap_bytes()) << 16
                | u64::from(read_unaligned(a.add(n - 2).cast::<u16>()).swap_bytes());
            let y = u64::from(read_unaligned(b.cast::<u16>()).swap_bytes()) << 16
                | u64::from(read_unaligned(b.add(n - 2).cast::<u16>()).swap_bytes());
            return sign(x, y);
        }
        if n == 1 {
            return i32::from(*a) - i32::from(*b);
        }
        0
    }
}

/// Whether `n` bytes differ anywhere (C's `bcmp`, which answers only zero or not).
///
/// # Safety
///
/// `a` and `b` are readable for `n` bytes.
#[inline]
pub unsafe fn differ(a: *const u8, b: *const u8, n: usize) -> bool {
    // SAFETY (whole body): every read lies in 0..n.
    unsafe {
        if n >= 16 {
            return first_unequal_words::<u128>(a, b, n).is_some();
        }
        if n >= 8 {
            let first = read_unaligned(a.cast::<u64>()) ^ read_unaligned(b.cast::<u64>());
            let last = read_unaligned(a.add(n - 8).cast::<u64>())
                ^ read_unaligned(b.add(n - 8).cast::<u64>());
            return first | last != 0;
        }
        if n >= 4 {
            let first = read_unaligned(a.cast::<u32>()) ^ read_unaligned(b.cast::<u32>());
            let last = read_unaligned(a.add(n - 4).cast::<u32>())
                ^ read_unaligned(b.add(n - 4).cast::<u32>());
            return first | last != 0;
        }
        if n >= 2 {
            let first = read_unaligned(a.cast::<u16>()) ^ read_unaligned(b.cast::<u16>());
            let last = read_unaligned(a.add(n - 2).cast::<u16>())
                ^ read_unaligned(b.add(n - 2).cast::<u16>());
            return first | last != 0;
        }
        n == 1 && *a != *b
    }
}

/// The C names, in musl builds only (see the crate's documentation).
#[cfg(all(target_env = "musl", not(test)))]
mod c_names {
    use core::ffi::{c_int, c_void};

    /// C's `memcpy`.
    ///
    /// # Safety
    ///
    /// C's contract: `src` readable and `dst` writable for `n` bytes, not overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
        // SAFETY: the caller's.
        unsafe { super::copy_forward(dst.cast(), src.cast(), n) };
        dst
    }

    /// C's `memmove`.
    ///
    /// # Safety
    ///
    /// C's contract: `src` readable and `dst` writable for `n` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memmove(
        dst: *mut c_void,
        src: *const c_void,
        n: usize,
    ) -> *mut c_void {
        // SAFETY: the caller's.
        unsafe { super::copy_overlapping(dst.cast(), src.cast(), n) };
        dst
    }

    /// C's `memcmp`.
    ///
    /// # Safety
    ///
    /// C's contract: `a` and `b` readable for `n` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
        // SAFETY: the caller's.
        unsafe { super::compare(a.cast(), b.cast(), n) }
    }

    /// C's `bcmp` (the compiler's choice for `==` on byte slices).
    ///
    /// # Safety
    ///
    /// C's contract: `a` and `b` readable for `n` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
        // SAFETY: the caller's.
        c_int::from(unsafe { super::differ(a.cast(), b.cast(), n) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that differ from position to position, so a copy from the wrong place shows.
    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn copies_every_length_at_every_alignment() {
        for n in (0..300).chain([511, 512, 513, 700, 1100]) {
            for src_offset in 0..9 {
                for dst_offset in 0..9 {
                    let source = pattern(n + src_offset, 7);
                    let mut target = vec![0xAA_u8; n + dst_offset + 8];
                    // SAFETY: both buffers hold the offset plus `n` bytes.
                    unsafe {
                        copy_forward(
                            target.as_mut_ptr().add(dst_offset),
                            source.as_ptr().add(src_offset),
                            n,
                        );
                    }
                    assert_eq!(&target[dst_offset..dst_offset + n], &source[src_offset..]);
                    assert!(target[..dst_offset].iter().all(|&b| b == 0xAA), "n={n}");
                    assert!(target[dst_offset + n..].iter().all(|&b| b == 0xAA), "n={n}");
                }
            }
        }
    }

    #[test]
    fn moves_overlapping_regions_in_either_direction() {
        for n in (0..260).chain([511, 512, 513, 700]) {
            for distance in -80_isize..=80 {
                let mut buffer = pattern(n + 200, 3);
                let mut expected = buffer.clone();
                let src = 100_usize;
                let dst = src.checked_add_signed(distance).unwrap();
                expected.copy_within(src..src + n, dst);
                // SAFETY: both ranges lie inside the buffer (100 +- 80 + n < n + 200).
                unsafe {
                    let base = buffer.as_mut_ptr();
                    copy_overlapping(base.add(dst), base.add(src), n);
                }
                assert_eq!(buffer, expected, "n={n} distance={distance}");
            }
        }
    }

    #[test]
    fn compares_as_unsigned_bytes_first_difference_first() {
        for n in 0..90 {
            let base = pattern(n, 11);
            // SAFETY: both slices hold `n` bytes.
            let same = unsafe {
                (
                    compare(base.as_ptr(), base.clone().as_ptr(), n),
                    differ(base.as_ptr(), base.clone().as_ptr(), n),
                )
            };
            assert_eq!(same, (0, false), "n={n}");
            for at in 0..n {
                for (mine, theirs) in [(0x00_u8, 0xFF_u8), (0x80, 0x7F), (0x41, 0x42)] {
                    let mut a = base.clone();
                    let mut b = base.clone();
                    a[at] = mine;
                    b[at] = theirs;
                    // A later difference the other way must not change the answer.
                    if at + 1 < n {
                        a[n - 1] = !mine;
                        b[n - 1] = !theirs;
                    }
                    let expected = a.cmp(&b) as i32;
                    // SAFETY: both slices hold `n` bytes.
                    let (ordered, differs) = unsafe {
                        (
                            compare(a.as_ptr(), b.as_ptr(), n),
                            differ(a.as_ptr(), b.as_ptr(), n),
                        )
                    };
                    assert_eq!(ordered.signum(), expected, "n={n} at={at}");
                    assert_eq!(differs, a != b, "n={n} at={at}");
                }
            }
        }
    }
}
