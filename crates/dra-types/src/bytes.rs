//! Equality of short byte strings, compared in the caller eight bytes at a time.
//!
//! `a == b` on slices compiles to a call of the C library's `bcmp`/`memcmp`. The index
//! compares attribute names and repeated device text tens of thousands of times per run,
//! mostly strings of 8 to 80 bytes: inline word comparisons take fewer instructions than
//! the call (0.3-0.7% of a small simulation with glibc), and they do not depend on the C
//! library's version, which in musl is a byte loop (a sixth of a small simulation's
//! instructions in a musl build; BENCHMARKS.md, "Fewer cpuid traps"). The answers are those
//! of `==` and `starts_with`.
//!
//! The last word is compared first: the strings compared most are attribute names of one
//! domain (`resource.kubernetes.io/pcieRoot` against `.../numaNode`, same length), which
//! differ at their ends.

/// `a == b`.
#[inline]
pub fn equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && equal_of_same_length(a, b)
}

/// `text.starts_with(prefix)`.
#[inline]
pub fn starts_with(text: &[u8], prefix: &[u8]) -> bool {
    text.len() >= prefix.len() && equal_of_same_length(&text[..prefix.len()], prefix)
}

/// `a == b` for slices of the same length.
#[inline]
fn equal_of_same_length(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let len = a.len().min(b.len());
    if len < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    // The last word (which may overlap the others), then the words from the start.
    if word(a, len - 8) != word(b, len - 8) {
        return false;
    }
    let mut at = 0;
    while at + 8 < len {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    true
}

#[inline]
fn word(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_ne_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_as_the_slice_operators_for_every_length_and_differing_byte() {
        let base: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
        for len in 0..=base.len() {
            let a = &base[..len];
            assert!(equal(a, a));
            assert!(starts_with(&base, a));
            for other_len in 0..=base.len() {
                let b = &base[..other_len];
                assert_eq!(equal(a, b), a == b, "{len} {other_len}");
                assert_eq!(starts_with(a, b), a.starts_with(b), "{len} {other_len}");
            }
            for at in 0..len {
                let mut changed = a.to_vec();
                changed[at] ^= 0x20;
                assert!(!equal(a, &changed), "{len} at {at}");
                assert!(!starts_with(&base, &changed), "{len} at {at}");
                assert!(starts_with(&changed, &changed[..at]));
            }
        }
    }

    #[test]
    fn names_of_one_domain_and_length() {
        let names = [
            "resource.kubernetes.io/pcieRoot",
            "resource.kubernetes.io/numaNode",
            "resource.kubernetes.io/pciBusID",
        ];
        for a in names {
            for b in names {
                assert_eq!(equal(a.as_bytes(), b.as_bytes()), a == b);
            }
        }
    }
}
