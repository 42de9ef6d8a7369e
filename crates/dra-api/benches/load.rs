//! Loading a large multi-document file of ResourceSlices, against the floor: the time
//! serde-saphyr alone needs to parse the same text.
//!
//! `cargo bench -p dra-api --bench load`; `DRA_BENCH_MB` sets the input size
//! (default 50). Groups:
//! * `saphyr_to_value`: `serde_saphyr::from_multiple` into `serde_json::Value`
//!   (what the loader parses into);
//! * `saphyr_to_typed`: `serde_saphyr::from_multiple` straight into k8s-openapi
//!   `ResourceSlice`s (no positions, no dispatch);
//! * `load_str_1_thread` and `load_str`: the full loader (dispatch, positions,
//!   typed conversion, defaults, duplicate check) on one thread and on all CPUs;
//! * `validate`: API validation of the loaded objects.

// A benchmark binary reports the size of its generated input on stderr.
#![allow(clippy::print_stderr)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::resource::v1::ResourceSlice;

/// A node's slice of 64 GPUs, each with the attributes and capacities a real
/// driver publishes.
fn slice_document(out: &mut String, node: usize) {
    write!(
        out,
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: node-{node}-gpu.example.com-x7k2p\n  \
         ownerReferences:\n  - apiVersion: v1\n    kind: Node\n    name: node-{node}\n    uid: 4f0e7a38-3a5e-4b0a-9d2c-{node:012}\n\
         spec:\n  driver: gpu.example.com\n  nodeName: node-{node}\n  pool:\n    name: node-{node}\n    generation: 1\n    \
         resourceSliceCount: 1\n  devices:\n"
    )
    .unwrap();
    for d in 0..64 {
        write!(
            out,
            "  - name: gpu-{d}\n    attributes:\n      model:\n        string: H100-SXM5-80GB\n      uuid:\n        \
             string: GPU-{node:08}-{d:04}-aaaa-bbbb-cccccccccccc\n      index:\n        int: {d}\n      \
             resource.kubernetes.io/numaNode:\n        int: {numa}\n      driverVersion:\n        version: 550.54.15\n      \
             resource.kubernetes.io/pcieRoot:\n        string: pci0000:{d:02x}\n    capacity:\n      memory:\n        \
             value: 80Gi\n      cores:\n        value: \"132\"\n",
            numa = d / 32
        )
        .unwrap();
    }
}

fn input(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + (64 << 10));
    let mut node = 0;
    while text.len() < bytes {
        slice_document(&mut text, node);
        node += 1;
    }
    text
}

fn bench(c: &mut Criterion) {
    let mb: usize = std::env::var("DRA_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let text = input(mb << 20);
    let loaded = dra_api::load_str("bench.yaml", &text);
    assert!(
        loaded.diagnostics.is_empty(),
        "generated input must load cleanly"
    );
    let slices = loaded.cluster.resource_slices.len();
    eprintln!("input: {} bytes, {slices} ResourceSlices", text.len());

    let mut group = c.benchmark_group(format!("load_{mb}MB"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Bytes(text.len() as u64));
    let big_budget = || {
        let len = text.len();
        serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                max_events: len * 4 + 1_000_000,
                max_nodes: len * 2 + 250_000,
                max_total_scalar_bytes: len + (64 << 20),
                max_documents: len / 2 + 1024,
            },
        }
    };
    group.bench_function("saphyr_to_value", |b| {
        b.iter(|| {
            let docs: Vec<serde_json::Value> =
                serde_saphyr::from_multiple_with_options(&text, big_budget()).unwrap();
            black_box(docs.len())
        })
    });
    group.bench_function("saphyr_to_typed", |b| {
        b.iter(|| {
            let docs: Vec<ResourceSlice> =
                serde_saphyr::from_multiple_with_options(&text, big_budget()).unwrap();
            black_box(docs.len())
        })
    });
    group.bench_function("load_str_1_thread", |b| {
        let options = dra_api::LoadOptions {
            threads: 1,
            ..dra_api::LoadOptions::default()
        };
        b.iter(|| {
            black_box(
                dra_api::load_str_with("bench.yaml", &text, &options)
                    .cluster
                    .object_count(),
            )
        })
    });
    group.bench_function("load_str", |b| {
        b.iter(|| {
            black_box(
                dra_api::load_str("bench.yaml", &text)
                    .cluster
                    .object_count(),
            )
        })
    });
    group.bench_function("validate", |b| {
        b.iter(|| black_box(dra_api::validate(&loaded.cluster).len()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
