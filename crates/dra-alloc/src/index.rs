//! The snapshot index: everything about the cluster that does not change while pods are
//! scheduled, organised once so that every `allocate` call is cheap.
//!
//! * Devices get a dense [`DeviceKey`] per `(driver, pool, device)` name triple (the identity
//!   upstream uses for "in use"), and every device *entry* (a device in one slice; the same key
//!   can appear in several slices, e.g. old generations) gets a [`DeviceIdx`].
//! * Slices keep their input order; pools are looked up by `(driver, pool)`.
//! * The per-node pool list (upstream `GatherPools`) is computed on first use and cached.
//! * Selector results are cached per (selector set, device entry) for the whole snapshot in
//!   [`crate::selectors`], so no CEL expression is evaluated twice for the same device.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use dra_types::parallel::spawn_beside;
use dra_types::shared_once::SharedOnce;
use dra_types::{Quantity, QuantityError, bytes};
use k8s_openapi::api::core::v1::{Node, NodeSelector};
use k8s_openapi::api::resource::v1::{
    DeviceAttribute, DeviceCapacity, DeviceClass, DeviceClassConfiguration, DeviceTaint,
    DeviceTaintRule, ResourceSlice,
};

use crate::Features;
use crate::attributes::{AttributeColumn, AttributeColumns};
use crate::hashing::WordHashMap;
use crate::node_selector::NodeFacts;
use crate::pools::NodePools;
use crate::quantity::ParsedQuantities;
use crate::selectors::SelectorCache;

/// Dense identity of a `(driver, pool, device)` name triple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceKey(pub u32);

/// One device entry: a device in one specific slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceIdx(pub u32);

/// A slice in input order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SliceIdx(pub u32);

/// A node of the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// A DeviceClass of the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClassId(pub u32);

/// An attribute value of a device. Strings are shared (`Arc<str>`): many devices carry the
/// same model or product name, and constraint state copies values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrValue {
    Int(i64),
    Bool(bool),
    String(Arc<str>),
    Version(Arc<str>),
    /// List attributes (alpha `DRAListTypeAttributes`): visible to CEL, not comparable in the
    /// incubating allocator's constraints.
    IntList(Arc<[i64]>),
    BoolList(Arc<[bool]>),
    StringList(Arc<[Arc<str>]>),
    VersionList(Arc<[Arc<str>]>),
    /// No value field set.
    Unset,
}

impl AttrValue {
    pub(crate) fn from_api(attribute: &DeviceAttribute, strings: &mut Interner) -> AttrValue {
        // List fields win over scalar ones when both are set, as upstream's accessor checks
        // them first.
        if let Some(v) = &attribute.ints {
            AttrValue::IntList(v.as_slice().into())
        } else if let Some(v) = &attribute.bools {
            AttrValue::BoolList(v.as_slice().into())
        } else if let Some(v) = &attribute.strings {
            AttrValue::StringList(v.iter().map(|s| strings.get(s)).collect())
        } else if let Some(v) = &attribute.versions {
            AttrValue::VersionList(v.iter().map(|s| strings.get(s)).collect())
        } else if let Some(v) = &attribute.string {
            AttrValue::String(strings.get(v))
        } else if let Some(v) = attribute.int {
            AttrValue::Int(v)
        } else if let Some(v) = attribute.bool {
            AttrValue::Bool(v)
        } else if let Some(v) = &attribute.version {
            AttrValue::Version(strings.get(v))
        } else {
            AttrValue::Unset
        }
    }

    /// Whether the incubating allocator can compare this value in a constraint (scalars only).
    pub fn is_scalar(&self) -> bool {
        matches!(
            self,
            AttrValue::Int(_) | AttrValue::Bool(_) | AttrValue::String(_) | AttrValue::Version(_)
        )
    }
}

/// How many versions [`Interner::version_converts`] remembers by address.
const RECENT_VERSIONS: usize = 8;

/// Shares equal strings, and parses each distinct quantity text once ([`ParsedQuantities`]),
/// while an index is built; for the slices read from JSON text, it also keeps the last two
/// ([`CarriedSlice`](crate::slice_json::CarriedSlice)).
#[derive(Debug, Default)]
pub(crate) struct Interner {
    strings: WordHashMap<Arc<str>, ()>,
    quantities: ParsedQuantities,
    versions: WordHashMap<Box<str>, bool>,
    /// The last versions asked of [`Interner::version_converts`], by their `Arc`.
    recent_versions: Vec<(Arc<str>, bool)>,
    carried_slices: VecDeque<crate::slice_json::CarriedSlice>,
    /// The empty capacity list, made on first use.
    no_capacity: Option<Capacities>,
}

impl Interner {
    /// The empty capacity list of the run (made once: an `Arc`'s counts take an allocation
    /// even for an empty list).
    pub(crate) fn no_capacity(&mut self) -> Capacities {
        self.no_capacity
            .get_or_insert_with(|| Arc::from(Vec::new()))
            .clone()
    }

    /// `list` as a device's capacities: the shared empty list when it is empty.
    pub(crate) fn capacity_list(&mut self, list: Vec<(Arc<str>, Capacity)>) -> Capacities {
        if list.is_empty() {
            self.no_capacity()
        } else {
            list.into()
        }
    }

    /// For the next slice: the slice two before it, when there is one (else an empty one).
    pub(crate) fn take_carried_slice(&mut self) -> crate::slice_json::CarriedSlice {
        if self.carried_slices.len() == 2 {
            self.carried_slices.pop_front().unwrap_or_default()
        } else {
            Default::default()
        }
    }

    /// Keeps a slice just read, with the one before it.
    pub(crate) fn carry_slice(&mut self, slice: crate::slice_json::CarriedSlice) {
        if self.carried_slices.len() == 2 {
            self.carried_slices.pop_front();
        }
        self.carried_slices.push_back(slice);
    }

    pub(crate) fn get(&mut self, text: &str) -> Arc<str> {
        if let Some((shared, ())) = self.strings.get_key_value(text) {
            return shared.clone();
        }
        let shared: Arc<str> = text.into();
        self.strings.insert(shared.clone(), ());
        shared
    }

    /// [`dra_cel::version_converts`] of a version text the interner shares, remembered: the
    /// devices of a fleet share a few driver and CUDA versions. The last few are answered by
    /// the text's address (the interner hands out one `Arc` per text, and a device repeats
    /// the versions of the devices before it: three per GPU of an HGX fleet, where a hash
    /// lookup each was 1% of a gpu-nic simulation's instructions), each `Arc` kept with its
    /// answer so that its address is its own while it is remembered; the others by text.
    pub(crate) fn version_converts(&mut self, version: &Arc<str>) -> bool {
        if let Some((_, converts)) = self
            .recent_versions
            .iter()
            .find(|(recent, _)| Arc::ptr_eq(recent, version))
        {
            return *converts;
        }
        let converts = match self.versions.get(&**version) {
            Some(converts) => *converts,
            None => {
                let converts = dra_cel::version_converts(version);
                self.versions.insert((**version).into(), converts);
                converts
            }
        };
        if self.recent_versions.len() == RECENT_VERSIONS {
            self.recent_versions.remove(0);
        }
        self.recent_versions.push((Arc::clone(version), converts));
        converts
    }

    /// [`Quantity::parse`], remembered for texts that parse.
    pub(crate) fn quantity(&mut self, text: &str) -> Result<Quantity, QuantityError> {
        self.quantities.parse(text)
    }
}

/// Whether every attribute has a value and every version is one
/// [`dra_cel::version_converts`] accepts ([`DeviceEntry::cel_converts`]).
fn attributes_convert(attributes: &[(Arc<str>, AttrValue)], strings: &mut Interner) -> bool {
    attributes.iter().all(|(_, value)| match value {
        AttrValue::Unset => false,
        AttrValue::Version(v) => strings.version_converts(v),
        AttrValue::VersionList(list) => list.iter().all(|v| strings.version_converts(v)),
        _ => true,
    })
}

/// A capacity of a device with its request policy, parsed.
#[derive(Debug, Clone)]
pub struct Capacity {
    pub value: Quantity,
    pub policy: Option<RequestPolicy>,
}

/// `CapacityRequestPolicy`, parsed.
#[derive(Debug, Clone)]
pub struct RequestPolicy {
    pub default: Option<Quantity>,
    pub valid_values: Option<Vec<Quantity>>,
    pub valid_range: Option<ValidRange>,
}

/// `CapacityRequestPolicyRange`, parsed.
#[derive(Debug, Clone)]
pub struct ValidRange {
    pub min: Quantity,
    pub max: Option<Quantity>,
    pub step: Option<Quantity>,
}

/// One `consumesCounters` entry.
#[derive(Debug, Clone)]
pub struct CounterConsumption {
    pub counter_set: String,
    pub counters: Vec<(String, Quantity)>,
}

