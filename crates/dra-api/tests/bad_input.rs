//! Hostile and large inputs: each gives a clear diagnostic (or loads), quickly, and
//! never panics. Inputs are generated here rather than stored as files.

use dra_api::{LoadOptions, Severity, load_str, load_str_with};

fn errors(loaded: &dra_api::Loaded) -> Vec<String> {
    loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect()
}

#[test]
fn alias_bomb_is_refused() {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let loaded = load_str("bomb.yaml", &text);
    let errs = errors(&loaded);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("bomb.yaml:") && errs[0].contains("too large or too complex"),
        "{}",
        errs[0]
    );
}

#[test]
fn deep_nesting_is_refused() {
    let flow = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: x}}\ndata: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let loaded = load_str("deep.yaml", &flow);
    let errs = errors(&loaded);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("deep.yaml:4: error: cannot parse YAML"),
        "{}",
        errs[0]
    );

    let mut block = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\ndata:\n");
    for depth in 1..200 {
        block.push_str(&" ".repeat(depth));
        block.push_str("k:\n");
    }
    let loaded = load_str("deep-block.yaml", &block);
    let errs = errors(&loaded);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("too large or too complex"), "{}", errs[0]);

    // The depth limit is an option.
    let shallow = LoadOptions {
        max_depth: 2,
        ..LoadOptions::default()
    };
    let loaded = load_str_with(
        "x.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  labels:\n    a: b\n",
        &shallow,
    );
    assert_eq!(errors(&loaded).len(), 1);
}

#[test]
fn invalid_utf8_names_the_line() {
    let dir = std::env::temp_dir().join(format!("dra-api-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("latin1.yaml");
    std::fs::write(
        &file,
        b"apiVersion: v1\nkind: Namespace\nmetadata: {name: caf\xe9}\n",
    )
    .unwrap();
    let loaded = dra_api::load_paths(&[&file], &LoadOptions::default()).unwrap();
    let errs = errors(&loaded);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].ends_with("latin1.yaml:3: error: input is not valid UTF-8"),
        "{}",
        errs[0]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_path_is_a_load_error() {
    let err =
        dra_api::load_paths(&["/nonexistent/dra/input.yaml"], &LoadOptions::default()).unwrap_err();
    assert!(
        err.to_string().starts_with("/nonexistent/dra/input.yaml: "),
        "{err}"
    );
}

#[test]
fn oversized_files_are_refused() {
    let dir = std::env::temp_dir().join(format!("dra-api-size-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
    )
    .unwrap();
    let options = LoadOptions {
        max_file_bytes: 10,
        ..LoadOptions::default()
    };
    let loaded = dra_api::load_paths(&[&file], &options).unwrap();
    assert!(loaded.cluster.is_empty());
    assert!(errors(&loaded)[0].contains("larger than the limit of 10 bytes"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn slice_document(i: usize) -> String {
    let mut s = format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: node-{i}-gpu\nspec:\n  driver: gpu.example.com\n  nodeName: node-{i}\n  pool: {{name: node-{i}, generation: 1, resourceSliceCount: 1}}\n  devices:\n"
    );
    for d in 0..8 {
        s.push_str(&format!(
            "  - name: gpu-{d}\n    attributes:\n      model: {{string: H100}}\n      index: {{int: {d}}}\n      driverVersion: {{version: 550.54.15}}\n    capacity:\n      memory: {{value: 80Gi}}\n"
        ));
    }
    s
}

#[test]
fn large_inputs_load_the_same_on_any_number_of_threads() {
    let mut text = String::new();
    let mut count = 0;
    while text.len() < 3 << 20 {
        text.push_str(&slice_document(count));
        count += 1;
    }
    // One bad document in the middle must not hide the others.
    let bad_at = count / 2;
    text.push_str("---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: broken}\nspec: {pool: {generation: x}}\n");
    for i in count..count + 10 {
        text.push_str(&slice_document(i));
    }
    let one = load_str_with(
        "big.yaml",
        &text,
        &LoadOptions {
            threads: 1,
            ..LoadOptions::default()
        },
    );
    let four = load_str_with(
        "big.yaml",
        &text,
        &LoadOptions {
            threads: 4,
            ..LoadOptions::default()
        },
    );
    assert_eq!(one.cluster.resource_slices.len(), count + 10);
    assert_eq!(one.diagnostics.len(), 1, "{:?}", one.diagnostics);
    assert_eq!(one.diagnostics, four.diagnostics);
    assert_eq!(one.cluster.resource_slices, four.cluster.resource_slices);
    let lines: Vec<u32> = one
        .cluster
        .resource_slices
        .iter()
        .map(|s| s.source.line)
        .collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]));
    assert!(bad_at > 0);
}

#[test]
fn one_long_line_and_one_huge_list_load() {
    // 5 MB of JSON on one line, as `kubectl get -o json | jq -c` prints it.
    let items: Vec<String> = (0..20_000)
        .map(|i| format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"ns-{i}","labels":{{"team":"t{i}"}}}}}}"#))
        .collect();
    let text = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        items.join(",")
    );
    let loaded = load_str("one-line.json", &text);
    assert!(
        loaded.diagnostics.is_empty(),
        "{:?}",
        &loaded.diagnostics[..1]
    );
    assert_eq!(loaded.cluster.namespaces.len(), 20_000);
    assert!(loaded.cluster.namespaces.iter().all(|n| n.source.line == 1));
}

#[test]
fn arbitrary_bytes_never_panic() {
    // A cheap, deterministic fuzz: mutate a valid document byte by byte.
    let base = slice_document(0);
    let bytes = base.as_bytes();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..400 {
        let mut doc = bytes.to_vec();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state as usize) % doc.len();
            const NASTY: &[u8] = b"{}[]:-,'\"&*!|>#% \n\tax0";
            doc[at] = NASTY[(state >> 32) as usize % NASTY.len()];
        }
        if let Ok(text) = std::str::from_utf8(&doc) {
            let loaded = load_str("fuzz.yaml", text);
            let _ = dra_api::validate(&loaded.cluster);
        }
    }
}
