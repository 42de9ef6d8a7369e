//! `dra explain` (arrives with the scheduler simulation).

use crate::Failure;
use crate::cli::ExplainArgs;
use crate::output::Out;

pub fn run(_out: &Out, _args: &ExplainArgs) -> Result<(), Failure> {
    Err(Failure::Input("`dra explain` is not available in this version".to_string()))
}
