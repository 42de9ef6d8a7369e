//! `dra status` (not yet available).

use crate::Failure;
use crate::cli::StatusArgs;
use crate::output::Out;

pub fn run(_out: &Out, _args: &StatusArgs) -> Result<(), Failure> {
    Err(Failure::Input(
        "`dra status` is not available in this version".to_string(),
    ))
}
