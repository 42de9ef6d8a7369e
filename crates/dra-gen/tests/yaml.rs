//! Rendering, determinism and spec handling.

use std::collections::BTreeSet;

use dra_gen::{
    Cluster, Fill, GenError, GenSpec, NodePoolSpec, NodeShape, PodOrder, WorkloadShape,
    WorkloadSpec, generate, generate_yaml, preset,
};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::Value;

fn mixed(seed: u64) -> GenSpec {
    let mut spec = preset("mixed", 2).unwrap();
    spec.seed = seed;
    spec
}

fn uuids(cluster: &Cluster) -> BTreeSet<String> {
    cluster
        .resource_slices
        .iter()
        .flat_map(|s| s.spec.devices.iter().flatten())
        .filter_map(|d| d.attributes.as_ref()?.get("uuid")?.string.clone())
        .collect()
}

#[test]
fn same_seed_gives_identical_yaml_and_streaming_matches() {
    let a = generate(&mixed(7)).unwrap().to_yaml().unwrap();
    let b = generate(&mixed(7)).unwrap().to_yaml().unwrap();
    assert_eq!(a, b);
    let mut streamed = Vec::new();
    generate_yaml(&mixed(7), &mut streamed).unwrap();
    assert_eq!(String::from_utf8(streamed).unwrap(), a);
    let mut written = Vec::new();
    generate(&mixed(7))
        .unwrap()
        .write_yaml(&mut written)
        .unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), a);
}

#[test]
fn different_seed_changes_uuids_and_fill_but_not_names() {
    let a = generate(&mixed(1)).unwrap();
    let b = generate(&mixed(2)).unwrap();
    let (ua, ub) = (uuids(&a), uuids(&b));
    assert!(!ua.is_empty());
    assert!(ua.is_disjoint(&ub));
    let names = |c: &Cluster| -> Vec<String> {
        c.nodes
            .iter()
            .map(|n| n.metadata.name.clone().unwrap())
            .chain(
                c.resource_slices
                    .iter()
                    .map(|s| s.metadata.name.clone().unwrap()),
            )
            .chain(c.pods.iter().map(|p| p.metadata.name.clone().unwrap()))
            .collect()
    };
    assert_eq!(names(&a), names(&b));
    let fill_devices = |c: &Cluster| -> Vec<String> {
        c.resource_claims
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
            .map(|r| format!("{}/{}", r.pool, r.device))
            .collect()
    };
    assert_ne!(
        fill_devices(&a),
        fill_devices(&b),
        "the HGX fill is a seeded draw"
    );
}

#[test]
fn growing_one_pool_keeps_the_other_pools_devices() {
    let spec = |h100: u32| GenSpec {
        seed: 5,
        nodes: vec![
            NodePoolSpec {
                shape: NodeShape::Hgx {
                    variant: dra_gen::GpuVariant::H100,
                },
                count: h100,
                name_prefix: None,
            },
            NodePoolSpec {
                shape: NodeShape::Mig,
                count: 1,
                name_prefix: None,
            },
        ],
        ..GenSpec::default()
    };
    let small = generate(&spec(1)).unwrap();
    let large = generate(&spec(5)).unwrap();
    let mig = |c: &Cluster| -> Vec<ResourceSlice> {
        c.resource_slices
            .iter()
            .filter(|s| s.metadata.name.as_deref().unwrap().starts_with("mig-"))
            .cloned()
            .collect()
    };
    assert_eq!(mig(&small), mig(&large));
    assert_eq!(small.resource_slices[0], large.resource_slices[0]);
}

/// Parses the output back, document by document, into the typed objects.
fn parse_back(yaml: &str) -> Cluster {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("output parses as YAML");
    let mut cluster = Cluster::default();
    for doc in docs {
        let kind = doc["kind"].as_str().unwrap().to_owned();
        match kind.as_str() {
            "Namespace" => cluster
                .namespaces
                .push(serde_json::from_value::<Namespace>(doc).unwrap()),
            "PriorityClass" => cluster
                .priority_classes
                .push(serde_json::from_value::<PriorityClass>(doc).unwrap()),
            "DeviceClass" => cluster
                .device_classes
                .push(serde_json::from_value::<DeviceClass>(doc).unwrap()),
            "Node" => cluster
                .nodes
                .push(serde_json::from_value::<Node>(doc).unwrap()),
            "ResourceSlice" => cluster
                .resource_slices
                .push(serde_json::from_value::<ResourceSlice>(doc).unwrap()),
            "ResourceClaim" => cluster
                .resource_claims
                .push(serde_json::from_value::<ResourceClaim>(doc).unwrap()),
            "ResourceClaimTemplate" => cluster
                .resource_claim_templates
                .push(serde_json::from_value::<ResourceClaimTemplate>(doc).unwrap()),
            "Pod" => cluster
                .pods
                .push(serde_json::from_value::<Pod>(doc).unwrap()),
            other => panic!("unexpected kind {other}"),
        }
    }
    cluster
}

