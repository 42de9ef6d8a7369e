//! Structural invariants of generated clusters: shapes, topology, counters, fill and
//! workloads, plus the API rules of `common::api_problems` for every preset.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use dra_gen::well_known::{
    GPU_DRIVER, NIC_DRIVER, NUMA_NODE_ATTRIBUTE, PCI_BUS_ID_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE,
    TEST_DRIVER, TEST_NUMA_ATTRIBUTE,
};
use dra_gen::{
    Cluster, Fill, GenSpec, GpuVariant, NodePoolSpec, NodeShape, WorkloadShape, WorkloadSpec,
    generate, preset, presets,
};
use dra_types::Quantity;
use k8s_openapi::api::resource::v1::{Device, DeviceAttribute, ResourceSlice};

fn attr<'a>(device: &'a Device, name: &str) -> &'a DeviceAttribute {
    device
        .attributes
        .as_ref()
        .and_then(|a| a.get(name))
        .unwrap_or_else(|| panic!("device {} has no attribute {name}", device.name))
}

fn string(device: &Device, name: &str) -> String {
    attr(device, name).string.clone().expect("string attribute")
}

fn int(device: &Device, name: &str) -> i64 {
    attr(device, name).int.expect("int attribute")
}

fn slices_of<'a>(cluster: &'a Cluster, driver: &str, node: &str) -> Vec<&'a ResourceSlice> {
    cluster
        .resource_slices
        .iter()
        .filter(|s| s.spec.driver == driver && s.spec.node_name.as_deref() == Some(node))
        .collect()
}

fn devices<'a>(slices: &[&'a ResourceSlice]) -> Vec<&'a Device> {
    slices
        .iter()
        .flat_map(|s| s.spec.devices.iter().flatten())
        .collect()
}

fn one_pool(shape: NodeShape, count: u32) -> GenSpec {
    GenSpec {
        nodes: vec![NodePoolSpec {
            shape,
            count,
            name_prefix: None,
        }],
        ..GenSpec::default()
    }
}

#[test]
fn every_preset_follows_the_api_rules() {
    for info in presets() {
        // Small sizes, but large enough for every pool of hgx-mixed to exist.
        let spec = preset(info.name, 3).expect("preset");
        let cluster = generate(&spec).expect(info.name);
        let problems = common::api_problems(&cluster);
        assert!(problems.is_empty(), "{}: {problems:#?}", info.name);
        assert!(!cluster.nodes.is_empty(), "{}", info.name);
    }
}

#[test]
fn preset_names_are_unique_and_unknown_names_fail() {
    let names: BTreeSet<&str> = presets().iter().map(|p| p.name).collect();
    assert_eq!(names.len(), presets().len());
    let err = preset("no-such-preset", 1).unwrap_err().to_string();
    assert!(
        err.contains("no-such-preset") && err.contains("scheduler-perf"),
        "{err}"
    );
}

#[test]
fn crate_docs_list_every_preset() {
    let docs = include_str!("../src/lib.rs");
    for info in presets() {
        let row = docs
            .lines()
            .filter(|l| l.starts_with("//! | `"))
            .any(|l| l.contains(&format!("`{}`", info.name)));
        assert!(row, "preset {} has no row in the crate docs", info.name);
    }
}

