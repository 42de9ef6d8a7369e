//! `dra bench` (arrives with the benchmark suite).

use crate::Failure;
use crate::cli::BenchArgs;
use crate::output::Out;

pub fn run(_out: &Out, _args: &BenchArgs) -> Result<(), Failure> {
    Err(Failure::Input(
        "`dra bench` is not available in this version".to_string(),
    ))
}
