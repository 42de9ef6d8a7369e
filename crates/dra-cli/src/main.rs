//! The `dra` binary; all of it lives in the `dra_cli` library.

fn main() -> std::process::ExitCode {
    dra_cli::main()
}