#[test]
fn hgx_nodes_have_numa_and_pcie_topology() {
    for variant in [GpuVariant::H100, GpuVariant::H200, GpuVariant::B200] {
        let cluster = generate(&one_pool(NodeShape::Hgx { variant }, 3)).unwrap();
        assert_eq!(cluster.nodes.len(), 3);
        for node in &cluster.nodes {
            let node = node.metadata.name.as_deref().unwrap();
            let gpu_slices = slices_of(&cluster, GPU_DRIVER, node);
            let nic_slices = slices_of(&cluster, NIC_DRIVER, node);
            assert_eq!((gpu_slices.len(), nic_slices.len()), (1, 1), "{node}");
            for s in gpu_slices.iter().chain(&nic_slices) {
                assert_eq!(s.spec.pool.name, node);
                assert_eq!(s.spec.pool.resource_slice_count, 1);
            }
            let gpus = devices(&gpu_slices);
            let nics = devices(&nic_slices);
            assert_eq!((gpus.len(), nics.len()), (8, 4));

            for (i, gpu) in gpus.iter().enumerate() {
                assert_eq!(gpu.name, format!("gpu-{i}"));
                assert_eq!(int(gpu, "index"), i as i64);
                assert_eq!(string(gpu, "type"), "gpu");
                assert_eq!(string(gpu, "productName"), variant.product_name());
                // GPUs 0-3 on NUMA node 0, 4-7 on NUMA node 1.
                assert_eq!(
                    int(gpu, NUMA_NODE_ATTRIBUTE),
                    (i / 4) as i64,
                    "{}",
                    gpu.name
                );
                for version in [
                    "cudaComputeCapability",
                    "driverVersion",
                    "cudaDriverVersion",
                ] {
                    let v = attr(gpu, version)
                        .version
                        .clone()
                        .expect("version attribute");
                    dra_types::Semver::parse(&v).unwrap_or_else(|e| panic!("{v}: {e}"));
                }
                let memory = &gpu.capacity.as_ref().unwrap()["memory"].value.0;
                let want = match variant {
                    GpuVariant::H100 => "80Gi",
                    GpuVariant::H200 => "141Gi",
                    GpuVariant::B200 => "180Gi",
                };
                assert_eq!(memory, want);
            }
            // Each NIC shares its PCIe root with exactly two GPUs, on the same NUMA node.
            for nic in &nics {
                let root = string(nic, PCIE_ROOT_ATTRIBUTE);
                let peers: Vec<&&Device> = gpus
                    .iter()
                    .filter(|g| string(g, PCIE_ROOT_ATTRIBUTE) == root)
                    .collect();
                assert_eq!(peers.len(), 2, "{} on {root}", nic.name);
                for gpu in peers {
                    assert_eq!(int(gpu, NUMA_NODE_ATTRIBUTE), int(nic, NUMA_NODE_ATTRIBUTE));
                }
                assert_eq!(nic.allow_multiple_allocations, Some(true));
                let bandwidth = &nic.capacity.as_ref().unwrap()["bandwidth"];
                let policy = bandwidth.request_policy.as_ref().expect("request policy");
                assert_eq!(policy.default.as_ref().unwrap().0, "10G");
                assert_eq!(policy.valid_range.as_ref().unwrap().min.0, "1G");
            }
            let roots: BTreeSet<String> = gpus
                .iter()
                .map(|g| string(g, PCIE_ROOT_ATTRIBUTE))
                .collect();
            assert_eq!(roots.len(), 4);
            // PCI addresses are distinct and in the extended BDF form.
            let bus_ids: BTreeSet<String> = gpus
                .iter()
                .chain(&nics)
                .map(|d| string(d, PCI_BUS_ID_ATTRIBUTE))
                .collect();
            assert_eq!(bus_ids.len(), 12);
            for id in &bus_ids {
                let b = id.as_bytes();
                assert!(
                    b.len() == 12 && b[4] == b':' && b[7] == b':' && b[10] == b'.',
                    "{id}"
                );
                assert!(
                    id.chars()
                        .all(|c| c.is_ascii_digit() || "abcdef:.".contains(c)),
                    "{id}"
                );
            }
        }
        // Every GPU UUID in the cluster is distinct.
        let uuids: Vec<String> = cluster
            .resource_slices
            .iter()
            .filter(|s| s.spec.driver == GPU_DRIVER)
            .flat_map(|s| s.spec.devices.iter().flatten())
            .map(|d| string(d, "uuid"))
            .collect();
        assert_eq!(uuids.iter().collect::<BTreeSet<_>>().len(), uuids.len());
        assert!(uuids.iter().all(|u| u.starts_with("GPU-") && u.len() == 40));
    }
}

fn quantity(q: &str) -> Quantity {
    Quantity::parse(q).unwrap_or_else(|e| panic!("{q}: {e}"))
}

/// Counter totals of one counter set, and what a set of devices consumes from it.
fn fits(sets: &BTreeMap<String, BTreeMap<String, Quantity>>, chosen: &[&Device]) -> bool {
    let mut left = sets.clone();
    for device in chosen {
        for c in device.consumes_counters.iter().flatten() {
            let set = left.get_mut(&c.counter_set).expect("known counter set");
            for (name, value) in &c.counters {
                let rest = set.get_mut(name).expect("known counter");
                *rest = rest.checked_sub(&quantity(&value.value.0)).unwrap();
            }
        }
    }
    left.values()
        .flat_map(BTreeMap::values)
        .all(|q| q.sign() >= 0)
}

