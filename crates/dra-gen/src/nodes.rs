//! Node shapes: Node objects and the ResourceSlices their drivers would publish.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::api::resource::v1::{
    CapacityRequestPolicy, CapacityRequestPolicyRange, Counter, CounterSet, Device,
    DeviceAttribute, DeviceCapacity, DeviceCounterConsumption, ResourcePool, ResourceSlice,
    ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::objects::{
    bool_attr, cluster_meta, index_width, indexed_name, int_attr, quantities, quantity,
    string_attr, version_attr,
};
use crate::rng::Rng;
use crate::spec::{GpuVariant, MigProfile, NodePoolSpec, NodeShape};
use crate::well_known::{
    GPU_DRIVER, HOSTNAME_LABEL, INSTANCE_TYPE_LABEL, NIC_DRIVER, NUMA_NODE_ATTRIBUTE,
    PCI_BUS_ID_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE, TEST_DRIVER, TEST_NUMA_ATTRIBUTE, ZONE_LABEL,
};

/// API limit: devices per slice when any device consumes counters.
const MAX_DEVICES_WITH_COUNTERS: usize = 64;
/// API limit: devices per slice without advanced features.
const MAX_DEVICES: usize = 128;
/// API limit: counter sets per slice.
const MAX_COUNTER_SETS: usize = 8;

/// Random streams are addressed by `[purpose, pool, node, ...]`.
pub(crate) const STREAM_NODE: u64 = 1;

/// GPUs per HGX and MIG node.
pub(crate) const GPUS_PER_NODE: u32 = 8;
/// PCIe root complexes per HGX node; each has two GPUs and one NIC.
const PCIE_ROOTS: u32 = 4;
/// Bus number of each PCIe root; GPUs sit at +3 and +5, the NIC at +1.
const ROOT_BUS: [u32; PCIE_ROOTS as usize] = [0x15, 0x37, 0x97, 0xb7];
const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

/// One node pool with its resolved names.
#[derive(Debug, Clone)]
pub(crate) struct PoolPlan {
    pub index: u32,
    pub shape: NodeShape,
    pub prefix: String,
    pub count: u32,
    width: usize,
}

impl PoolPlan {
    pub fn new(index: u32, spec: &NodePoolSpec) -> PoolPlan {
        let prefix = spec
            .name_prefix
            .clone()
            .unwrap_or_else(|| default_prefix(&spec.shape));
        PoolPlan {
            index,
            shape: spec.shape.clone(),
            prefix,
            count: spec.count,
            width: index_width(spec.count),
        }
    }

    pub fn node_name(&self, node: u32) -> String {
        indexed_name(&self.prefix, node, self.width)
    }
}

pub(crate) fn default_prefix(shape: &NodeShape) -> String {
    match shape {
        NodeShape::Hgx { variant } => format!("hgx-{}", variant.short_name()),
        NodeShape::Mig => "mig-a100".to_owned(),
        // upstream scheduler_perf names its DRA nodes scheduler-perf-dra-<n>.
        NodeShape::TestDriver { .. } => "scheduler-perf-dra".to_owned(),
        NodeShape::Legacy { .. } => "legacy-gpu".to_owned(),
    }
}

/// Static facts of an HGX GPU generation.
struct GpuModel {
    product_name: &'static str,
    architecture: &'static str,
    compute_capability: &'static str,
    driver_version: &'static str,
    cuda_driver_version: &'static str,
    memory: &'static str,
}

