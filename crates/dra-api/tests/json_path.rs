//! The direct JSON decoding path against the YAML path.

use k8s_openapi::api::resource::v1::ResourceSlice;

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

/// How much JSON a stream needs for the loader to decode it on three threads (it takes a
/// thread per MiB).
const JSON_FOR_THREE_THREADS: usize = 3 << 20;

/// How many repeats of a text of `len` bytes pass [`JSON_FOR_THREE_THREADS`].
fn repeats_for_three_threads(len: usize) -> usize {
    JSON_FOR_THREE_THREADS / len + 1
}

/// Loads `text` (large enough to be cut) on one thread and on each of `threads`, asserts that
/// every load gives the same outcome, and returns it.
fn outcome_alike_on_threads(text: &str, threads: &[usize]) -> String {
    assert!(
        text.len() > JSON_FOR_THREE_THREADS,
        "large enough to be cut"
    );
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
    let rounds = repeats_for_three_threads(lines.iter().map(|line| line.len() + 1).sum());
    // Repeats make duplicates, whose diagnostics name the first definition's line.
    for round in 0..rounds {
        for line in &lines {
            text.push_str(line);
            text.push('\n');
        }
        if round == rounds * 3 / 4 {
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
    let mut round = String::new();
    for line in &lines {
        let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
        // Pretty, then every nested mapping moved to the start of its line.
        let pretty = serde_json::to_string_pretty(&value).expect("serialises");
        let unindented: Vec<&str> = pretty.lines().map(str::trim_start).collect();
        round.push_str(&unindented.join("\n").replace(": {", ":\n{"));
        round.push('\n');
    }
    let text = round.repeat(repeats_for_three_threads(round.len()));
    outcome_alike_on_threads(&text, &[2, 5]);
}

fn load_with(name: &str, text: &str, threads: usize, defer_slices: bool) -> dra_api::Loaded {
    let options = dra_api::LoadOptions {
        threads,
        defer_slices,
        ..dra_api::LoadOptions::default()
    };
    dra_api::load_str_with(name, text, &options)
}

/// The slices of a load with `defer_slices`, decoded, with their sources; the JSON ones are
/// checked to be text.
fn decoded_slice_docs(
    loaded: &dra_api::Loaded,
    expect_json: bool,
) -> Vec<(dra_api::Source, ResourceSlice)> {
    assert!(
        loaded.cluster.resource_slices.is_empty(),
        "all in slice_docs"
    );
    loaded
        .cluster
        .slice_docs
        .iter()
        .map(|doc| {
            let slice = match &*doc.object {
                dra_api::SliceDoc::Json(json) => {
                    assert!(expect_json, "a YAML slice kept as text");
                    let slice: ResourceSlice = serde_json::from_str(json.text()).expect("decodes");
                    assert_eq!(slice.metadata, json.metadata, "metadata kept as decoded");
                    slice
                }
                dra_api::SliceDoc::Object(slice) => {
                    assert!(!expect_json, "a JSON slice decoded");
                    slice.clone()
                }
            };
            (doc.source.clone(), slice)
        })
        .collect()
}

/// With `defer_slices`, every slice lands in `slice_docs` in input order, those of JSON
/// streams as the text of exactly the object the usual load decodes; everything else
/// (objects, positions, duplicates, diagnostics) is what the usual load gives.
#[test]
fn deferred_slices_keep_what_the_usual_load_gives() {
    let mut round = example_json_lines().join("\n") + "\n";
    // A slice whose metadata does not decode takes the usual route and its diagnostic.
    round.push_str(r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":7},"spec":{}}"#);
    round.push('\n');
    // Repeats make duplicate slices, reported alike; enough to be cut in pieces.
    let text = round.repeat(repeats_for_three_threads(round.len()));
    for threads in [1, 2, 3] {
        let usual = load_with("stream.json", &text, threads, false);
        let deferred = load_with("stream.json", &text, threads, true);
        assert_eq!(
            format!("{:?}", usual.diagnostics),
            format!("{:?}", deferred.diagnostics)
        );
        assert!(format!("{:?}", usual.diagnostics).contains("duplicate object"));
        let slices: Vec<_> = usual
            .cluster
            .resource_slices
            .iter()
            .map(|o| (o.source.clone(), (*o.object).clone()))
            .collect();
        assert!(slices.len() > 100);
        assert_eq!(slices, decoded_slice_docs(&deferred, true));
        // Without the slices, the clusters are the same.
        let (mut usual, mut deferred) = (usual.cluster, deferred.cluster);
        usual.resource_slices.clear();
        deferred.slice_docs.clear();
        assert_eq!(format!("{usual:?}"), format!("{deferred:?}"));
    }
    // YAML documents are decoded as usual, and kept in the same list, in order.
    let yaml = example_yaml();
    let usual = dra_api::load_str("example.yaml", &yaml);
    let deferred = load_with("example.yaml", &yaml, 0, true);
    let slices: Vec<_> = usual
        .cluster
        .resource_slices
        .iter()
        .map(|o| (o.source.clone(), (*o.object).clone()))
        .collect();
    assert_eq!(slices, decoded_slice_docs(&deferred, false));
    assert_eq!(
        usual.cluster.object_count(),
        deferred.cluster.object_count()
    );
}

/// A deferred slice is not checked beyond its metadata: text that does not decode is kept
/// without a diagnostic, for the caller (which then loads again without deferring).
#[test]
fn deferred_slice_text_is_not_checked() {
    let bad = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s"},"spec":{"devices":5}}"#;
    let usual = load_with("bad.json", bad, 1, false);
    assert!(usual.has_errors(), "the usual load reports the type error");
    let deferred = load_with("bad.json", bad, 1, true);
    assert!(
        deferred.diagnostics.is_empty(),
        "{:?}",
        deferred.diagnostics
    );
    match &*deferred.cluster.slice_docs[0].object {
        dra_api::SliceDoc::Json(json) => {
            assert_eq!(json.text(), bad);
            assert_eq!(json.metadata.name.as_deref(), Some("s"));
        }
        other => panic!("not kept as text: {other:?}"),
    }
}

/// Between the values of a JSON stream only JSON's white space may stand (as serde_json
/// reads a stream): a no-break space there, or trailing text, is the stream's parse error at
/// its line, however the direct route's first look at each document is made.
#[test]
fn json_streams_allow_only_json_white_space_between_values() {
    let lines = example_json_lines();
    let reported = |text: &str| {
        let loaded = dra_api::load_str("stream.json", text);
        loaded
            .diagnostics
            .iter()
            .map(|d| (d.message.clone(), d.source.as_ref().map(|s| s.line)))
            .collect::<Vec<_>>()
    };
    let parse_error =
        |line: u32| vec![("cannot parse JSON: expected value".to_string(), Some(line))];

    // JSON's own white space, CRLF and tabs included, is fine.
    let spaced = lines.join(" \t\r\n");
    assert_eq!(reported(&spaced), Vec::new());

    let mut no_break = format!("{}\u{a0}\n", lines[0]);
    no_break.push_str(&lines[1..].join("\n"));
    assert_eq!(reported(&no_break), parse_error(1));

    let trailing = format!("{}\nxyz\n", lines.join("\n"));
    let last_line = u32::try_from(lines.len() + 1).expect("small");
    assert_eq!(reported(&trailing), parse_error(last_line));

    let trailing_no_break = format!("{}\n\u{a0}\n", lines.join("\n"));
    assert_eq!(reported(&trailing_no_break), parse_error(last_line));
}

/// With `defer_slices`, a pod's or node's document is also taken to end with its line (the
/// scan does not read its members after `kind`); its full reading confirms the end, and
/// where it does not (a document going on past its line, two on one line, a line that ends
/// inside another value) the stream is read the usual way. Every case alone and within a
/// stream: the objects, positions and diagnostics of the usual load.
#[test]
fn pods_and_nodes_taken_to_their_line_end_load_as_usual() {
    let pod = |name: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"default"}},"spec":{{"containers":[{{"name":"c","image":"i"}}]}}}}"#
        )
    };
    let cases = [
        pod("alone"),
        format!("{} {}", pod("first"), pod("second")),
        format!("{}\n{}", pod("one"), pod("two")),
        // Going on past its line, where the line ends with two closing braces.
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"on","labels":{"a":"b"}}
,"spec":{"containers":[{"name":"c"}]}}"#
            .to_string(),
        // Members after the spec, an uncommon shape, a type error, kind given twice.
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"after"},"spec":{},"status":{"phase":"Running"}}"#.to_string(),
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"typo"},"spec":{"nodeName":5}}"#.to_string(),
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"twice"},"kind":"Node","spec":{}}"#.to_string(),
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","labels":{"zone":"a"}},"status":{"capacity":{"cpu":"8"}}}"#.to_string(),
        // Not ending with two braces: scanned as before.
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"m"},"spec":{"unschedulable":true}} "#.to_string(),
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"last"},"spec":{"priority":3}}"#.to_string(),
    ];
    let stream = example_json_lines().join("\n");
    let cluster_text = |loaded: &dra_api::Loaded| {
        let mut cluster = loaded.cluster.clone();
        // Slices as objects, however they were kept.
        let slices: Vec<_> = cluster
            .slice_docs
            .drain(..)
            .map(|doc| match &*doc.object {
                dra_api::SliceDoc::Json(json) => {
                    serde_json::from_str::<ResourceSlice>(json.text()).expect("decodes")
                }
                dra_api::SliceDoc::Object(slice) => slice.clone(),
            })
            .chain(
                cluster
                    .resource_slices
                    .drain(..)
                    .map(|s| (*s.object).clone()),
            )
            .collect();
        format!("{cluster:?}\n{slices:?}\n{:?}", loaded.diagnostics)
    };
    for case in &cases {
        for text in [case.clone(), format!("{stream}\n{case}\n{stream}\n")] {
            let usual = load_with("stream.json", &text, 1, false);
            let deferred = load_with("stream.json", &text, 1, true);
            assert!(
                cluster_text(&usual) == cluster_text(&deferred),
                "{text}\n{}\n{}",
                cluster_text(&usual),
                cluster_text(&deferred)
            );
        }
    }
}