#[test]
fn mig_nodes_publish_counters_and_placements() {
    let cluster = generate(&one_pool(NodeShape::Mig, 2)).unwrap();
    for node in &cluster.nodes {
        let node = node.metadata.name.as_deref().unwrap();
        let slices = slices_of(&cluster, GPU_DRIVER, node);
        assert_eq!(slices.len(), 3, "one counter slice and two device slices");
        for s in &slices {
            assert_eq!(s.spec.pool.resource_slice_count, 3);
            let counters = s.spec.shared_counters.as_deref().unwrap_or_default();
            let devs = s.spec.devices.as_deref().unwrap_or_default();
            assert!(
                counters.is_empty() != devs.is_empty(),
                "{:?}",
                s.metadata.name
            );
            assert!(devs.len() <= 64 && counters.len() <= 8);
        }
        let sets: BTreeMap<String, BTreeMap<String, Quantity>> = slices
            .iter()
            .flat_map(|s| s.spec.shared_counters.iter().flatten())
            .map(|set| {
                let counters = set
                    .counters
                    .iter()
                    .map(|(k, v)| (k.clone(), quantity(&v.value.0)))
                    .collect();
                (set.name.clone(), counters)
            })
            .collect();
        assert_eq!(sets.len(), 8);
        let devs = devices(&slices);
        assert_eq!(devs.len(), 8 * 15);
        let by_name: BTreeMap<&str, &Device> = devs.iter().map(|d| (d.name.as_str(), *d)).collect();
        let get = |n: &str| *by_name.get(n).unwrap_or_else(|| panic!("no device {n}"));

        // The whole GPU consumes exactly everything in its counter set.
        let whole = get("gpu-3");
        assert_eq!(string(whole, "type"), "gpu");
        let consumed = &whole.consumes_counters.as_ref().unwrap()[0];
        assert_eq!(consumed.counter_set, "gpu-3-counters");
        let set = &sets["gpu-3-counters"];
        assert_eq!(consumed.counters.len(), set.len());
        for (name, q) in &consumed.counters {
            assert_eq!(
                quantity(&q.value.0).cmp_value(&set[name]),
                std::cmp::Ordering::Equal
            );
        }

        // Realistic placements: seven 1g.10gb fit together, so do 3g@0 + 3g@4 and
        // 4g@0 + 3g@4; overlapping placements and anything beside the whole GPU do not.
        let ones: Vec<&Device> = (0..7)
            .map(|s| get(&format!("gpu-0-mig-1g10gb-{s}")))
            .collect();
        assert!(fits(&sets, &ones));
        assert!(fits(
            &sets,
            &[get("gpu-0-mig-3g40gb-0"), get("gpu-0-mig-3g40gb-4")]
        ));
        assert!(fits(
            &sets,
            &[get("gpu-0-mig-4g40gb-0"), get("gpu-0-mig-3g40gb-4")]
        ));
        assert!(fits(
            &sets,
            &[
                get("gpu-0-mig-2g20gb-0"),
                get("gpu-0-mig-2g20gb-2"),
                get("gpu-0-mig-3g40gb-4")
            ]
        ));
        assert!(!fits(
            &sets,
            &[get("gpu-0-mig-1g10gb-0"), get("gpu-0-mig-3g40gb-0")]
        ));
        assert!(!fits(
            &sets,
            &[get("gpu-0-mig-2g20gb-2"), get("gpu-0-mig-3g40gb-0")]
        ));
        assert!(!fits(&sets, &[get("gpu-0"), get("gpu-0-mig-1g10gb-6")]));
        assert!(!fits(
            &sets,
            &[get("gpu-0-mig-7g80gb-0"), get("gpu-0-mig-1g10gb-0")]
        ));
        // Different GPUs never interfere.
        assert!(fits(
            &sets,
            &[get("gpu-0"), get("gpu-1"), get("gpu-2-mig-7g80gb-0")]
        ));
        let mig = get("gpu-5-mig-2g20gb-4");
        assert_eq!(string(mig, "profile"), "2g.20gb");
        assert_eq!(string(mig, "parentUUID"), string(get("gpu-5"), "uuid"));
        assert_eq!(int(mig, NUMA_NODE_ATTRIBUTE), 1);
    }
}

