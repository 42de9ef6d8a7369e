//! ResourceSlices given as JSON text ([`SliceInput::Json`](crate::SliceInput)), decoded
//! straight into the index's form: the slice, its spec, its devices and their attributes by
//! visitors of our own, every other part with its k8s-openapi type. Decoding into the wire
//! type first would build a `BTreeMap` of 168-byte values per device only to convert it and
//! free it again.
//!
//! The visitors accept part of what the wire type accepts and give the same index for it:
//! the same fields with the same types, unknown fields skipped, missing ones defaulted, `null`
//! as absent. A field given twice (the wire type keeps the last) and anything that fails is
//! left to [`prepare_json`]'s second way, decoding the wire type and converting it like any
//! object, so which way a slice took never shows in the answer.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::Resource;
use k8s_openapi::api::core::v1::NodeSelector;
use k8s_openapi::api::resource::v1::{
    CounterSet, Device, DeviceCapacity, DeviceCounterConsumption, DeviceTaint, DeviceTaintRule,
    NodeAllocatableResource, ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::index::{
    AttrValue, DeviceEntry, IndexError, IndexErrorKind, Interner, PreparedSlice, add_rule_taints,
    device_entry, prepare_slice, slice_entry,
};

/// [`prepare_slice`] of the slice `text` holds: straight from the text when the visitors
/// take it, else through the wire type (whose error, if it does not decode either, is an
/// [`IndexErrorKind::Decode`]).
pub(crate) fn prepare_json(
    text: &str,
    taint_rules: &[&DeviceTaintRule],
    strings: &mut Interner,
    devices: &mut Vec<DeviceEntry>,
) -> Result<PreparedSlice, IndexError> {
    let before = devices.len();
    if let Some(prepared) = prepare_direct(text, taint_rules, strings, devices) {
        return Ok(prepared);
    }
    devices.truncate(before);
    let slice: ResourceSlice = serde_json::from_str(text).map_err(decode_error)?;
    prepare_slice(&slice, taint_rules, strings, devices)
}

/// Text that does not decode as a ResourceSlice.
fn decode_error(error: serde_json::Error) -> IndexError {
    IndexError {
        slice: String::new(),
        field: String::new(),
        message: format!("does not decode: {error}"),
        kind: IndexErrorKind::Decode,
    }
}

/// The visitors' way; `None` for anything they leave to the wire type (some devices may be
/// appended then).
fn prepare_direct(
    text: &str,
    taint_rules: &[&DeviceTaintRule],
    strings: &mut Interner,
    devices: &mut Vec<DeviceEntry>,
) -> Option<PreparedSlice> {
    let before = devices.len();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let (metadata, spec) = SliceSeed { strings, devices }
        .deserialize(&mut deserializer)
        .ok()?;
    deserializer.end().ok()?;
    let name = metadata.and_then(|m| m.name).unwrap_or_default();
    let entry = slice_entry(name, &spec.unwrap_or_default(), strings).ok()?;
    // Rules select by driver and pool, which may come after the devices in the text.
    for device in &mut devices[before..] {
        add_rule_taints(device, taint_rules, &entry.driver, &entry.pool);
    }
    Some(PreparedSlice {
        entry,
        devices: devices.len() - before,
    })
}

/// The fields of one object the visitors know, as an enum with `Other` for the rest.
macro_rules! fields {
    ($name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum $name {
            $($variant,)*
            Other,
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct FieldVisitor;

                impl Visitor<'_> for FieldVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a field name")
                    }

                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok(match v {
                            $($text => $name::$variant,)*
                            _ => $name::Other,
                        })
                    }
                }

                deserializer.deserialize_identifier(FieldVisitor)
            }
        }
    };
}

fields!(SliceField {
    ApiVersion = "apiVersion",
    Kind = "kind",
    Metadata = "metadata",
    Spec = "spec",
});

fields!(SpecField {
    AllNodes = "allNodes",
    Devices = "devices",
    Driver = "driver",
    NodeName = "nodeName",
    NodeSelector = "nodeSelector",
    PartitionTypeAttribute = "partitionTypeAttribute",
    PerDeviceNodeSelection = "perDeviceNodeSelection",
    Pool = "pool",
    SharedCounters = "sharedCounters",
    SkipNodeOperations = "skipNodeOperations",
});

