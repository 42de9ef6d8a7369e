//! ResourceSlices given as JSON text ([`SliceInput::Json`](crate::SliceInput)), read straight
//! into the index's form by a byte-level reader ([`dra_types::json_subset::Cursor`]) instead
//! of serde's visitor per node, which was a third of a small run's instructions: the slice,
//! its spec, its devices, their attributes, capacities and request policies are read by hand,
//! every other part is decoded with its k8s-openapi type from its own text.
//!
//! The reader accepts part of what the wire type accepts and gives the same index for it:
//! the same fields with the same types, unknown fields skipped, missing ones defaulted,
//! `null` as absent. Where a device, its attribute map, one attribute or its capacity map
//! takes a shape the reader does not follow (a field given twice, which the wire type keeps
//! the last of; a list attribute; a list of valid values; an escaped name; a type error), that part
//! alone is decoded with its wire type from its text. Anything outside the JSON subset the
//! cursor reads, and anything odd at the slice or spec level, sends the whole text to
//! [`prepare_json`]'s second way, decoding the wire type and converting it like any object,
//! so which way a slice took never shows in the answer. Parts decode alone exactly as within
//! the whole text because the cursor limits nesting to half of serde_json's limit.
//!
//! Devices mostly repeat each other's attribute values and capacities; the reader keeps what
//! it read of each device with the byte ranges it read it from ([`DeviceReads`]) and takes an
//! attribute again, name and value, without reading it, where the same member's bytes come
//! at the same position (a capacity map where the same map's bytes do); a name alone seen at
//! the same position is not looked up again. Each device is compared so with the device at
//! its position in the slice two before it ([`CarriedSlice`]), else with the device before it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use dra_types::json_subset::{Cursor, Seen, Token};
use dra_types::{Quantity, bytes};
use k8s_openapi::Resource;
use k8s_openapi::api::core::v1::NodeSelector;
use k8s_openapi::api::resource::v1::{
    CounterSet, Device, DeviceAttribute, DeviceCapacity, DeviceTaintRule, ResourcePool,
    ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;

use crate::index::{
    AttrValue, Capacities, Capacity, DeviceEntry, IndexError, IndexErrorKind, Interner,
    PreparedSlice, RequestPolicy, ValidRange, add_rule_taints, capacities, device_entry,
    prepare_slice, slice_entry, wire_device_entry,
};

/// [`prepare_slice`] of the slice `text` holds: straight from the text when the reader
/// takes it, else through the wire type (whose error, if it does not decode either, is an
/// [`IndexErrorKind::Decode`]).
pub(crate) fn prepare_json(
    text: &str,
    taint_rules: &[&DeviceTaintRule],
    strings: &mut Interner,
    devices: &mut Vec<DeviceEntry>,
) -> Result<PreparedSlice, IndexError> {
    let before = devices.len();
    if let Some(prepared) = prepare_direct(text, taint_rules, strings, devices, false) {
        return Ok(prepared);
    }
    devices.truncate(before);
    let slice: ResourceSlice = serde_json::from_str(text).map_err(decode_error)?;
    prepare_slice(&slice, taint_rules, strings, devices)
}

/// [`prepare_json`] of a text whose end was taken from its line
/// ([`SliceInput::JsonToLineEnd`](crate::SliceInput)): only the reader's way, which reads the
/// text to its last byte, and only for a slice whose last member is `spec` (the members after
/// it are the ones the loader did not look at); anything else is an
/// [`IndexErrorKind::Decode`] error, for the caller to take the way that reads all of its
/// input. No second way here: the wire type keeps the last of a field given twice, where the
/// loader took the first `metadata`.
pub(crate) fn prepare_json_to_line_end(
    text: &str,
    taint_rules: &[&DeviceTaintRule],
    strings: &mut Interner,
    devices: &mut Vec<DeviceEntry>,
) -> Result<PreparedSlice, IndexError> {
    prepare_direct(text, taint_rules, strings, devices, true).ok_or_else(|| IndexError {
        slice: String::new(),
        field: String::new(),
        message: "is not one ResourceSlice document ending with its line, its spec last"
            .to_string(),
        kind: IndexErrorKind::Decode,
    })
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

/// The reader's way; `None` for anything it leaves to the wire type (some devices may be
/// appended then), and with `spec_last`, for a slice with a member after its `spec`.
fn prepare_direct(
    text: &str,
    taint_rules: &[&DeviceTaintRule],
    strings: &mut Interner,
    devices: &mut Vec<DeviceEntry>,
    spec_last: bool,
) -> Option<PreparedSlice> {
    let before = devices.len();
    let mut cursor = Cursor::new(text);
    cursor.skip_whitespace();
    let mut reader = SliceReader {
        carried: strings.take_carried_slice(),
        strings,
        devices,
        previous: DeviceReads::default(),
        previous_carried: false,
        current: DeviceReads::default(),
        reads: Vec::new(),
    };
    let parts = reader.slice(&mut cursor);
    // Carried whether or not the slice reads whole: its devices' reads are of its own text
    // either way, and the slice after the next one compares with this one.
    let SliceReader { carried, reads, .. } = reader;
    strings.carry_slice(carried.refilled(text, reads));
    let (metadata, spec, after_spec) = parts?;
    cursor.skip_whitespace();
    if cursor.pos() != text.len() || spec_last && after_spec {
        return None;
    }
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

/// The value at the cursor, `depth` containers deep, decoded with its own type from its
/// text (`null` is absent for an `Option`, as within the whole text).
fn decoded<T: DeserializeOwned>(cursor: &mut Cursor<'_>, depth: usize) -> Option<T> {
    let (_, range) = cursor.value_range(depth)?;
    serde_json::from_str(cursor.slice(range)).ok()
}

/// The text of a string token, decoded when it holds an escape; `None` for other tokens.
fn string_text<'a>(cursor: &Cursor<'a>, token: Token) -> Option<Cow<'a, str>> {
    match token {
        Token::String {
            start,
            end,
            escaped,
        } => {
            if !escaped {
                return cursor.plain_str(token).map(Cow::Borrowed);
            }
            // With its quotes; the cursor accepted only escapes serde decodes.
            serde_json::from_str(cursor.slice(start - 1..end + 1))
                .ok()
                .map(Cow::Owned)
        }
        _ => None,
    }
}

/// A string (not `null`) at the cursor.
fn string<'a>(cursor: &mut Cursor<'a>, depth: usize) -> Option<Cow<'a, str>> {
    let token = cursor.value(depth)?;
    string_text(cursor, token)
}

