//! Named scenarios for the benchmark suite, demos and tests.

use crate::GenError;
use crate::spec::{
    ClassOptions, Fill, GenSpec, GpuSelector, GpuVariant, MigProfile, NodePoolSpec, NodeShape,
    PriorityClassSpec, WorkloadShape, WorkloadSpec,
};

/// A named preset: what it builds and what its size parameter means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetInfo {
    pub name: &'static str,
    /// One line: the cluster and the pods.
    pub description: &'static str,
    /// What the `size` argument of [`preset`] counts.
    pub size_meaning: &'static str,
    /// The size the benchmark suite uses unless told otherwise.
    pub default_size: u32,
}

const NODES: &str = "nodes";

/// Every preset, in the order `dra gen --list` shows them.
pub const PRESETS: &[PresetInfo] = &[
    PresetInfo {
        name: "hgx",
        description: "HGX H100 nodes (8 GPUs, 4 NICs each); 8 pods per node, each claiming one GPU",
        size_meaning: NODES,
        default_size: 100,
    },
    PresetInfo {
        name: "gpu-selector",
        description: "HGX H100 nodes; 4 pods per node, each claiming 2 GPUs by a CEL selector on productName",
        size_meaning: NODES,
        default_size: 100,
    },
    PresetInfo {
        name: "gpu-nic",
        description: "HGX H100 nodes; 4 pods per node, each claiming 2 GPUs and a NIC on one PCIe root",
        size_meaning: NODES,
        default_size: 64,
    },
    PresetInfo {
        name: "hgx-mixed",
        description: "H100, H200 and B200 HGX nodes in thirds; 1/2/4/8-GPU, GPU+NIC, NUMA-aligned, firstAvailable and memory-selector pods at two priorities",
        size_meaning: NODES,
        default_size: 99,
    },
    PresetInfo {
        name: "hgx-half",
        description: "hgx-mixed with half of all GPUs already allocated to bound pods",
        size_meaning: NODES,
        default_size: 99,
    },
    PresetInfo {
        name: "hgx-full",
        description: "hgx-mixed with 90% of all GPUs already allocated to bound pods",
        size_meaning: NODES,
        default_size: 99,
    },
    PresetInfo {
        name: "partitionable",
        description: "MIG A100 nodes (counters, one device per placement); 1g.10gb, 2g.20gb, 3g.40gb and whole-GPU pods",
        size_meaning: NODES,
        default_size: 100,
    },
    PresetInfo {
        name: "consumable-capacity",
        description: "HGX H100 nodes; 32 pods per node, each taking a 50G share of a 400G NIC (fills every NIC)",
        size_meaning: NODES,
        default_size: 100,
    },
    PresetInfo {
        name: "scheduler-perf",
        description: "upstream SchedulingWithResourceClaimTemplate: test-driver nodes with 10 devices, 10 single-device pods per node",
        size_meaning: NODES,
        default_size: 500,
    },
    PresetInfo {
        name: "steady-state-empty",
        description: "upstream SteadyStateClusterResourceClaimTemplate/empty: test-driver nodes with 10 devices, 10 pods",
        size_meaning: NODES,
        default_size: 500,
    },
    PresetInfo {
        name: "steady-state-half",
        description: "as steady-state-empty with half of the devices allocated to bound pods",
        size_meaning: NODES,
        default_size: 500,
    },
    PresetInfo {
        name: "steady-state-full",
        description: "as steady-state-empty with all but 10 devices allocated: exactly the 10 pods fit",
        size_meaning: NODES,
        default_size: 500,
    },
    PresetInfo {
        name: "extended-resource",
        description: "upstream SchedulingWithExtendedResource: test-driver nodes with 10 devices, 5 classes with extended resources per node, 10 pods per node",
        size_meaning: NODES,
        default_size: 500,
    },
    PresetInfo {
        name: "legacy-mixed",
        description: "half device-plugin nodes (example.com/gpu), half HGX H100 nodes whose GPU class serves example.com/gpu too; legacy and DRA pods",
        size_meaning: NODES,
        default_size: 100,
    },
    PresetInfo {
        name: "adversarial-match",
        description: "test-driver nodes with 13 devices; one pod whose claim has 8 requests where the first and last must match an attribute no two devices share (no solution)",
        size_meaning: NODES,
        default_size: 1,
    },
    PresetInfo {
        name: "adversarial-first-available",
        description: "test-driver nodes with 24 devices; one pod with 5 firstAvailable requests over 8/6/4/2 devices whose first combinations exceed the node or the 32-result limit",
        size_meaning: NODES,
        default_size: 1,
    },
    PresetInfo {
        name: "mixed",
        description: "every node shape and workload shape at once, with priorities and 30% pre-allocated: for demos and validation",
        size_meaning: "nodes per node shape",
        default_size: 4,
    },
];

/// The presets, in display order.
pub fn presets() -> &'static [PresetInfo] {
    PRESETS
}

fn pool(shape: NodeShape, count: u32) -> NodePoolSpec {
    NodePoolSpec {
        shape,
        count,
        name_prefix: None,
    }
}

