//! Property tests of the allocator on generated clusters (see `props/generate.rs`).
//!
//! Every scenario is a random cluster (1-4 nodes, node-local, nodeSelector, allNodes and
//! per-device pools, counters, shared devices with request policies, taints, binding
//! conditions) and a sequence of allocation attempts on random nodes whose results are fed back
//! into the [`AllocatedState`]. On every step:
//! * the same call gives the same outcome twice, and again with a freshly built index and a
//!   state rebuilt from scratch (determinism, incremental state = fresh state);
//! * a successful outcome obeys every invariant checked by `props/oracle.rs` (devices not
//!   allocated twice, counters and shared capacity not exceeded, selectors, taints,
//!   constraints, counts and search order, config, node selector);
//! * on tiny inputs, the outcome is exactly the brute-force allocator's (`props/brute.rs`):
//!   "no solution" only when none exists, and otherwise the first solution in upstream's
//!   search order.
//!
//! The default number of cases keeps `cargo test` quick; `PROPTEST_CASES=20000` runs more. A
//! failure names the seed; `DRA_PROP_DUMP=<dir>` also writes the failing scenario as a
//! cluster file for `dra simulate`.

mod props;

use std::collections::BTreeMap;

use std::sync::Arc;

use dra_alloc::{
    AllocatedState, Allocation, DeviceKey, Index, IndexInput, IndexOptions, NodeId, Outcome,
    Picked, PreparedClaim, SliceInput, allocate, allocate_picks,
};
use k8s_openapi::api::resource::v1::AllocationResult;
use proptest::prelude::*;
use proptest::test_runner::Config;

use props::brute::{self, Expected, ExpectedResult};
use props::generate::{GenOptions, Scenario, generate};
use props::oracle::{Ledger, LedgerEntry, Selectors, check_ledger, check_success};

fn config(default_cases: u32) -> Config {
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default_cases;
    }
    config
}

fn build_index(scenario: &Scenario) -> Index {
    let input = IndexInput {
        nodes: scenario.nodes.iter().collect(),
        slices: scenario.slices.iter().map(SliceInput::from).collect(),
        classes: scenario.classes.iter().collect(),
        taint_rules: Vec::new(),
    };
    Index::build(&input, &IndexOptions::default()).expect("generated quantities parse")
}

/// Outcome counts over the steps of some scenarios.
#[derive(Debug, Default)]
struct Tally {
    allocated: u64,
    unsatisfiable: u64,
    invalid_pools: u64,
    fatal: u64,
    /// Features seen in successful results.
    seen: BTreeMap<&'static str, u64>,
}

impl Tally {
    fn see(&mut self, what: &'static str) {
        *self.seen.entry(what).or_default() += 1;
    }

    fn record_results(&mut self, allocations: &[AllocationResult]) {
        for a in allocations {
            let results = a
                .devices
                .as_ref()
                .and_then(|d| d.results.as_deref())
                .unwrap_or_default();
            for r in results {
                self.see("device");
                if r.admin_access == Some(true) {
                    self.see("admin");
                }
                if r.share_id.is_some() {
                    self.see("shared");
                }
                if r.request.contains('/') {
                    self.see("subrequest");
                }
                if r.tolerations.is_some() {
                    self.see("tolerations");
                }
                if r.binding_conditions.is_some() {
                    self.see("binding-conditions");
                }
                if r.consumed_capacity.is_some() {
                    self.see("consumed-capacity");
                }
            }
            if a.devices.as_ref().and_then(|d| d.config.as_ref()).is_some() {
                self.see("config");
            }
            match &a.node_selector {
                None => self.see("no-node-selector"),
                Some(s) => {
                    if s.node_selector_terms[0].match_expressions.is_some() {
                        self.see("label-node-selector");
                    }
                }
            }
        }
    }
}

fn dump(scenario: &Scenario) -> String {
    match std::env::var_os("DRA_PROP_DUMP") {
        Some(dir) => {
            let path = std::path::Path::new(&dir).join(format!("scenario-{}.yaml", scenario.seed));
            match std::fs::write(&path, scenario.to_cluster_yaml()) {
                Ok(()) => format!(" (written to {})", path.display()),
                Err(e) => format!(" (could not write {}: {e})", path.display()),
            }
        }
        None => " (set DRA_PROP_DUMP=<dir> to write it as a cluster file)".to_string(),
    }
}

