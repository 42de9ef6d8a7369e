//! Links the `dra` and `kubectl-dra` executables at a fixed address on GNU/Linux.
//!
//! A position-independent executable has the dynamic loader patch every pointer in its
//! read-only data at each start: about 17,800 relocations over 350 KiB for `dra`, which
//! cost some 90 copy-on-write page faults and about 0.3 ms before `main`, a twentieth to a
//! thirtieth of a small simulation (BENCHMARKS.md, "A fixed load address"). Linked without
//! `-pie`, the linker resolves those pointers once. The code itself stays
//! position-independent; only the executables give up a randomized load address, which a
//! command-line tool reading local files can do without. Libraries and tests are not
//! affected.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // GCC and Clang drivers on GNU/Linux take `-no-pie`; other targets keep their default.
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
