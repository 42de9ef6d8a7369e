//! `dra migrate` (not yet available).

use crate::Failure;
use crate::cli::MigrateArgs;
use crate::output::Out;

pub fn run(_out: &Out, _args: &MigrateArgs) -> Result<(), Failure> {
    Err(Failure::Input(
        "`dra migrate` is not available in this version".to_string(),
    ))
}
