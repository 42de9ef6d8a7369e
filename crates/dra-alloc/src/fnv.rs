//! FNV-1a hashing for the index's internal maps, whose keys are short strings: several times
//! cheaper than the default SipHash, and HashDoS resistance buys nothing for a map built once
//! from the user's own files.

use std::hash::{BuildHasherDefault, Hasher};

/// The 64-bit FNV-1a hasher.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A `HashMap` with FNV-1a.
pub(crate) type FnvHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<Fnv>>;
