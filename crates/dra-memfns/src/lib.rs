//! The C library's memory functions for the statically linked musl build of `dra`
//! (`.cargo/musl.toml`): `memcpy`, `memmove`, `memcmp` and `bcmp`.
//!
//! A process linked with the GNU C library starts by asking the CPU about its features and
//! caches, dozens of `cpuid` instructions; on a virtual machine each one traps to the
//! hypervisor (7.5 µs on ours), and a program that does nothing takes 0.8-1.2 ms instead of
//! the 0.1-0.2 ms that the same program takes linked with musl, which asks the CPU nothing
//! (BENCHMARKS.md, "musl, with memory functions of our own"). For a small simulation that
//! start is a fifth of its time. But musl's x86-64 `memcpy` aligns its destination one
//! `movsb` at a time and then copies words with `rep movsq`, tens of cycles for each of the
//! short copies Rust makes everywhere (moves of structs, strings, vectors: 72,000 calls of
//! 20 bytes on average in a gpu-nic simulation), and its `memcmp` is a C loop over bytes.
//!
//! This crate defines the four with the techniques of the GNU library's generic versions:
//! copies of up to 64 bytes as two to four overlapping unaligned loads and stores, up to
//! 512 bytes in blocks of 64, longer ones with `rep movsb` (fast on CPUs with ERMS or
//! FSRM); comparisons eight or sixteen bytes at a time. In an x86-64 musl build they are
//! exported under their C names, and the linker takes them instead of musl's: it takes a
//! member of the C library's archive only for a symbol still undefined, and Rust's objects
//! come before the archive. `memmove` is defined too because musl's calls its hidden
//! `__memcpy_fwd`, which would pull in musl's `memcpy` beside ours. `memset` stays musl's
//! (overlapping stores, then `rep stosq`).
//!
//! In every other build nothing is exported, and the same functions, under Rust names, are
//! what the tests check (on any x86-64 target, so the default build's CI checks them).
//!
//! `#![no_builtins]` keeps the compiler from recognizing these loops and comparisons as the
//! very functions they implement and calling them (infinite recursion).

#![cfg_attr(not(test), no_std)]
#![no_builtins]

#[cfg(target_arch = "x86_64")]
mod x86_64;

#[cfg(target_arch = "x86_64")]
pub use x86_64::{compare, copy_forward, copy_overlapping, differ};
