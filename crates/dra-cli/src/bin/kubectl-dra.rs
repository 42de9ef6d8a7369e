//! `kubectl-dra`: the same program as `dra`, named so that `kubectl dra ...` finds it on PATH.

fn main() -> std::process::ExitCode {
    dra_cli::main()
}
