//! A tiny, dependency-free pseudo-random number generator.
//!
//! The generator is SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014; the constants are the ones `java.util.SplittableRandom`
//! uses). It is not cryptographic and does not need to be: it only has to be fast, well
//! mixed and, above all, *stable*: the same seed must give the same cluster on every
//! platform and in every future version of this crate, so the algorithm is written out
//! here instead of borrowed from a crate whose output may change between releases.
//!
//! Every generated entity draws from its own stream, derived from the spec seed and a
//! path of integers (pool index, node index, ...) with [`Rng::stream`]. Adding a workload
//! therefore never changes the UUIDs of the nodes, and growing one pool does not shift
//! the values of another.

/// SplitMix64 state; see the module documentation.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function (a variant of Stafford's "Mix13").
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator seeded directly with `seed` (the reference sequence; generation
    /// itself always uses [`Rng::stream`]).
    #[cfg(test)]
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// An independent stream for the entity addressed by `path` under `seed`.
    ///
    /// Distinct paths give unrelated streams; the same path always gives the same stream.
    pub fn stream(seed: u64, path: &[u64]) -> Rng {
        let mut state = mix(seed.wrapping_add(GOLDEN_GAMMA));
        for &component in path {
            state = mix(state ^ mix(component.wrapping_add(GOLDEN_GAMMA)));
        }
        Rng { state }
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// A value in `0..bound` (`bound` > 0), by the multiply-shift method.
    ///
    /// The bias is below `bound / 2^64`, far beneath anything a generated cluster could
    /// show, and the method needs no rejection loop, so the number of draws per call is
    /// always one (which keeps streams aligned).
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound > 0);
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// `k` distinct indices out of `0..n`, in ascending order (partial Fisher–Yates).
    pub fn sample_sorted(&mut self, n: usize, k: usize) -> Vec<usize> {
        let k = k.min(n);
        let mut pool: Vec<usize> = (0..n).collect();
        for i in 0..k {
            let j = i + self.below((n - i) as u64) as usize;
            pool.swap(i, j);
        }
        pool.truncate(k);
        pool.sort_unstable();
        pool
    }

    /// A random (version 4, RFC 9562 variant) UUID in its canonical lower-case form.
    pub fn uuid(&mut self) -> String {
        let high = (self.next_u64() & !0xF000) | 0x4000; // version nibble = 4
        let low = (self.next_u64() & !(0b11 << 62)) | (0b10 << 62); // variant bits = 10
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            high >> 32,
            (high >> 16) & 0xFFFF,
            high & 0xFFFF,
            low >> 48,
            low & 0xFFFF_FFFF_FFFF
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_values() {
        // First outputs of SplitMix64 seeded with 1234567, as published with the
        // reference implementation (Vigna, prng.di.unimi.it, splitmix64.c).
        let mut rng = Rng::new(1_234_567);
        let expected = [
            6_457_827_717_110_365_317u64,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
            4_593_380_528_125_082_431,
            16_408_922_859_458_223_821,
        ];
        for want in expected {
            assert_eq!(rng.next_u64(), want);
        }
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a1: Vec<u64> = (0..4).map(|_| Rng::stream(7, &[1, 2]).next_u64()).collect();
        assert!(a1.windows(2).all(|w| w[0] == w[1]));
        let mut seen = std::collections::BTreeSet::new();
        for path in [&[1u64, 2][..], &[2, 1], &[1], &[1, 2, 0], &[]] {
            assert!(seen.insert(Rng::stream(7, path).next_u64()), "{path:?}");
        }
        assert_ne!(
            Rng::stream(7, &[1, 2]).next_u64(),
            Rng::stream(8, &[1, 2]).next_u64()
        );
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Rng::new(42);
        let mut hits = [0u32; 13];
        for _ in 0..13_000 {
            let v = rng.below(13);
            hits[v as usize] += 1;
        }
        assert!(hits.iter().all(|&h| h > 800), "{hits:?}");
    }

    #[test]
    fn sample_sorted_is_distinct_and_sorted() {
        let mut rng = Rng::new(3);
        for k in 0..=8 {
            let s = rng.sample_sorted(8, k);
            assert_eq!(s.len(), k);
            assert!(s.windows(2).all(|w| w[0] < w[1]));
            assert!(s.iter().all(|&i| i < 8));
        }
    }

    #[test]
    fn uuid_has_canonical_v4_form() {
        let mut rng = Rng::new(9);
        for _ in 0..100 {
            let u = rng.uuid();
            assert_eq!(u.len(), 36, "{u}");
            let parts: Vec<&str> = u.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12]
            );
            assert!(parts[2].starts_with('4'), "{u}");
            assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{u}");
            assert!(
                u.chars()
                    .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
            );
        }
    }
}