fields!(DeviceField {
    AllNodes = "allNodes",
    AllowMultipleAllocations = "allowMultipleAllocations",
    Attributes = "attributes",
    BindingConditions = "bindingConditions",
    BindingFailureConditions = "bindingFailureConditions",
    BindsToNode = "bindsToNode",
    Capacity = "capacity",
    ConsumesCounters = "consumesCounters",
    Name = "name",
    NodeAllocatableResources = "nodeAllocatableResources",
    NodeName = "nodeName",
    NodeSelector = "nodeSelector",
    Taints = "taints",
});

fields!(AttributeField {
    Bool = "bool",
    Bools = "bools",
    Int = "int",
    Ints = "ints",
    String = "string",
    Strings = "strings",
    Version = "version",
    Versions = "versions",
});

/// Known fields met so far in one object; a second one is refused.
#[derive(Default)]
struct Seen(u32);

impl Seen {
    fn first<E: de::Error>(&mut self, field: u32) -> Result<(), E> {
        let bit = 1 << field;
        if self.0 & bit != 0 {
            return Err(E::custom("a field given twice"));
        }
        self.0 |= bit;
        Ok(())
    }
}

/// `null` as absent, anything else through the seed (what `Option<T>` does for a type).
struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nullable<S> {
    type Value = Option<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Nullable<S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(deserializer).map(Some)
    }
}

/// A string, shared through the interner.
struct Interned<'s>(&'s mut Interner);

impl<'de> DeserializeSeed<'de> for Interned<'_> {
    type Value = Arc<str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Arc<str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for Interned<'_> {
    type Value = Arc<str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Arc<str>, E> {
        Ok(self.0.get(v))
    }
}

/// A ResourceSlice: its metadata and its spec without devices; the devices are appended to
/// `devices` as they are read.
struct SliceSeed<'s> {
    strings: &'s mut Interner,
    devices: &'s mut Vec<DeviceEntry>,
}

type SliceParts = (Option<ObjectMeta>, Option<ResourceSliceSpec>);

impl<'de> DeserializeSeed<'de> for SliceSeed<'_> {
    type Value = SliceParts;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<SliceParts, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SliceSeed<'_> {
    type Value = SliceParts;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a ResourceSlice")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SliceParts, A::Error> {
        let (mut metadata, mut spec) = (None, None);
        let mut seen = Seen::default();
        while let Some(field) = map.next_key::<SliceField>()? {
            if field != SliceField::Other {
                seen.first(field as u32)?;
            }
            match field {
                SliceField::ApiVersion => {
                    let value: String = map.next_value()?;
                    if value != ResourceSlice::API_VERSION {
                        return Err(de::Error::custom("another apiVersion"));
                    }
                }
                SliceField::Kind => {
                    let value: String = map.next_value()?;
                    if value != ResourceSlice::KIND {
                        return Err(de::Error::custom("another kind"));
                    }
                }
                SliceField::Metadata => metadata = map.next_value()?,
                SliceField::Spec => {
                    spec = map.next_value_seed(Nullable(SpecSeed {
                        strings: &mut *self.strings,
                        devices: &mut *self.devices,
                    }))?;
                }
                SliceField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((metadata, spec))
    }
}

/// A ResourceSliceSpec without its devices, which are appended to `devices`.
struct SpecSeed<'s> {
    strings: &'s mut Interner,
    devices: &'s mut Vec<DeviceEntry>,
}