fn hgx(variant: GpuVariant, count: u32) -> NodePoolSpec {
    pool(NodeShape::Hgx { variant }, count)
}

fn test_nodes(count: u32, devices_per_node: u32) -> NodePoolSpec {
    pool(NodeShape::TestDriver { devices_per_node }, count)
}

fn gpus(count: u32) -> WorkloadShape {
    WorkloadShape::Gpus {
        count,
        selector: None,
    }
}

fn w(shape: WorkloadShape, count: u32) -> WorkloadSpec {
    WorkloadSpec::new(shape, count)
}

fn priorities() -> Vec<PriorityClassSpec> {
    vec![
        PriorityClassSpec {
            name: "training-high".to_owned(),
            value: 100_000,
        },
        PriorityClassSpec {
            name: "batch-low".to_owned(),
            value: 1_000,
        },
    ]
}

fn hgx_mixed(size: u32) -> GenSpec {
    let third = size / 3;
    let nodes = vec![
        hgx(GpuVariant::H100, size - 2 * third),
        hgx(GpuVariant::H200, third),
        hgx(GpuVariant::B200, third),
    ];
    // Roughly 5.5 GPUs of demand per node: more than fits, as in a busy fleet.
    let workloads = vec![
        w(gpus(1), size).with_priority("batch-low"),
        w(gpus(2), size / 2).with_priority("batch-low"),
        w(gpus(4), size / 4).with_priority("training-high"),
        w(gpus(8), size / 8).with_priority("training-high"),
        w(
            WorkloadShape::GpuNic {
                gpus: 2,
                nic_bandwidth: Some("100G".to_owned()),
            },
            size / 4,
        )
        .with_priority("training-high"),
        w(WorkloadShape::NumaAligned { gpus: 4, nic: true }, size / 8)
            .with_priority("training-high"),
        w(
            WorkloadShape::FirstAvailable {
                counts: vec![8, 4, 2],
            },
            size / 8,
        )
        .with_priority("batch-low"),
        w(
            WorkloadShape::Gpus {
                count: 1,
                selector: Some(GpuSelector::MinMemory("141Gi".to_owned())),
            },
            size / 4,
        )
        .with_priority("batch-low"),
    ];
    GenSpec {
        nodes,
        priority_classes: priorities(),
        workloads,
        ..GenSpec::default()
    }
}