#[test]
fn yaml_round_trips_to_equal_objects_in_documented_order() {
    let cluster = generate(&mixed(3)).unwrap();
    let yaml = cluster.to_yaml().unwrap();
    // Strings that look like numbers, versions, BDFs or booleans stay strings.
    let back = parse_back(&yaml);
    assert_eq!(back.namespaces, cluster.namespaces);
    assert_eq!(back.priority_classes, cluster.priority_classes);
    assert_eq!(back.device_classes, cluster.device_classes);
    assert_eq!(back.nodes, cluster.nodes);
    assert_eq!(back.resource_slices, cluster.resource_slices);
    assert_eq!(back.resource_claims, cluster.resource_claims);
    assert_eq!(
        back.resource_claim_templates,
        cluster.resource_claim_templates
    );
    assert_eq!(back.pods, cluster.pods);

    let order = [
        "Namespace",
        "PriorityClass",
        "DeviceClass",
        "Node",
        "ResourceSlice",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "Pod",
    ];
    let kinds: Vec<usize> = yaml
        .lines()
        .filter_map(|l| l.strip_prefix("kind: "))
        .map(|k| order.iter().position(|o| *o == k).unwrap())
        .collect();
    assert_eq!(kinds.len(), cluster.object_count());
    assert!(kinds.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn pod_orders() {
    let base = GenSpec {
        workloads: vec![
            WorkloadSpec::new(WorkloadShape::TestDriver { requests: 1 }, 6),
            WorkloadSpec::new(WorkloadShape::TestDriver { requests: 2 }, 3),
        ],
        ..GenSpec::default()
    };
    let names = |order: PodOrder, seed: u64| -> Vec<String> {
        let spec = GenSpec {
            pod_order: order,
            seed,
            ..base.clone()
        };
        generate(&spec)
            .unwrap()
            .pods
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    };
    let short = |v: Vec<String>| -> String {
        v.iter()
            .map(|n| {
                if n.starts_with("test-dra-2") {
                    'b'
                } else {
                    'a'
                }
            })
            .collect()
    };
    assert_eq!(short(names(PodOrder::Sequential, 0)), "aaaaaabbb");
    assert_eq!(short(names(PodOrder::Interleaved, 0)), "abaabaaba");
    let shuffled = names(PodOrder::Shuffled, 0);
    assert_eq!(shuffled, names(PodOrder::Shuffled, 0));
    assert_ne!(shuffled, names(PodOrder::Shuffled, 1));
    let mut sorted = shuffled.clone();
    sorted.sort();
    let mut sequential = names(PodOrder::Sequential, 0);
    sequential.sort();
    assert_eq!(sorted, sequential);
}

#[test]
fn spec_round_trips_through_yaml() {
    for name in [
        "mixed",
        "hgx-half",
        "extended-resource",
        "adversarial-first-available",
    ] {
        let spec = preset(name, 3).unwrap();
        let yaml = spec.to_yaml_string().unwrap();
        assert_eq!(
            GenSpec::from_yaml_str(&yaml).unwrap(),
            spec,
            "{name}:\n{yaml}"
        );
    }
    let hand_written = r#"
seed: 9
nodes:
- shape: {kind: hgx, variant: b200}
  count: 2
- shape: {kind: testDriver, devicesPerNode: 4}
  count: 1
  namePrefix: td
workloads:
- shape: {kind: gpus, count: 2, selector: {minMemory: 100Gi}}
  count: 3
- shape: {kind: mig, profile: 1g.10gb}
  count: 1
preallocate: {fraction: 0.5}
"#;
    let spec = GenSpec::from_yaml_str(hand_written).unwrap();
    assert_eq!(spec.nodes.len(), 2);
    assert_eq!(spec.preallocate, Some(Fill { fraction: 0.5 }));
    let cluster = generate(&spec).unwrap();
    assert_eq!(cluster.nodes[2].metadata.name.as_deref(), Some("td-0000"));

    let err = GenSpec::from_yaml_str("nodes: []\nbogus: 1\n").unwrap_err();
    assert!(matches!(err, GenError::SpecYaml { .. }), "{err}");
}

fn pool(shape: NodeShape, count: u32, prefix: Option<&str>) -> NodePoolSpec {
    NodePoolSpec {
        shape,
        count,
        name_prefix: prefix.map(str::to_owned),
    }
}

#[test]
fn bad_specs_fail_with_a_clear_error() {
    let test_pool = pool(
        NodeShape::TestDriver {
            devices_per_node: 2,
        },
        1,
        None,
    );
    let with_workload = |shape: WorkloadShape| GenSpec {
        nodes: vec![test_pool.clone()],
        workloads: vec![WorkloadSpec::new(shape, 1)],
        ..GenSpec::default()
    };
    let cases: Vec<(GenSpec, &str)> = vec![
        (
            GenSpec {
                namespace: "Bad_NS".to_owned(),
                ..GenSpec::default()
            },
            "namespace \"Bad_NS\"",
        ),
        (
            GenSpec {
                nodes: vec![
                    pool(NodeShape::Mig, 1, Some("x")),
                    pool(NodeShape::Mig, 1, Some("x")),
                ],
                ..GenSpec::default()
            },
            "node pool x: two node pools",
        ),
        (
            GenSpec {
                nodes: vec![pool(NodeShape::Mig, 1, Some("Upper"))],
                ..GenSpec::default()
            },
            "node pool Upper: name prefix",
        ),
        (
            GenSpec {
                nodes: vec![pool(
                    NodeShape::TestDriver {
                        devices_per_node: 20_000,
                    },
                    1,
                    None,
                )],
                ..GenSpec::default()
            },
            "devicesPerNode must be at most",
        ),
        (
            GenSpec {
                preallocate: Some(Fill { fraction: 1.5 }),
                ..GenSpec::default()
            },
            "preallocate.fraction",
        ),
        (
            GenSpec {
                workloads: vec![
                    WorkloadSpec::new(WorkloadShape::TestDriver { requests: 1 }, 1)
                        .with_priority("nope"),
                ],
                ..GenSpec::default()
            },
            "workload test-dra: unknown priority class \"nope\"",
        ),
        (
            with_workload(WorkloadShape::Gpus {
                count: 33,
                selector: None,
            }),
            "workload gpus-33: count must be between 1 and 32",
        ),
        (
            with_workload(WorkloadShape::FirstAvailable { counts: vec![] }),
            "counts must have 1 to 8 entries",
        ),
        (
            with_workload(WorkloadShape::FirstAvailable { counts: vec![1; 9] }),
            "counts must have 1 to 8 entries",
        ),
        (
            with_workload(WorkloadShape::ExtendedResourceClasses),
            "needs classes.extendedResourceClasses",
        ),
        (
            with_workload(WorkloadShape::NicShare {
                bandwidth: "lots".to_owned(),
            }),
            "bandwidth: invalid quantity \"lots\"",
        ),
        (
            with_workload(WorkloadShape::ExtendedResource {
                resource: "gpu".to_owned(),
                quantity: 1,
            }),
            "not an extended resource name",
        ),
        (
            GenSpec {
                workloads: vec![
                    WorkloadSpec::new(WorkloadShape::TestDriver { requests: 1 }, 1).named("same"),
                    WorkloadSpec::new(WorkloadShape::TestDriver { requests: 2 }, 1).named("same"),
                ],
                ..GenSpec::default()
            },
            "two workload objects would be named \"same\"",
        ),
        (
            GenSpec {
                workloads: vec![
                    WorkloadSpec::new(WorkloadShape::TestDriver { requests: 1 }, 1).named("Bad"),
                ],
                ..GenSpec::default()
            },
            "workload Bad: name must be a DNS label",
        ),
    ];
    for (spec, want) in cases {
        let err = generate(&spec).expect_err(want).to_string();
        assert!(err.contains(want), "want {want:?} in {err:?}");
    }
}

#[test]
fn derived_workload_names_stay_unique() {
    let spec = GenSpec {
        workloads: vec![
            WorkloadSpec::new(WorkloadShape::TestDriver { requests: 1 }, 1),
            WorkloadSpec::new(WorkloadShape::TestDriver { requests: 1 }, 1),
        ],
        ..GenSpec::default()
    };
    let cluster = generate(&spec).unwrap();
    let templates: Vec<&str> = cluster
        .resource_claim_templates
        .iter()
        .map(|t| t.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(templates, ["test-dra", "test-dra-1"]);
}