/// What a load told its slice sink: the texts' addresses, lengths and ends, in order.
fn load_telling(
    name: &str,
    text: &str,
    threads: usize,
) -> (dra_api::Loaded, Vec<(usize, usize, bool)>) {
    let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let told = std::sync::Arc::clone(&told);
        dra_api::SliceSink::new(move |slice| {
            let shared = slice.shared_text();
            assert_eq!(shared.text(), slice.text());
            told.lock().expect("unpoisoned").push((
                shared.text().as_ptr() as usize,
                shared.text().len(),
                shared.end_unchecked(),
            ));
        })
    };
    let options = dra_api::LoadOptions {
        threads,
        defer_slices: true,
        slice_sink: Some(sink),
        ..dra_api::LoadOptions::default()
    };
    let loaded = dra_api::load_str_with(name, text, &options);
    let told = told.lock().expect("unpoisoned").clone();
    (loaded, told)
}

/// The texts of the slices a load kept as JSON, as [`load_telling`] records them.
fn kept_texts(loaded: &dra_api::Loaded) -> Vec<(usize, usize, bool)> {
    loaded
        .cluster
        .slice_docs
        .iter()
        .filter_map(|doc| match &*doc.object {
            dra_api::SliceDoc::Json(json) => Some((
                json.text().as_ptr() as usize,
                json.text().len(),
                json.end_unchecked(),
            )),
            dra_api::SliceDoc::Object(_) => None,
        })
        .collect()
}

