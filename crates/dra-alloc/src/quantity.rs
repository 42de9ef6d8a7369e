//! Exact quantity arithmetic for counters and consumed capacity.
//!
//! Sums never leave the range `dra_types::Quantity` represents exactly in practice (counters and
//! capacities are bounded by the BinarySI cap of 2^63-1 times a handful of devices), so
//! overflow saturates instead of failing the allocation.

use std::sync::Arc;

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

/// Quantities by capacity name, in name order: what a shared device's results consume, and
/// what its shares consume together.
///
/// A device has a handful of capacities (one, a bandwidth, on a typical NIC), so a sorted list
/// answers a lookup in a few comparisons, where a `BTreeMap` allocates a node with room for
/// eleven entries (some 800 bytes) for the first one: two such maps for each pick of a shared
/// device were a tenth of a small simulation's heap. Names are shared (`Arc<str>`): the
/// search and the allocated state name the capacities of the index's devices, whose names the
/// index shares, and a copy of each for every pick of a shared device was half the cost of
/// counting its capacity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapacityAmounts {
    /// Sorted by name, names distinct.
    entries: Vec<(Arc<str>, Quantity)>,
}

impl CapacityAmounts {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(entry, _)| (**entry).cmp(name))
    }

    /// The amount of capacity `name`.
    pub fn get(&self, name: &str) -> Option<&Quantity> {
        self.position(name).ok().map(|i| &self.entries[i].1)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Quantity> {
        self.position(name).ok().map(|i| &mut self.entries[i].1)
    }

    /// The amount of capacity `name`, zero added first where there is none.
    pub(crate) fn get_mut_or_zero(&mut self, name: &Arc<str>) -> &mut Quantity {
        let i = match self.position(name) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (Arc::clone(name), Quantity::zero()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Sets the amount of capacity `name`, returning the one it replaces.
    pub fn insert(&mut self, name: Arc<str>, value: Quantity) -> Option<Quantity> {
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (name, value));
                None
            }
        }
    }

    /// The amounts in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Quantity)> {
        self.entries.iter().map(|(name, value)| (name, value))
    }

    pub fn values(&self) -> impl Iterator<Item = &Quantity> {
        self.entries.iter().map(|(_, value)| value)
    }
}

impl std::ops::Index<&str> for CapacityAmounts {
    type Output = Quantity;

    fn index(&self, name: &str) -> &Quantity {
        self.get(name)
            .unwrap_or_else(|| panic!("no capacity amount named {name:?}"))
    }
}

/// Collected like a `BTreeMap`: in name order, the last amount of a repeated name winning.
impl FromIterator<(Arc<str>, Quantity)> for CapacityAmounts {
    fn from_iter<I: IntoIterator<Item = (Arc<str>, Quantity)>>(iter: I) -> CapacityAmounts {
        let mut amounts = CapacityAmounts::default();
        for (name, value) in iter {
            amounts.insert(name, value);
        }
        amounts
    }
}

impl<'a> IntoIterator for &'a CapacityAmounts {
    type Item = (&'a Arc<str>, &'a Quantity);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Arc<str>, Quantity)>,
        fn(&'a (Arc<str>, Quantity)) -> (&'a Arc<str>, &'a Quantity),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(name, value)| (name, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap()
    }

    /// Kept in name order whatever the insertion order, a repeated name replaced, lookups by
    /// name: what the `BTreeMap` it replaces gave.
    #[test]
    fn capacity_amounts_read_like_a_sorted_map() {
        let amounts: CapacityAmounts = [
            ("memory".into(), q("1Gi")),
            ("bandwidth".into(), q("10G")),
            ("cores".into(), q("2")),
            ("bandwidth".into(), q("20G")),
        ]
        .into_iter()
        .collect();
        let names: Vec<&str> = amounts.iter().map(|(n, _)| &**n).collect();
        assert_eq!(names, ["bandwidth", "cores", "memory"]);
        assert_eq!(amounts.len(), 3);
        assert_eq!(amounts["bandwidth"], q("20G"));
        assert_eq!(amounts.get("memory"), Some(&q("1Gi")));
        assert_eq!(amounts.get("disk"), None);
        let mut amounts = amounts;
        *amounts.get_mut("cores").unwrap() = q("3");
        assert_eq!(amounts.insert("aaa".into(), q("1")), None);
        assert_eq!(amounts.insert("cores".into(), q("4")), Some(q("3")));
        let values: Vec<String> = amounts
            .values()
            .map(Quantity::to_canonical_string)
            .collect();
        assert_eq!(values, ["1", "20G", "4", "1Gi"]);
        assert!(CapacityAmounts::default().is_empty());
    }
}