#[test]
fn test_driver_nodes_match_scheduler_perf() {
    let cluster = generate(&one_pool(
        NodeShape::TestDriver {
            devices_per_node: 10,
        },
        2,
    ))
    .unwrap();
    let node = cluster.nodes[0].metadata.name.as_deref().unwrap();
    assert_eq!(node, "scheduler-perf-dra-0000");
    let slices = slices_of(&cluster, TEST_DRIVER, node);
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0].metadata.name.as_deref(), Some(node));
    let devs = devices(&slices);
    assert_eq!(devs.len(), 10);
    for (i, d) in devs.iter().enumerate() {
        assert_eq!(d.name, format!("instance-{i}"));
        assert_eq!(string(d, "model"), "A100");
        assert_eq!(string(d, "family"), "GPU");
        assert_eq!(attr(d, "driverVersion").version.as_deref(), Some("1.2.3"));
        assert_eq!(int(d, TEST_NUMA_ATTRIBUTE), i as i64);
        assert_eq!(d.capacity.as_ref().unwrap()["memory"].value.0, "1Gi");
    }

    // More devices than one slice may hold are split, with the right slice count.
    let big = generate(&one_pool(
        NodeShape::TestDriver {
            devices_per_node: 300,
        },
        1,
    ))
    .unwrap();
    let slices = slices_of(&big, TEST_DRIVER, "scheduler-perf-dra-0000");
    assert_eq!(slices.len(), 3);
    assert!(slices.iter().all(|s| s.spec.pool.resource_slice_count == 3));
    assert_eq!(devices(&slices).len(), 300);
    assert!(common::api_problems(&big).is_empty());
}

#[test]
fn legacy_nodes_have_device_plugin_gpus_and_no_slices() {
    let cluster = generate(&one_pool(NodeShape::Legacy { gpus_per_node: 4 }, 2)).unwrap();
    assert!(cluster.resource_slices.is_empty());
    for node in &cluster.nodes {
        let allocatable = node.status.as_ref().unwrap().allocatable.as_ref().unwrap();
        assert_eq!(allocatable["example.com/gpu"].0, "4");
    }
}

fn allocated_units(cluster: &Cluster) -> usize {
    let devices: usize = cluster
        .resource_claims
        .iter()
        .filter_map(|c| {
            c.status
                .as_ref()?
                .allocation
                .as_ref()?
                .devices
                .as_ref()?
                .results
                .as_ref()
        })
        .map(Vec::len)
        .sum();
    let legacy: usize = cluster
        .pods
        .iter()
        .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
        .flat_map(|p| &p.spec.as_ref().unwrap().containers)
        .filter_map(|c| {
            c.resources
                .as_ref()?
                .limits
                .as_ref()?
                .get("example.com/gpu")
        })
        .map(|q| q.0.parse::<usize>().unwrap())
        .sum();
    devices + legacy
}

#[test]
fn fill_allocates_the_requested_fraction_of_real_devices() {
    // (shape, nodes, units per node)
    let shapes = [
        (
            NodeShape::Hgx {
                variant: GpuVariant::H100,
            },
            7,
            8,
        ),
        (NodeShape::Mig, 3, 56),
        (
            NodeShape::TestDriver {
                devices_per_node: 10,
            },
            5,
            10,
        ),
        (NodeShape::Legacy { gpus_per_node: 8 }, 3, 8),
    ];
    for (shape, nodes, per_node) in shapes {
        for fraction in [0.0, 0.5, 0.9, 1.0] {
            let spec = GenSpec {
                preallocate: Some(Fill { fraction }),
                ..one_pool(shape.clone(), nodes)
            };
            let cluster = generate(&spec).unwrap();
            let want = (fraction * f64::from(nodes * per_node)).round() as usize;
            assert_eq!(allocated_units(&cluster), want, "{shape:?} {fraction}");
            let problems = common::api_problems(&cluster);
            assert!(problems.is_empty(), "{shape:?} {fraction}: {problems:#?}");
            // Every bound pod is running on an existing node.
            assert!(
                cluster
                    .pods
                    .iter()
                    .all(|p| p.spec.as_ref().unwrap().node_name.is_some())
            );
        }
    }
}

#[test]
fn mig_fill_respects_counters() {
    let spec = GenSpec {
        preallocate: Some(Fill { fraction: 1.0 }),
        ..one_pool(NodeShape::Mig, 1)
    };
    let cluster = generate(&spec).unwrap();
    let slices: Vec<&ResourceSlice> = cluster.resource_slices.iter().collect();
    let by_name: BTreeMap<&str, &Device> = devices(&slices)
        .into_iter()
        .map(|d| (d.name.as_str(), d))
        .collect();
    let sets: BTreeMap<String, BTreeMap<String, Quantity>> = slices
        .iter()
        .flat_map(|s| s.spec.shared_counters.iter().flatten())
        .map(|set| {
            (
                set.name.clone(),
                set.counters
                    .iter()
                    .map(|(k, v)| (k.clone(), quantity(&v.value.0)))
                    .collect(),
            )
        })
        .collect();
    let chosen: Vec<&Device> = cluster
        .resource_claims
        .iter()
        .flat_map(|c| {
            c.status
                .as_ref()
                .unwrap()
                .allocation
                .as_ref()
                .unwrap()
                .devices
                .as_ref()
                .unwrap()
                .results
                .iter()
                .flatten()
        })
        .map(|r| by_name[r.device.as_str()])
        .collect();
    assert_eq!(chosen.len(), 56);
    assert!(fits(&sets, &chosen));
}