/// A JSON stream read on one thread tells its sink of every slice it keeps as text, in
/// order, by the very text the answer holds; the answer is the one without a sink. A stream
/// read in parallel pieces, and YAML, tell nothing.
#[test]
fn slice_sink_is_told_of_the_kept_texts_in_order() {
    let text = example_json_lines().join("\n") + "\n";
    let (loaded, told) = load_telling("small.json", &text, 0);
    let kept = kept_texts(&loaded);
    assert!(kept.len() >= 2, "the example has slices: {kept:?}");
    assert_eq!(told, kept);
    let without = load_with("small.json", &text, 0, true);
    assert_eq!(
        format!("{:?}", loaded.cluster),
        format!("{:?}", without.cluster)
    );

    let large = text.repeat(repeats_for_three_threads(text.len()));
    let (loaded, told) = load_telling("large.json", &large, 3);
    assert!(!kept_texts(&loaded).is_empty());
    assert!(
        told.is_empty(),
        "told {} of a stream read in pieces",
        told.len()
    );
    // The same stream on one thread tells of all of them.
    let (loaded, told) = load_telling("large.json", &large, 1);
    assert_eq!(told, kept_texts(&loaded));

    let (loaded, told) = load_telling("example.yaml", &example_yaml(), 0);
    assert!(!loaded.cluster.slice_docs.is_empty());
    assert!(told.is_empty(), "YAML slices are objects");
}

/// With a sink, the loader tells of the slices before it decodes the other documents; what
/// it answers is still the answer without one, diagnostics included and in their order: a
/// stream with objects before, between and after its slices, one that does not decode, a
/// duplicate of a slice and of another object, and a slice whose metadata does not decode.
#[test]
fn slices_told_first_leave_the_answer_as_without() {
    let lines = example_json_lines();
    let slice_line = |line: &String| line.contains(r#""kind":"ResourceSlice""#);
    let first_slice = lines.iter().position(slice_line).expect("a slice");
    let other = lines
        .iter()
        .position(|line| !slice_line(line))
        .expect("another object");
    let mut mixed = lines.clone();
    // Between slices: an object that does not decode, and duplicates of both kinds.
    mixed.insert(
        first_slice + 1,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"broken"},"spec":{"containers":7}}"#
            .to_string(),
    );
    mixed.insert(first_slice + 2, lines[first_slice].clone());
    mixed.insert(first_slice + 3, lines[other].clone());
    mixed.push(
        r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":7},"spec":{}}"#
            .to_string(),
    );
    let text = mixed.join("\n") + "\n";
    let (told_first, told) = load_telling("mixed.json", &text, 1);
    let without = load_with("mixed.json", &text, 1, true);
    assert!(without.diagnostics.len() >= 3, "{:?}", without.diagnostics);
    assert_eq!(
        format!("{:?}", told_first.diagnostics),
        format!("{:?}", without.diagnostics)
    );
    assert_eq!(
        format!("{:?}", told_first.cluster),
        format!("{:?}", without.cluster)
    );
    // Every slice kept as text was told, in input order, the duplicate too (reported, and
    // kept like any object whose load has errors).
    let kept = kept_texts(&told_first);
    assert_eq!(told, kept);
    let slices = lines.iter().filter(|line| slice_line(line)).count();
    assert_eq!(kept.len(), slices + 1, "{kept:?}");
}