/// The spec of preset `name` at `size` (see [`PRESETS`] for what size counts).
/// The seed is 0; set [`GenSpec::seed`] for another draw.
pub fn preset(name: &str, size: u32) -> Result<GenSpec, GenError> {
    let spec = match name {
        "hgx" => GenSpec {
            nodes: vec![hgx(GpuVariant::H100, size)],
            workloads: vec![w(gpus(1), size.saturating_mul(8))],
            ..GenSpec::default()
        },
        "gpu-selector" => GenSpec {
            nodes: vec![hgx(GpuVariant::H100, size)],
            workloads: vec![w(
                WorkloadShape::Gpus {
                    count: 2,
                    selector: Some(GpuSelector::ProductName(
                        GpuVariant::H100.product_name().to_owned(),
                    )),
                },
                size.saturating_mul(4),
            )],
            ..GenSpec::default()
        },
        "gpu-nic" => GenSpec {
            nodes: vec![hgx(GpuVariant::H100, size)],
            workloads: vec![w(
                WorkloadShape::GpuNic {
                    gpus: 2,
                    nic_bandwidth: None,
                },
                size.saturating_mul(4),
            )],
            ..GenSpec::default()
        },
        "hgx-mixed" => hgx_mixed(size),
        "hgx-half" => GenSpec {
            preallocate: Some(Fill { fraction: 0.5 }),
            ..hgx_mixed(size)
        },
        "hgx-full" => GenSpec {
            preallocate: Some(Fill { fraction: 0.9 }),
            ..hgx_mixed(size)
        },
        "partitionable" => GenSpec {
            nodes: vec![pool(NodeShape::Mig, size)],
            workloads: vec![
                w(
                    WorkloadShape::Mig {
                        profile: MigProfile::G1Gb10,
                    },
                    size.saturating_mul(16),
                ),
                w(
                    WorkloadShape::Mig {
                        profile: MigProfile::G2Gb20,
                    },
                    size.saturating_mul(8),
                ),
                w(
                    WorkloadShape::Mig {
                        profile: MigProfile::G3Gb40,
                    },
                    size.saturating_mul(4),
                ),
                w(gpus(1), size),
            ],
            ..GenSpec::default()
        },
        "consumable-capacity" => GenSpec {
            nodes: vec![hgx(GpuVariant::H100, size)],
            workloads: vec![w(
                WorkloadShape::NicShare {
                    bandwidth: "50G".to_owned(),
                },
                size.saturating_mul(32),
            )],
            ..GenSpec::default()
        },
        "scheduler-perf" => GenSpec {
            nodes: vec![test_nodes(size, 10)],
            workloads: vec![w(
                WorkloadShape::TestDriver { requests: 1 },
                size.saturating_mul(10),
            )],
            ..GenSpec::default()
        },
        "steady-state-empty" | "steady-state-half" | "steady-state-full" => {
            let devices = u64::from(size) * 10;
            let fraction = match name {
                "steady-state-empty" => 0.0,
                "steady-state-half" => 0.5,
                // All but ten devices: the cluster takes exactly the ten pods.
                _ if devices > 0 => devices.saturating_sub(10) as f64 / devices as f64,
                _ => 0.0,
            };
            GenSpec {
                nodes: vec![test_nodes(size, 10)],
                workloads: vec![w(WorkloadShape::TestDriver { requests: 1 }, 10)],
                preallocate: (fraction > 0.0).then_some(Fill { fraction }),
                ..GenSpec::default()
            }
        }
        "extended-resource" => GenSpec {
            nodes: vec![test_nodes(size, 10)],
            classes: ClassOptions {
                extended_resource_classes: size.saturating_mul(5),
                ..ClassOptions::default()
            },
            workloads: vec![w(
                WorkloadShape::ExtendedResourceClasses,
                size.saturating_mul(10),
            )],
            ..GenSpec::default()
        },
        "legacy-mixed" => GenSpec {
            nodes: vec![
                pool(NodeShape::Legacy { gpus_per_node: 8 }, size / 2),
                hgx(GpuVariant::H100, size - size / 2),
            ],
            classes: ClassOptions {
                gpu_extended_resource_name: Some(crate::well_known::LEGACY_GPU_RESOURCE.to_owned()),
                ..ClassOptions::default()
            },
            workloads: vec![
                w(
                    WorkloadShape::ExtendedResource {
                        resource: crate::well_known::LEGACY_GPU_RESOURCE.to_owned(),
                        quantity: 1,
                    },
                    size.saturating_mul(4),
                ),
                w(gpus(1), size.saturating_mul(2)),
            ],
            ..GenSpec::default()
        },
        "adversarial-match" => GenSpec {
            nodes: vec![test_nodes(size, 13)],
            workloads: vec![w(
                WorkloadShape::AdversarialMatchAttribute { requests: 8 },
                1,
            )],
            ..GenSpec::default()
        },
        "adversarial-first-available" => GenSpec {
            nodes: vec![test_nodes(size, 24)],
            workloads: vec![w(
                WorkloadShape::FirstAvailableNearLimit {
                    requests: 5,
                    counts: vec![8, 6, 4, 2],
                },
                1,
            )],
            ..GenSpec::default()
        },
        "mixed" => mixed(size),
        _ => {
            return Err(GenError::UnknownPreset {
                name: name.to_owned(),
                known: PRESETS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    };
    Ok(spec)
}

fn mixed(size: u32) -> GenSpec {
    let n = size;
    GenSpec {
        nodes: vec![
            hgx(GpuVariant::H100, n),
            hgx(GpuVariant::H200, n),
            hgx(GpuVariant::B200, n),
            pool(NodeShape::Mig, n),
            test_nodes(n, 10),
            pool(NodeShape::Legacy { gpus_per_node: 8 }, n),
        ],
        classes: ClassOptions {
            gpu_extended_resource_name: Some(crate::well_known::LEGACY_GPU_RESOURCE.to_owned()),
            extended_resource_classes: 4,
            all_families: true,
        },
        priority_classes: priorities(),
        workloads: vec![
            w(gpus(1), 2 * n),
            w(gpus(2), n).with_priority("batch-low"),
            w(gpus(4), n / 2 + 1).with_priority("training-high"),
            w(gpus(8), n / 4 + 1).with_priority("training-high"),
            w(
                WorkloadShape::Gpus {
                    count: 2,
                    selector: Some(GpuSelector::ProductName(
                        GpuVariant::B200.product_name().to_owned(),
                    )),
                },
                n,
            ),
            w(
                WorkloadShape::GpuNic {
                    gpus: 1,
                    nic_bandwidth: Some("200G".to_owned()),
                },
                n,
            ),
            w(WorkloadShape::NumaAligned { gpus: 2, nic: true }, n),
            w(
                WorkloadShape::Mig {
                    profile: MigProfile::G1Gb10,
                },
                4 * n,
            ),
            w(
                WorkloadShape::Mig {
                    profile: MigProfile::G3Gb40,
                },
                n,
            ),
            w(
                WorkloadShape::FirstAvailable {
                    counts: vec![8, 4, 2],
                },
                n,
            ),
            w(
                WorkloadShape::ExtendedResource {
                    resource: crate::well_known::LEGACY_GPU_RESOURCE.to_owned(),
                    quantity: 2,
                },
                n,
            ),
            w(WorkloadShape::ExtendedResourceClasses, n),
            w(WorkloadShape::TestDriver { requests: 1 }, 4 * n),
            w(
                WorkloadShape::NicShare {
                    bandwidth: "25G".to_owned(),
                },
                n,
            ),
        ],
        preallocate: Some(Fill { fraction: 0.3 }),
        ..GenSpec::default()
    }
}