fn same_as_brute(expected: &Expected, outcome: &Outcome) -> Result<(), String> {
    let actual = match outcome {
        Outcome::Fatal(_) => Expected::Fatal,
        Outcome::Unsatisfiable(u) => Expected::Unsatisfiable {
            invalid_pools: u.invalid_pools,
        },
        Outcome::Allocated(allocations) => Expected::Allocated(
            allocations
                .iter()
                .map(|a| {
                    a.devices
                        .as_ref()
                        .and_then(|d| d.results.as_deref())
                        .unwrap_or_default()
                        .iter()
                        .map(|r| ExpectedResult {
                            request: r.request.clone(),
                            driver: r.driver.clone(),
                            pool: r.pool.clone(),
                            device: r.device.clone(),
                            admin: r.admin_access == Some(true),
                        })
                        .collect()
                })
                .collect(),
        ),
    };
    if &actual == expected {
        Ok(())
    } else {
        Err(format!(
            "brute force expects {expected:?}\n  allocator returned {actual:?}"
        ))
    }
}

/// The picks of the same call write the same objects, kept as [`Allocation`]s or taken
/// out; [`dra_alloc::ClaimPicks::is_exclusive`] holds exactly for the allocations whose
/// every result is a plain exclusive one. Returns the state before the call (rebuilt from the
/// ledger) with the call's allocations added as the simulations add them, without their
/// objects: exclusive ones by their device keys, the others by their picks
/// ([`AllocatedState::add_picks`]); removing the objects from it gives the state before.
fn same_by_picks(
    index: &Arc<Index>,
    ledger: &Ledger,
    node: NodeId,
    claims: &[&PreparedClaim],
    allocations: &[AllocationResult],
) -> Result<AllocatedState, String> {
    let mut state = AllocatedState::new(index);
    for allocation in ledger.allocations() {
        state.add(index, allocation).map_err(|e| e.to_string())?;
    }
    let before = state.clone();
    let Picked::Allocated(picks) = allocate_picks(index, &state, node, claims).0 else {
        return Err("allocate_picks does not allocate where allocate does".to_string());
    };
    if picks.len() != allocations.len() {
        return Err(format!(
            "{} picks for {} allocations",
            picks.len(),
            allocations.len()
        ));
    }
    for ((picks, claim), allocation) in picks.iter().zip(claims).zip(allocations) {
        let kept = Allocation::from_picks(index, node, (*claim).clone(), picks.clone());
        if *kept != *allocation {
            return Err(format!(
                "picks write {:?}\n  allocate returned {allocation:?}",
                *kept
            ));
        }
        let written = serde_json::to_string(&kept).map_err(|e| e.to_string())?;
        if written != serde_json::to_string(allocation).map_err(|e| e.to_string())? {
            return Err(format!("picks serialise as {written}"));
        }
        if kept.into_result() != *allocation {
            return Err("the allocation taken out differs".to_string());
        }
        let results = allocation
            .devices
            .as_ref()
            .and_then(|d| d.results.as_deref())
            .unwrap_or_default();
        let plain = results.iter().all(|r| {
            r.admin_access != Some(true) && r.share_id.is_none() && r.consumed_capacity.is_none()
        });
        if picks.is_exclusive(index, claim) != plain {
            return Err(format!(
                "is_exclusive is {} for results {results:?}",
                picks.is_exclusive(index, claim)
            ));
        }
        if plain {
            let keys: Vec<DeviceKey> = picks.devices().map(|d| index.device(d).key).collect();
            state.add_exclusive(index, &keys);
        } else {
            let mut expected: BTreeMap<DeviceKey, u32> = BTreeMap::new();
            for result in results {
                let key = index.device_key(&result.driver, &result.pool, &result.device);
                if let (Some(key), Some(_)) = (key, &result.share_id)
                    && result.admin_access != Some(true)
                {
                    *expected.entry(key).or_insert_with(|| state.shares(key)) += 1;
                }
            }
            state.add_picks(index, claim, picks);
            for (key, count) in expected {
                if state.shares(key) != count {
                    return Err(format!(
                        "the picks left {} shares of device key {}, the object {count}",
                        state.shares(key),
                        key.0
                    ));
                }
            }
        }
    }
    // The shares and consumed capacity the picks added are the objects' own.
    let mut undone = state.clone();
    for allocation in allocations {
        undone
            .remove(index, allocation)
            .map_err(|e| e.to_string())?;
    }
    same_devices(index, &before, &undone)
        .map_err(|e| format!("removing the objects added by picks: {e}"))?;
    Ok(state)
}

