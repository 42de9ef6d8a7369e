//! The `dra` binary from the outside: exit codes, stdout/stderr, diagnostics with positions.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn dra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dra"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env_remove("NO_COLOR")
        .output()
        .expect("run dra")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn version_and_help_succeed() {
    let out = dra(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).starts_with("dra "),
        "{}",
        text(&out.stdout)
    );
    let out = dra(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    for command in [
        "simulate", "explain", "allocate", "lint", "migrate", "audit", "status", "gen", "bench",
    ] {
        assert!(text(&out.stdout).contains(command), "help lacks {command}");
    }
}

/// Each command's help opens with the line `dra --help` lists it with (its arguments are
/// defined only when it is given, after that line, and must not replace it), and every
/// command, nested ones too, still knows its global flags.
#[test]
fn each_commands_help_opens_with_its_own_summary() {
    let commands = |args: &[&str]| -> Vec<(String, String)> {
        let help = text(&dra(args).stdout);
        help.lines()
            .skip_while(|line| *line != "Commands:")
            .skip(1)
            .take_while(|line| !line.is_empty())
            .filter_map(|line| {
                let (name, summary) = line.trim_start().split_once(' ')?;
                Some((name.to_string(), summary.trim().to_string()))
            })
            .filter(|(name, _)| name != "help")
            .collect()
    };
    let top = commands(&["--help"]);
    assert!(top.len() >= 9, "{top:?}");
    for (name, summary) in &top {
        let mut listed = vec![(vec![name.clone()], summary.clone())];
        for (nested, nested_summary) in commands(&[name, "--help"]) {
            listed.push((vec![name.clone(), nested], nested_summary));
        }
        for (path, summary) in listed {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push("--help");
            let out = dra(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            let help = text(&out.stdout);
            let first = help.lines().next().unwrap_or_default();
            assert_eq!(first.trim_end_matches('.'), summary, "{args:?}");
            assert!(help.contains("--output"), "{args:?} lacks the global flags");
        }
    }
}

/// build.rs links the executables at a fixed address on GNU/Linux: the ELF header's type
/// is `ET_EXEC` (2), not the position-independent `ET_DYN` (3), so the loader has no
/// pointers to patch at start.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn executables_are_linked_at_a_fixed_address() {
    for exe in [env!("CARGO_BIN_EXE_dra"), env!("CARGO_BIN_EXE_kubectl-dra")] {
        let mut header = [0u8; 18];
        std::io::Read::read_exact(&mut std::fs::File::open(exe).expect("open"), &mut header)
            .expect("read the ELF header");
        assert_eq!(&header[..4], b"\x7fELF", "{exe}");
        assert_eq!(u16::from_le_bytes([header[16], header[17]]), 2, "{exe}");
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(dra(&["no-such-command"]).status.code(), Some(2));
    assert_eq!(
        dra(&["simulate", "--node-pick", "random"]).status.code(),
        Some(2)
    );
}

#[test]
fn lint_passes_on_the_example() {
    let out = dra(&["lint", "examples/gpu-migration/cluster.yaml"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("0 error(s)"));
}

#[test]
fn lint_reports_each_problem_with_position_and_field() {
    let file = "crates/dra-cli/tests/fixtures/lint-problems.yaml";
    let out = dra(&["lint", file]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let expected = [
        // A CEL syntax error in the class, with the selector index and column.
        (
            format!(
                "{file}:2: error: DeviceClass gpu.example.com: spec.selectors[1].cel.expression"
            ),
            "CEL compile error (selector #1",
        ),
        // API validation.
        (
            format!("{file}:10: error: ResourceClaim default/Bad_Name: metadata.name"),
            "Invalid value",
        ),
        (
            format!(
                "{file}:10: error: ResourceClaim default/Bad_Name: spec.devices.requests[0].exactly.count"
            ),
            "must be greater than zero",
        ),
        // An expression over the cost budget.
        (
            format!(
                "{file}:21: error: ResourceClaim default/expensive: spec.devices.requests[0].exactly.selectors[0].cel.expression"
            ),
            "exceeds the budget",
        ),
        // A class that does not exist.
        (
            format!(
                "{file}:21: warning: ResourceClaim default/expensive: spec.devices.requests[0].exactly.deviceClassName"
            ),
            "missing.example.com",
        ),
    ];
    for (prefix, detail) in &expected {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(prefix.as_str()) && l.contains(detail)),
            "no finding `{prefix} ... {detail}` in:\n{stdout}"
        );
    }
}

#[test]
fn unreadable_input_exits_2_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("dra-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: [unclosed\n",
    )
    .expect("write");
    let out = dra(&["simulate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("{}:5", bad.display())), "{stderr}");
    assert!(out.stdout.is_empty(), "no partial output on stdout");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn color_follows_flag_and_no_color() {
    // `lint` without files prints a note about the built-in example on stderr.
    let always = dra(&["--color", "always", "lint"]);
    assert!(
        text(&always.stderr).contains("\x1b["),
        "{}",
        text(&always.stderr)
    );
    let no_color = Command::new(env!("CARGO_BIN_EXE_dra"))
        .args(["--color", "auto", "lint"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env("NO_COLOR", "1")
        .output()
        .expect("run dra");
    assert!(
        !text(&no_color.stderr).contains('\x1b'),
        "{}",
        text(&no_color.stderr)
    );
    let never = dra(&["--color", "never", "lint"]);
    assert!(!text(&never.stderr).contains('\x1b'));
}

#[test]
fn simulate_first_fit_json_matches_the_conformance_shape() {
    let out = dra(&[
        "simulate",
        "--node-pick",
        "first-fit",
        "-o",
        "json",
        "conformance/cases/hand-pool-order-9001/cluster.yaml",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    let results = doc["results"].as_array().expect("results");
    assert!(!results.is_empty());
    for r in results {
        for key in ["pod", "node", "status", "allocations", "error"] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
    }
}

/// The reference loop's JSON is written by a second thread while the loop runs, handed the
/// outcomes in batches: the document is still the library's report, byte for byte, with
/// several batches, with one part of a batch, and with no pods; an input error that stops
/// the loop before it starts leaves stdout empty.
#[test]
fn first_fit_json_is_the_reports_document_written_while_it_runs() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("first-fit-json");
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let generated = dra(&["gen", "gpu-nic", "--size", "40", "-o", "json"]);
    assert_eq!(generated.status.code(), Some(0));
    let many = dir.join("gpu-nic-40.json");
    std::fs::write(&many, &generated.stdout).expect("write");
    let no_pods = dir.join("no-pods.json");
    std::fs::write(
        &no_pods,
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"}}"#,
    )
    .expect("write");
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let files = [
        root.join("conformance/cases/hand-pool-order-9001/cluster.yaml"),
        many,
        no_pods,
    ];
    let first_fit_json = |file: &std::path::Path| {
        dra(&[
            "simulate",
            "--node-pick",
            "first-fit",
            "-o",
            "json",
            file.to_str().expect("a UTF-8 path"),
        ])
    };
    for file in &files {
        let out = first_fit_json(file);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let loaded =
            dra_api::load_paths(std::slice::from_ref(file), &Default::default()).expect("loads");
        let report = dra_sim::run_first_fit(&dra_sim::SimInput::from_cluster(&loaded.cluster))
            .expect("runs");
        let expected = serde_json::to_string_pretty(&report).expect("serialises") + "\n";
        assert_eq!(text(&out.stdout), expected, "{}", file.display());
    }

    let bad_claim = dir.join("bad-claim.yaml");
    std::fs::write(
        &bad_claim,
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c1, namespace: default}\n\
         spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}\n\
         status: {allocation: {devices: {results: [{request: r, driver: gpu.example.com, \
         pool: node-1, device: gpu-0, consumedCapacity: {memory: 12x}}]}}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n\
         spec: {containers: [{name: c, image: x}]}\n",
    )
    .expect("write");
    let out = first_fit_json(&bad_claim);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("ResourceClaim default/c1: status.allocation"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn allocate_prints_claims_with_their_allocation() {
    let out = dra(&[
        "allocate",
        "--node",
        "node-1",
        "-o",
        "json",
        "default/claim-0",
        "conformance/cases/hand-pool-order-9001/cluster.yaml",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["kind"], "List");
    let claim = &doc["items"][0];
    assert_eq!(claim["kind"], "ResourceClaim");
    assert!(
        claim["status"]["allocation"]["devices"]["results"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    );
}

/// Runs `dra` with `args`, reads the first line of its output and closes the pipe while dra
/// is still writing; the line, and how dra ended.
fn first_line_then_closed(args: &[&str]) -> (String, Output) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dra"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read");
    // The reader is dropped here: the pipe closes.
    (first, child.wait_with_output().expect("wait"))
}

#[test]
fn closed_stdout_is_not_an_error() {
    let (first, output) = first_line_then_closed(&["gen", "hgx", "--size", "200"]);
    assert!(first.starts_with('#'), "{first}");
    assert_eq!(output.status.code(), Some(0));
}

/// A simulation's JSON document, written straight to the standard output's descriptor, stops
/// quietly when the reader goes away: streamed beside the first-fit loop, and written after
/// the scored simulation.
#[test]
fn closed_stdout_ends_a_simulation_quietly() {
    let generated = dra(&["gen", "gpu-nic", "--size", "64", "-o", "json"]);
    assert_eq!(generated.status.code(), Some(0));
    let file = std::env::temp_dir().join(format!("dra-closed-{}.json", std::process::id()));
    std::fs::write(&file, &generated.stdout).expect("temporary file");
    let path = file.to_str().expect("UTF-8 path");
    for pick in [&["--node-pick", "first-fit"][..], &[]] {
        let args: Vec<&str> = ["simulate"]
            .into_iter()
            .chain(pick.iter().copied())
            .chain(["-o", "json", path])
            .collect();
        let (first, output) = first_line_then_closed(&args);
        assert_eq!(first, "{\n", "{pick:?}");
        assert_eq!(output.status.code(), Some(0), "{pick:?}");
        assert!(
            output.stderr.is_empty(),
            "{pick:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::remove_file(&file).ok();
}

#[test]
fn simulate_answers_the_same_on_any_number_of_threads() {
    let generated = dra(&[
        "gen",
        "hgx-mixed",
        "--size",
        "48",
        "--seed",
        "3",
        "-o",
        "json",
    ]);
    assert_eq!(
        generated.status.code(),
        Some(0),
        "{}",
        text(&generated.stderr)
    );
    let file = std::env::temp_dir().join(format!("dra-threads-{}.json", std::process::id()));
    std::fs::write(&file, &generated.stdout).expect("write the generated cluster");
    let path = file.to_str().expect("utf-8 path");
    let one = dra(&["simulate", "--threads", "1", "-o", "json", path]);
    let three = dra(&["simulate", "--threads", "3", "-o", "json", path]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(one.status.code(), three.status.code());
    assert!(one.stdout.len() > 1000, "{}", text(&one.stderr));
    assert!(
        one.stdout == three.stdout,
        "output differs between 1 and 3 threads"
    );
}

/// `dra simulate` hands the slices of a JSON stream to the index as text; the answer is the
/// one the usual route gives (YAML input, standard input), and a slice that does not decode
/// is reported by the loader with file and line, as without the short route.
#[test]
fn simulate_answers_json_slices_as_the_usual_route() {
    let generate = |format: &str| {
        let out = dra(&[
            "gen",
            "hgx-mixed",
            "--size",
            "24",
            "--seed",
            "5",
            "-o",
            format,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out.stdout
    };
    let dir = std::env::temp_dir().join(format!("dra-json-slices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let json = dir.join("cluster.json");
    let yaml = dir.join("cluster.yaml");
    let json_text = generate("json");
    std::fs::write(&json, &json_text).expect("write");
    std::fs::write(&yaml, generate("yaml")).expect("write");
    // The cluster with one more slice document at its end, on the line returned.
    let with_slice = |name: &str, slice: &[u8]| {
        let mut text = json_text.clone();
        text.extend_from_slice(slice);
        text.push(b'\n');
        let path = dir.join(name);
        std::fs::write(&path, &text).expect("write");
        (path, text.iter().filter(|&&b| b == b'\n').count())
    };
    let (bad, bad_line) = with_slice(
        "bad.json",
        br#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"broken"},"spec":{"driver":"gpu.example.com","devices":5}}"#,
    );
    // A grammar error inside a slice's spec, which the loader only skips for the index to
    // read: reported the usual way too.
    let (garbled_path, garbled_line) = with_slice(
        "garbled.json",
        br#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"garbled"},"spec":{"driver":"gpu.example.com","devices":[{"name":tru}]}}"#,
    );
    // Documents whose end the loader takes from their line without reading their spec,
    // wrongly: `metadata` again after the spec, naming a slice already loaded (the usual route
    // keeps the last and reports a duplicate), and a document going on past its line.
    let taken = "\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"";
    let existing = String::from_utf8_lossy(&json_text)
        .split(taken)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(str::to_string)
        .expect("a slice in the generated cluster");
    let (renamed, _) = with_slice(
        "renamed.json",
        format!(
            r#"{{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{{"name":"fresh"}},"spec":{{"driver":"gpu.example.com","pool":{{"name":"p","generation":1,"resourceSliceCount":1}},"allNodes":true,"devices":[{{"name":"d"}}]}},"metadata":{{"name":"{existing}"}}}}"#
        )
        .as_bytes(),
    );
    let (continued, _) = with_slice(
        "continued.json",
        br#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"more"},"spec":{"driver":"gpu.example.com","pool":{"name":"p","generation":1,"resourceSliceCount":1},"allNodes":true,"devices":[{"name":"d","capacity":{"memory":{"value":"1Gi"}}}
]}}"#,
    );
    let simulate = |path: &std::path::Path| {
        dra(&["simulate", "-o", "json", path.to_str().expect("utf-8 path")])
    };
    // Standard input always takes the usual route.
    let simulate_stdin = |path: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_dra"))
            .args(["simulate", "-o", "json", "-"])
            .stdin(std::fs::File::open(path).expect("open"))
            .output()
            .expect("run dra")
    };
    let from_json = simulate(&json);
    let from_yaml = simulate(&yaml);
    let from_stdin = simulate_stdin(&json);
    let broken = simulate(&bad);
    let garbled_usual = simulate_stdin(&garbled_path);
    let garbled = simulate(&garbled_path);
    let cut_wrongly: Vec<_> = [&renamed, &continued]
        .into_iter()
        .map(|path| (path, simulate(path), simulate_stdin(path)))
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    for (path, from_file, from_stdin) in &cut_wrongly {
        let path = path.to_str().expect("utf-8 path");
        assert_eq!(from_file.status.code(), from_stdin.status.code(), "{path}");
        assert!(from_file.stdout == from_stdin.stdout, "{path}");
        assert_eq!(
            text(&from_file.stderr).replace(path, "<stdin>"),
            text(&from_stdin.stderr),
        );
    }
    let stderr = text(&cut_wrongly[0].1.stderr);
    assert!(stderr.contains("duplicate object"), "{stderr}");
    assert!(cut_wrongly[1].1.stdout.len() > 1000);
    assert!(from_json.stdout.len() > 1000, "{}", text(&from_json.stderr));
    assert_eq!(from_json.status.code(), from_yaml.status.code());
    assert!(
        from_json.stdout == from_yaml.stdout,
        "JSON and YAML answers differ"
    );
    assert!(
        from_json.stdout == from_stdin.stdout,
        "file and stdin answers differ"
    );
    assert_eq!(broken.status.code(), Some(2));
    assert!(broken.stdout.is_empty());
    let stderr = text(&broken.stderr);
    assert!(
        stderr.contains(&format!("bad.json:{bad_line}")) && stderr.contains("spec.devices"),
        "{stderr}"
    );
    assert_eq!(garbled.status.code(), Some(2));
    assert!(garbled.stdout.is_empty());
    let stderr = text(&garbled.stderr);
    assert!(
        stderr.contains(&format!("garbled.json:{garbled_line}")),
        "{stderr}"
    );
    // The same message as standard input's, which always takes the usual route.
    assert_eq!(
        stderr.replace(garbled_path.to_str().expect("utf-8 path"), "<stdin>"),
        text(&garbled_usual.stderr),
    );
}

#[test]
fn timings_go_to_stderr_and_leave_the_answer_alone() {
    let plain = dra(&["simulate", "--node-pick", "first-fit", "-o", "json"]);
    let timed = dra(&[
        "simulate",
        "--timings",
        "--node-pick",
        "first-fit",
        "-o",
        "json",
    ]);
    assert_eq!(timed.status.code(), plain.status.code());
    assert_eq!(text(&timed.stdout), text(&plain.stdout));
    let stderr = text(&timed.stderr);
    let phases: Vec<&str> = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("timing: "))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert_eq!(
        phases,
        ["load", "index", "simulate", "output", "rest", "total"],
        "{stderr}"
    );
    if cfg!(target_os = "linux") {
        // Every phase with the process's CPU time in it, the resident memory at its end and
        // the anonymous part of it; the total with its CPU time.
        let mut cpu_in_phases = 0.0;
        for line in stderr.lines().filter(|l| l.starts_with("timing: ")) {
            let total = line.starts_with("timing: total ");
            assert_eq!(line.contains(" MiB resident, "), !total, "{line}");
            assert_eq!(line.ends_with(" MiB anonymous"), !total, "{line}");
            let cpu: f64 = line
                .split_once(" ms (")
                .and_then(|(_, rest)| rest.split_once(" ms cpu)"))
                .and_then(|(cpu, _)| cpu.trim().parse().ok())
                .unwrap_or_else(|| panic!("no CPU time: {line}"));
            if total {
                assert_eq!(cpu, cpu_in_phases, "{stderr}");
            } else {
                cpu_in_phases += cpu;
            }
        }
    }
    assert!(!text(&plain.stderr).contains("timing:"));
    // The `-o yaml` route and a command without phases of its own.
    let yaml = dra(&["simulate", "--timings", "-o", "yaml"]);
    let stderr = text(&yaml.stderr);
    for phase in ["load", "index", "simulate", "output", "rest", "total"] {
        assert!(stderr.contains(&format!("timing: {phase} ")), "{stderr}");
    }
    let lint = dra(&["lint", "--timings", "examples/gpu-migration/cluster.yaml"]);
    let stderr = text(&lint.stderr);
    for phase in ["load", "rest", "total"] {
        assert!(stderr.contains(&format!("timing: {phase} ")), "{stderr}");
    }
}