/// A string or `null` at the cursor.
fn optional_string(cursor: &mut Cursor<'_>, depth: usize) -> Option<Option<String>> {
    match cursor.value(depth)? {
        Token::Null => Some(None),
        token => string_text(cursor, token).map(|text| Some(text.into_owned())),
    }
}

/// A boolean or `null` at the cursor.
fn optional_bool(cursor: &mut Cursor<'_>, depth: usize) -> Option<Option<bool>> {
    match cursor.value(depth)? {
        Token::Null => Some(None),
        Token::True => Some(Some(true)),
        Token::False => Some(Some(false)),
        _ => None,
    }
}

/// Whether the value at the cursor is `null`, read if so.
fn null(cursor: &mut Cursor<'_>, depth: usize) -> Option<bool> {
    if cursor.peek()? != b'n' {
        return Some(false);
    }
    (cursor.value(depth)? == Token::Null).then_some(true)
}

/// Reads one slice, appending its devices to `devices`.
struct SliceReader<'s> {
    strings: &'s mut Interner,
    devices: &'s mut Vec<DeviceEntry>,
    /// The slice two before this one in the run, whose devices' reads are taken over by
    /// position ([`SliceReader::begin_device`]).
    carried: CarriedSlice,
    /// What the device being read is compared with: the carried slice's device at its
    /// position (its texts in `carried.text`: `previous_carried`), else this slice's device
    /// before it.
    previous: DeviceReads,
    previous_carried: bool,
    /// What the device being read reads, of this slice's text.
    current: DeviceReads,
    /// This slice's devices' reads, in order, for the devices after them and the slice two
    /// after this one.
    reads: Vec<DeviceReads>,
}

/// What the reader took from a device's text, by position: a driver describes its devices
/// alike (the GPUs of a node share model, architecture, driver and CUDA versions, NUMA node,
/// memory; the GPU at one position of every node of a fleet differs from the others in its
/// UUID alone), and bytes equal to an attribute value or a capacity map already read decode
/// to the same value. A JSON object ends at its own closing brace, so a complete object's
/// text found again at the cursor is that object, whatever follows. The byte ranges are of
/// the text the device was read from.
#[derive(Debug, Default, Clone)]
pub(crate) struct DeviceReads {
    /// The name's text (a string) and the name, until a device compared with this one takes
    /// it over.
    name: Option<(Range<usize>, Arc<str>)>,
    /// Attributes in the order of the text.
    attributes: Vec<AttributeRead>,
    /// The capacity map's text (an object) and its entries.
    capacity: Option<(Range<usize>, Capacities)>,
    /// Whether `attributes` are in strict name order as written.
    sorted: bool,
}

/// A slice the reader read before, for the slice two after it in the same run of slices (a
/// node's GPU slice for the next node's, where each node publishes a GPU and a NIC slice;
/// the slice before of one driver when every slice is of one): a copy of its text, which is
/// another slice's by then, and its devices' reads in order ([`Interner::carry_slice`]).
#[derive(Debug, Default)]
pub(crate) struct CarriedSlice {
    text: Vec<u8>,
    devices: Vec<DeviceReads>,
}

impl CarriedSlice {
    /// This slice's buffers holding `text` and its devices' `reads` instead.
    fn refilled(mut self, text: &str, reads: Vec<DeviceReads>) -> CarriedSlice {
        self.text.clear();
        self.text.extend_from_slice(text.as_bytes());
        self.devices = reads;
        self
    }
}

/// An attribute as read: its name and value, the text of the whole member (the name, the
/// colon and the value) and how many of its bytes come before the value.
#[derive(Debug, Clone)]
struct AttributeRead {
    /// The name and value, until a device compared with this one takes them over; `None`
    /// after that (or when a device gave up midway and took the wire type's way, for the
    /// positions it reached), which a device compared with it reads as an attribute unlike
    /// its own.
    kept: Option<(Arc<str>, AttrValue)>,
    text: Range<usize>,
    before_value: usize,
}

/// How an attribute's text relates to the previous device's at the same position.
enum Repeated {
    /// The whole member written again, of this length.
    Member(usize),
    /// The name written again, this many bytes before the value.
    Name(usize),
}

/// A slice's metadata and spec, and whether any member came after `spec`.
type SliceParts = (Option<ObjectMeta>, Option<ResourceSliceSpec>, bool);

