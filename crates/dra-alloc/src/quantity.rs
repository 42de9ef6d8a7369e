//! Exact quantity arithmetic for counters and consumed capacity.
//!
//! Sums never leave the range `dra_types::Quantity` represents exactly in practice (counters and
//! capacities are bounded by the BinarySI cap of 2^63-1 times a handful of devices), so
//! overflow saturates instead of failing the allocation.

use dra_types::Quantity;

pub(crate) fn add(a: &Quantity, b: &Quantity) -> Quantity {
    a.checked_add(b).unwrap_or_else(|| a.clone())
}

pub(crate) fn sub(a: &Quantity, b: &Quantity) -> Quantity {
    a.checked_sub(b).unwrap_or_else(|| a.clone())
}
