//! Every preset, generated at a small size, loads through `dra-api` without a
//! diagnostic and passes its API validation: the generator's output is what an API
//! server would accept.

use dra_gen::{generate, preset, presets};

#[test]
fn every_preset_loads_and_validates_through_dra_api() {
    for info in presets() {
        let spec = preset(info.name, 3).expect("preset");
        let cluster = generate(&spec).expect(info.name);
        let yaml = cluster.to_yaml().expect("yaml");
        let loaded = dra_api::load_str(info.name, &yaml);
        let load_problems: Vec<String> =
            loaded.diagnostics.iter().map(ToString::to_string).collect();
        assert!(
            load_problems.is_empty(),
            "{}: {load_problems:#?}",
            info.name
        );
        assert_eq!(
            loaded.cluster.object_count(),
            cluster.object_count(),
            "{}",
            info.name
        );
        let findings: Vec<String> = dra_api::validate(&loaded.cluster)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(findings.is_empty(), "{}: {findings:#?}", info.name);
    }
}

#[test]
fn dra_api_notices_a_corrupted_copy() {
    // Guards the test above against passing vacuously: the same output with a
    // non-semver version attribute must not validate.
    let yaml = generate(&preset("hgx", 1).unwrap())
        .unwrap()
        .to_yaml()
        .unwrap();
    let corrupted = yaml.replacen("version: \"9.0.0\"", "version: \"9.0\"", 1);
    assert_ne!(corrupted, yaml);
    let loaded = dra_api::load_str("corrupted", &corrupted);
    let findings = dra_api::validate(&loaded.cluster);
    assert!(
        loaded.diagnostics.len() + findings.len() > 0,
        "a version of 9.0 went unnoticed"
    );
}