impl GpuVariant {
    pub(crate) fn short_name(self) -> &'static str {
        match self {
            GpuVariant::H100 => "h100",
            GpuVariant::H200 => "h200",
            GpuVariant::B200 => "b200",
        }
    }

    /// The `productName` attribute of this variant's GPUs.
    pub fn product_name(self) -> &'static str {
        self.model().product_name
    }

    fn model(self) -> GpuModel {
        match self {
            GpuVariant::H100 => GpuModel {
                product_name: "NVIDIA H100 80GB HBM3",
                architecture: "Hopper",
                compute_capability: "9.0.0",
                driver_version: "550.127.5",
                cuda_driver_version: "12.4.0",
                memory: "80Gi",
            },
            GpuVariant::H200 => GpuModel {
                product_name: "NVIDIA H200",
                architecture: "Hopper",
                compute_capability: "9.0.0",
                driver_version: "560.35.3",
                cuda_driver_version: "12.6.0",
                memory: "141Gi",
            },
            GpuVariant::B200 => GpuModel {
                product_name: "NVIDIA B200",
                architecture: "Blackwell",
                compute_capability: "10.0.0",
                driver_version: "570.124.6",
                cuda_driver_version: "12.8.0",
                memory: "180Gi",
            },
        }
    }
}

/// The A100 80GB used for MIG nodes.
const A100: GpuModel = GpuModel {
    product_name: "NVIDIA A100-SXM4-80GB",
    architecture: "Ampere",
    compute_capability: "8.0.0",
    driver_version: "550.127.5",
    cuda_driver_version: "12.4.0",
    memory: "80Gi",
};
/// Streaming multiprocessors of a whole A100 and the part MIG can hand out (7 × 14).
const A100_MULTIPROCESSORS: u32 = 108;
const A100_MIG_MULTIPROCESSORS: u32 = 98;
/// Memory slices of an A100: eight, each one counter of capacity 1.
const A100_MEMORY_SLICES: u32 = 8;

impl MigProfile {
    /// All profiles, smallest first.
    pub const ALL: [MigProfile; 5] = [
        MigProfile::G1Gb10,
        MigProfile::G2Gb20,
        MigProfile::G3Gb40,
        MigProfile::G4Gb40,
        MigProfile::G7Gb80,
    ];

    /// The profile as NVIDIA writes it and as the `profile` attribute holds it.
    pub fn name(self) -> &'static str {
        match self {
            MigProfile::G1Gb10 => "1g.10gb",
            MigProfile::G2Gb20 => "2g.20gb",
            MigProfile::G3Gb40 => "3g.40gb",
            MigProfile::G4Gb40 => "4g.40gb",
            MigProfile::G7Gb80 => "7g.80gb",
        }
    }

    /// The profile inside DNS labels (device names): `1g10gb`.
    pub(crate) fn token(self) -> String {
        self.name().replace('.', "")
    }

    fn multiprocessors(self) -> u32 {
        match self {
            MigProfile::G1Gb10 => 14,
            MigProfile::G2Gb20 => 28,
            MigProfile::G3Gb40 => 42,
            MigProfile::G4Gb40 => 56,
            MigProfile::G7Gb80 => 98,
        }
    }

    fn memory(self) -> &'static str {
        match self {
            MigProfile::G1Gb10 => "10Gi",
            MigProfile::G2Gb20 => "20Gi",
            MigProfile::G3Gb40 | MigProfile::G4Gb40 => "40Gi",
            MigProfile::G7Gb80 => "80Gi",
        }
    }

    /// Memory slices one instance occupies.
    fn memory_slices(self) -> u32 {
        match self {
            MigProfile::G1Gb10 => 1,
            MigProfile::G2Gb20 => 2,
            MigProfile::G3Gb40 | MigProfile::G4Gb40 => 4,
            MigProfile::G7Gb80 => 8,
        }
    }

    /// Valid placement starts on an A100 80GB.
    fn placements(self) -> &'static [u32] {
        match self {
            MigProfile::G1Gb10 => &[0, 1, 2, 3, 4, 5, 6],
            MigProfile::G2Gb20 => &[0, 2, 4],
            MigProfile::G3Gb40 => &[0, 4],
            MigProfile::G4Gb40 | MigProfile::G7Gb80 => &[0],
        }
    }
}

/// Name of the MIG device of `profile` at placement `start` on GPU `gpu`.
pub(crate) fn mig_device_name(gpu: u32, profile: MigProfile, start: u32) -> String {
    format!("gpu-{gpu}-mig-{}-{start}", profile.token())
}

