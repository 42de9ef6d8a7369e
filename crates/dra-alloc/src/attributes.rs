//! Where a device keeps the attribute a claim constraint names, found once per device and
//! snapshot.
//!
//! A `matchAttribute` or `distinctAttribute` constraint looks its attribute up on every device
//! the search tries and on every candidate its feasibility checks count: by name, through
//! upstream's `lookupAttribute` (the fully qualified name, else the bare id when the domain is
//! the device's driver). Each lookup compares the name with the device's attribute names, and
//! the same devices are asked again for every pod. An [`AttributeColumn`] remembers, per
//! device of the index, the position the lookup found (or that it found none), so that every
//! later lookup of that name on that device is one load. Columns are made per attribute name
//! when a claim naming it is prepared, and filled lazily, device by device, by whichever
//! thread asks first: the answer depends on the index alone, so racing threads store the same
//! value.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::hashing::WordHashMap;
use crate::index::{AttrValue, DeviceIdx, Index};

/// Not looked up yet.
const UNKNOWN: u8 = 0;
/// The device has no such attribute.
const ABSENT: u8 = u8::MAX;
/// Positions from here on are not stored (a device has at most 32 attributes and capacities
/// together in the API; an index built from unvalidated input may have more): their devices
/// are looked up by name every time.
const UNSTORED: usize = (ABSENT - 1) as usize;

/// The position of one attribute name among each device's attributes.
pub(crate) struct AttributeColumn {
    name: Box<str>,
    /// Per device of the index: [`UNKNOWN`], [`ABSENT`], or the position plus one.
    slots: Box<[AtomicU8]>,
}

impl std::fmt::Debug for AttributeColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttributeColumn")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl AttributeColumn {
    /// `lookupAttribute(device, name)`, as [`crate::index::DeviceEntry::lookup_attribute`]
    /// answers it.
    pub(crate) fn value<'i>(&self, index: &'i Index, device: DeviceIdx) -> Option<&'i AttrValue> {
        let entry = index.device(device);
        let slot = self.slots.get(device.0 as usize)?;
        let position = match slot.load(Ordering::Relaxed) {
            ABSENT => return None,
            UNKNOWN => {
                let driver = index.slice(entry.slice).driver.as_str();
                let found = entry.lookup_attribute_position(driver, &self.name);
                match found {
                    None => slot.store(ABSENT, Ordering::Relaxed),
                    Some(position) if position < UNSTORED => {
                        slot.store(position as u8 + 1, Ordering::Relaxed)
                    }
                    Some(_) => {}
                }
                found?
            }
            stored => usize::from(stored) - 1,
        };
        entry.attributes.get(position).map(|(_, value)| value)
    }
}

/// The columns of one index, one per attribute name asked for.
#[derive(Debug, Default)]
pub(crate) struct AttributeColumns {
    by_name: Mutex<WordHashMap<Box<str>, Arc<AttributeColumn>>>,
}

impl AttributeColumns {
    /// The column of `name` for an index of `devices` devices, made on first request.
    pub(crate) fn column(&self, name: &str, devices: usize) -> Arc<AttributeColumn> {
        let mut by_name = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(column) = by_name.get(name) {
            return column.clone();
        }
        let column = Arc::new(AttributeColumn {
            name: name.into(),
            slots: (0..devices).map(|_| AtomicU8::new(UNKNOWN)).collect(),
        });
        by_name.insert(name.into(), column.clone());
        column
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{IndexInput, IndexOptions, SliceInput};

    /// A column answers what `lookup_attribute` answers, for every device, whether asked for
    /// the first time or again: the very value, by fully qualified name, by the driver's bare
    /// id, or none.
    #[test]
    fn columns_answer_what_lookup_answers() {
        let spec = dra_gen::preset("gpu-nic", 3).expect("preset");
        let slices = dra_gen::generate(&spec).expect("generate").resource_slices;
        let input = IndexInput {
            nodes: Vec::new(),
            slices: slices.iter().map(SliceInput::Object).collect(),
            classes: Vec::new(),
            taint_rules: Vec::new(),
        };
        let index = Index::build(&input, &IndexOptions::default()).expect("indexes");
        let names = [
            "resource.kubernetes.io/pcieRoot",
            "gpu.example.com/productName",
            "nic.example.com/linkType",
            "productName",
            "other.example.com/productName",
            "resource.kubernetes.io/missing",
            "",
            "/",
        ];
        let mut found = 0;
        for name in names {
            let column = index.attribute_column(name);
            assert!(
                Arc::ptr_eq(&column, &index.attribute_column(name)),
                "{name}: one column"
            );
            for round in 0..2 {
                for (i, entry) in index.devices.iter().enumerate() {
                    let device = DeviceIdx(i as u32);
                    let driver = index.slice(entry.slice).driver.as_str();
                    let expected = entry.lookup_attribute(driver, name);
                    let answered = column.value(&index, device);
                    assert!(
                        match (expected, answered) {
                            (Some(e), Some(a)) => std::ptr::eq(e, a),
                            (None, None) => true,
                            _ => false,
                        },
                        "{name}, device {i}, round {round}: {answered:?}, expected {expected:?}"
                    );
                    found += usize::from(answered.is_some());
                }
            }
        }
        // pcieRoot on every device; the GPUs' productName, by domain; the NICs' link type.
        assert!(found > 2 * index.devices.len(), "{found}");
    }
}