/// One device entry with everything the allocator needs, parsed once.
#[derive(Debug)]
pub struct DeviceEntry {
    pub key: DeviceKey,
    /// Dense identity of the device's `(driver, pool)`.
    pub pool_key: u32,
    pub slice: SliceIdx,
    pub name: Arc<str>,
    /// Attributes by qualified name as written in the slice, sorted by name.
    pub attributes: Vec<(Arc<str>, AttrValue)>,
    /// Capacities by name, sorted by name; shared between devices read from the same text
    /// (the GPUs of a node, the NICs of a fleet), and one empty list per run of slices.
    pub capacity: Capacities,
    pub consumes_counters: Vec<CounterConsumption>,
    /// Taints of the slice followed by taints from matching DeviceTaintRules.
    pub taints: Vec<DeviceTaint>,
    /// How many of `taints` the slice gave ([`DeviceEntry::slice_taints`]).
    slice_taint_count: u32,
    /// `None` and `Some(empty)` differ upstream: a pool "has binding conditions" when any
    /// node-targeting device has a non-nil list.
    pub binding_conditions: Option<Vec<String>>,
    pub binding_failure_conditions: Option<Vec<String>>,
    pub binds_to_node: bool,
    pub allow_multiple_allocations: bool,
    pub node_name: Option<String>,
    pub all_nodes: bool,
    pub node_selector: Option<NodeSelector>,
    /// The CEL view of the device, kept from its second use on ([`Index::cel_input`]).
    pub(crate) cel_input: OnceLock<dra_cel::DeviceInput>,
    /// Whether the CEL view was built once already.
    pub(crate) cel_input_asked: AtomicBool,
    /// Whether the CEL view converts without error ([`DeviceEntry::cel_converts`]).
    cel_converts: bool,
}

/// The CEL view of one device, kept in the index or built for one evaluation.
pub(crate) enum CelInput<'i> {
    Kept(&'i dra_cel::DeviceInput),
    Fresh(dra_cel::DeviceInput),
}

impl std::ops::Deref for CelInput<'_> {
    type Target = dra_cel::DeviceInput;

    fn deref(&self) -> &dra_cel::DeviceInput {
        match self {
            CelInput::Kept(input) => input,
            CelInput::Fresh(input) => input,
        }
    }
}

impl DeviceEntry {
    /// `lookupAttribute`: the fully qualified name, else the bare id when the domain is the
    /// device's driver.
    pub fn lookup_attribute(&self, driver: &str, fully_qualified: &str) -> Option<&AttrValue> {
        self.lookup_attribute_position(driver, fully_qualified)
            .map(|position| &self.attributes[position].1)
    }

    /// Where [`DeviceEntry::lookup_attribute`] finds its value in `attributes`.
    pub(crate) fn lookup_attribute_position(
        &self,
        driver: &str,
        fully_qualified: &str,
    ) -> Option<usize> {
        if let Some(position) = self.attribute_position(fully_qualified) {
            return Some(position);
        }
        let (domain, id) = fully_qualified.split_once('/')?;
        if domain != driver {
            return None;
        }
        self.attribute_position(id)
    }

    /// Whether the device's CEL view converts without error, the condition for answering a
    /// selector by its [`dra_cel::Shortcut`]: every attribute has a value and every version is
    /// one [`dra_cel::version_converts`] accepts (otherwise every evaluation on the device fails).
    /// Decided when the index is built (`Interner::version_converts` parses each distinct
    /// version once).
    pub fn cel_converts(&self) -> bool {
        self.cel_converts
    }

    /// The taints the slice gives the device (without those of DeviceTaintRules).
    pub fn slice_taints(&self) -> &[DeviceTaint] {
        &self.taints[..self.slice_taint_count as usize]
    }

    /// The attribute with exactly this name.
    pub fn attribute(&self, name: &str) -> Option<&AttrValue> {
        self.attribute_position(name)
            .map(|position| &self.attributes[position].1)
    }

    fn attribute_position(&self, name: &str) -> Option<usize> {
        // A device has a dozen attributes or so, mostly of different lengths: a scan that
        // compares lengths first reads fewer bytes than a binary search's string orderings.
        if self.attributes.len() <= ATTRIBUTES_SCANNED {
            return self
                .attributes
                .iter()
                .position(|(k, _)| bytes::equal(k.as_bytes(), name.as_bytes()));
        }
        self.attributes
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .ok()
    }

    /// The capacity with this name.
    pub fn capacity(&self, name: &str) -> Option<&Capacity> {
        self.capacity
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .ok()
            .map(|i| &self.capacity[i].1)
    }
}

/// A device's capacities by name, sorted by name.
pub type Capacities = Arc<[(Arc<str>, Capacity)]>;

/// Up to this many attributes, [`DeviceEntry::attribute`] scans them instead of searching.
const ATTRIBUTES_SCANNED: usize = 24;

/// How a slice selects nodes.
#[derive(Debug, Clone)]
pub enum SliceNodeSelection {
    NodeName(String),
    AllNodes,
    Selector(NodeSelector),
    PerDevice,
    /// None of the known fields is set (some future extension): upstream ignores the slice.
    Unknown,
}

/// A counter set with parsed values.
#[derive(Debug, Clone)]
pub struct CounterSetEntry {
    pub name: String,
    pub counters: BTreeMap<String, Quantity>,
}

/// One ResourceSlice, parsed.
#[derive(Debug)]
pub struct SliceEntry {
    pub name: String,
    pub driver: String,
    pub pool: String,
    pub generation: i64,
    pub resource_slice_count: i64,
    /// The raw `spec.nodeName` (upstream distinguishes nil from "" in one place).
    pub node_name_field: Option<String>,
    pub node_selector_field: Option<NodeSelector>,
    pub selection: SliceNodeSelection,
    pub per_device_node_selection_field: bool,
    pub shared_counters: Vec<CounterSetEntry>,
    pub devices: std::ops::Range<u32>,
}

/// A DeviceClass, reduced to what allocation uses.
#[derive(Debug)]
pub struct ClassEntry {
    pub name: String,
    pub selectors: Vec<Option<String>>,
    pub config: Vec<DeviceClassConfiguration>,
}

/// A node of the snapshot.
#[derive(Debug)]
pub struct NodeEntry {
    pub facts: NodeFacts,
}

/// A value in the input that the allocator cannot parse (e.g. a malformed quantity in a slice).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ResourceSlice {slice}: {field}: {message}")]
pub struct IndexError {
    pub slice: String,
    pub field: String,
    pub message: String,
    pub kind: IndexErrorKind,
}

/// What kind of value an [`IndexError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexErrorKind {
    /// A quantity that does not parse.
    Quantity,
    /// A slice given as JSON text ([`SliceInput::Json`]) that does not decode as a
    /// ResourceSlice. The loader's own decoding explains such input with file and line, so a
    /// caller that passed the text takes the object route to report it.
    Decode,
}

/// One ResourceSlice of the input: a decoded object, or the JSON text of one (a document
/// that decodes as a k8s-openapi `ResourceSlice`). Text is decoded by the index itself, one
/// slice at a time on the threads that convert the devices, and dropped once converted: a
/// snapshot then never holds the wire objects, which take about ten times the memory of the
/// index's form of a device (every page of it touched, and zeroed, once).
#[derive(Debug, Clone, Copy)]
pub enum SliceInput<'a> {
    Object(&'a ResourceSlice),
    Json(&'a str),
    /// A text whose end its loader took from where its line ends, without reading the
    /// slice's `spec` (`dra_api::SliceJson::end_unchecked`). It is the slice's document only
    /// if it reads whole, by the index's own reader, with `spec` its last member; anything
    /// else is a [`IndexErrorKind::Decode`] error, and its caller's to load the input again.
    JsonToLineEnd(&'a str),
}

impl<'a> From<&'a ResourceSlice> for SliceInput<'a> {
    fn from(slice: &'a ResourceSlice) -> SliceInput<'a> {
        SliceInput::Object(slice)
    }
}

/// Borrowed inputs for [`Index::build`].
#[derive(Debug, Default, Clone)]
pub struct IndexInput<'a> {
    pub nodes: Vec<&'a Node>,
    /// The slices in input order.
    pub slices: Vec<SliceInput<'a>>,
    pub classes: Vec<&'a DeviceClass>,
    pub taint_rules: Vec<&'a DeviceTaintRule>,
}

/// Options for [`Index::build`].
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    pub features: Features,
    /// Threads converting the slices' devices; `None` picks one per core (at most 8) for
    /// snapshots large enough to gain from it. The index is the same for any number.
    pub threads: Option<usize>,
}

/// The immutable, shareable index of one cluster snapshot. `Sync`: many threads may allocate
/// against it at once; its caches fill lazily and deterministically.
#[derive(Debug)]
pub struct Index {
    pub(crate) features: Features,
    pub(crate) nodes: Vec<NodeEntry>,
    node_by_name: WordHashMap<String, NodeId>,
    pub(crate) slices: Vec<SliceEntry>,
    pub(crate) devices: Vec<DeviceEntry>,
    key_names: Vec<(Arc<str>, Arc<str>, Arc<str>)>,
    /// `driver \0 pool \0 device` -> key: made while indexing once a device's name triple
    /// could repeat one seen before, otherwise on the first lookup ([`KeysByName`]).
    key_by_name: OnceLock<KeyTable>,
    /// The pool of each device key.
    key_pool: Vec<u32>,
    /// `(driver, pool)` -> dense pool key.
    pool_keys: WordHashMap<(String, String), u32>,
    pub(crate) slices_on_node: WordHashMap<String, Vec<SliceIdx>>,
    pub(crate) slices_shared: Vec<SliceIdx>,
    pub(crate) slices_by_pool: WordHashMap<(String, String), Vec<SliceIdx>>,
    pub(crate) classes: Vec<ClassEntry>,
    class_by_name: WordHashMap<String, ClassId>,
    /// Gathered on first use, by whichever thread asks first (a helper may gather them ahead
    /// of the loop that needs them: [`Index::gather_node_pools_ahead`]).
    pub(crate) node_pools: Vec<SharedOnce<Result<Arc<NodePools>, String>>>,
    pub(crate) selectors: SelectorCache,
    /// Where devices keep the attributes claim constraints name.
    attribute_columns: AttributeColumns,
    /// CEL in the scheduler's environment (stored expressions, no cost estimation).
    pub(crate) compiler: dra_cel::Compiler,
}