/// Name of a whole GPU (HGX and MIG nodes).
pub(crate) fn gpu_device_name(gpu: u32) -> String {
    format!("gpu-{gpu}")
}

/// Name of test-driver device `i` (upstream's naming).
pub(crate) fn test_device_name(i: u32) -> String {
    format!("instance-{i}")
}

/// Number of 1g.10gb placements per MIG GPU: the unit the fill counts in.
pub(crate) fn mig_small_placements() -> u32 {
    MigProfile::G1Gb10.placements().len() as u32
}

/// The Node object of node `i` of a pool.
pub(crate) fn pool_node(plan: &PoolPlan, i: u32) -> Node {
    let name = plan.node_name(i);
    let zone = ZONES[i as usize % ZONES.len()];
    match &plan.shape {
        NodeShape::Hgx { variant } => node(
            &name,
            zone,
            &format!("hgx-{}", variant.short_name()),
            quantities([("cpu", "224"), ("memory", "2Ti"), ("pods", "110")]),
        ),
        NodeShape::Mig => node(
            &name,
            zone,
            "hgx-a100-mig",
            quantities([("cpu", "256"), ("memory", "2Ti"), ("pods", "110")]),
        ),
        // upstream's node-with-dra-test-driver.yaml capacity.
        NodeShape::TestDriver { .. } => node(
            &name,
            zone,
            "scheduler-perf-dra",
            quantities([("cpu", "4"), ("memory", "32Gi"), ("pods", "110")]),
        ),
        NodeShape::Legacy { gpus_per_node } => {
            let mut allocatable = quantities([("cpu", "96"), ("memory", "768Gi"), ("pods", "110")]);
            allocatable.insert(
                crate::well_known::LEGACY_GPU_RESOURCE.to_owned(),
                quantity(gpus_per_node.to_string()),
            );
            node(&name, zone, "legacy-gpu", allocatable)
        }
    }
}

/// The ResourceSlices of node `i` of a pool (none for legacy nodes).
pub(crate) fn pool_slices(plan: &PoolPlan, i: u32, seed: u64) -> Vec<ResourceSlice> {
    let name = plan.node_name(i);
    let mut rng = Rng::stream(seed, &[STREAM_NODE, u64::from(plan.index), u64::from(i)]);
    match &plan.shape {
        NodeShape::Hgx { variant } => hgx_slices(&name, *variant, &mut rng).into(),
        NodeShape::Mig => mig_slices(&name, &mut rng),
        NodeShape::TestDriver { devices_per_node } => test_driver_slices(&name, *devices_per_node),
        NodeShape::Legacy { .. } => Vec::new(),
    }
}

