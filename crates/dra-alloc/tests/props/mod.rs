//! Support for the allocator's property tests: a generator of small random clusters and claim
//! sequences, independent oracles of the allocation rules, and a brute-force allocator for
//! tiny inputs.

pub mod brute;
pub mod generate;
pub mod oracle;
