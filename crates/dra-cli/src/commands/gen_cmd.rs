//! `dra gen` (wired when the generator lands).

use crate::Failure;
use crate::cli::GenArgs;
use crate::output::Out;

pub fn run(_out: &Out, _args: &GenArgs) -> Result<(), Failure> {
    Err(Failure::Input("`dra gen` is not available in this version".to_string()))
}
