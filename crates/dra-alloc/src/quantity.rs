//! Exact quantity arithmetic for counters and consumed capacity.
//!
//! Sums never leave the range `dra_types::Quantity` represents exactly in practice (counters and
//! capacities are bounded by the BinarySI cap of 2^63-1 times a handful of devices), so
//! overflow saturates instead of failing the allocation.

use dra_types::{Quantity, QuantityError};

use crate::hashing::WordHashMap;

/// [`Quantity::parse`], remembered for the texts that parse: a snapshot's devices and results
/// repeat a few amounts ("80Gi"), and a parse (Go's canonical form included, in 128-bit
/// arithmetic) costs some 2,000 instructions, more than the rest of a device or of applying
/// a result.
#[derive(Debug, Default)]
pub(crate) struct ParsedQuantities(WordHashMap<Box<str>, Quantity>);

impl ParsedQuantities {
    pub(crate) fn parse(&mut self, text: &str) -> Result<Quantity, QuantityError> {
        if let Some(parsed) = self.0.get(text) {
            return Ok(parsed.clone());
        }
        let parsed = Quantity::parse(text)?;
        self.0.insert(text.into(), parsed.clone());
        Ok(parsed)
    }
}

pub(crate) fn add(a: &Quantity, b: &Quantity) -> Quantity {
    a.checked_add(b).unwrap_or_else(|| a.clone())
}

pub(crate) fn sub(a: &Quantity, b: &Quantity) -> Quantity {
    a.checked_sub(b).unwrap_or_else(|| a.clone())
}
