//! The structured explanation of pending pods: per node, claim and request.

use dra_sim::{SimOptions, Simulation};

fn simulate(yaml: &str) -> Simulation {
    let loaded = dra_api::load_str("explain.yaml", yaml);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let input = dra_sim::SimInput::from_cluster(&loaded.cluster);
    dra_sim::simulate(&input, &SimOptions::default()).expect("runs")
}

#[test]
fn built_in_example_explains_the_pending_training_pod() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/gpu-migration/cluster.yaml"
    ))
    .expect("example");
    let sim = simulate(&text);
    let result = sim.result("research/train-llm").expect("pod");
    let diagnosis = result.diagnosis.as_ref().expect("pending with a diagnosis");
    assert_eq!(
        diagnosis.message,
        "0/3 nodes are available: 3 cannot allocate all claims."
    );
    let node = |name: &str| {
        diagnosis
            .nodes
            .iter()
            .find(|n| n.node == name)
            .expect("node shown")
    };

    let a = &node("gpu-node-a").claims[0].requests[0];
    assert_eq!((a.class_matched, a.request_matched, a.available), (8, 8, 6));
    let held: Vec<(&str, &str, i32)> = a
        .in_use
        .iter()
        .map(|h| {
            (
                h.device.as_str(),
                h.pods[0].pod.as_str(),
                h.pods[0].priority,
            )
        })
        .collect();
    assert_eq!(
        held,
        vec![
            ("gpu.example.com/gpu-node-a/gpu-0", "batch/batch-a", 100),
            ("gpu.example.com/gpu-node-a/gpu-1", "batch/batch-a", 100),
        ]
    );
    let hint = node("gpu-node-a")
        .would_fit_if_released
        .as_ref()
        .expect("release hint");
    assert!(hint.lower_priority_only);
    assert_eq!(hint.claims[0].claim, "batch/batch-a-gpus");

    let b = &node("gpu-node-b").claims[0].requests[0];
    assert_eq!(b.available, 6);
    assert_eq!(b.tainted.len(), 1);
    assert_eq!(
        b.tainted[0].taint,
        "example.com/unhealthy=ecc-errors:NoSchedule"
    );
    // Releasing batch-b's GPU leaves 7 usable GPUs: not enough, so no hint for gpu-node-b.
    assert!(node("gpu-node-b").would_fit_if_released.is_none());

    let legacy = &node("legacy-gpu-node").claims[0].requests[0];
    assert_eq!((legacy.devices, legacy.class_matched), (0, 0));
    assert!(
        result
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("does not preempt"))
    );
}

#[test]
fn constraints_show_the_values_seen() {
    let mut yaml = String::from(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n  selectors: [{cel: {expression: \"device.driver == 'gpu.example.com'\"}}]\n---\n\
         apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {allocatable: {cpu: '8', memory: 32Gi, pods: '110'}}\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: gpu.example.com\n  nodeName: node-1\n  pool: {name: node-1, generation: 1, resourceSliceCount: 1}\n  devices:\n",
    );
    for i in 0..8 {
        yaml.push_str(&format!(
            "  - {{name: gpu-{i}, attributes: {{numa: {{int: {}}}}}}}\n",
            i / 4
        ));
    }
    yaml.push_str(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: held}\nspec:\n  devices:\n    requests: [{name: g, exactly: {deviceClassName: gpu, count: 2}}]\n\
         status:\n  allocation:\n    devices:\n      results:\n      - {request: g, driver: gpu.example.com, pool: node-1, device: gpu-0}\n      - {request: g, driver: gpu.example.com, pool: node-1, device: gpu-4}\n\
         ---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: four}\nspec:\n  devices:\n    requests: [{name: g, exactly: {deviceClassName: gpu, count: 4}}]\n    constraints: [{matchAttribute: gpu.example.com/numa}]\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, resources: {claims: [{name: g}]}}]\n  resourceClaims: [{name: g, resourceClaimName: four}]\n",
    );
    let sim = simulate(&yaml);
    let result = sim.result("default/p").expect("pod");
    let diagnosis = result.diagnosis.as_ref().expect("pending");
    let claim = &diagnosis.nodes[0].claims[0];
    // Six GPUs are free, enough for the count, but only three per NUMA node.
    assert_eq!(claim.requests[0].available, 6);
    let constraint = &claim.constraints[0];
    assert_eq!(constraint.attribute, "gpu.example.com/numa");
    assert_eq!(
        constraint
            .values
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<Vec<_>>(),
        vec![("0", 3), ("1", 3)]
    );
    assert!(!constraint.satisfiable);
    // The holder of gpu-0 and gpu-4 reserves nobody; releasing it would make room.
    let hint = diagnosis.nodes[0]
        .would_fit_if_released
        .as_ref()
        .expect("hint");
    assert_eq!(hint.claims[0].claim, "default/held");
    assert!(hint.claims[0].pods.is_empty());
}
