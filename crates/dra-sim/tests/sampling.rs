//! `percentageOfNodesToScore`: with sampling, nodes are visited round-robin from where the
//! previous pod stopped, and only the first feasible nodes found are scored.

use dra_sim::{NodeSampling, SimOptions};

/// 150 identical empty nodes and three identical pods.
fn cluster() -> dra_api::Cluster {
    let mut yaml = String::new();
    for i in 0..150 {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: node-{i:03}}}\nstatus: {{allocatable: {{cpu: '8', memory: 32Gi, pods: '110'}}}}\n"
        ));
    }
    for p in 0..3 {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{p}}}\nspec: {{containers: [{{name: c, resources: {{requests: {{cpu: '1'}}}}}}]}}\n"
        ));
    }
    let loaded = dra_api::load_str("sampling.yaml", &yaml);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    loaded.cluster
}

fn nodes(sampling: NodeSampling) -> Vec<String> {
    let cluster = cluster();
    let input = dra_sim::SimInput::from_cluster(&cluster);
    let options = SimOptions {
        sampling,
        ..SimOptions::default()
    };
    let sim = dra_sim::simulate(&input, &options).expect("runs");
    sim.results
        .iter()
        .map(|r| r.node.clone().unwrap_or_default())
        .collect()
}

#[test]
fn all_nodes_ties_go_to_the_smallest_name() {
    assert_eq!(
        nodes(NodeSampling::AllNodes),
        vec!["node-000", "node-001", "node-002"]
    );
}

#[test]
fn adaptive_sampling_rotates_the_start() {
    // 150 nodes: 50 - 150/125 = 49% -> 73, raised to minFeasibleNodesToFind = 100.
    // p0 sees node-000..node-099 and takes node-000; the next search starts at node-100.
    // p1 sees node-100..node-149, node-000..node-049: node-000 is busier, the smallest empty
    // name among them is node-001. The start moves 100 further, to node-050.
    // p2 sees node-050..node-149: all empty, node-050.
    assert_eq!(
        nodes(NodeSampling::Adaptive),
        vec!["node-000", "node-001", "node-050"]
    );
    assert_eq!(
        nodes(NodeSampling::Percentage(10)),
        vec!["node-000", "node-001", "node-050"]
    );
}
