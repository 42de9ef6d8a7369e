//! The direct JSON decoding path against the YAML path.

/// JSON streams take a direct decoding path; it must give exactly the objects (defaults
/// included) that the YAML path gives for the same documents.
#[test]
fn json_streams_decode_like_yaml() {
    let yaml = example_yaml();
    let mut json = String::new();
    for line in example_json_lines() {
        json.push_str(&line);
        json.push('\n');
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

fn example_yaml() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/gpu-migration/cluster.yaml"),
    )
    .expect("the example exists")
}

/// The example cluster as JSON values, one per document.
fn example_json_lines() -> Vec<String> {
    example_yaml()
        .split("\n---\n")
        .map(|document| serde_saphyr::from_str::<serde_json::Value>(document).expect("YAML"))
        .filter(|value| !value.is_null())
        .map(|value| serde_json::to_string(&value).expect("serialises"))
        .collect()
}

/// Everything a load produced, positions included, as comparable text.
fn outcome(text: &str, threads: usize) -> String {
    let options = dra_api::LoadOptions {
        threads,
        ..dra_api::LoadOptions::default()
    };
    let loaded = dra_api::load_str_with("stream.json", text, &options);
    format!("{:#?}\n{:#?}", loaded.cluster, loaded.diagnostics)
}

/// Loads `text` (large enough to be cut) on one thread and on each of `threads`, asserts that
/// every load gives the same outcome, and returns it.
fn outcome_alike_on_threads(text: &str, threads: &[usize]) -> String {
    assert!(text.len() > 3 * (128 << 10), "large enough to be cut");
    let one = outcome(text, 1);
    for &n in threads {
        assert!(outcome(text, n) == one, "{n} threads differ");
    }
    one
}

/// A large JSON stream is cut into pieces decoded on several threads; objects, their
/// lines, duplicates and diagnostics must be exactly those of one thread.
#[test]
fn json_streams_decode_alike_on_any_number_of_threads() {
    let lines = example_json_lines();
    let mut text = String::new();
    // Repeats make duplicates, whose diagnostics name the first definition's line.
    for round in 0..60 {
        for line in &lines {
            text.push_str(line);
            text.push('\n');
        }
        if round == 45 {
            // A type error and an unknown kind late in the stream, in a later piece.
            text.push_str(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"typo","namespace":"default"},"spec":{"containers":[{"name":"c","image":"i"}],"nodeName":5}}"#);
            text.push('\n');
            text.push_str(
                r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#,
            );
            text.push('\n');
        }
    }
    let one = outcome_alike_on_threads(&text, &[2, 3, 8]);
    assert!(
        one.contains("typo") && one.contains("Widget"),
        "{one:.2000}"
    );
    assert!(one.contains("duplicate object"));
}

/// Cut points are guesses; where one falls inside a value (a pretty-printed stream whose
/// nested mappings start lines with `{`), the stream is decoded as a whole instead.
#[test]
fn json_streams_cut_inside_a_value_decode_as_a_whole() {
    let lines = example_json_lines();
    let mut text = String::new();
    for _ in 0..40 {
        for line in &lines {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
            // Pretty, then every nested mapping moved to the start of its line.
            let pretty = serde_json::to_string_pretty(&value).expect("serialises");
            let unindented: Vec<&str> = pretty.lines().map(str::trim_start).collect();
            text.push_str(&unindented.join("\n").replace(": {", ":\n{"));
            text.push('\n');
        }
    }
    outcome_alike_on_threads(&text, &[2, 5]);
}