#[test]
fn workloads_produce_templates_pods_and_priorities() {
    let spec = preset("hgx-mixed", 24).unwrap();
    let cluster = generate(&spec).unwrap();
    let want: u32 = spec.workloads.iter().map(|w| w.count).sum();
    assert_eq!(cluster.pods.len(), want as usize);
    assert_eq!(cluster.resource_claim_templates.len(), spec.workloads.len());
    assert_eq!(cluster.priority_classes.len(), 2);
    let high = cluster
        .pods
        .iter()
        .filter(|p| {
            p.spec.as_ref().unwrap().priority_class_name.as_deref() == Some("training-high")
        })
        .count();
    assert!(high > 0 && high < cluster.pods.len());
    for p in &cluster.pods {
        let s = p.spec.as_ref().unwrap();
        assert_eq!(s.priority.is_some(), s.priority_class_name.is_some());
    }
}

#[test]
fn interleaving_keeps_every_prefix_proportional() {
    let spec = GenSpec {
        workloads: vec![
            WorkloadSpec::new(WorkloadShape::TestDriver { requests: 1 }, 300),
            WorkloadSpec::new(
                WorkloadShape::AdversarialMatchAttribute { requests: 8 },
                100,
            ),
        ],
        ..one_pool(
            NodeShape::TestDriver {
                devices_per_node: 13,
            },
            1,
        )
    };
    let cluster = generate(&spec).unwrap();
    let kinds: Vec<bool> = cluster
        .pods
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap().starts_with("test-dra"))
        .collect();
    assert_eq!(kinds.len(), 400);
    for prefix in (4..=400).step_by(4) {
        let first = kinds[..prefix].iter().filter(|k| **k).count();
        assert!(
            first.abs_diff(prefix * 3 / 4) <= 1,
            "prefix {prefix}: {first}"
        );
    }
}

#[test]
fn adversarial_match_has_no_solution_by_construction() {
    let cluster = generate(&preset("adversarial-match", 1).unwrap()).unwrap();
    let template = &cluster.resource_claim_templates[0];
    let devices_spec = template
        .spec
        .as_ref()
        .unwrap()
        .spec
        .as_ref()
        .unwrap()
        .devices
        .as_ref()
        .unwrap();
    let requests = devices_spec.requests.as_ref().unwrap();
    assert_eq!(requests.len(), 8);
    let constraint = &devices_spec.constraints.as_ref().unwrap()[0];
    assert_eq!(
        constraint.match_attribute.as_deref(),
        Some(TEST_NUMA_ATTRIBUTE)
    );
    assert_eq!(constraint.requests.as_deref().unwrap(), ["req-0", "req-7"]);
    // 13 devices, all with a distinct value: two different devices never match.
    let devs: Vec<&Device> = cluster
        .resource_slices
        .iter()
        .flat_map(|s| s.spec.devices.iter().flatten())
        .collect();
    assert_eq!(devs.len(), 13);
    let values: BTreeSet<i64> = devs.iter().map(|d| int(d, TEST_NUMA_ATTRIBUTE)).collect();
    assert_eq!(values.len(), 13);
}

#[test]
fn first_available_near_limit_first_fit_is_exactly_32() {
    let spec = preset("adversarial-first-available", 1).unwrap();
    let WorkloadShape::FirstAvailableNearLimit { requests, counts } = &spec.workloads[0].shape
    else {
        panic!("unexpected shape");
    };
    // Enumerate subrequest choices in the order a depth-first search tries them; the
    // first combination within the 32-results limit must use it fully.
    fn first_fit(counts: &[u32], left: u32, requests: u32) -> Option<Vec<u32>> {
        if requests == 0 {
            return Some(Vec::new());
        }
        for &c in counts {
            if c <= left
                && let Some(mut rest) = first_fit(counts, left - c, requests - 1)
            {
                rest.insert(0, c);
                return Some(rest);
            }
        }
        None
    }
    assert_eq!(first_fit(counts, 32, *requests), Some(vec![8, 8, 8, 6, 2]));
}
