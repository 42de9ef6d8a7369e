//! Evaluation time per (selector, device) over the shapes of upstream's
//! `BenchmarkDeviceMatches` (k8s.io/dynamic-resource-allocation/cel) plus two conformance
//! shapes. `evaluate/*` measures `Selector::evaluate` on a prepared `DeviceInput` (what the
//! allocator does: one input per device, many selectors); `build+evaluate/*` also builds
//! the input each time, which is what upstream's `DeviceMatches` pays per call.
//!
//! Run: `cargo bench -p dra-cel --bench eval`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dra_cel::{AttributeValue, Compiler, DeviceInput};
use dra_types::Quantity;

const SHAPES: &[(&str, &str)] = &[
    ("real-driver-name", r#"device.driver == "dra.example.com""#),
    (
        "domain-check-positive",
        r#""dra.example.com" in device.attributes"#,
    ),
    (
        "string",
        r#"device.attributes["dra.example.com"].name == "fish""#,
    ),
    (
        "string-map-lookup",
        r#"device.attributes["dra.example.com"]["name"] == "fish""#,
    ),
    ("int", r#"device.attributes["dra.example.com"].num > 0"#),
    ("bool", r#"device.attributes["dra.example.com"].flag"#),
    (
        "bind",
        r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name == "fish")"#,
    ),
    (
        "version",
        r#"device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1"))"#,
    ),
    (
        "quantity",
        r#"device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Ki"))"#,
    ),
    (
        "check-positive",
        r#""memory" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Ki"))"#,
    ),
    (
        "many",
        r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#,
    ),
    (
        "optional-or-value",
        r#"device.attributes["dra.example.com"].?missing.orValue(true)"#,
    ),
    ("has", r#"has(device.attributes["dra.example.com"].name)"#),
    (
        "macro-on-list-of-int",
        r#"device.attributes["dra.example.com"].ints.exists(x, x > 2)"#,
    ),
    (
        "macro-on-list-of-semver",
        r#"device.attributes["dra.example.com"].versions.all(x, x.isGreaterThan(semver("0.0.1")))"#,
    ),
    (
        "includes-string-list",
        r#"device.attributes["dra.example.com"].strings.includes("c")"#,
    ),
    (
        "lower-ascii",
        r#"device.attributes["dra.example.com"].name.lowerAscii() == "fish""#,
    ),
    (
        "conformance-in-matches",
        r#"device.driver in ['dra.example.com', 'other.example.com'] && device.attributes['dra.example.com'].name.matches('^[a-z]+$')"#,
    ),
    (
        "conformance-ternary-quantity",
        r#"(device.attributes['dra.example.com'].num % 2 == 1) ? device.capacity['dra.example.com'].memory.compareTo(quantity('1Gi')) >= 0 : false"#,
    ),
];

fn attributes() -> Vec<(&'static str, AttributeValue)> {
    vec![
        ("name", AttributeValue::String("fish".into())),
        ("num", AttributeValue::Int(3)),
        ("flag", AttributeValue::Bool(true)),
        ("a", AttributeValue::Bool(true)),
        ("b", AttributeValue::Bool(true)),
        ("c", AttributeValue::Bool(true)),
        ("version", AttributeValue::Version("1.0.0".into())),
        ("ints", AttributeValue::IntList(vec![1, 2, 3])),
        (
            "strings",
            AttributeValue::StringList(vec!["a".into(), "b".into(), "c".into()]),
        ),
        (
            "versions",
            AttributeValue::VersionList(vec!["1.0.0".into(), "2.0.0".into()]),
        ),
        ("other.example.com/zone", AttributeValue::String("a".into())),
    ]
}

fn capacity() -> Vec<(&'static str, Quantity)> {
    vec![("memory", "80Gi".parse().expect("quantity"))]
}

fn device() -> DeviceInput {
    DeviceInput::new("dra.example.com", attributes(), capacity(), false)
}

fn bench(c: &mut Criterion) {
    let compiler = Compiler::default();
    let device = device();
    let mut group = c.benchmark_group("evaluate");
    for (name, expr) in SHAPES {
        let selector = compiler.compile(expr).expect("compiles");
        assert!(
            selector.evaluate(&device).expect("evaluates"),
            "{name} is true"
        );
        group.bench_function(*name, |b| {
            b.iter(|| black_box(&selector).evaluate(black_box(&device)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("build+evaluate");
    for (name, expr) in [SHAPES[2], SHAPES[7], SHAPES[8]] {
        let selector = compiler.compile(expr).expect("compiles");
        group.bench_function(name, |b| {
            b.iter(|| {
                let device = DeviceInput::new("dra.example.com", attributes(), capacity(), false);
                black_box(&selector).evaluate(&device)
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("compile");
    group.bench_function("conformance-in-matches", |b| {
        b.iter(|| compiler.compile(black_box(SHAPES[17].1)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