/// Two states agree on everything a search reads of them, their versions included.
fn same_state(index: &Index, a: &AllocatedState, b: &AllocatedState) -> Result<(), String> {
    if a.version() != b.version() {
        return Err(format!("versions {} and {}", a.version(), b.version()));
    }
    same_devices(index, a, b)?;
    for pool in 0..index.num_pool_keys() as u32 {
        if a.pool_version(pool) != b.pool_version(pool) {
            return Err(format!("pool key {pool} differs"));
        }
    }
    Ok(())
}

/// Two states agree on every device: allocated or not, exclusively or not, and the capacity
/// its shares consume (by value, name for name).
fn same_devices(index: &Index, a: &AllocatedState, b: &AllocatedState) -> Result<(), String> {
    for key in (0..index.num_device_keys() as u32).map(DeviceKey) {
        let (ca, cb) = (a.aggregated_capacity(key), b.aggregated_capacity(key));
        let same_capacity = match (ca, cb) {
            (None, None) => true,
            (Some(ca), Some(cb)) => {
                ca.len() == cb.len()
                    && ca
                        .iter()
                        .zip(cb)
                        .all(|((na, qa), (nb, qb))| na == nb && qa.cmp_value(qb).is_eq())
            }
            _ => false,
        };
        if !same_capacity {
            return Err(format!(
                "device key {}: consumed capacity {ca:?} and {cb:?}",
                key.0
            ));
        }
        if a.is_allocated(key) != b.is_allocated(key)
            || a.is_exclusively_allocated(key) != b.is_exclusively_allocated(key)
            || a.shares(key) != b.shares(key)
        {
            return Err(format!("device key {} differs", key.0));
        }
    }
    Ok(())
}