fn node(
    name: &str,
    zone: &str,
    instance_type: &str,
    allocatable: BTreeMap<String, Quantity>,
) -> Node {
    let labels = BTreeMap::from([
        (HOSTNAME_LABEL.to_owned(), name.to_owned()),
        ("kubernetes.io/os".to_owned(), "linux".to_owned()),
        ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
        (ZONE_LABEL.to_owned(), zone.to_owned()),
        (INSTANCE_TYPE_LABEL.to_owned(), instance_type.to_owned()),
    ]);
    Node {
        metadata: ObjectMeta {
            labels: Some(labels),
            ..cluster_meta(name)
        },
        spec: None,
        status: Some(NodeStatus {
            capacity: Some(allocatable.clone()),
            allocatable: Some(allocatable),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_owned(),
                status: "True".to_owned(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
    }
}

/// A node-local slice of a single-slice or multi-slice pool named after the node.
fn slice(name: String, driver: &str, node: &str, slice_count: usize) -> ResourceSlice {
    ResourceSlice {
        metadata: cluster_meta(name),
        spec: ResourceSliceSpec {
            driver: driver.to_owned(),
            node_name: Some(node.to_owned()),
            pool: ResourcePool {
                name: node.to_owned(),
                generation: 1,
                resource_slice_count: slice_count as i64,
            },
            ..ResourceSliceSpec::default()
        },
    }
}

fn pcie_root(root: u32) -> String {
    format!("pci0000:{:02x}", ROOT_BUS[root as usize])
}

fn pci_bus_id(bus: u32) -> String {
    format!("0000:{bus:02x}:00.0")
}

/// PCIe root of GPU `gpu` (two GPUs per root).
pub(crate) fn gpu_root(gpu: u32) -> u32 {
    gpu / 2
}

/// NUMA node of PCIe root `root` (two roots per NUMA node).
pub(crate) fn root_numa(root: u32) -> u32 {
    root / 2
}

fn gpu_bus(gpu: u32) -> u32 {
    ROOT_BUS[gpu_root(gpu) as usize] + 3 + 2 * (gpu % 2)
}

/// Attributes every whole GPU carries (HGX and MIG nodes).
fn gpu_attributes(model: &GpuModel, gpu: u32, uuid: &str) -> BTreeMap<String, DeviceAttribute> {
    let root = gpu_root(gpu);
    BTreeMap::from([
        ("type".to_owned(), string_attr("gpu")),
        ("uuid".to_owned(), string_attr(format!("GPU-{uuid}"))),
        ("index".to_owned(), int_attr(i64::from(gpu))),
        ("minor".to_owned(), int_attr(i64::from(gpu))),
        ("productName".to_owned(), string_attr(model.product_name)),
        ("brand".to_owned(), string_attr("Nvidia")),
        ("architecture".to_owned(), string_attr(model.architecture)),
        (
            "cudaComputeCapability".to_owned(),
            version_attr(model.compute_capability),
        ),
        (
            "driverVersion".to_owned(),
            version_attr(model.driver_version),
        ),
        (
            "cudaDriverVersion".to_owned(),
            version_attr(model.cuda_driver_version),
        ),
        (
            PCI_BUS_ID_ATTRIBUTE.to_owned(),
            string_attr(pci_bus_id(gpu_bus(gpu))),
        ),
        (PCIE_ROOT_ATTRIBUTE.to_owned(), string_attr(pcie_root(root))),
        (
            NUMA_NODE_ATTRIBUTE.to_owned(),
            int_attr(i64::from(root_numa(root))),
        ),
    ])
}

fn capacity<const N: usize>(entries: [(&str, &str); N]) -> BTreeMap<String, DeviceCapacity> {
    entries
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_owned(),
                DeviceCapacity {
                    value: quantity(v),
                    request_policy: None,
                },
            )
        })
        .collect()
}

fn hgx_slices(node: &str, variant: GpuVariant, rng: &mut Rng) -> [ResourceSlice; 2] {
    let model = variant.model();
    let gpus = (0..GPUS_PER_NODE)
        .map(|gpu| Device {
            name: gpu_device_name(gpu),
            attributes: Some(gpu_attributes(&model, gpu, &rng.uuid())),
            capacity: Some(capacity([("memory", model.memory)])),
            ..Device::default()
        })
        .collect();
    let nics = (0..PCIE_ROOTS).map(nic_device).collect();

    let mut gpu_slice = slice(format!("{node}-gpu"), GPU_DRIVER, node, 1);
    gpu_slice.spec.devices = Some(gpus);
    let mut nic_slice = slice(format!("{node}-nic"), NIC_DRIVER, node, 1);
    nic_slice.spec.devices = Some(nics);
    [gpu_slice, nic_slice]
}

/// Total bandwidth of a NIC and the share a request takes when it names none.
pub(crate) const NIC_BANDWIDTH: &str = "400G";
const NIC_DEFAULT_SHARE: &str = "10G";