impl<'de> DeserializeSeed<'de> for SpecSeed<'_> {
    type Value = ResourceSliceSpec;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<ResourceSliceSpec, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SpecSeed<'_> {
    type Value = ResourceSliceSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a ResourceSliceSpec")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResourceSliceSpec, A::Error> {
        let mut all_nodes: Option<bool> = None;
        let mut driver: Option<String> = None;
        let mut node_name: Option<String> = None;
        let mut node_selector: Option<NodeSelector> = None;
        let mut partition_type_attribute: Option<String> = None;
        let mut per_device_node_selection: Option<bool> = None;
        let mut pool: Option<ResourcePool> = None;
        let mut shared_counters: Option<Vec<CounterSet>> = None;
        let mut skip_node_operations: Option<Vec<String>> = None;
        let mut seen = Seen::default();
        while let Some(field) = map.next_key::<SpecField>()? {
            if field != SpecField::Other {
                seen.first(field as u32)?;
            }
            match field {
                SpecField::AllNodes => all_nodes = map.next_value()?,
                SpecField::Devices => {
                    map.next_value_seed(Nullable(DevicesSeed {
                        strings: &mut *self.strings,
                        devices: &mut *self.devices,
                    }))?;
                }
                SpecField::Driver => driver = map.next_value()?,
                SpecField::NodeName => node_name = map.next_value()?,
                SpecField::NodeSelector => node_selector = map.next_value()?,
                SpecField::PartitionTypeAttribute => partition_type_attribute = map.next_value()?,
                SpecField::PerDeviceNodeSelection => {
                    per_device_node_selection = map.next_value()?;
                }
                SpecField::Pool => pool = map.next_value()?,
                SpecField::SharedCounters => shared_counters = map.next_value()?,
                SpecField::SkipNodeOperations => skip_node_operations = map.next_value()?,
                SpecField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(ResourceSliceSpec {
            all_nodes,
            // Appended to the index's devices already.
            devices: None,
            driver: driver.unwrap_or_default(),
            node_name,
            node_selector,
            partition_type_attribute,
            per_device_node_selection,
            pool: pool.unwrap_or_default(),
            shared_counters,
            skip_node_operations,
        })
    }
}

/// The devices of a spec, converted and appended one by one.
struct DevicesSeed<'s> {
    strings: &'s mut Interner,
    devices: &'s mut Vec<DeviceEntry>,
}

impl<'de> DeserializeSeed<'de> for DevicesSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for DevicesSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of devices")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(device) = seq.next_element_seed(DeviceSeed {
            strings: &mut *self.strings,
            index,
        })? {
            self.devices.push(device);
            index += 1;
        }
        Ok(())
    }
}

/// One device, as the index's entry (without the taints of DeviceTaintRules).
struct DeviceSeed<'s> {
    strings: &'s mut Interner,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for DeviceSeed<'_> {
    type Value = DeviceEntry;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<DeviceEntry, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DeviceSeed<'_> {
    type Value = DeviceEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Device")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DeviceEntry, A::Error> {
        let mut all_nodes: Option<bool> = None;
        let mut allow_multiple_allocations: Option<bool> = None;
        let mut attributes: Option<Vec<(Arc<str>, AttrValue)>> = None;
        let mut binding_conditions: Option<Vec<String>> = None;
        let mut binding_failure_conditions: Option<Vec<String>> = None;
        let mut binds_to_node: Option<bool> = None;
        let mut capacity: Option<BTreeMap<String, DeviceCapacity>> = None;
        let mut consumes_counters: Option<Vec<DeviceCounterConsumption>> = None;
        let mut name: Option<String> = None;
        let mut node_allocatable_resources: Option<BTreeMap<String, NodeAllocatableResource>> =
            None;
        let mut node_name: Option<String> = None;
        let mut node_selector: Option<NodeSelector> = None;
        let mut taints: Option<Vec<DeviceTaint>> = None;
        let mut seen = Seen::default();
        while let Some(field) = map.next_key::<DeviceField>()? {
            if field != DeviceField::Other {
                seen.first(field as u32)?;
            }
            match field {
                DeviceField::AllNodes => all_nodes = map.next_value()?,
                DeviceField::AllowMultipleAllocations => {
                    allow_multiple_allocations = map.next_value()?;
                }
                DeviceField::Attributes => {
                    attributes =
                        map.next_value_seed(Nullable(AttributesSeed(&mut *self.strings)))?;
                }
                DeviceField::BindingConditions => binding_conditions = map.next_value()?,
                DeviceField::BindingFailureConditions => {
                    binding_failure_conditions = map.next_value()?;
                }
                DeviceField::BindsToNode => binds_to_node = map.next_value()?,
                DeviceField::Capacity => capacity = map.next_value()?,
                DeviceField::ConsumesCounters => consumes_counters = map.next_value()?,
                DeviceField::Name => name = map.next_value()?,
                DeviceField::NodeAllocatableResources => {
                    node_allocatable_resources = map.next_value()?;
                }
                DeviceField::NodeName => node_name = map.next_value()?,
                DeviceField::NodeSelector => node_selector = map.next_value()?,
                DeviceField::Taints => taints = map.next_value()?,
                DeviceField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let device = Device {
            all_nodes,
            allow_multiple_allocations,
            // Converted already.
            attributes: None,
            binding_conditions,
            binding_failure_conditions,
            binds_to_node,
            capacity,
            consumes_counters,
            name: name.unwrap_or_default(),
            node_allocatable_resources,
            node_name,
            node_selector,
            taints,
        };
        // The slice's name is not known yet (it may come last); an error here sends the
        // slice the wire type's way, which reports it with the name.
        device_entry(
            "",
            self.index,
            &device,
            attributes.unwrap_or_default(),
            self.strings,
        )
        .map_err(de::Error::custom)
    }
}

/// A device's attributes, sorted by name like the wire type's `BTreeMap`.
struct AttributesSeed<'s>(&'s mut Interner);