fn parse_quantity(
    strings: &mut Interner,
    slice: &str,
    field: impl FnOnce() -> String,
    q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity,
) -> Result<Quantity, IndexError> {
    strings.quantity(&q.0).map_err(|e| IndexError {
        slice: slice.to_string(),
        field: field(),
        message: e.to_string(),
        kind: IndexErrorKind::Quantity,
    })
}

/// What a slice contributes to the index before it has a place in it: everything but the
/// dense keys and positions, which [`Index::add_slice`] assigns in input order. Slices are
/// prepared independently of each other, so on several threads ([`prepare_slices`]).
#[derive(Debug)]
pub(crate) struct PreparedSlice {
    /// The slice's entry; its `devices` range is given by [`Index::add_slice`].
    pub(crate) entry: SliceEntry,
    /// How many devices the slice appended to its run's devices.
    pub(crate) devices: usize,
}

/// A contiguous run of slices prepared on one thread: the slices in order, and their devices
/// one after the other.
#[derive(Debug)]
struct PreparedRun {
    slices: Vec<Result<PreparedSlice, IndexError>>,
    devices: Vec<DeviceEntry>,
}

impl PreparedRun {
    /// Prepares `slice` ([`prepare_input`]) as the run's next, its strings shared through the
    /// run's `strings`.
    fn push(
        &mut self,
        slice: &SliceInput<'_>,
        taint_rules: &[&DeviceTaintRule],
        strings: &mut Interner,
    ) {
        let before = self.devices.len();
        let prepared = prepare_input(slice, taint_rules, strings, &mut self.devices);
        if prepared.is_err() {
            // A failed slice leaves no devices behind for the next one's place.
            self.devices.truncate(before);
        }
        self.slices.push(prepared);
    }
}

/// Below this many devices per thread, converting them costs less than starting a thread: a
/// second thread takes a fresh 2 MiB huge page for its heap, which the kernel zeroes, and
/// wakes a second core. Measured once helpers started at once (BENCHMARKS.md, "Helpers that
/// start at once"): gpu-nic at 32 nodes (about 470 devices by their text) gained nothing
/// from a second thread (its index 0.13 ms slower, its loop as much faster), gpu-nic at 64
/// nodes (about 950) and gpu-selector (about 1,400) each 0.35-0.4 ms. Before, with helpers
/// that mostly ran only once their starter blocked, 2,048 was right.
const PARALLEL_PREPARE_MIN_DEVICES: usize = 400;

/// Roughly how many bytes of JSON text describe one device (generated and real slices take
/// 500 to 1,500): what a slice given as text weighs before it is decoded.
const JSON_BYTES_PER_DEVICE: usize = 512;

/// About how many devices a slice holds: exact for an object, estimated from the length of
/// a text. Used only to share the work among threads and to size lists.
fn device_weight(slice: &SliceInput<'_>) -> usize {
    match slice {
        SliceInput::Object(slice) => slice.spec.devices.as_ref().map_or(0, Vec::len),
        SliceInput::Json(text) | SliceInput::JsonToLineEnd(text) => {
            text.len() / JSON_BYTES_PER_DEVICE
        }
    }
}