fn nic_device(root: u32) -> Device {
    let attributes = BTreeMap::from([
        ("type".to_owned(), string_attr("nic")),
        ("index".to_owned(), int_attr(i64::from(root))),
        ("model".to_owned(), string_attr("ConnectX-7")),
        ("linkType".to_owned(), string_attr("infiniband")),
        ("rdma".to_owned(), bool_attr(true)),
        ("firmwareVersion".to_owned(), version_attr("28.39.1002")),
        (
            PCI_BUS_ID_ATTRIBUTE.to_owned(),
            string_attr(pci_bus_id(ROOT_BUS[root as usize] + 1)),
        ),
        (PCIE_ROOT_ATTRIBUTE.to_owned(), string_attr(pcie_root(root))),
        (
            NUMA_NODE_ATTRIBUTE.to_owned(),
            int_attr(i64::from(root_numa(root))),
        ),
    ]);
    let bandwidth = DeviceCapacity {
        value: quantity(NIC_BANDWIDTH),
        request_policy: Some(CapacityRequestPolicy {
            default: Some(quantity(NIC_DEFAULT_SHARE)),
            valid_range: Some(CapacityRequestPolicyRange {
                min: quantity("1G"),
                max: None,
                step: Some(quantity("1G")),
            }),
            valid_values: None,
        }),
    };
    Device {
        name: format!("nic-{root}"),
        allow_multiple_allocations: Some(true),
        attributes: Some(attributes),
        capacity: Some(BTreeMap::from([("bandwidth".to_owned(), bandwidth)])),
        ..Device::default()
    }
}

fn counter_set_name(gpu: u32) -> String {
    format!("gpu-{gpu}-counters")
}

fn memory_slice_counter(slice: u32) -> String {
    format!("memory-slice-{slice}")
}

fn counters(entries: impl IntoIterator<Item = (String, String)>) -> BTreeMap<String, Counter> {
    entries
        .into_iter()
        .map(|(k, v)| (k, Counter { value: quantity(v) }))
        .collect()
}

/// What a whole A100 or one MIG placement takes from its GPU's counter set.
fn mig_consumption(
    gpu: u32,
    multiprocessors: u32,
    memory: &str,
    slices: std::ops::Range<u32>,
) -> DeviceCounterConsumption {
    let mut entries = vec![
        ("multiprocessors".to_owned(), multiprocessors.to_string()),
        ("memory".to_owned(), memory.to_owned()),
    ];
    entries.extend(slices.map(|s| (memory_slice_counter(s), "1".to_owned())));
    DeviceCounterConsumption {
        counter_set: counter_set_name(gpu),
        counters: counters(entries),
        compatibility_groups: None,
    }
}

/// One counter-only slice (per eight GPUs) plus device slices of at most 64 devices,
/// each holding whole GPUs with all their placements.
fn mig_slices(node: &str, rng: &mut Rng) -> Vec<ResourceSlice> {
    let counter_sets: Vec<CounterSet> = (0..GPUS_PER_NODE)
        .map(|gpu| {
            let mut entries = vec![
                (
                    "multiprocessors".to_owned(),
                    A100_MIG_MULTIPROCESSORS.to_string(),
                ),
                ("memory".to_owned(), A100.memory.to_owned()),
            ];
            entries
                .extend((0..A100_MEMORY_SLICES).map(|s| (memory_slice_counter(s), "1".to_owned())));
            CounterSet {
                name: counter_set_name(gpu),
                counters: counters(entries),
            }
        })
        .collect();

    let per_gpu: Vec<Vec<Device>> = (0..GPUS_PER_NODE)
        .map(|gpu| mig_gpu_devices(gpu, rng))
        .collect();
    let devices_per_gpu = per_gpu[0].len();
    let gpus_per_slice = (MAX_DEVICES_WITH_COUNTERS / devices_per_gpu).max(1);
    let device_slices: Vec<Vec<Device>> = per_gpu
        .chunks(gpus_per_slice)
        .map(|chunk| chunk.iter().flatten().cloned().collect())
        .collect();
    let counter_chunks: Vec<Vec<CounterSet>> = counter_sets
        .chunks(MAX_COUNTER_SETS)
        .map(<[CounterSet]>::to_vec)
        .collect();

    let slice_count = counter_chunks.len() + device_slices.len();
    let mut out = Vec::with_capacity(slice_count);
    for (i, sets) in counter_chunks.into_iter().enumerate() {
        let name = if i == 0 {
            format!("{node}-gpu-counters")
        } else {
            format!("{node}-gpu-counters-{i}")
        };
        let mut s = slice(name, GPU_DRIVER, node, slice_count);
        s.spec.shared_counters = Some(sets);
        out.push(s);
    }
    for (i, devices) in device_slices.into_iter().enumerate() {
        let mut s = slice(format!("{node}-gpu-{i}"), GPU_DRIVER, node, slice_count);
        s.spec.devices = Some(devices);
        out.push(s);
    }
    out
}