impl<'de> DeserializeSeed<'de> for AttributesSeed<'_> {
    type Value = Vec<(Arc<str>, AttrValue)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for AttributesSeed<'_> {
    type Value = Vec<(Arc<str>, AttrValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of attributes")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut attributes = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(name) = map.next_key_seed(Interned(&mut *self.0))? {
            let value = map.next_value_seed(AttributeSeed(&mut *self.0))?;
            attributes.push((name, value));
        }
        if !attributes.is_sorted_by(|a, b| a.0 < b.0) {
            attributes.sort_by(|a, b| a.0.cmp(&b.0));
            if attributes.windows(2).any(|pair| pair[0].0 == pair[1].0) {
                return Err(de::Error::custom("an attribute given twice"));
            }
        }
        Ok(attributes)
    }
}

/// One DeviceAttribute, converted as `AttrValue::from_api` converts the wire type's.
struct AttributeSeed<'s>(&'s mut Interner);

impl<'de> DeserializeSeed<'de> for AttributeSeed<'_> {
    type Value = AttrValue;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<AttrValue, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for AttributeSeed<'_> {
    type Value = AttrValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a DeviceAttribute")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AttrValue, A::Error> {
        let mut bool_value: Option<bool> = None;
        let mut bools: Option<Vec<bool>> = None;
        let mut int: Option<i64> = None;
        let mut ints: Option<Vec<i64>> = None;
        let mut string: Option<Arc<str>> = None;
        let mut strings: Option<Vec<String>> = None;
        let mut version: Option<Arc<str>> = None;
        let mut versions: Option<Vec<String>> = None;
        let mut seen = Seen::default();
        while let Some(field) = map.next_key::<AttributeField>()? {
            if field != AttributeField::Other {
                seen.first(field as u32)?;
            }
            match field {
                AttributeField::Bool => bool_value = map.next_value()?,
                AttributeField::Bools => bools = map.next_value()?,
                AttributeField::Int => int = map.next_value()?,
                AttributeField::Ints => ints = map.next_value()?,
                AttributeField::String => {
                    string = map.next_value_seed(Nullable(Interned(&mut *self.0)))?;
                }
                AttributeField::Strings => strings = map.next_value()?,
                AttributeField::Version => {
                    version = map.next_value_seed(Nullable(Interned(&mut *self.0)))?;
                }
                AttributeField::Versions => versions = map.next_value()?,
                AttributeField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // The order of `AttrValue::from_api`: lists first, as upstream's accessor.
        let interned = |list: Vec<String>, strings: &mut Interner| -> Arc<[Arc<str>]> {
            list.iter().map(|s| strings.get(s)).collect()
        };
        Ok(if let Some(v) = ints {
            AttrValue::IntList(v.into())
        } else if let Some(v) = bools {
            AttrValue::BoolList(v.into())
        } else if let Some(v) = strings {
            AttrValue::StringList(interned(v, self.0))
        } else if let Some(v) = versions {
            AttrValue::VersionList(interned(v, self.0))
        } else if let Some(v) = string {
            AttrValue::String(v)
        } else if let Some(v) = int {
            AttrValue::Int(v)
        } else if let Some(v) = bool_value {
            AttrValue::Bool(v)
        } else if let Some(v) = version {
            AttrValue::Version(v)
        } else {
            AttrValue::Unset
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slice with attributes of each kind, capacities, counters, taints and node fields.
    const BASE: &str = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
        "metadata":{"name":"s1","labels":{"a":"b"}},
        "spec":{"driver":"gpu.example.com","nodeName":"node-1",
          "pool":{"name":"p","generation":2,"resourceSliceCount":1},
          "sharedCounters":[{"name":"set","counters":{"mem":{"value":"80Gi"}}}],
          "devices":[
            {"name":"gpu-0","attributes":{"model":{"string":"H100"},"index":{"int":0},
               "driverVersion":{"version":"1.2.3"},"healthy":{"bool":true},"ids":{"ints":[1,2]}},
             "capacity":{"memory":{"value":"80Gi"}},
             "consumesCounters":[{"counterSet":"set","counters":{"mem":{"value":"10Gi"}}}],
             "taints":[{"key":"k","effect":"NoSchedule"}]},
            {"name":"gpu-1","attributes":{"model":{"string":"H100"}},"bindsToNode":true,
             "bindingConditions":["ready"],"allowMultipleAllocations":false}
          ]}}"#;

    fn rules() -> Vec<DeviceTaintRule> {
        vec![
            serde_json::from_str(
                r#"{"metadata":{"name":"r"},"spec":{"deviceSelector":{"device":"gpu-1"},
                "taint":{"key":"drain","effect":"NoExecute"}}}"#,
            )
            .expect("a rule"),
        ]
    }

    /// The index's form of `text` taken this module's way, and whether the visitors took it.
    fn this_way(text: &str, rules: &[&DeviceTaintRule]) -> (String, bool) {
        let (mut strings, mut devices) = (Interner::default(), Vec::new());
        let direct = prepare_direct(text, rules, &mut strings, &mut devices).is_some();
        let (mut strings, mut devices) = (Interner::default(), Vec::new());
        let prepared = prepare_json(text, rules, &mut strings, &mut devices);
        (shown(prepared, &devices), direct)
    }

    /// The index's form of the wire type `text` decodes to.
    fn wire_way(text: &str, rules: &[&DeviceTaintRule]) -> String {
        let (mut strings, mut devices) = (Interner::default(), Vec::new());
        let prepared = match serde_json::from_str::<ResourceSlice>(text) {
            Ok(slice) => prepare_slice(&slice, rules, &mut strings, &mut devices),
            Err(e) => Err(decode_error(e)),
        };
        shown(prepared, &devices)
    }

    fn shown(prepared: Result<PreparedSlice, IndexError>, devices: &[DeviceEntry]) -> String {
        match prepared {
            Ok(prepared) => format!("{prepared:?}\n{devices:?}"),
            // A failed slice's devices are dropped by the caller.
            Err(error) => format!("{error:?}"),
        }
    }

    #[test]
    fn generated_slices_take_the_direct_way_to_the_same_index() {
        let rules = rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        let mut texts = vec![BASE.to_string()];
        for preset in ["mixed", "partitionable", "consumable-capacity", "hgx-mixed"] {
            let spec = dra_gen::preset(preset, 3).expect("preset");
            for slice in dra_gen::generate(&spec).expect("generate").resource_slices {
                texts.push(serde_json::to_string(&slice).expect("encode"));
            }
        }
        for text in &texts {
            let (ours, direct) = this_way(text, &rules);
            assert!(direct, "left to the wire type: {text:.200}");
            assert!(ours == wire_way(text, &rules), "differs: {text:.200}");
        }
    }

    /// Unusual but valid texts, and invalid ones: the same answer as the wire type, whichever
    /// way each went; the common ones the direct way.
    #[test]
    fn unusual_texts_index_like_the_wire_type() {
        let rules = rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        let variants: &[(&str, &str, &str, bool)] = &[
            // (what, replace, with, taken the direct way)
            (
                "unknown fields",
                r#""kind":"ResourceSlice","#,
                r#""kind":"ResourceSlice","x":{"y":[1]},"#,
                true,
            ),
            (
                "unknown device field",
                r#""bindsToNode":true"#,
                r#""bindsToNode":true,"future":{"a":1}"#,
                true,
            ),
            (
                "unknown attribute field",
                r#"{"int":0}"#,
                r#"{"int":0,"float":1.5}"#,
                true,
            ),
            (
                "unsorted attributes",
                r#""model":{"string":"H100"},"index":{"int":0}"#,
                r#""index":{"int":0},"model":{"string":"H100"}"#,
                true,
            ),
            (
                "null attributes",
                r#"{"model":{"string":"H100"}},"bindsToNode""#,
                r#"null,"bindsToNode""#,
                true,
            ),
            (
                "null devices",
                r#""devices":["#,
                r#""devices":null,"d2":["#,
                true,
            ),
            (
                "null metadata",
                r#""metadata":{"name":"s1","labels":{"a":"b"}}"#,
                r#""metadata":null"#,
                true,
            ),
            (
                "null spec",
                r#""spec":{"driver""#,
                r#""spec":null,"s2":{"driver""#,
                true,
            ),
            (
                "escaped key",
                r#""driver":"gpu"#,
                r#""driv\u0065r":"gpu"#,
                true,
            ),
            (
                "escaped value",
                r#""H100"},"index""#,
                r#""H\u0031 00"},"index""#,
                true,
            ),
            (
                "lists win over scalars",
                r#"{"int":0}"#,
                r#"{"int":0,"strings":["a","b"],"string":"c"}"#,
                true,
            ),
            (
                "string wins over int",
                r#"{"int":0}"#,
                r#"{"int":0,"string":"c"}"#,
                true,
            ),
            ("unset attribute", r#"{"bool":true}"#, r#"{}"#, true),
            (
                "no apiVersion or kind",
                r#""apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","#,
                "",
                true,
            ),
            (
                "spec given twice",
                r#""spec":{"driver""#,
                r#""spec":{"driver":"x","devices":[{"name":"z"}]},"spec":{"driver""#,
                false,
            ),
            (
                "attribute given twice",
                r#""model":{"string":"H100"},"index""#,
                r#""model":{"string":"H100"},"model":{"string":"B200"},"index""#,
                false,
            ),
            (
                "device field given twice",
                r#""bindsToNode":true"#,
                r#""bindsToNode":true,"bindsToNode":false"#,
                false,
            ),
            (
                "bad device quantity",
                r#"{"value":"80Gi"}}"#,
                r#"{"value":"lots"}}"#,
                false,
            ),
            (
                "bad counter quantity",
                r#""mem":{"value":"80Gi"}}}]"#,
                r#""mem":{"value":"lots"}}}]"#,
                false,
            ),
            (
                "devices not a list",
                r#""devices":["#,
                r#""devices":5,"d2":["#,
                false,
            ),
            (
                "bool not a bool",
                r#""bindsToNode":true"#,
                r#""bindsToNode":"yes""#,
                false,
            ),
            (
                "int not an integer",
                r#"{"int":0}"#,
                r#"{"int":1.5}"#,
                false,
            ),
            ("int as a string", r#"{"int":0}"#, r#"{"int":"0"}"#, false),
            (
                "another apiVersion",
                r#""resource.k8s.io/v1""#,
                r#""resource.k8s.io/v1beta1""#,
                false,
            ),
            (
                "another kind",
                r#""kind":"ResourceSlice""#,
                r#""kind":"DeviceClass""#,
                false,
            ),
            ("trailing text", "", "", false),
            ("a list", "", "", false),
        ];
        for (what, from, to, direct_expected) in variants {
            let text = if *what == "a list" {
                format!("[{BASE}]")
            } else if *what == "trailing text" {
                format!("{BASE} x")
            } else {
                assert!(BASE.contains(from), "{what}: pattern not in the base");
                BASE.replacen(from, to, 1)
            };
            let (ours, direct) = this_way(&text, &rules);
            assert_eq!(direct, *direct_expected, "{what}: way taken");
            let wire = wire_way(&text, &rules);
            assert!(ours == wire, "{what}:\nours {ours:.400}\nwire {wire:.400}");
        }
    }
}