/// [`prepare_slice`] for every slice, in input order: on `threads` threads, by default one
/// per core for large snapshots, each thread taking a contiguous run of slices of about equal
/// device count (with its own string interner: equal strings are then shared per thread, which
/// only changes memory). The first error in input order is the one [`Index::build`] returns,
/// as on one thread. The first run's devices have room for all, so that the index can take
/// them over and append the other runs' without moving them: while the runs are joined, the
/// devices are held at most one and a half times over (two threads).
fn prepare_slices(
    slices: &[SliceInput<'_>],
    taint_rules: &[&DeviceTaintRule],
    threads: Option<usize>,
) -> Vec<PreparedRun> {
    let total: usize = slices.iter().map(device_weight).sum();
    let threads = threads
        .unwrap_or_else(|| {
            dra_types::parallel::available_threads()
                .min(8)
                .min(total / PARALLEL_PREPARE_MIN_DEVICES)
        })
        .max(1);
    let prepare_run = |run: &[SliceInput<'_>], room: usize| {
        let mut strings = Interner::default();
        let mut prepared = PreparedRun {
            slices: Vec::with_capacity(run.len()),
            devices: Vec::with_capacity(room),
        };
        for slice in run {
            prepared.push(slice, taint_rules, &mut strings);
        }
        prepared
    };
    if threads == 1 {
        return vec![prepare_run(slices, total)];
    }
    let per_thread = total.div_ceil(threads);
    let mut runs = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, slice) in slices.iter().enumerate() {
        acc += device_weight(slice);
        if acc >= per_thread && runs.len() + 1 < threads {
            runs.push(&slices[start..=i]);
            (start, acc) = (i + 1, 0);
        }
    }
    runs.push(&slices[start..]);
    std::thread::scope(|scope| {
        let (first, rest) = runs.split_first().expect("at least one run");
        let handles: Vec<_> = rest
            .iter()
            .map(|run| {
                spawn_beside(scope, || {
                    prepare_run(run, run.iter().map(device_weight).sum())
                })
            })
            .collect();
        let mut prepared = vec![prepare_run(first, total)];
        for handle in handles {
            match handle.join() {
                Ok(run) => prepared.push(run),
                // A panic in a worker is a bug; re-raise it on the caller's thread.
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
        prepared
    })
}

/// Slices given as text, converted ahead of [`Index::build_with_ahead`] on a thread of the
/// caller's, typically while the rest of the input is still being read: [`Index::build`]
/// would convert the same texts the same way, only later. Each run is a contiguous part of
/// the snapshot's slices, in their order, with its own string interner (as a thread's run in
/// [`Index::build`]); taint rules are not applied, so runs serve only a snapshot without
/// DeviceTaintRules. The runs remember which texts they converted (their addresses, lengths
/// and kinds), and the index takes them only if, one after the other, they are exactly the
/// snapshot's slices; otherwise it converts the slices itself. The index is the same either
/// way.
#[derive(Debug)]
pub struct SliceRunAhead {
    run: PreparedRun,
    strings: Interner,
    /// Per slice, which text it was converted from ([`text_key`]).
    texts: Vec<TextKey>,
}

/// A slice text's address and length, and whether it was a [`SliceInput::JsonToLineEnd`]:
/// which text of the input a slice converted ahead came from.
type TextKey = (usize, usize, bool);

fn text_key(text: &str, to_line_end: bool) -> TextKey {
    (text.as_ptr() as usize, text.len(), to_line_end)
}

impl SliceRunAhead {
    /// An empty run with room for the devices of about `text_bytes` of slice text (an
    /// estimate is enough, as long as it is not short: the run taken first keeps its list as
    /// the index's, which then takes the other runs' devices).
    pub fn with_room_for_text(text_bytes: usize) -> SliceRunAhead {
        SliceRunAhead {
            run: PreparedRun {
                slices: Vec::new(),
                devices: Vec::with_capacity(text_bytes / JSON_BYTES_PER_DEVICE),
            },
            strings: Interner::default(),
            texts: Vec::new(),
        }
    }

    /// Converts the next slice of the run, given as text (`to_line_end`: a
    /// [`SliceInput::JsonToLineEnd`]). A text that does not convert is kept as its error,
    /// which [`Index::build_with_ahead`] returns where [`Index::build`] would.
    pub fn push(&mut self, text: &str, to_line_end: bool) {
        let slice = if to_line_end {
            SliceInput::JsonToLineEnd(text)
        } else {
            SliceInput::Json(text)
        };
        self.run.push(&slice, &[], &mut self.strings);
        self.texts.push(text_key(text, to_line_end));
    }

    /// How many slices the run holds.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether the run holds no slice.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Whether [`Index::build_with_ahead`] takes `runs` for an input of `slices` and
    /// `taint_rules`: the runs, one after the other, hold exactly the input's slices, each
    /// converted from the very text the input gives (its address, length and kind), and no
    /// taint rule could add to their devices.
    pub fn fit(
        runs: &[SliceRunAhead],
        slices: &[SliceInput<'_>],
        taint_rules: &[&DeviceTaintRule],
    ) -> bool {
        if runs.is_empty() || !taint_rules.is_empty() {
            return false;
        }
        let mut texts = runs.iter().flat_map(|run| run.texts.iter());
        slices.iter().all(|slice| {
            let (text, to_line_end) = match slice {
                SliceInput::Object(_) => return false,
                SliceInput::Json(text) => (text, false),
                SliceInput::JsonToLineEnd(text) => (text, true),
            };
            texts.next() == Some(&text_key(text, to_line_end))
        }) && texts.next().is_none()
    }

    /// The runs as [`FittedRuns`] when they [`SliceRunAhead::fit`] the input's `slices` and
    /// `taint_rules`; otherwise the runs back.
    pub fn fitted(
        runs: Vec<SliceRunAhead>,
        slices: &[SliceInput<'_>],
        taint_rules: &[&DeviceTaintRule],
    ) -> Result<FittedRuns, Vec<SliceRunAhead>> {
        if SliceRunAhead::fit(&runs, slices, taint_rules) {
            Ok(FittedRuns {
                runs: runs.into_iter().map(|run| run.run).collect(),
            })
        } else {
            Err(runs)
        }
    }
}

/// Runs converted ahead that were found to be, one after the other, exactly a snapshot's
/// slices ([`SliceRunAhead::fitted`]): all [`Index::build_with_fitted`] needs of those
/// slices, so that their caller can free them first (their text is often the whole input,
/// which the index's own tables can then reuse instead of fresh memory).
#[derive(Debug)]
pub struct FittedRuns {
    runs: Vec<PreparedRun>,
}

/// [`prepare_slice`] of an object, or the same conversion straight from a JSON text
/// ([`crate::slice_json`]).
fn prepare_input(
    slice: &SliceInput<'_>,
    taint_rules: &[&DeviceTaintRule],
    strings: &mut Interner,
    devices: &mut Vec<DeviceEntry>,
) -> Result<PreparedSlice, IndexError> {
    match slice {
        SliceInput::Object(slice) => prepare_slice(slice, taint_rules, strings, devices),
        SliceInput::Json(text) => {
            crate::slice_json::prepare_json(text, taint_rules, strings, devices)
        }
        SliceInput::JsonToLineEnd(text) => {
            crate::slice_json::prepare_json_to_line_end(text, taint_rules, strings, devices)
        }
    }
}

/// Converts one slice's devices (attributes, capacities, counters, taints from the slice and
/// the matching DeviceTaintRules), appending them to `devices`, and its node selection; fails
/// on a quantity that does not parse (with some of its devices appended).
pub(crate) fn prepare_slice(
    slice: &ResourceSlice,
    taint_rules: &[&DeviceTaintRule],
    strings: &mut Interner,
    devices: &mut Vec<DeviceEntry>,
) -> Result<PreparedSlice, IndexError> {
    let before = devices.len();
    let spec = &slice.spec;
    let slice_name = slice.metadata.name.clone().unwrap_or_default();
    let entry = slice_entry(slice_name, spec, strings)?;
    for (d, device) in spec.devices.iter().flatten().enumerate() {
        let mut device = wire_device_entry(&entry.name, d, device, strings)?;
        add_rule_taints(&mut device, taint_rules, &entry.driver, &entry.pool);
        devices.push(device);
    }
    Ok(PreparedSlice {
        entry,
        devices: devices.len() - before,
    })
}

/// A slice's entry (its devices' range is given by [`Index::add_slice`]): node selection and
/// shared counters, parsed; fails on a counter quantity that does not parse.
pub(crate) fn slice_entry(
    slice_name: String,
    spec: &k8s_openapi::api::resource::v1::ResourceSliceSpec,
    strings: &mut Interner,
) -> Result<SliceEntry, IndexError> {
    let node_name = spec.node_name.clone().unwrap_or_default();
    let selection = if !node_name.is_empty() {
        SliceNodeSelection::NodeName(node_name.clone())
    } else if spec.all_nodes == Some(true) {
        SliceNodeSelection::AllNodes
    } else if let Some(selector) = &spec.node_selector {
        SliceNodeSelection::Selector(selector.clone())
    } else if spec.per_device_node_selection == Some(true) {
        SliceNodeSelection::PerDevice
    } else {
        SliceNodeSelection::Unknown
    };
    let mut shared_counters = Vec::new();
    for (i, set) in spec.shared_counters.iter().flatten().enumerate() {
        let mut counters = BTreeMap::new();
        for (name, counter) in &set.counters {
            let value = parse_quantity(
                strings,
                &slice_name,
                || format!("spec.sharedCounters[{i}].counters[{name:?}].value"),
                &counter.value,
            )?;
            counters.insert(name.clone(), value);
        }
        shared_counters.push(CounterSetEntry {
            name: set.name.clone(),
            counters,
        });
    }
    Ok(SliceEntry {
        name: slice_name,
        driver: spec.driver.clone(),
        pool: spec.pool.name.clone(),
        generation: spec.pool.generation,
        resource_slice_count: spec.pool.resource_slice_count,
        node_name_field: spec.node_name.clone(),
        node_selector_field: spec.node_selector.clone(),
        selection,
        per_device_node_selection_field: spec.per_device_node_selection == Some(true),
        shared_counters,
        devices: 0..0,
    })
}

/// Appends the taints of the DeviceTaintRules that select the device, after its own.
pub(crate) fn add_rule_taints(
    device: &mut DeviceEntry,
    taint_rules: &[&DeviceTaintRule],
    driver: &str,
    pool: &str,
) {
    for rule in taint_rules {
        if taint_rule_selects(rule, driver, pool, &device.name) {
            device.taints.push(rule.spec.taint.clone());
        }
    }
}

/// The entry of the wire type's device number `d` of slice `slice_name`, without the taints
/// of DeviceTaintRules ([`add_rule_taints`]); fails on a quantity that does not parse.
pub(crate) fn wire_device_entry(
    slice_name: &str,
    d: usize,
    device: &k8s_openapi::api::resource::v1::Device,
    strings: &mut Interner,
) -> Result<DeviceEntry, IndexError> {
    // Both maps come sorted from the BTreeMaps of the wire type.
    let attributes = device
        .attributes
        .iter()
        .flatten()
        .map(|(k, v)| (strings.get(k), AttrValue::from_api(v, strings)))
        .collect();
    let capacity = match &device.capacity {
        Some(capacity) => capacities(slice_name, d, capacity, strings)?,
        None => strings.no_capacity(),
    };
    let name = strings.get(&device.name);
    device_entry(slice_name, d, device, (name, attributes, capacity), strings)
}

/// The capacities of device number `d` of slice `slice_name`, parsed, in name order.
pub(crate) fn capacities(
    slice_name: &str,
    d: usize,
    device_capacity: &BTreeMap<String, DeviceCapacity>,
    strings: &mut Interner,
) -> Result<Capacities, IndexError> {
    let mut capacity = Vec::with_capacity(device_capacity.len());
    for (name, cap) in device_capacity {
        let field = |suffix: &str| format!("spec.devices[{d}].capacity[{name:?}]{suffix}");
        let value = parse_quantity(strings, slice_name, || field(".value"), &cap.value)?;
        let policy = match &cap.request_policy {
            None => None,
            Some(policy) => Some(RequestPolicy {
                default: policy
                    .default
                    .as_ref()
                    .map(|q| {
                        parse_quantity(strings, slice_name, || field(".requestPolicy.default"), q)
                    })
                    .transpose()?,
                valid_values: policy
                    .valid_values
                    .as_ref()
                    .map(|values| {
                        values
                            .iter()
                            .map(|q| {
                                parse_quantity(
                                    strings,
                                    slice_name,
                                    || field(".requestPolicy.validValues"),
                                    q,
                                )
                            })
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .transpose()?,
                valid_range: match &policy.valid_range {
                    None => None,
                    Some(range) => Some(ValidRange {
                        min: parse_quantity(
                            strings,
                            slice_name,
                            || field(".requestPolicy.validRange.min"),
                            &range.min,
                        )?,
                        max: range
                            .max
                            .as_ref()
                            .map(|q| {
                                parse_quantity(
                                    strings,
                                    slice_name,
                                    || field(".requestPolicy.validRange.max"),
                                    q,
                                )
                            })
                            .transpose()?,
                        step: range
                            .step
                            .as_ref()
                            .map(|q| {
                                parse_quantity(
                                    strings,
                                    slice_name,
                                    || field(".requestPolicy.validRange.step"),
                                    q,
                                )
                            })
                            .transpose()?,
                    }),
                },
            }),
        };
        capacity.push((strings.get(name), Capacity { value, policy }));
    }
    Ok(strings.capacity_list(capacity))
}

/// A device's name (shared), attributes (sorted by name) and capacities, converted.
pub(crate) type ConvertedParts = (Arc<str>, Vec<(Arc<str>, AttrValue)>, Capacities);

/// The entry of device number `d` of slice `slice_name`, with its name, attributes and
/// capacities converted already ([`ConvertedParts`]), and without the taints of
/// DeviceTaintRules ([`add_rule_taints`]); the wire type's `name`, `attributes` and
/// `capacity` are not read. Fails on a counter quantity that does not parse.
pub(crate) fn device_entry(
    slice_name: &str,
    d: usize,
    device: &k8s_openapi::api::resource::v1::Device,
    (name, attributes, capacity): ConvertedParts,
    strings: &mut Interner,
) -> Result<DeviceEntry, IndexError> {
    let mut consumes_counters = Vec::new();
    for (c, consumption) in device.consumes_counters.iter().flatten().enumerate() {
        let mut counters = Vec::new();
        for (name, counter) in &consumption.counters {
            let value = parse_quantity(
                strings,
                slice_name,
                || format!("spec.devices[{d}].consumesCounters[{c}].counters[{name:?}].value"),
                &counter.value,
            )?;
            counters.push((name.clone(), value));
        }
        consumes_counters.push(CounterConsumption {
            counter_set: consumption.counter_set.clone(),
            counters,
        });
    }
    let cel_converts = attributes_convert(&attributes, strings);
    let taints = device.taints.clone().unwrap_or_default();
    let slice_taint_count = u32::try_from(taints.len()).unwrap_or(u32::MAX);
    Ok(DeviceEntry {
        // Placeholders until the slice takes its place: `Index::add_slice`.
        key: DeviceKey(u32::MAX),
        pool_key: u32::MAX,
        slice: SliceIdx(u32::MAX),
        name,
        attributes,
        capacity,
        consumes_counters,
        taints,
        slice_taint_count,
        binding_conditions: device.binding_conditions.clone(),
        binding_failure_conditions: device.binding_failure_conditions.clone(),
        binds_to_node: device.binds_to_node == Some(true),
        allow_multiple_allocations: device.allow_multiple_allocations == Some(true),
        node_name: device.node_name.clone(),
        all_nodes: device.all_nodes == Some(true),
        node_selector: device.node_selector.clone(),
        cel_input: OnceLock::new(),
        cel_input_asked: AtomicBool::new(false),
        cel_converts,
    })
}

/// Makes what an index's selector compiler shares with every compiler of its kind (the CEL
/// environment's declarations: [`dra_cel::Compiler::prepare_environment`]), for a thread
/// with time to spare before indexes are built; they are the same whoever makes them.
pub fn prepare_selector_environment() {
    dra_cel::Compiler::prepare_environment(&dra_cel::CompilerOptions::default());
}

impl Index {
    /// Indexes a snapshot. Fails only on values that cannot be parsed (quantities); API
    /// validation (`dra-api`) reports those with file and line before this is called.
    pub fn build(input: &IndexInput<'_>, options: &IndexOptions) -> Result<Index, IndexError> {
        Index::build_with_ahead(input, options, Vec::new())
    }

    /// [`Index::build`], taking the slices' conversions from `ahead` where those are of
    /// exactly the input's slices (see [`SliceRunAhead`]); the index is the same.
    pub fn build_with_ahead(
        input: &IndexInput<'_>,
        options: &IndexOptions,
        ahead: Vec<SliceRunAhead>,
    ) -> Result<Index, IndexError> {
        let runs = match SliceRunAhead::fitted(ahead, &input.slices, &input.taint_rules) {
            Ok(fitted) => fitted.runs,
            Err(_) => prepare_slices(&input.slices, &input.taint_rules, options.threads),
        };
        Index::build_from_runs(&input.nodes, &input.classes, options, runs)
    }

    /// [`Index::build_with_ahead`] of a snapshot whose slices were converted into `fitted`
    /// and are not needed any more: `nodes` and `classes` are the snapshot's, and it has no
    /// DeviceTaintRules (runs fit only such a snapshot). The index is the same.
    pub fn build_with_fitted(
        nodes: &[&Node],
        classes: &[&DeviceClass],
        options: &IndexOptions,
        fitted: FittedRuns,
    ) -> Result<Index, IndexError> {
        Index::build_from_runs(nodes, classes, options, fitted.runs)
    }

    /// The index of `nodes`, `classes` and the slices converted into `runs`.
    fn build_from_runs(
        nodes: &[&Node],
        classes: &[&DeviceClass],
        options: &IndexOptions,
        runs: Vec<PreparedRun>,
    ) -> Result<Index, IndexError> {
        let mut index = Index {
            features: options.features,
            nodes: Vec::new(),
            node_by_name: WordHashMap::default(),
            slices: Vec::new(),
            devices: Vec::new(),
            key_names: Vec::new(),
            key_by_name: OnceLock::new(),
            key_pool: Vec::new(),
            pool_keys: WordHashMap::default(),
            slices_on_node: WordHashMap::default(),
            slices_shared: Vec::new(),
            slices_by_pool: WordHashMap::default(),
            classes: Vec::new(),
            class_by_name: WordHashMap::default(),
            node_pools: Vec::new(),
            selectors: SelectorCache::default(),
            attribute_columns: AttributeColumns::default(),
            compiler: dra_cel::Compiler::default(),
        };
        index.nodes.reserve(nodes.len());
        index.node_by_name.reserve(nodes.len());
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let id = NodeId(index.nodes.len() as u32);
            // The first object wins a duplicate name; the loader reports duplicates.
            index.node_by_name.entry(name.clone()).or_insert(id);
            index.nodes.push(NodeEntry {
                facts: NodeFacts {
                    name,
                    labels: node.metadata.labels.clone().unwrap_or_default(),
                },
            });
        }
        index.node_pools = (0..index.nodes.len()).map(|_| SharedOnce::new()).collect();
        for class in classes {
            let name = class.metadata.name.clone().unwrap_or_default();
            let spec = class.spec.as_ref();
            let id = ClassId(index.classes.len() as u32);
            index.class_by_name.entry(name.clone()).or_insert(id);
            index.classes.push(ClassEntry {
                name,
                selectors: spec
                    .and_then(|s| s.selectors.as_ref())
                    .map(|selectors| {
                        selectors
                            .iter()
                            .map(|s| s.cel.as_ref().map(|c| c.expression.clone()))
                            .collect()
                    })
                    .unwrap_or_default(),
                config: spec.and_then(|s| s.config.clone()).unwrap_or_default(),
            });
        }
        // Entries are large: room for all at once instead of growth slack (the devices come
        // with room for all in the first run).
        let slices: usize = runs.iter().map(|run| run.slices.len()).sum();
        index.slices.reserve(slices);
        // Room for every device key and slice at once: growing the tables step by step was
        // a tenth of the indexing of a large cluster (rehashes and copies into fresh memory).
        let devices: usize = runs.iter().map(|run| run.devices.len()).sum();
        index.key_names.reserve(devices);
        index.key_pool.reserve(devices);
        let mut keys = KeysByName::AllNew { room: devices };
        index.pool_keys.reserve(slices);
        index.slices_by_pool.reserve(slices);
        index.slices_on_node.reserve(slices);
        for mut run in runs {
            if index.devices.is_empty() {
                index.devices = run.devices;
            } else {
                index.devices.append(&mut run.devices);
            }
            for prepared in run.slices {
                index.add_slice(prepared?, &mut keys);
            }
        }
        if let KeysByName::Table(table) = keys {
            index.key_by_name = OnceLock::from(table);
        }
        Ok(index)
    }

    /// The key of a device name triple, a new one for a triple not seen before: without a
    /// lookup while every triple so far was new ([`KeysByName::AllNew`]), otherwise one hash
    /// and one allocation (the table's key) a device. The names are shared with the slice's
    /// and the device's own.
    fn intern_key(
        &mut self,
        keys: &mut KeysByName,
        driver: &Arc<str>,
        pool: &Arc<str>,
        pool_key: u32,
        device: &Arc<str>,
    ) -> DeviceKey {
        let next = DeviceKey(self.key_names.len() as u32);
        if let KeysByName::Table(table) = keys {
            match table.entry(key_text(driver, pool, device)) {
                std::collections::hash_map::Entry::Occupied(known) => return *known.get(),
                std::collections::hash_map::Entry::Vacant(vacant) => {
                    vacant.insert(next);
                }
            }
        }
        self.key_names
            .push((driver.clone(), pool.clone(), device.clone()));
        self.key_pool.push(pool_key);
        next
    }

    /// Every key by its name text, as [`Index::intern_key`] would have made it (the keys'
    /// triples are distinct, each key the first of its triple), with room for `room` keys.
    fn key_table(&self, room: usize) -> KeyTable {
        let mut table = KeyTable::default();
        table.reserve(room.max(self.key_names.len()));
        for (key, (driver, pool, device)) in self.key_names.iter().enumerate() {
            table.insert(key_text(driver, pool, device), DeviceKey(key as u32));
        }
        table
    }

    /// The dense key of a `(driver, pool)` pair, and whether an earlier slice had it.
    fn intern_pool(&mut self, driver: &str, pool: &str) -> (u32, bool) {
        let next = self.pool_keys.len() as u32;
        let key = *self
            .pool_keys
            .entry((driver.to_string(), pool.to_string()))
            .or_insert(next);
        (key, key != next)
    }

    /// The dense key of a `(driver, pool)` pair (pools without any slice share a sentinel).
    pub fn pool_key(&self, driver: &str, pool: &str) -> u32 {
        self.pool_keys
            .get(&(driver.to_string(), pool.to_string()))
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// Number of distinct `(driver, pool)` pairs.
    pub fn num_pool_keys(&self) -> usize {
        self.pool_keys.len()
    }

    /// The pool key of a device key.
    pub fn pool_of_key(&self, key: DeviceKey) -> u32 {
        self.key_pool[key.0 as usize]
    }

    /// Adds a slice whose devices [`prepare_slice`] converted: gives the slice and its
    /// devices their place and keys, in input order.
    fn add_slice(&mut self, prepared: PreparedSlice, keys: &mut KeysByName) {
        let PreparedSlice { mut entry, devices } = prepared;
        let idx = SliceIdx(self.slices.len() as u32);
        // The slice's devices are in place already, right after the previous slice's.
        let start = self.slices.last().map_or(0, |s| s.devices.end);
        entry.devices = start..start + devices as u32;
        let driver: Arc<str> = entry.driver.as_str().into();
        let pool: Arc<str> = entry.pool.as_str().into();
        let (pool_key, pool_seen) = self.intern_pool(&entry.driver, &entry.pool);
        let at = entry.devices.start as usize..entry.devices.end as usize;
        // A device of this slice can have the name triple of an earlier one only when its
        // pool was in an earlier slice or a name repeats in this one.
        if let KeysByName::AllNew { room } = *keys
            && (pool_seen || names_repeat(&self.devices[at.clone()]))
        {
            *keys = KeysByName::Table(self.key_table(room));
        }
        for at in at {
            let name = self.devices[at].name.clone();
            let key = self.intern_key(keys, &driver, &pool, pool_key, &name);
            let device = &mut self.devices[at];
            device.key = key;
            device.pool_key = pool_key;
            device.slice = idx;
        }
        match entry.node_name_field.as_deref().filter(|n| !n.is_empty()) {
            None => self.slices_shared.push(idx),
            Some(node_name) => self
                .slices_on_node
                .entry(node_name.to_string())
                .or_default()
                .push(idx),
        }
        self.slices_by_pool
            .entry((entry.driver.clone(), entry.pool.clone()))
            .or_default()
            .push(idx);
        self.slices.push(entry);
    }

    /// The node with this name.
    pub fn node(&self, name: &str) -> Option<NodeId> {
        self.node_by_name.get(name).copied()
    }

    /// All nodes in input order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// All nodes in byte-wise name order, whatever their input order (nodes of one name in
    /// input order): the order in which the scheduler and the reference loop try them.
    pub fn node_ids_by_name(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self.node_ids().collect();
        nodes.sort_by(|a, b| {
            self.node_facts(*a)
                .name
                .as_bytes()
                .cmp(self.node_facts(*b).name.as_bytes())
        });
        nodes
    }

    /// Name and labels of a node.
    pub fn node_facts(&self, node: NodeId) -> &NodeFacts {
        &self.nodes[node.0 as usize].facts
    }

    /// The class with this name.
    pub fn class(&self, name: &str) -> Option<ClassId> {
        self.class_by_name.get(name).copied()
    }

    pub fn class_entry(&self, class: ClassId) -> &ClassEntry {
        &self.classes[class.0 as usize]
    }

    /// The key of a device name triple, if any slice has such a device.
    pub fn device_key(&self, driver: &str, pool: &str, device: &str) -> Option<DeviceKey> {
        let table = self
            .key_by_name
            .get_or_init(|| self.key_table(self.key_names.len()));
        with_key_text(driver, pool, device, |name| table.get(name).copied())
    }

    /// `(driver, pool, device)` of a key.
    pub fn key_names(&self, key: DeviceKey) -> (&str, &str, &str) {
        let (driver, pool, device) = &self.key_names[key.0 as usize];
        (driver, pool, device)
    }

    /// Number of distinct device keys.
    pub fn num_device_keys(&self) -> usize {
        self.key_names.len()
    }

    pub fn device(&self, idx: DeviceIdx) -> &DeviceEntry {
        &self.devices[idx.0 as usize]
    }

    /// The column of attribute `name` (a constraint's, fully qualified) over the index's
    /// devices, made on first request.
    pub(crate) fn attribute_column(&self, name: &str) -> Arc<AttributeColumn> {
        self.attribute_columns.column(name, self.devices.len())
    }

    pub fn slice(&self, idx: SliceIdx) -> &SliceEntry {
        &self.slices[idx.0 as usize]
    }

    /// Every device entry, in slice input order.
    pub fn device_entries(&self) -> impl Iterator<Item = (DeviceIdx, &DeviceEntry)> {
        self.devices
            .iter()
            .enumerate()
            .map(|(i, d)| (DeviceIdx(i as u32), d))
    }

    /// All slices in input order.
    pub fn slice_entries(&self) -> impl Iterator<Item = (SliceIdx, &SliceEntry)> {
        self.slices
            .iter()
            .enumerate()
            .map(|(i, s)| (SliceIdx(i as u32), s))
    }

    /// The CEL view of a device entry. Selector sets cache their result per device, so a view
    /// is needed again only when another set looks at the device: it is kept from its second
    /// use on. (Keeping it from the first would hold a copy of every device's attributes in
    /// large clusters where one selector set looks at every device once.)
    pub(crate) fn cel_input(&self, idx: DeviceIdx) -> CelInput<'_> {
        let device = &self.devices[idx.0 as usize];
        if let Some(input) = device.cel_input.get() {
            return CelInput::Kept(input);
        }
        let build = || {
            let driver = &self.slices[device.slice.0 as usize].driver;
            crate::selectors::build_cel_input(driver, device)
        };
        if device.cel_input_asked.swap(true, Ordering::AcqRel) {
            CelInput::Kept(device.cel_input.get_or_init(build))
        } else {
            CelInput::Fresh(build())
        }
    }
}

/// Device keys by [`key_text`].
type KeyTable = WordHashMap<Box<[u8]>, DeviceKey>;

/// How [`Index::add_slice`] gives devices their keys while an index is built.
enum KeysByName {
    /// Every device so far had a name triple no device before it had: each took the next
    /// key, and the table waits for the first lookup (most runs look up none: the table's
    /// texts and hashes were a quarter of a small cluster's indexing). `room`: every device
    /// of the index, the table's room should it be made while indexing (growing it step by
    /// step rehashes and copies it).
    AllNew { room: usize },
    /// A triple may repeat one seen before: every device's is looked up first.
    Table(KeyTable),
}

/// Whether two of `devices` (one slice's) have the same name.
fn names_repeat(devices: &[DeviceEntry]) -> bool {
    // Pairwise for a node's few devices; sorted names for more.
    const PAIRWISE: usize = 16;
    if devices.len() <= PAIRWISE {
        return devices
            .iter()
            .enumerate()
            .any(|(i, a)| devices[i + 1..].iter().any(|b| a.name == b.name));
    }
    let mut names: Vec<&str> = devices.iter().map(|d| &*d.name).collect();
    names.sort_unstable();
    names.windows(2).any(|pair| pair[0] == pair[1])
}

/// [`with_key_text`]'s text, as the key table keeps it.
fn key_text(driver: &str, pool: &str, device: &str) -> Box<[u8]> {
    let mut text = Vec::with_capacity(driver.len() + pool.len() + device.len() + 2);
    text.extend_from_slice(driver.as_bytes());
    text.push(0);
    text.extend_from_slice(pool.as_bytes());
    text.push(0);
    text.extend_from_slice(device.as_bytes());
    text.into_boxed_slice()
}

/// Calls `f` with `driver \0 pool \0 device`, the text a device key is known by, written on the
/// stack when it fits: looking a key up must not allocate (the simulation resolves every
/// device of every allocation it makes).
fn with_key_text<R>(driver: &str, pool: &str, device: &str, f: impl FnOnce(&[u8]) -> R) -> R {
    const ROOM: usize = 256;
    let len = driver.len() + pool.len() + device.len() + 2;
    let mut stack = [0u8; ROOM];
    let mut heap = Vec::new();
    let text: &mut [u8] = if len <= ROOM {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    let (head, rest) = text.split_at_mut(driver.len());
    head.copy_from_slice(driver.as_bytes());
    rest[0] = 0;
    let (middle, tail) = rest[1..].split_at_mut(pool.len());
    middle.copy_from_slice(pool.as_bytes());
    tail[0] = 0;
    tail[1..].copy_from_slice(device.as_bytes());
    f(text)
}

/// Whether a DeviceTaintRule's selector picks a device. A rule without a selector selects
/// nothing (the API documentation; the scheduler's slice tracker of mid-2026 treated it as
/// "all devices", a discrepancy SPEC.md §5.1 records).
pub fn taint_rule_selects(rule: &DeviceTaintRule, driver: &str, pool: &str, device: &str) -> bool {
    let Some(selector) = &rule.spec.device_selector else {
        return false;
    };
    selector.driver.as_deref().is_none_or(|d| d == driver)
        && selector.pool.as_deref().is_none_or(|p| p == pool)
        && selector.device.as_deref().is_none_or(|n| n == device)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::resource::v1::{DeviceTaintRuleSpec, DeviceTaintSelector};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;

    use super::*;

    /// Versions asked by their shared text get the answer of the text, whether the interner
    /// made the `Arc` or not, for more distinct versions than are remembered, in an order
    /// that comes back to each after others pushed it out.
    #[test]
    fn versions_convert_as_their_text_does() {
        let texts: Vec<String> = (0..12)
            .flat_map(|n| [format!("1.{n}.0"), format!("v1.{n}"), format!("{n}.0")])
            .collect();
        let mut strings = Interner::default();
        let interned: Vec<Arc<str>> = texts.iter().map(|t| strings.get(t)).collect();
        let mut asked = 0;
        for round in 0..3 {
            for step in [1, 5, 7] {
                for i in (0..texts.len()).map(|i| (i * step + round) % texts.len()) {
                    let expected = dra_cel::version_converts(&texts[i]);
                    assert_eq!(
                        strings.version_converts(&interned[i]),
                        expected,
                        "{}",
                        texts[i]
                    );
                    let fresh: Arc<str> = texts[i].as_str().into();
                    assert_eq!(strings.version_converts(&fresh), expected);
                    asked += 1;
                }
            }
        }
        assert_eq!(asked, 3 * 3 * 36);
        assert!(texts.iter().any(|t| dra_cel::version_converts(t)));
        assert!(texts.iter().any(|t| !dra_cel::version_converts(t)));
    }

    /// The key table's text is the text lookups build, for names short and long.
    #[test]
    fn keys_are_kept_as_they_are_looked_up() {
        let long = "d".repeat(300);
        for (driver, pool, device) in [
            ("gpu.example.com", "node-1", "gpu-0"),
            ("", "", ""),
            ("a", long.as_str(), "b"),
        ] {
            let looked_up = with_key_text(driver, pool, device, <[u8]>::to_vec);
            assert_eq!(&*key_text(driver, pool, device), looked_up.as_slice());
        }
    }

    /// Slices of several generated shapes (attributes of every kind, capacities with request
    /// policies, counter sets, consumed counters), with taints, a rule and two bad quantities.
    fn slices_and_rules() -> (Vec<ResourceSlice>, Vec<DeviceTaintRule>) {
        let mut slices = Vec::new();
        for preset in ["gpu-nic", "partitionable", "consumable-capacity"] {
            let spec = dra_gen::preset(preset, 12).expect("preset");
            slices.extend(dra_gen::generate(&spec).expect("generate").resource_slices);
        }
        let taint = DeviceTaint {
            key: "example.com/unhealthy".into(),
            effect: "NoSchedule".into(),
            ..DeviceTaint::default()
        };
        slices[3].spec.devices.as_mut().expect("devices")[0].taints = Some(vec![taint.clone()]);
        for at in [7, slices.len() - 5] {
            let devices = slices[at].spec.devices.as_mut().expect("devices");
            let device = devices.last_mut().expect("a device");
            device
                .capacity
                .get_or_insert_default()
                .entry("memory".into())
                .or_default()
                .value = WireQuantity("not a quantity".into());
        }
        let rule = DeviceTaintRule {
            spec: DeviceTaintRuleSpec {
                device_selector: Some(DeviceTaintSelector {
                    driver: Some(slices[10].spec.driver.clone()),
                    ..DeviceTaintSelector::default()
                }),
                taint,
            },
            ..DeviceTaintRule::default()
        };
        (slices, vec![rule])
    }

    #[test]
    fn slices_prepare_alike_on_any_number_of_threads() {
        let (slices, rules) = slices_and_rules();
        let slices: Vec<SliceInput<'_>> = slices.iter().map(SliceInput::from).collect();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        // The same slices and devices, whichever run they were prepared in.
        let flat = |runs: Vec<PreparedRun>| {
            let (mut slices, mut devices) = (Vec::new(), Vec::new());
            for run in runs {
                slices.extend(run.slices);
                devices.extend(run.devices);
            }
            format!("{slices:?}\n{devices:?}")
        };
        let one = flat(prepare_slices(&slices, &rules, Some(1)));
        assert_eq!(
            one.matches("Err(IndexError").count(),
            2,
            "the bad quantities fail"
        );
        assert!(
            one.contains("example.com/unhealthy"),
            "the taints are there"
        );
        for threads in [2, 3, 7, slices.len() + 3] {
            let many = flat(prepare_slices(&slices, &rules, Some(threads)));
            assert!(many == one, "{threads} threads differ");
        }
    }

    /// Everything a built index holds about slices and devices, as comparable text.
    fn index_text(slices: &[SliceInput<'_>], rules: &[&DeviceTaintRule], threads: usize) -> String {
        index_text_ahead(slices, rules, threads, Vec::new())
    }

    /// [`index_text`] of an index given slices converted ahead.
    fn index_text_ahead(
        slices: &[SliceInput<'_>],
        rules: &[&DeviceTaintRule],
        threads: usize,
        ahead: Vec<SliceRunAhead>,
    ) -> String {
        let input = IndexInput {
            nodes: Vec::new(),
            slices: slices.to_vec(),
            classes: Vec::new(),
            taint_rules: rules.to_vec(),
        };
        let options = IndexOptions {
            threads: Some(threads),
            ..IndexOptions::default()
        };
        describe(Index::build_with_ahead(&input, &options, ahead))
    }

    /// What an index holds of its slices, or its error, as text.
    fn describe(built: Result<Index, IndexError>) -> String {
        match built {
            Ok(index) => {
                // A HashMap prints in its own order.
                let on_node: BTreeMap<_, _> = index.slices_on_node.iter().collect();
                format!(
                    "{:?}\n{:?}\n{:?}\n{on_node:?}",
                    index.slices, index.devices, index.key_names
                )
            }
            Err(error) => format!("{error:?}"),
        }
    }

    #[test]
    fn indexes_build_alike_on_any_number_of_threads() {
        let (mut slices, rules) = slices_and_rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        // With the bad quantities: the first one in input order fails the build.
        let refs: Vec<SliceInput<'_>> = slices.iter().map(SliceInput::from).collect();
        let failed = index_text(&refs, &rules, 1);
        assert!(failed.contains("IndexError"), "{failed:.300}");
        for threads in [2, 3, 7] {
            assert_eq!(index_text(&refs, &rules, threads), failed);
        }
        // Without them, whole indexes.
        for slice in &mut slices {
            for device in slice.spec.devices.iter_mut().flatten() {
                if let Some(memory) = device.capacity.as_mut().and_then(|c| c.get_mut("memory"))
                    && memory.value.0 == "not a quantity"
                {
                    memory.value = WireQuantity("1Gi".into());
                }
            }
        }
        let refs: Vec<SliceInput<'_>> = slices.iter().map(SliceInput::from).collect();
        let one = index_text(&refs, &rules, 1);
        assert!(!one.contains("IndexError") && one.contains("example.com/unhealthy"));
        for threads in [2, 3, 7, refs.len() + 3] {
            assert!(
                index_text(&refs, &rules, threads) == one,
                "{threads} threads differ"
            );
        }
    }

    /// Runs of the slices' texts converted ahead, cut anywhere.
    fn runs_of(texts: &[(&str, bool)], cuts: &[usize]) -> Vec<SliceRunAhead> {
        let mut runs = Vec::new();
        let mut start = 0;
        for &end in cuts.iter().chain([&texts.len()]) {
            let mut run = SliceRunAhead::with_room_for_text(0);
            for &(text, to_line_end) in &texts[start..end] {
                run.push(text, to_line_end);
            }
            runs.push(run);
            start = end;
        }
        runs
    }

    /// Slices converted ahead, in runs cut anywhere, build the index the index builds itself,
    /// good quantities or bad (the first bad one fails both alike).
    #[test]
    fn slices_converted_ahead_build_the_same_index() {
        let (slices, _) = slices_and_rules();
        let texts: Vec<String> = slices
            .iter()
            .map(|slice| serde_json::to_string(slice).expect("encode"))
            .collect();
        // The first seven slices are good; all of them fail on the first bad quantity.
        for count in [7, texts.len()] {
            let input: Vec<SliceInput<'_>> =
                texts[..count].iter().map(|t| SliceInput::Json(t)).collect();
            let pairs: Vec<(&str, bool)> = texts[..count].iter().map(|t| (&**t, false)).collect();
            let built = index_text(&input, &[], 1);
            assert_eq!(built.contains("IndexError"), count > 7, "{built:.300}");
            for cuts in [
                vec![],
                vec![0],
                vec![1],
                vec![count / 2],
                vec![3, 5],
                vec![count],
            ] {
                assert!(
                    index_text_ahead(&input, &[], 1, runs_of(&pairs, &cuts)) == built,
                    "cut at {cuts:?}: differs"
                );
                // Fitted, the runs build the same index without the slices.
                let fitted = SliceRunAhead::fitted(runs_of(&pairs, &cuts), &input, &[])
                    .unwrap_or_else(|_| panic!("cut at {cuts:?}: not taken"));
                let options = IndexOptions {
                    threads: Some(1),
                    ..IndexOptions::default()
                };
                assert!(
                    describe(Index::build_with_fitted(&[], &[], &options, fitted)) == built,
                    "cut at {cuts:?}: fitted differs"
                );
            }
        }
    }

    /// Runs are taken only when they are exactly the input's slices, by address, and no taint
    /// rule could add to their devices; otherwise the index converts the slices itself.
    /// `SliceRunAhead::fitted` takes them exactly then, and gives the others back whole.
    #[test]
    fn slices_converted_ahead_are_taken_only_for_their_very_texts() {
        let (slices, rules) = slices_and_rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        let texts: Vec<String> = slices[..6]
            .iter()
            .map(|slice| serde_json::to_string(slice).expect("encode"))
            .collect();
        let copies = texts.clone();
        let input: Vec<SliceInput<'_>> = texts.iter().map(|t| SliceInput::Json(t)).collect();
        let pairs: Vec<(&str, bool)> = texts.iter().map(|t| (&**t, false)).collect();
        let taken = |runs: Vec<SliceRunAhead>| {
            let slices: usize = runs.iter().map(SliceRunAhead::len).sum();
            let taken = SliceRunAhead::fit(&runs, &input, &[]);
            match SliceRunAhead::fitted(runs, &input, &[]) {
                Ok(_) => assert!(taken, "fitted but not taken"),
                Err(back) => {
                    assert!(!taken, "taken but not fitted");
                    let back: usize = back.iter().map(SliceRunAhead::len).sum();
                    assert_eq!(back, slices, "runs not given back whole");
                }
            }
            taken
        };
        assert!(taken(runs_of(&pairs, &[2])));
        assert!(!taken(Vec::new()), "no runs");
        assert!(!taken(runs_of(&pairs[..5], &[2])), "a slice missing");
        let mut more = pairs.clone();
        more.push(pairs[0]);
        assert!(!taken(runs_of(&more, &[2])), "a slice too many");
        let mut swapped = pairs.clone();
        swapped.swap(1, 2);
        assert!(!taken(runs_of(&swapped, &[])), "out of order");
        let mut copied = pairs.clone();
        copied[4] = (&copies[4], false);
        assert!(!taken(runs_of(&copied, &[])), "an equal text elsewhere");
        let mut to_line_end = pairs.clone();
        to_line_end[3].1 = true;
        assert!(!taken(runs_of(&to_line_end, &[])), "read to the line end");
        assert!(
            SliceRunAhead::fitted(runs_of(&pairs, &[]), &input, &rules).is_err(),
            "taint rules"
        );
        let objects: Vec<SliceInput<'_>> = slices[..6].iter().map(SliceInput::from).collect();
        assert!(
            SliceRunAhead::fitted(runs_of(&pairs, &[]), &objects, &[]).is_err(),
            "objects"
        );
        // Runs not taken are not used: the index is the one of its input.
        assert_eq!(
            index_text_ahead(&input, &rules, 1, runs_of(&pairs, &[])),
            index_text(&input, &rules, 1)
        );
        let tainted = |rules: &[&DeviceTaintRule]| {
            index_text(&input, rules, 1)
                .matches("example.com/unhealthy")
                .count()
        };
        assert!(tainted(&rules) > tainted(&[]), "the rule taints devices");
    }

    /// Slices given as JSON text build the index their objects build, on any number of
    /// threads and mixed with objects; the first bad quantity fails it alike.
    #[test]
    fn json_slices_index_like_their_objects() {
        let (slices, rules) = slices_and_rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        let texts: Vec<String> = slices
            .iter()
            .map(|slice| serde_json::to_string(slice).expect("encode"))
            .collect();
        let objects: Vec<SliceInput<'_>> = slices.iter().map(SliceInput::from).collect();
        let json: Vec<SliceInput<'_>> = texts.iter().map(|t| SliceInput::Json(t)).collect();
        let mixed: Vec<SliceInput<'_>> = objects
            .iter()
            .zip(&json)
            .enumerate()
            .map(|(i, (object, text))| if i % 3 == 0 { *object } else { *text })
            .collect();
        let failed = index_text(&objects, &rules, 1);
        assert!(failed.contains("kind: Quantity"), "{failed:.300}");
        for threads in [1, 2, 3] {
            assert_eq!(index_text(&json, &rules, threads), failed);
            assert_eq!(index_text(&mixed, &rules, threads), failed);
        }
        // Without the slices holding bad quantities, whole indexes.
        let bad_at = [7, slices.len() - 5];
        fn without<'s>(inputs: &[SliceInput<'s>], bad_at: [usize; 2]) -> Vec<SliceInput<'s>> {
            let good = inputs
                .iter()
                .enumerate()
                .filter(|(i, _)| !bad_at.contains(i));
            good.map(|(_, input)| *input).collect()
        }
        let one = index_text(&without(&objects, bad_at), &rules, 1);
        assert!(!one.contains("IndexError") && one.contains("example.com/unhealthy"));
        for threads in [1, 2, 3] {
            assert!(index_text(&without(&json, bad_at), &rules, threads) == one);
            assert!(index_text(&without(&mixed, bad_at), &rules, threads) == one);
        }
    }

    /// A text that is no ResourceSlice fails the build as undecodable, so that the caller can
    /// have its loader explain it.
    #[test]
    fn undecodable_json_slice_is_a_decode_error() {
        let (slices, rules) = slices_and_rules();
        let rules: Vec<&DeviceTaintRule> = rules.iter().collect();
        let mut inputs: Vec<SliceInput<'_>> = slices.iter().take(3).map(SliceInput::from).collect();
        let bad =
            r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","spec":{"devices":5}}"#;
        inputs.insert(1, SliceInput::Json(bad));
        let input = IndexInput {
            slices: inputs,
            taint_rules: rules,
            ..IndexInput::default()
        };
        let error = Index::build(&input, &IndexOptions::default()).expect_err("bad text");
        assert_eq!(error.kind, IndexErrorKind::Decode);
        assert!(error.message.contains("invalid type"), "{error}");
    }

    /// The index of the slices written as JSON `slices`, without nodes, classes or rules.
    fn index_of_json(slices: &[String]) -> Index {
        let input = IndexInput {
            nodes: Vec::new(),
            slices: slices.iter().map(|s| SliceInput::Json(s)).collect(),
            classes: Vec::new(),
            taint_rules: Vec::new(),
        };
        Index::build(&input, &IndexOptions::default()).expect("an index")
    }

    /// Devices are found by their names whether the joined names fit the lookup's stack room
    /// or not, and names that differ only in where one ends and the next begins stay apart.
    #[test]
    fn device_keys_resolve_by_names_of_any_length() {
        let pool = |name: &str| "p".repeat(200) + name;
        // 213 bytes of driver and pool, two separators: 256 bytes of room hold a 41-byte device.
        let devices = [
            "d".repeat(10),
            "d".repeat(41),
            "d".repeat(42),
            "d".repeat(300),
        ];
        let mut slices = Vec::new();
        for (driver, pool) in [("x.example.com", pool("")), ("x.example.co", pool("m"))] {
            let list: Vec<String> = devices
                .iter()
                .map(|d| format!(r#"{{"name":"{d}"}}"#))
                .collect();
            slices.push(format!(
                r#"{{"metadata":{{"name":"s-{driver}"}},"spec":{{"driver":"{driver}",
                "nodeName":"n","pool":{{"name":"{pool}","resourceSliceCount":1}},
                "devices":[{}]}}}}"#,
                list.join(",")
            ));
        }
        let index = index_of_json(&slices);
        assert_eq!(index.num_device_keys(), 8);
        for (driver, pool) in [("x.example.com", pool("")), ("x.example.co", pool("m"))] {
            for device in &devices {
                let key = index.device_key(driver, &pool, device).expect("a key");
                assert_eq!(
                    index.key_names(key),
                    (driver, pool.as_str(), device.as_str())
                );
            }
            assert_eq!(index.device_key(driver, &pool, "d"), None);
        }
    }

    /// A device name triple seen before takes the key it had, whether it repeats in one slice
    /// (of few devices or many) or in a later slice of its pool, and whether or not slices
    /// of other pools came first; every other device takes the next key, and lookups find
    /// each key, whether the key table was made while indexing or on the first lookup.
    #[test]
    fn repeated_device_names_keep_their_first_key() {
        let slice = |name: &str, pool: &str, devices: &[String]| {
            let list: Vec<String> = devices
                .iter()
                .map(|d| format!(r#"{{"name":"{d}"}}"#))
                .collect();
            format!(
                r#"{{"metadata":{{"name":"{name}"}},"spec":{{"driver":"x.example.com",
                "nodeName":"n","pool":{{"name":"{pool}","resourceSliceCount":2}},
                "devices":[{}]}}}}"#,
                list.join(",")
            )
        };
        let names = |count: usize| -> Vec<String> { (0..count).map(|i| format!("d{i}")).collect() };
        let with_repeat = |count: usize| {
            let mut devices = names(count);
            devices.push(format!("d{}", count / 2));
            devices
        };
        let cases: Vec<(Vec<String>, Vec<u32>)> = vec![
            // Two pools of distinct names: every device a key of its own.
            (
                vec![slice("a", "p", &names(3)), slice("b", "q", &names(2))],
                vec![0, 1, 2, 3, 4],
            ),
            // A name twice in a node's slice, after another pool's slice.
            (
                vec![slice("a", "q", &names(2)), slice("b", "p", &with_repeat(4))],
                vec![0, 1, 2, 3, 4, 5, 4],
            ),
            // A name twice in a slice of many devices.
            (
                vec![slice("a", "p", &with_repeat(20))],
                (0..20).chain([10]).collect(),
            ),
            // A pool's second slice repeating one name of its first and adding one.
            (
                vec![
                    slice("a", "p", &names(2)),
                    slice("b", "q", &names(1)),
                    slice("c", "p", &["d1".to_string(), "d7".to_string()]),
                ],
                vec![0, 1, 2, 1, 3],
            ),
        ];
        for (slices, expected) in cases {
            let index = index_of_json(&slices);
            let keys: Vec<u32> = index.device_entries().map(|(_, d)| d.key.0).collect();
            assert_eq!(keys, expected, "{slices:?}");
            let distinct = expected.iter().max().map_or(0, |max| max + 1);
            assert_eq!(index.num_device_keys(), distinct as usize);
            for (_, device) in index.device_entries() {
                let (driver, pool, name) = index.key_names(device.key);
                assert_eq!(&*device.name, name);
                assert_eq!(index.device_key(driver, pool, name), Some(device.key));
            }
            assert_eq!(index.device_key("x.example.com", "p", "d99"), None);
        }
    }

    /// Devices of few attributes (scanned) and of many (searched): every attribute is found
    /// by its name, a fully qualified name of the driver's domain finds the short one, and
    /// names that are a prefix, an extension or of another domain find nothing.
    #[test]
    fn attributes_are_found_by_name_on_either_side_of_the_scan() {
        for count in [1, 5, ATTRIBUTES_SCANNED, ATTRIBUTES_SCANNED + 1, 40] {
            let names: Vec<String> = (0..count).map(|i| format!("a{}", i * 7 % 41)).collect();
            let attributes: Vec<String> = names
                .iter()
                .enumerate()
                .map(|(i, name)| format!(r#""{name}":{{"int":{i}}}"#))
                .collect();
            let slice = format!(
                r#"{{"metadata":{{"name":"s"}},"spec":{{"driver":"x.example.com",
                "nodeName":"n","pool":{{"name":"p","resourceSliceCount":1}},
                "devices":[{{"name":"d","attributes":{{{}}}}}]}}}}"#,
                attributes.join(",")
            );
            let input = IndexInput {
                nodes: Vec::new(),
                slices: vec![SliceInput::Json(&slice)],
                classes: Vec::new(),
                taint_rules: Vec::new(),
            };
            let index = Index::build(&input, &IndexOptions::default()).expect("an index");
            let entry = index.device(DeviceIdx(0));
            assert_eq!(entry.attributes.len(), count);
            for (i, name) in names.iter().enumerate() {
                let expected = AttrValue::Int(i as i64);
                assert_eq!(entry.attribute(name), Some(&expected), "{count}: {name}");
                let qualified = format!("x.example.com/{name}");
                assert_eq!(
                    entry.lookup_attribute("x.example.com", &qualified),
                    Some(&expected)
                );
                assert_eq!(entry.lookup_attribute("y.example.com", &qualified), None);
                assert_eq!(entry.attribute(&format!("{name}x")), None);
                assert_eq!(entry.attribute(&name[..1]), None);
            }
        }
    }
}