impl SliceReader<'_> {
    /// The text the ranges of `previous` are of: the carried slice's copy, or `text`, the
    /// slice being read.
    fn previous_text<'t>(
        previous_carried: bool,
        carried: &'t CarriedSlice,
        text: &'t str,
    ) -> &'t [u8] {
        if previous_carried {
            &carried.text
        } else {
            text.as_bytes()
        }
    }

    /// Whether the value at `of` in the text `previous` was read from is written again in
    /// `text` at `at`; its length if so. Only an object or a string: each ends at its own
    /// closing brace or quote, so equal bytes are an equal value whatever follows.
    fn repeated_value_at(&self, of: &Range<usize>, text: &str, at: usize) -> Option<usize> {
        let value =
            Self::previous_text(self.previous_carried, &self.carried, text).get(of.clone())?;
        (matches!(value.first(), Some(b'{' | b'"'))
            && bytes::starts_with(&text.as_bytes()[at..], value))
        .then_some(value.len())
    }

    /// Device number `index` is next: it is compared with the carried slice's device at its
    /// position, whose reads it takes over, else with a copy of this slice's device before it
    /// (kept as it is for the slice two after this one). The reads `previous` held are dropped,
    /// and their list's room kept for `current`.
    fn begin_device(&mut self, index: usize) {
        let (next, carried) = match self.carried.devices.get_mut(index) {
            Some(reads) => (std::mem::take(reads), true),
            None => (self.reads.last().cloned().unwrap_or_default(), false),
        };
        let mut room = std::mem::replace(&mut self.previous, next).attributes;
        room.clear();
        self.previous_carried = carried;
        self.current = DeviceReads {
            name: None,
            attributes: room,
            capacity: None,
            sorted: false,
        };
    }

    /// `part` at the cursor; where it gives up, the same value decoded with its wire type and
    /// converted by `wire` (`None` when that fails too).
    fn or_wire<'a, T, W: DeserializeOwned>(
        &mut self,
        cursor: &mut Cursor<'a>,
        depth: usize,
        part: impl FnOnce(&mut Self, &mut Cursor<'a>) -> Option<T>,
        wire: impl FnOnce(&mut Self, W) -> Option<T>,
    ) -> Option<T> {
        let start = cursor.pos();
        if let Some(value) = part(self, cursor) {
            return Some(value);
        }
        cursor.set_pos(start);
        let decoded = decoded(cursor, depth)?;
        wire(self, decoded)
    }

    /// The slice object at the cursor: its metadata and its spec without devices.
    fn slice(&mut self, cursor: &mut Cursor<'_>) -> Option<SliceParts> {
        let (mut metadata, mut spec) = (None, None);
        let mut seen = Seen::default();
        let (mut spec_read, mut after_spec) = (false, false);
        cursor.members(1, |cursor, key| {
            after_spec |= spec_read;
            match cursor.plain_str(key)? {
                "apiVersion" => {
                    seen.first(0)?;
                    (string(cursor, 1)? == ResourceSlice::API_VERSION).then_some(())?;
                }
                "kind" => {
                    seen.first(1)?;
                    (string(cursor, 1)? == ResourceSlice::KIND).then_some(())?;
                }
                "metadata" => {
                    seen.first(2)?;
                    metadata = decoded(cursor, 1)?;
                }
                "spec" => {
                    seen.first(3)?;
                    spec_read = true;
                    spec = if null(cursor, 1)? {
                        None
                    } else {
                        Some(self.spec(cursor, 1)?)
                    };
                }
                _ => {
                    cursor.value(1)?;
                }
            }
            Some(())
        })?;
        Some((metadata, spec, after_spec))
    }

    /// A ResourceSliceSpec `depth` deep, without its devices, which are appended.
    fn spec(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<ResourceSliceSpec> {
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
        let inner = depth + 1;
        cursor.members(inner, |cursor, key| {
            match cursor.plain_str(key)? {
                "allNodes" => {
                    seen.first(0)?;
                    all_nodes = optional_bool(cursor, inner)?;
                }
                "devices" => {
                    seen.first(1)?;
                    if !null(cursor, inner)? {
                        self.devices(cursor, inner)?;
                    }
                }
                "driver" => {
                    seen.first(2)?;
                    driver = optional_string(cursor, inner)?;
                }
                "nodeName" => {
                    seen.first(3)?;
                    node_name = optional_string(cursor, inner)?;
                }
                "nodeSelector" => {
                    seen.first(4)?;
                    node_selector = decoded(cursor, inner)?;
                }
                "partitionTypeAttribute" => {
                    seen.first(5)?;
                    partition_type_attribute = optional_string(cursor, inner)?;
                }
                "perDeviceNodeSelection" => {
                    seen.first(6)?;
                    per_device_node_selection = optional_bool(cursor, inner)?;
                }
                "pool" => {
                    seen.first(7)?;
                    pool = decoded(cursor, inner)?;
                }
                "sharedCounters" => {
                    seen.first(8)?;
                    shared_counters = decoded(cursor, inner)?;
                }
                "skipNodeOperations" => {
                    seen.first(9)?;
                    skip_node_operations = decoded(cursor, inner)?;
                }
                _ => {
                    cursor.value(inner)?;
                }
            }
            Some(())
        })?;
        Some(ResourceSliceSpec {
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

    /// The list of devices `depth` deep, converted and appended one by one.
    fn devices(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
        let inner = depth + 1;
        let mut index = 0;
        cursor.elements(inner, |cursor| {
            self.begin_device(index);
            let device = self.or_wire(
                cursor,
                inner,
                |reader, cursor| reader.device(cursor, inner, index),
                |reader, device: Device| wire_device_entry("", index, &device, reader.strings).ok(),
            )?;
            self.devices.push(device);
            let reads = std::mem::take(&mut self.current);
            self.reads.push(reads);
            index += 1;
            Some(())
        })
    }

    /// Device number `index`, `depth` deep, as the index's entry (without the taints of
    /// DeviceTaintRules).
    fn device(
        &mut self,
        cursor: &mut Cursor<'_>,
        depth: usize,
        index: usize,
    ) -> Option<DeviceEntry> {
        let mut device = Device::default();
        // Taken over from the device compared with, where its name's text comes again.
        let mut name = None;
        let mut attributes = Vec::new();
        // `None` until the device gives one: the shared empty list is taken only when it
        // gives none (a copy of it is an atomic count, for every device).
        let mut capacity = None;
        let mut seen = Seen::default();
        let inner = depth + 1;
        cursor.members(inner, |cursor, key| {
            match cursor.plain_str(key)? {
                "allNodes" => {
                    seen.first(0)?;
                    device.all_nodes = optional_bool(cursor, inner)?;
                }
                "allowMultipleAllocations" => {
                    seen.first(1)?;
                    device.allow_multiple_allocations = optional_bool(cursor, inner)?;
                }
                "attributes" => {
                    seen.first(2)?;
                    if !null(cursor, inner)? {
                        attributes = self.attributes(cursor, inner)?;
                    }
                }
                "bindingConditions" => {
                    seen.first(3)?;
                    device.binding_conditions = decoded(cursor, inner)?;
                }
                "bindingFailureConditions" => {
                    seen.first(4)?;
                    device.binding_failure_conditions = decoded(cursor, inner)?;
                }
                "bindsToNode" => {
                    seen.first(5)?;
                    device.binds_to_node = optional_bool(cursor, inner)?;
                }
                "capacity" => {
                    seen.first(6)?;
                    if !null(cursor, inner)? {
                        capacity = Some(self.capacity(cursor, inner, index)?);
                    }
                }
                "consumesCounters" => {
                    seen.first(7)?;
                    device.consumes_counters = decoded(cursor, inner)?;
                }
                "name" => {
                    seen.first(8)?;
                    let start = cursor.pos();
                    let repeated = self
                        .previous
                        .name
                        .as_ref()
                        .and_then(|(of, _)| self.repeated_value_at(of, cursor.text(), start));
                    name = match repeated {
                        Some(length) => {
                            cursor.set_pos(start + length);
                            self.previous.name.take().map(|(_, name)| name)
                        }
                        None => match cursor.value(inner)? {
                            Token::Null => None,
                            token => Some(self.strings.get(&string_text(cursor, token)?)),
                        },
                    };
                    self.current.name = name.clone().map(|name| (start..cursor.pos(), name));
                }
                "nodeAllocatableResources" => {
                    seen.first(9)?;
                    device.node_allocatable_resources = decoded(cursor, inner)?;
                }
                "nodeName" => {
                    seen.first(10)?;
                    device.node_name = optional_string(cursor, inner)?;
                }
                "nodeSelector" => {
                    seen.first(11)?;
                    device.node_selector = decoded(cursor, inner)?;
                }
                "taints" => {
                    seen.first(12)?;
                    device.taints = decoded(cursor, inner)?;
                }
                _ => {
                    cursor.value(inner)?;
                }
            }
            Some(())
        })?;
        // The slice's name is not known yet (it may come last); an error here sends the
        // device the wire type's way, and from there the slice, which reports it with the
        // name.
        let capacity = capacity.unwrap_or_else(|| self.strings.no_capacity());
        // A device without a name has the wire type's default, the empty one.
        let name = name.unwrap_or_else(|| self.strings.get(""));
        device_entry(
            "",
            index,
            &device,
            (name, attributes, capacity),
            self.strings,
        )
        .ok()
    }

    /// A device's attributes, `depth` deep, sorted by name like the wire type's `BTreeMap`.
    fn attributes(
        &mut self,
        cursor: &mut Cursor<'_>,
        depth: usize,
    ) -> Option<Vec<(Arc<str>, AttrValue)>> {
        let inner = depth + 1;
        self.or_wire(
            cursor,
            depth,
            |reader, cursor| {
                let text = cursor.text();
                reader.current.attributes.clear();
                reader.current.sorted = false;
                let mut attributes = Vec::with_capacity(reader.previous.attributes.len());
                // Whether every name so far is the previous device's at the same position.
                let mut names_as_before = true;
                let mut more = !cursor.open(inner, b'{', b'}')?;
                while more {
                    let start = cursor.pos();
                    let position = attributes.len();
                    let previous_text =
                        Self::previous_text(reader.previous_carried, &reader.carried, text);
                    let repeated = reader.previous.attributes.get(position).and_then(|read| {
                        read.kept.as_ref()?;
                        let member = previous_text.get(read.text.clone())?;
                        let rest = &text.as_bytes()[start..];
                        if member.last() == Some(&b'}') && bytes::starts_with(rest, member) {
                            Some(Repeated::Member(member.len()))
                        } else if bytes::starts_with(rest, &member[..read.before_value]) {
                            Some(Repeated::Name(read.before_value))
                        } else {
                            None
                        }
                    });
                    // The name and value of this device's attribute, and the same kept for
                    // the next device: the previous device's are taken over (moved) where
                    // they repeat, so that each costs one reference count more, not three.
                    let (kept, before_value) = match repeated {
                        // The previous device's member at this position written again, name
                        // and value: taken as read, without scanning its name.
                        Some(Repeated::Member(length)) => {
                            let read = &mut reader.previous.attributes[position];
                            cursor.set_pos(start + length);
                            (read.kept.take()?, read.before_value)
                        }
                        // Its name written again (the bytes up to the value): the value read.
                        Some(Repeated::Name(before_value)) => {
                            let (name, _) = reader.previous.attributes[position].kept.take()?;
                            cursor.set_pos(start + before_value);
                            cursor.skip_whitespace();
                            ((name, reader.attribute(cursor, inner)?), before_value)
                        }
                        None => {
                            let key = cursor.string()?;
                            cursor.skip_whitespace();
                            cursor.eat(b':')?;
                            cursor.skip_whitespace();
                            let before_value = cursor.pos() - start;
                            let name = cursor.plain_str(key)?;
                            let same_name =
                                reader
                                    .previous
                                    .attributes
                                    .get_mut(position)
                                    .and_then(|read| {
                                        read.kept.take_if(|(kept, _)| {
                                            bytes::equal(kept.as_bytes(), name.as_bytes())
                                        })
                                    });
                            let name = match same_name {
                                Some((name, _)) => name,
                                None => {
                                    names_as_before = false;
                                    reader.strings.get(name)
                                }
                            };
                            ((name, reader.attribute(cursor, inner)?), before_value)
                        }
                    };
                    let (name, value) = (kept.0.clone(), kept.1.clone());
                    reader.current.attributes.push(AttributeRead {
                        kept: Some(kept),
                        text: start..cursor.pos(),
                        before_value,
                    });
                    attributes.push((name, value));
                    more = cursor.after_member(b'}')?;
                }
                // The previous device's names in the same order were checked already.
                let names_as_before =
                    names_as_before && attributes.len() == reader.previous.attributes.len();
                let sorted = (names_as_before && reader.previous.sorted)
                    || attributes.is_sorted_by(|a, b| a.0 < b.0);
                reader.current.sorted = sorted;
                if !sorted {
                    attributes.sort_by(|a, b| a.0.cmp(&b.0));
                    // A name given twice: the wire type keeps the last.
                    if attributes.windows(2).any(|pair| pair[0].0 == pair[1].0) {
                        return None;
                    }
                }
                Some(attributes)
            },
            |reader, map: BTreeMap<String, DeviceAttribute>| {
                // Reads from the text, if any, stay: each is of the bytes it names.
                reader.current.sorted = false;
                Some(
                    map.iter()
                        .map(|(k, v)| {
                            (
                                reader.strings.get(k),
                                AttrValue::from_api(v, reader.strings),
                            )
                        })
                        .collect(),
                )
            },
        )
    }

    /// One DeviceAttribute, `depth` deep, converted as `AttrValue::from_api` converts the wire
    /// type's; list values (rare) take the wire type's way.
    fn attribute(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<AttrValue> {
        let inner = depth + 1;
        let start = cursor.pos();
        if let Some(value) = self.attribute_of_one_value(cursor, inner) {
            return Some(value);
        }
        cursor.set_pos(start);
        self.or_wire(
            cursor,
            depth,
            |reader, cursor| {
                let mut bool_value: Option<bool> = None;
                let mut int: Option<i64> = None;
                let mut string_value: Option<Arc<str>> = None;
                let mut version: Option<Arc<str>> = None;
                let mut seen = Seen::default();
                cursor.members(inner, |cursor, key| {
                    match cursor.plain_str(key)? {
                        "bool" => {
                            seen.first(0)?;
                            bool_value = optional_bool(cursor, inner)?;
                        }
                        "int" => {
                            seen.first(1)?;
                            int = match cursor.value(inner)? {
                                Token::Null => None,
                                Token::Integer { start, end } => {
                                    Some(cursor.slice(start..end).parse().ok()?)
                                }
                                _ => return None,
                            };
                        }
                        "string" => {
                            seen.first(2)?;
                            string_value = reader.interned(cursor, inner)?;
                        }
                        "version" => {
                            seen.first(3)?;
                            version = reader.interned(cursor, inner)?;
                        }
                        "bools" | "ints" | "strings" | "versions" => return None,
                        _ => {
                            cursor.value(inner)?;
                        }
                    }
                    Some(())
                })?;
                // The order of `AttrValue::from_api` (no lists here).
                Some(if let Some(v) = string_value {
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
            },
            |reader, attribute: DeviceAttribute| {
                Some(AttrValue::from_api(&attribute, reader.strings))
            },
        )
    }

    /// The common shape of an attribute, an object of one `string`, `version` or `int`
    /// member (not `null`), read without scanning the member's name; `None` for anything
    /// else (the cursor anywhere), which [`SliceReader::attribute`] reads its general way.
    fn attribute_of_one_value(
        &mut self,
        cursor: &mut Cursor<'_>,
        inner: usize,
    ) -> Option<AttrValue> {
        const STRING: &[u8] = b"\"string\":";
        const VERSION: &[u8] = b"\"version\":";
        const INT: &[u8] = b"\"int\":";
        if cursor.open(inner, b'{', b'}')? {
            return None;
        }
        let rest = &cursor.text().as_bytes()[cursor.pos()..];
        let (name, length) = [STRING, VERSION, INT]
            .into_iter()
            .find(|name| rest.starts_with(name))
            .map(|name| (name, name.len()))?;
        cursor.set_pos(cursor.pos() + length);
        cursor.skip_whitespace();
        let value = if name == INT {
            match cursor.value(inner)? {
                Token::Integer { start, end } => {
                    AttrValue::Int(cursor.slice(start..end).parse().ok()?)
                }
                _ => return None,
            }
        } else {
            let token = cursor.string()?;
            let text = self.strings.get(cursor.plain_str(token)?);
            if name == STRING {
                AttrValue::String(text)
            } else {
                AttrValue::Version(text)
            }
        };
        (!cursor.after_member(b'}')?).then_some(value)
    }

    /// A string or `null` at the cursor, shared through the interner.
    fn interned(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<Option<Arc<str>>> {
        match cursor.value(depth)? {
            Token::Null => Some(None),
            token => string_text(cursor, token).map(|text| Some(self.strings.get(&text))),
        }
    }

    /// The capacities of device number `index`, `depth` deep, parsed, in name order.
    fn capacity(
        &mut self,
        cursor: &mut Cursor<'_>,
        depth: usize,
        index: usize,
    ) -> Option<Capacities> {
        let inner = depth + 1;
        self.or_wire(
            cursor,
            depth,
            |reader, cursor| {
                let start = cursor.pos();
                if let Some((of, _)) = &reader.previous.capacity
                    && let Some(length) = reader.repeated_value_at(of, cursor.text(), start)
                    && let Some((_, capacity)) = reader.previous.capacity.take()
                {
                    cursor.set_pos(start + length);
                    reader.current.capacity = Some((start..start + length, capacity.clone()));
                    return Some(capacity);
                }
                let mut capacity: Vec<(Arc<str>, Capacity)> = Vec::with_capacity(1);
                cursor.members(inner, |cursor, key| {
                    let name = cursor.plain_str(key)?;
                    // In name order, each name once, as the wire type's `BTreeMap` gives them.
                    if capacity.last().is_some_and(|(last, _)| **last >= *name) {
                        return None;
                    }
                    let value = reader.capacity_value(cursor, inner)?;
                    capacity.push((reader.strings.get(name), value));
                    Some(())
                })?;
                let capacity = reader.strings.capacity_list(capacity);
                reader.current.capacity = Some((start..cursor.pos(), capacity.clone()));
                Some(capacity)
            },
            |reader, map: BTreeMap<String, DeviceCapacity>| {
                capacities("", index, &map, reader.strings).ok()
            },
        )
    }

    /// One DeviceCapacity `depth` deep, its `value` required; a request policy with a list
    /// of valid values (rare) is left to the wire type.
    fn capacity_value(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<Capacity> {
        let inner = depth + 1;
        let (mut value, mut policy) = (None, None);
        let mut seen = Seen::default();
        cursor.members(inner, |cursor, key| {
            match cursor.plain_str(key)? {
                "value" => {
                    seen.first(0)?;
                    value = Some(self.quantity(cursor, inner)?);
                }
                "requestPolicy" => {
                    seen.first(1)?;
                    policy = Some(self.request_policy(cursor, inner)?);
                }
                _ => {
                    cursor.value(inner)?;
                }
            }
            Some(())
        })?;
        Some(Capacity {
            value: value?,
            policy,
        })
    }

    /// A CapacityRequestPolicy `depth` deep, without `validValues`.
    fn request_policy(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<RequestPolicy> {
        let inner = depth + 1;
        let (mut default, mut valid_range) = (None, None);
        let mut seen = Seen::default();
        cursor.members(inner, |cursor, key| {
            match cursor.plain_str(key)? {
                "default" => {
                    seen.first(0)?;
                    default = Some(self.quantity(cursor, inner)?);
                }
                "validRange" => {
                    seen.first(1)?;
                    valid_range = Some(self.valid_range(cursor, inner)?);
                }
                "validValues" => return None,
                _ => {
                    cursor.value(inner)?;
                }
            }
            Some(())
        })?;
        Some(RequestPolicy {
            default,
            valid_values: None,
            valid_range,
        })
    }

    /// A CapacityRequestPolicyRange `depth` deep, its `min` required.
    fn valid_range(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<ValidRange> {
        let inner = depth + 1;
        let (mut min, mut max, mut step) = (None, None, None);
        let mut seen = Seen::default();
        cursor.members(inner, |cursor, key| {
            let (bit, slot) = match cursor.plain_str(key)? {
                "min" => (0, &mut min),
                "max" => (1, &mut max),
                "step" => (2, &mut step),
                _ => return cursor.value(inner).map(drop),
            };
            seen.first(bit)?;
            *slot = Some(self.quantity(cursor, inner)?);
            Some(())
        })?;
        Some(ValidRange {
            min: min?,
            max,
            step,
        })
    }

    /// A quantity string (not `null`, without escapes) at the cursor, parsed.
    fn quantity(&mut self, cursor: &mut Cursor<'_>, depth: usize) -> Option<Quantity> {
        let token = cursor.value(depth)?;
        self.strings.quantity(cursor.plain_str(token)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slice with attributes of each kind, capacities, counters, taints and node fields;
    /// gpu-2 repeats most of gpu-0's attributes and its capacities, and gpu-1 its first
    /// attribute, as devices of one slice do.
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
            {"name":"gpu-2","attributes":{"model":{"string":"H100"},"index":{"int":2},
               "driverVersion":{"version":"1.2.3"},"healthy":{"bool":true}},
             "capacity":{"memory":{"value":"80Gi"}}},
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

    /// The index's form of `text` taken this module's way, and whether the reader took it
    /// (with or without parts decoded by their wire types).
    fn this_way(text: &str, rules: &[&DeviceTaintRule]) -> (String, bool) {
        let (mut strings, mut devices) = (Interner::default(), Vec::new());
        let direct = prepare_direct(text, rules, &mut strings, &mut devices, false).is_some();
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

    /// A text whose end the loader took from its line: the reader's answer for one whole
    /// slice with `spec` its last member, and a Decode error for anything else, even where
    /// the wire type (or [`prepare_json`]) would decode the text.
    #[test]
    fn texts_cut_at_their_line_end_take_only_the_readers_way() {
        let rules = rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        let to_line_end = |text: &str| {
            let (mut strings, mut devices) = (Interner::default(), Vec::new());
            let prepared = prepare_json_to_line_end(text, &rules, &mut strings, &mut devices);
            shown(prepared, &devices)
        };
        let (expected, direct) = this_way(BASE, &rules);
        assert!(direct);
        assert_eq!(to_line_end(BASE), expected);
        let after_spec = format!("{},\"x\":1}}", BASE.strip_suffix('}').expect("an object"));
        // The wire type keeps the last metadata; the loader took the first.
        let metadata_again = format!(
            "{},\"metadata\":{{\"name\":\"s2\"}}}}",
            BASE.strip_suffix('}').expect("an object")
        );
        let escaped_kind = BASE.replacen("\"ResourceSlice\"", "\"Resource\\u0053lice\"", 1);
        for decodes in [&after_spec, &metadata_again, &escaped_kind] {
            assert!(
                !wire_way(decodes, &rules).contains("Decode"),
                "{decodes:.120}"
            );
            assert!(to_line_end(decodes).contains("Decode"), "{decodes:.120}");
        }
        // A cut after the document's end, or before it.
        let two_documents = format!("{BASE} {{\"a\":{{}}}}");
        let cut_short = BASE.strip_suffix('}').expect("an object");
        for text in [two_documents.as_str(), cut_short] {
            assert!(to_line_end(text).contains("Decode"), "{text:.120}");
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
    /// way each went; the common ones the reader's way, parts of them perhaps through their
    /// wire types.
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
                false,
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
                false,
            ),
            (
                "escaped value",
                r#""H100"},"index""#,
                r#""H\u0031 00"},"index""#,
                false,
            ),
            (
                "escaped names and values",
                r#""H100"},"index":{"int":0}"#,
                r#""H\/100"},"in\/dex":{"int":0},"na\"me":{"string":"x\ty"}"#,
                true,
            ),
            (
                "escaped device name",
                r#""name":"gpu-1""#,
                r#""name":"gpu\/1""#,
                true,
            ),
            (
                "request policy",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"value":"80Gi","requestPolicy":{"default":"1Gi","validRange":{"min":"1Gi"}}}}"#,
                true,
            ),
            (
                "capacities unsorted, unknown field",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"value":"80Gi"},"cores":{"x":[1],"value":"8"}}"#,
                true,
            ),
            (
                "capacity given twice",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"value":"80Gi"},"memory":{"value":"40Gi"}}"#,
                true,
            ),
            (
                "request policy with valid values",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"value":"80Gi","requestPolicy":{"validValues":["1Gi","2Gi"]}}}"#,
                true,
            ),
            (
                "request policy given twice",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"requestPolicy":{"default":"2Gi"},"value":"80Gi","requestPolicy":{"default":"1Gi","x":1}}}"#,
                true,
            ),
            (
                "range without a minimum",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"value":"80Gi","requestPolicy":{"validRange":{"max":"8Gi","step":"1Gi"}}}}"#,
                false,
            ),
            (
                "null request policy",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"value":"80Gi","requestPolicy":null}}"#,
                true,
            ),
            (
                "capacity value given twice",
                r#"{"memory":{"value":"80Gi"}}"#,
                r#"{"memory":{"value":"80Gi","value":"40Gi"}}"#,
                true,
            ),
            (
                "null capacity, null fields",
                r#""capacity":{"memory":{"value":"80Gi"}}"#,
                r#""capacity":null,"nodeName":null,"allNodes":null,"taints":null"#,
                true,
            ),
            (
                "attribute of a device given as null",
                r#"{"int":0}"#,
                r#"null"#,
                false,
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
                true,
            ),
            (
                "device field given twice",
                r#""bindsToNode":true"#,
                r#""bindsToNode":true,"bindsToNode":false"#,
                true,
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

    /// Replaces node number `n` of `value` in preorder with `with`; `false` when there are
    /// not that many nodes.
    fn replace_nth(value: &mut serde_json::Value, n: &mut usize, with: &serde_json::Value) -> bool {
        if *n == 0 {
            *value = with.clone();
            return true;
        }
        *n -= 1;
        match value {
            serde_json::Value::Object(map) => map.values_mut().any(|v| replace_nth(v, n, with)),
            serde_json::Value::Array(list) => list.iter_mut().any(|v| replace_nth(v, n, with)),
            _ => false,
        }
    }

    /// Devices read after one another whose attributes or capacities repeat the previous
    /// device's text in part: the same value under another name, a value that the previous
    /// one's text is a prefix of, the same entries in another order or with white space, the
    /// same names out of order with other values, a name given twice, a value of more than
    /// one member, a list value after a repeated member. Each pair, and the first again after
    /// it: the same answer as the wire type.
    #[test]
    fn repeated_device_text_indexes_like_the_wire_type() {
        let rules: Vec<&DeviceTaintRule> = Vec::new();
        let attributes = [
            r#"{"a":{"int":1}}"#,
            r#"{"b":{"int":1}}"#,
            r#"{"a":{"int":12}}"#,
            r#"{"a":{"int":1},"b":{"int":1}}"#,
            r#"{"b":{"int":1},"a":{"int":1}}"#,
            r#"{"b":{"int":2},"a":{"int":1}}"#,
            r#"{"a":{"int":1},"a":{"int":2}}"#,
            r#"{"a":{"string":"H100"}}"#,
            r#"{"a":{"string":"H100"} ,"b":{ "int":1}}"#,
            r#"{"a":{"version":"1.0.0"}}"#,
            r#"{"a":{ "version" : "1.0.0" }}"#,
            r#"{"a":{"int":1,"string":"x"}}"#,
            r#"{"a":{"string":"x","string":"y"}}"#,
            // A list value sends the attributes the wire type's way after the first member
            // was taken over from the previous device's.
            r#"{"a":{"int":1},"b":{"bools":[true]}}"#,
        ];
        let capacities = [
            r#"{"memory":{"value":"8Gi"}}"#,
            r#"{"memory":{"value":"8Gi"},"cores":{"value":"2"}}"#,
            r#"{"memory":{"value":"80Gi"}}"#,
            r#"{"cores":{"value":"2"}}"#,
        ];
        let devices: Vec<String> = attributes
            .iter()
            .flat_map(|a| capacities.iter().map(move |c| (a, c)))
            .map(|(a, c)| format!(r#"{{"name":"d","attributes":{a},"capacity":{c}}}"#))
            .collect();
        for first in &devices {
            for second in &devices {
                let text = format!(
                    r#"{{"metadata":{{"name":"s"}},"spec":{{"driver":"x","nodeName":"n",
                    "pool":{{"name":"p","resourceSliceCount":1}},
                    "devices":[{first},{second},{first}]}}}}"#
                );
                let (ours, direct) = this_way(&text, &rules);
                assert!(direct, "{text}");
                assert!(ours == wire_way(&text, &rules), "{text}");
            }
        }
    }

    /// Slices read one after another with one interner, as a run of slices is: each device is
    /// compared with the device at its position in the slice two before it (texts copied out
    /// of another slice), or with the device before it where that slice has none. Every
    /// sequence of three devices, over slices of two drivers in turn and of one to three
    /// devices, that repeat each other in part, in another order, at other offsets, or not at
    /// all: each slice as the wire type gives it alone.
    #[test]
    fn devices_carried_from_earlier_slices_index_like_the_wire_type() {
        let rules: Vec<&DeviceTaintRule> = Vec::new();
        let devices = [
            r#"{"name":"d","attributes":{"a":{"int":1},"b":{"string":"x"}},"capacity":{"m":{"value":"8Gi"}}}"#,
            r#"{"name":"d","attributes":{"a":{"int":1},"b":{"string":"y"}},"capacity":{"m":{"value":"8Gi"}}}"#,
            r#"{"name":"d","attributes":{"a":{"int":2},"b":{"string":"x"}},"capacity":{"m":{"value":"9Gi"}}}"#,
            r#"{"name":"d","attributes":{"b":{"string":"x"},"a":{"int":1}}}"#,
            r#"{"name":"d","attributes":{"a":{"int":12}},"capacity":{"m":{"value":"80Gi"}}}"#,
            r#"{"name":"e","attributes":{"a":{"int":1},"b":{"string":"x"}}}"#,
            r#"{"name":"d"}"#,
            r#"{"name":"dd","attributes":{"a":{"int":1}}}"#,
            r#"{"name":"d\"","capacity":{"m":{"value":"8Gi"}}}"#,
        ];
        let slice = |devices: &[&str], driver: &str| {
            format!(
                r#"{{"metadata":{{"name":"s"}},"spec":{{"devices":[{}],"driver":"{driver}",
                "nodeName":"n","pool":{{"name":"p","resourceSliceCount":1}}}}}}"#,
                devices.join(",")
            )
        };
        let mut compared = 0;
        for x in devices {
            for y in devices {
                for z in devices {
                    let texts = [
                        slice(&[x, y], "g"),
                        slice(&[y], "h"),
                        slice(&[z, x, y], "g"),
                        slice(&[x, z], "h"),
                        slice(&[y, z], "g"),
                        slice(&[z, y, x], "h"),
                    ];
                    let mut strings = Interner::default();
                    for text in &texts {
                        let mut devices = Vec::new();
                        let prepared =
                            prepare_direct(text, &rules, &mut strings, &mut devices, false)
                                .ok_or_else(|| decode_error(serde::de::Error::custom("not read")));
                        assert!(
                            shown(prepared, &devices) == wire_way(text, &rules),
                            "{text}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, 6 * 9 * 9 * 9);
    }

    /// Every node of a slice replaced, one at a time, by each of a set of values (type errors,
    /// `null`, empty containers, strings with escapes, numbers outside the reader's subset,
    /// attribute and capacity shapes), laid out with and without white space: the same answer
    /// as the wire type.
    #[test]
    fn slices_with_any_node_replaced_index_like_the_wire_type() {
        let rules = rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        let base: serde_json::Value = serde_json::from_str(BASE).expect("base");
        let replacements: Vec<serde_json::Value> = [
            "null",
            "true",
            "0",
            "-7",
            "1.5",
            r#""x""#,
            r#""8Gi""#,
            r#""a\"b""#,
            r#""\u0041""#,
            "[]",
            "{}",
            "[1,2]",
            r#"["a"]"#,
            r#"{"string":"v"}"#,
            r#"{"int":3,"string":"s"}"#,
            r#"{"value":"1"}"#,
        ]
        .iter()
        .map(|text| serde_json::from_str(text).expect("replacement"))
        .collect();
        let mut mutated = 0;
        for at in 0.. {
            let mut tree = base.clone();
            if !replace_nth(&mut tree, &mut { at }, &serde_json::Value::Null) {
                break;
            }
            for replacement in &replacements {
                let mut tree = base.clone();
                replace_nth(&mut tree, &mut { at }, replacement);
                for text in [
                    serde_json::to_string(&tree).expect("encode"),
                    serde_json::to_string_pretty(&tree).expect("encode"),
                ] {
                    let (ours, _) = this_way(&text, &rules);
                    assert!(ours == wire_way(&text, &rules), "{text}");
                    mutated += 1;
                }
            }
        }
        assert!(mutated > 1000, "{mutated} texts");
    }
}
