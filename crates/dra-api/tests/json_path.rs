//! The direct JSON decoding path against the YAML path.

/// JSON streams take a direct decoding path; it must give exactly the objects (defaults
/// included) that the YAML path gives for the same documents.
#[test]
fn json_streams_decode_like_yaml() {
    let yaml = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/gpu-migration/cluster.yaml"),
    )
    .expect("the example exists");
    let mut json = String::new();
    for document in yaml.split("\n---\n") {
        let value: serde_json::Value = serde_saphyr::from_str(document).expect("a YAML document");
        if !value.is_null() {
            json.push_str(&serde_json::to_string(&value).expect("serialises"));
            json.push('\n');
        }
    }
    let from_yaml = dra_api::load_str("example.yaml", &yaml);
    let from_json = dra_api::load_str("example.json", &json);
    assert!(
        from_yaml.diagnostics.is_empty(),
        "{:?}",
        from_yaml.diagnostics
    );
    assert!(
        from_json.diagnostics.is_empty(),
        "{:?}",
        from_json.diagnostics
    );
    let (a, b) = (&from_yaml.cluster, &from_json.cluster);
    macro_rules! same {
        ($($kind:ident),*) => {$(
            let left: Vec<_> = a.$kind.iter().map(|o| &*o.object).collect();
            let right: Vec<_> = b.$kind.iter().map(|o| &*o.object).collect();
            assert!(!left.is_empty(), "the example has {}", stringify!($kind));
            assert_eq!(left, right, "{}", stringify!($kind));
        )*};
    }
    same!(
        nodes,
        pods,
        resource_slices,
        device_classes,
        resource_claims,
        resource_claim_templates,
        device_taint_rules,
        priority_classes
    );
}