fn mig_gpu_devices(gpu: u32, rng: &mut Rng) -> Vec<Device> {
    let gpu_uuid = rng.uuid();
    let mut devices = vec![Device {
        name: gpu_device_name(gpu),
        attributes: Some(gpu_attributes(&A100, gpu, &gpu_uuid)),
        capacity: Some(capacity([
            ("memory", A100.memory),
            ("multiprocessors", &A100_MULTIPROCESSORS.to_string()),
        ])),
        consumes_counters: Some(vec![mig_consumption(
            gpu,
            A100_MIG_MULTIPROCESSORS,
            A100.memory,
            0..A100_MEMORY_SLICES,
        )]),
        ..Device::default()
    }];
    for profile in MigProfile::ALL {
        for &start in profile.placements() {
            let mut attributes = gpu_attributes(&A100, gpu, &gpu_uuid);
            attributes.insert("type".to_owned(), string_attr("mig"));
            attributes.insert(
                "uuid".to_owned(),
                string_attr(format!("MIG-{}", rng.uuid())),
            );
            attributes.insert(
                "parentUUID".to_owned(),
                string_attr(format!("GPU-{gpu_uuid}")),
            );
            attributes.insert("profile".to_owned(), string_attr(profile.name()));
            attributes.insert("placementStart".to_owned(), int_attr(i64::from(start)));
            attributes.insert(
                "placementSize".to_owned(),
                int_attr(i64::from(profile.memory_slices())),
            );
            devices.push(Device {
                name: mig_device_name(gpu, profile, start),
                attributes: Some(attributes),
                capacity: Some(capacity([
                    ("memory", profile.memory()),
                    ("multiprocessors", &profile.multiprocessors().to_string()),
                ])),
                consumes_counters: Some(vec![mig_consumption(
                    gpu,
                    profile.multiprocessors(),
                    profile.memory(),
                    start..start + profile.memory_slices(),
                )]),
                ..Device::default()
            });
        }
    }
    devices
}

/// upstream scheduler_perf's devices: `instance-<i>`, model A100, family GPU,
/// driverVersion 1.2.3, `dra.example.com/numa: <i>`, memory 1Gi.
fn test_driver_slices(node: &str, devices_per_node: u32) -> Vec<ResourceSlice> {
    let devices: Vec<Device> = (0..devices_per_node)
        .map(|i| Device {
            name: test_device_name(i),
            attributes: Some(BTreeMap::from([
                ("model".to_owned(), string_attr("A100")),
                ("family".to_owned(), string_attr("GPU")),
                ("driverVersion".to_owned(), version_attr("1.2.3")),
                (TEST_NUMA_ATTRIBUTE.to_owned(), int_attr(i64::from(i))),
            ])),
            capacity: Some(capacity([("memory", "1Gi")])),
            ..Device::default()
        })
        .collect();
    let chunks: Vec<&[Device]> = devices.chunks(MAX_DEVICES).collect();
    let slice_count = chunks.len().max(1);
    if chunks.is_empty() {
        // A driver with no devices still publishes its (empty) pool.
        let mut s = slice(node.to_owned(), TEST_DRIVER, node, 1);
        s.spec.devices = Some(Vec::new());
        return vec![s];
    }
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            // upstream names the single slice after the node.
            let name = if slice_count == 1 {
                node.to_owned()
            } else {
                format!("{node}-{i}")
            };
            let mut s = slice(name, TEST_DRIVER, node, slice_count);
            s.spec.devices = Some(chunk.to_vec());
            s
        })
        .collect()
}
