//! Links the `dra` and `kubectl-dra` executables at a fixed address on GNU/Linux, with the
//! C compiler's unwinder built in.
//!
//! A position-independent executable has the dynamic loader patch every pointer in its
//! read-only data at each start: about 17,800 relocations over 350 KiB for `dra`, which
//! cost some 90 copy-on-write page faults and about 0.3 ms before `main`, a twentieth to a
//! thirtieth of a small simulation (BENCHMARKS.md, "A fixed load address"). Linked without
//! `-pie`, the linker resolves those pointers once. The code itself stays
//! position-independent; only the executables give up a randomized load address, which a
//! command-line tool reading local files can do without. Libraries and tests are not
//! affected.
//!
//! Rust's standard library takes its unwinder (`_Unwind_*`) from the shared `libgcc_s`: one
//! more library for the dynamic loader to find, map and bind at every start, and whose
//! constructor asks the CPU for its features, each `cpuid` a trap to the hypervisor on a
//! virtual machine (about 5 µs on ours). Naming the compiler's static `libgcc_eh.a` among
//! the package's libraries defines those symbols before the linker reaches `-lgcc_s`, which
//! `--as-needed` then drops: `dra --version` 1.27 -> 1.12 ms (BENCHMARKS.md, "A statically
//! linked binary"), as `gcc -static-libgcc` would (`nm` shows every `_Unwind_*` symbol
//! defined in `dra`; the test executables, linked in another order, still take all of them
//! from `libgcc_s`, never some from each). Without that archive, or when cross-compiling (the
//! host's `cc` would name its own), the build links as before. A build with `crt-static`
//! (`.cargo/static.toml`) links statically and needs neither step.
//!
//! A small simulation runs about 1 MB of the executables' 13 MB of code, spread over half of
//! it, and each first touch of a 64 KB window of code is a page fault. Where the linker takes
//! an ordering of symbols (lld, Rust's default linker on x86-64 GNU/Linux; checked by linking
//! a probe with the same compiler), the functions that small simulations run
//! (`hot-functions.txt`, written by `hot-functions.py`) are placed together: gpu-nic's run
//! took 13 such faults instead of 72 and 0.4 ms less (BENCHMARKS.md, "Hot functions
//! together"). Names the build does not have are ignored, so a stale list costs nothing but
//! the gain. Rust links musl targets with the C compiler's default linker (GNU ld, which
//! takes no ordering); musl builds (`.cargo/musl.toml`) are linked with the toolchain's own
//! lld instead, when the probe passes with it: gpu-nic's page faults 155 -> 77 (BENCHMARKS.md,
//! "musl, with memory functions of our own").

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // GCC and Clang drivers on GNU/Linux take `-no-pie`; other targets keep their default.
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let static_crt = features.split(',').any(|f| f == "crt-static");
    if os == "linux" && env == "gnu" && !static_crt {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        // `cc` is the host's compiler: its archive is only the target's when they are one.
        let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
        if let Some(dir) = native.then(static_unwinder_dir).flatten() {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
        }
    }
    if os == "linux" && (env == "gnu" || env == "musl") {
        // Rust links GNU targets with its own lld, musl ones with the C compiler's default
        // linker (GNU ld, which cannot order symbols); musl builds are pointed at the same lld.
        let linker_args = if env == "musl" {
            toolchain_lld_args().unwrap_or_default()
        } else {
            Vec::new()
        };
        let list = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("hot-functions.txt");
        println!("cargo:rerun-if-changed={}", list.display());
        if list.is_file() && linker_takes_symbol_ordering(&list, &linker_args) {
            for arg in &linker_args {
                println!("cargo:rustc-link-arg-bins={arg}");
            }
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                list.display()
            );
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// The C compiler driver's arguments that make it link with the Rust toolchain's own lld
/// (`lib/rustlib/HOST/bin/gcc-ld/ld.lld`, which rustc itself uses for GNU targets), when the
/// toolchain has it.
fn toolchain_lld_args() -> Option<Vec<String>> {
    let rustc = std::env::var_os("RUSTC")?;
    let host = std::env::var("HOST").ok()?;
    let output = std::process::Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = std::path::PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    let dir = sysroot.join("lib/rustlib").join(host).join("bin/gcc-ld");
    (output.status.success() && dir.join("ld.lld").is_file())
        .then(|| vec!["-fuse-ld=lld".to_owned(), format!("-B{}", dir.display())])
}

/// Whether the compiler's linker for the target, given `linker_args`, takes
/// `--symbol-ordering-file` (lld and mold do, GNU ld does not): an empty program linked with
/// it, by the same compiler, for the same target, with the same flags.
fn linker_takes_symbol_ordering(list: &std::path::Path, linker_args: &[String]) -> bool {
    let (Some(rustc), Some(target), Some(out_dir)) = (
        std::env::var_os("RUSTC"),
        std::env::var_os("TARGET"),
        std::env::var_os("OUT_DIR"),
    ) else {
        return false;
    };
    let out_dir = std::path::PathBuf::from(out_dir);
    let source = out_dir.join("ordering_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    std::process::Command::new(rustc)
        .args(flags.split('\u{1f}').filter(|f| !f.is_empty()))
        .arg("--target")
        .arg(target)
        .args(["--crate-type", "bin", "--edition", "2021", "-o"])
        .arg(out_dir.join("ordering_probe"))
        .arg(format!(
            "-Clink-arg=-Wl,--symbol-ordering-file={}",
            list.display()
        ))
        .arg("-Clink-arg=-Wl,--no-warn-symbol-ordering")
        .args(linker_args.iter().map(|arg| format!("-Clink-arg={arg}")))
        .arg(&source)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The directory of the C compiler's static unwinder (`libgcc_eh.a`), when it has one.
fn static_unwinder_dir() -> Option<std::path::PathBuf> {
    let output = std::process::Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = std::path::PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    // A compiler without the file prints the bare name back.
    if !output.status.success() || !path.is_absolute() || !path.is_file() {
        return None;
    }
    path.parent().map(std::path::Path::to_path_buf)
}
