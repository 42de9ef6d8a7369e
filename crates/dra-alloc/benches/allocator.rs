//! Hot paths of the allocator on generated HGX clusters (`cargo bench -p dra-alloc`):
//! indexing a snapshot (from objects, and from JSON text as `dra simulate` hands it over),
//! evaluating a selector set over a node's devices, one `Allocate` call that succeeds, and
//! one that a full node rejects.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use dra_alloc::{
    AllocatedState, Index, IndexInput, IndexOptions, NodeId, Outcome, PreparedClaim, SliceInput,
    allocate,
};
use k8s_openapi::api::resource::v1::ResourceClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn cluster(nodes: u32) -> dra_gen::Cluster {
    let spec = dra_gen::preset("gpu-selector", nodes).expect("preset");
    dra_gen::generate(&spec).expect("generate")
}

fn index_of(cluster: &dra_gen::Cluster) -> Index {
    let slices = cluster
        .resource_slices
        .iter()
        .map(SliceInput::from)
        .collect();
    index_with(cluster, slices)
}

fn index_with(cluster: &dra_gen::Cluster, slices: Vec<SliceInput<'_>>) -> Index {
    Index::build(
        &IndexInput {
            nodes: cluster.nodes.iter().collect(),
            slices,
            classes: cluster.device_classes.iter().collect(),
            taint_rules: Vec::new(),
        },
        &IndexOptions::default(),
    )
    .expect("index")
}

/// The claim of the preset's template (2 GPUs selected by productName).
fn claim(cluster: &dra_gen::Cluster) -> ResourceClaim {
    let template = &cluster.resource_claim_templates[0];
    ResourceClaim {
        metadata: ObjectMeta {
            name: Some("bench-claim".into()),
            namespace: template.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        spec: template.spec.as_ref().and_then(|s| s.spec.clone()),
        status: None,
    }
}

fn benches(c: &mut Criterion) {
    let small = cluster(100);
    c.bench_function("index/build 100 HGX nodes (1,200 devices)", |b| {
        b.iter(|| index_of(&small))
    });
    let texts: Vec<String> = small
        .resource_slices
        .iter()
        .map(|slice| serde_json::to_string(slice).expect("encode"))
        .collect();
    c.bench_function(
        "index/build 100 HGX nodes (1,200 devices) from JSON text",
        |b| b.iter(|| index_with(&small, texts.iter().map(|t| SliceInput::Json(t)).collect())),
    );

    let claim = claim(&small);
    c.bench_function("selectors/first evaluation on one node (12 devices)", |b| {
        b.iter_batched(
            || {
                let index = index_of(&small);
                let prepared = PreparedClaim::new(&index, &claim);
                (index, prepared)
            },
            |(index, prepared)| {
                let state = AllocatedState::new(&index);
                let (outcome, _) = allocate(&index, &state, NodeId(0), &[&prepared]);
                // Returned so that dropping the index is not timed.
                (index, prepared, outcome)
            },
            BatchSize::LargeInput,
        )
    });

    let index = index_of(&small);
    let prepared = PreparedClaim::new(&index, &claim);
    let empty = AllocatedState::new(&index);
    c.bench_function("allocate/2 GPUs on an empty node (cached selectors)", |b| {
        b.iter(|| {
            let (outcome, _) = allocate(&index, &empty, NodeId(0), &[&prepared]);
            assert!(matches!(outcome, Outcome::Allocated(_)));
        })
    });

    // Fill node 0 with four claims, then ask for a fifth.
    let mut full = AllocatedState::new(&index);
    for _ in 0..4 {
        let (outcome, _) = allocate(&index, &full, NodeId(0), &[&prepared]);
        let Outcome::Allocated(results) = outcome else {
            panic!("node 0 has room for four claims")
        };
        full.add(&index, &results[0]).expect("state");
    }
    c.bench_function("allocate/full node rejected", |b| {
        b.iter(|| {
            let (outcome, _) = allocate(&index, &full, NodeId(0), &[&prepared]);
            assert!(matches!(outcome, Outcome::Unsatisfiable(_)));
        })
    });
}

criterion_group!(allocator, benches);
criterion_main!(allocator);
