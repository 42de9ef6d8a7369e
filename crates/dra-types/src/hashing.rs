//! A fast hasher for the maps looked up by name across the workspace (the loader's duplicate
//! check, the CEL declarations, the index's internal maps, the simulator's lookups), whose
//! keys are names, identifiers and small tuples: it mixes eight bytes per step (device UUIDs
//! and PCI addresses are 12 to 40 bytes) where byte-wise FNV-1a mixed one, and interning every
//! string of every device made that loop a visible part of indexing. HashDoS resistance buys
//! nothing for maps built from the user's own files. No result may depend on it: the maps are
//! looked up, or sorted before they are iterated into an answer.

use std::hash::{BuildHasherDefault, Hasher};

/// Odd multipliers with well-spread bits (those of rustc's FxHasher family and of a
/// 64-bit golden-ratio hash).
const STEP: u64 = 0xf135_7aea_2e62_a9c5;
const FINISH: u64 = 0x9e37_79b9_7f4a_7c15;

/// Multiply-rotate over 64-bit words, finished by a folded 128-bit multiply so that the
/// high bits (which hashbrown's control bytes use) depend on every input bit.
#[derive(Debug, Clone, Copy, Default)]
pub struct WordHasher(u64);

impl WordHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(STEP);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let wide = u128::from(self.0) * u128::from(FINISH);
        (wide as u64) ^ ((wide >> 64) as u64)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // The length first makes the zero padding of the last word unambiguous ("a" and
        // "a\0" pad to the same word).
        self.add(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            self.add(padded_word(rest));
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

/// The bytes of `rest` (fewer than eight) as a little-endian word padded with zeros, from
/// two overlapping loads instead of a copy into a zeroed buffer, which compiled to a call of
/// `memcpy` for every string key's last word.
#[inline]
fn padded_word(rest: &[u8]) -> u64 {
    let len = rest.len();
    if let (Some(head), Some(tail)) = (rest.first_chunk::<4>(), rest.last_chunk::<4>()) {
        // Lengths 4 to 7: the last four bytes land on the first four where they overlap,
        // with the same values.
        let low = u64::from(u32::from_le_bytes(*head));
        let high = u64::from(u32::from_le_bytes(*tail));
        return low | high << (8 * (len - 4));
    }
    // Lengths 1 to 3 (and 0): first, middle and last byte, which cover them.
    match (rest.first(), rest.last()) {
        (Some(&first), Some(&last)) => {
            u64::from(first)
                | u64::from(rest[len / 2]) << (8 * (len / 2))
                | u64::from(last) << (8 * (len - 1))
        }
        _ => 0,
    }
}

/// A `HashMap` with [`WordHasher`].
pub type WordHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<WordHasher>>;

/// A `HashSet` with [`WordHasher`].
pub type WordHashSet<K> = std::collections::HashSet<K, BuildHasherDefault<WordHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash + ?Sized>(value: &T) -> u64 {
        BuildHasherDefault::<WordHasher>::default().hash_one(value)
    }

    #[test]
    fn equal_keys_hash_equal_and_near_keys_apart() {
        assert_eq!(
            hash("gpu.example.com"),
            hash(&String::from("gpu.example.com"))
        );
        // Lengths around the word size, a trailing zero byte, one changed byte anywhere.
        let keys = [
            "",
            "a",
            "a\0",
            "abcdefg",
            "abcdefgh",
            "abcdefgh\0",
            "abcdefghi",
            "GPU-24e202e5-5053-4d33-8cbc-095b6dae59bf",
            "GPU-24e202e5-5053-4d33-8cbc-095b6dae59bg",
            "HPU-24e202e5-5053-4d33-8cbc-095b6dae59bf",
        ];
        let hashes: std::collections::BTreeSet<u64> = keys.iter().map(|k| hash(*k)).collect();
        assert_eq!(hashes.len(), keys.len());
        assert_ne!(hash(&(1u32, 2u32)), hash(&(2u32, 1u32)));
    }

    /// The short last word of every length, against a copy into a zeroed buffer.
    #[test]
    fn pads_the_last_word_with_zeros() {
        let bytes: Vec<u8> = (0..8u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(0xa1))
            .collect();
        for len in 0..8 {
            for start in 0..=8 - len {
                let rest = &bytes[start..start + len];
                let mut word = [0u8; 8];
                word[..len].copy_from_slice(rest);
                assert_eq!(padded_word(rest), u64::from_le_bytes(word), "{rest:?}");
            }
        }
    }

    #[test]
    fn high_bits_spread_over_sequential_names() {
        // hashbrown picks a control byte from the top seven bits: sequential device names
        // must not crowd into a few of its 128 values.
        let tops: std::collections::BTreeSet<u64> =
            (0..4096).map(|i| hash(&format!("gpu-{i}")) >> 57).collect();
        assert!(tops.len() > 120, "{} distinct top-7-bit values", tops.len());
    }
}
