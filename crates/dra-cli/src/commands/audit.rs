//! `dra audit` (not yet available).

use crate::Failure;
use crate::cli::AuditArgs;
use crate::output::Out;

pub fn run(_out: &Out, _args: &AuditArgs) -> Result<(), Failure> {
    Err(Failure::Input(
        "`dra audit` is not available in this version".to_string(),
    ))
}