/// Runs every step of a scenario and checks it; returns the first violation.
fn run(scenario: &Scenario, tally: &mut Tally) -> Result<(), String> {
    let index = Arc::new(build_index(scenario));
    let mut state = AllocatedState::new(&index);
    let mut ledger = Ledger::default();
    let mut selectors = Selectors::default();
    for (s, step) in scenario.steps.iter().enumerate() {
        let fail = |message: String| {
            format!(
                "step {s} (node-{}, claims {:?}): {message}",
                step.node, step.claims
            )
        };
        let node = &scenario.nodes[step.node];
        let node_name = node.metadata.name.as_deref().unwrap_or_default();
        let node_id = index.node(node_name).expect("node indexed");
        let prepared: Vec<PreparedClaim> = step
            .claims
            .iter()
            .map(|c| PreparedClaim::new(&index, &scenario.claims[*c]))
            .collect();
        let refs: Vec<&PreparedClaim> = prepared.iter().collect();
        let (outcome, stats) = allocate(&index, &state, node_id, &refs);

        // Same input, same output: again on the same index, then on a fresh index with a
        // state rebuilt from everything allocated so far.
        let (again, again_stats) = allocate(&index, &state, node_id, &refs);
        if again != outcome || again_stats != stats {
            return Err(fail(format!(
                "second call differs:\n  {outcome:?} {stats:?}\n  {again:?} {again_stats:?}"
            )));
        }
        let fresh_index = build_index(scenario);
        let mut fresh_state = AllocatedState::new(&fresh_index);
        for allocation in ledger.allocations() {
            fresh_state
                .add(&fresh_index, allocation)
                .map_err(|e| fail(e.to_string()))?;
        }
        let fresh_prepared: Vec<PreparedClaim> = step
            .claims
            .iter()
            .map(|c| PreparedClaim::new(&fresh_index, &scenario.claims[*c]))
            .collect();
        let fresh_refs: Vec<&PreparedClaim> = fresh_prepared.iter().collect();
        let fresh_node = fresh_index.node(node_name).expect("node indexed");
        let (fresh, fresh_stats) = allocate(&fresh_index, &fresh_state, fresh_node, &fresh_refs);
        if fresh != outcome || fresh_stats != stats {
            return Err(fail(format!(
                "fresh index and state differ:\n  {outcome:?} {stats:?}\n  {fresh:?} {fresh_stats:?}"
            )));
        }

        if scenario.options.tiny {
            let expected = brute::allocate(scenario, &mut selectors, node, &step.claims, &ledger);
            same_as_brute(&expected, &outcome).map_err(fail)?;
        }

        match &outcome {
            Outcome::Allocated(allocations) => {
                tally.allocated += 1;
                if scenario.options.tiny {
                    tally.see("tiny-allocated");
                }
                tally.record_results(allocations);
                let devices = check_success(
                    scenario,
                    &mut selectors,
                    node,
                    &step.claims,
                    allocations,
                    &ledger,
                )
                .map_err(fail)?;
                let by_keys =
                    same_by_picks(&index, &ledger, node_id, &refs, allocations).map_err(fail)?;
                for ((claim, allocation), devices) in
                    step.claims.iter().zip(allocations).zip(devices)
                {
                    state
                        .add(&index, allocation)
                        .map_err(|e| fail(e.to_string()))?;
                    ledger.entries.push(LedgerEntry {
                        claim: *claim,
                        allocation: allocation.clone(),
                        devices,
                    });
                }
                check_ledger(scenario, &ledger).map_err(fail)?;
                same_state(&index, &state, &by_keys).map_err(fail)?;
            }
            Outcome::Unsatisfiable(u) => {
                tally.unsatisfiable += 1;
                if scenario.options.tiny {
                    tally.see("tiny-unsatisfiable");
                }
                if u.invalid_pools {
                    tally.invalid_pools += 1;
                }
            }
            Outcome::Fatal(e) => {
                tally.fatal += 1;
                // The generator only produces inputs whose fatal errors come from `All`
                // requests: incomplete or invalid pools, a constraint they violate, or more
                // than 32 devices.
                let known = [
                    "asks for all devices",
                    "cannot add device",
                    "exceeds the claim limit of 32",
                ];
                if !known.iter().any(|k| e.message.contains(k)) {
                    return Err(fail(format!("unexpected fatal error: {}", e.message)));
                }
            }
        }
    }
    Ok(())
}

fn check_seed(seed: u64, options: GenOptions) -> Result<(), TestCaseError> {
    let scenario = generate(seed, options);
    let mut tally = Tally::default();
    run(&scenario, &mut tally)
        .map_err(|e| TestCaseError::fail(format!("seed {seed}: {e}{}", dump(&scenario))))
}

proptest! {
    #![proptest_config(config(256))]

    /// Invariants and determinism on small clusters.
    #[test]
    fn allocations_obey_invariants(seed in any::<u64>()) {
        check_seed(seed, GenOptions { tiny: false })?;
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Tiny clusters: the allocator's outcome is the brute-force allocator's.
    #[test]
    fn allocations_match_brute_force(seed in any::<u64>()) {
        check_seed(seed, GenOptions { tiny: true })?;
    }
}

/// The generator reaches every kind of outcome and every feature the invariants are about, so
/// the properties above are not vacuous. Fixed seeds: deterministic.
#[test]
fn generated_scenarios_cover_the_features() {
    let mut tally = Tally::default();
    for seed in 0..150u64 {
        for tiny in [false, true] {
            let scenario = generate(seed, GenOptions { tiny });
            if let Err(e) = run(&scenario, &mut tally) {
                panic!("seed {seed} (tiny {tiny}): {e}{}", dump(&scenario));
            }
        }
    }
    let summary = format!("{tally:?}");
    assert!(tally.allocated > 150, "{summary}");
    assert!(tally.unsatisfiable > 50, "{summary}");
    assert!(tally.invalid_pools > 0, "{summary}");
    assert!(tally.fatal > 0, "{summary}");
    for feature in [
        "tiny-allocated",
        "tiny-unsatisfiable",
        "admin",
        "shared",
        "subrequest",
        "tolerations",
        "binding-conditions",
        "consumed-capacity",
        "config",
        "no-node-selector",
        "label-node-selector",
    ] {
        assert!(
            tally.seen.get(feature).copied().unwrap_or(0) > 0,
            "{feature} never allocated: {summary}"
        );
    }
}
