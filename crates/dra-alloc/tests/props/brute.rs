//! A brute-force allocator for tiny inputs (no counters, no capacities, distinctAttribute only
//! over single-device requests, no constraints next to `All` requests; see
//! [`super::generate::GenOptions::tiny`]).
//!
//! It knows nothing of the allocator's search. It lists, for every request of every claim in
//! order, the alternatives upstream's search tries in its order (subrequests in spec order;
//! within one, the combinations of candidate devices in lexicographic order of their search
//! positions; `All` has exactly one alternative), and takes the first combination of
//! alternatives, in lexicographic order, that satisfies every rule as a *set* of picks. Picks
//! are checked as prefixes while descending, which never cuts a valid complete assignment
//! because every rule here is monotonic (a violated prefix stays violated).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::ResourceClaim;

use super::generate::Scenario;
use super::oracle::{
    Ledger, ODevice, ReqView, Selectors, claim_requests, constraint_applies, gather_pools,
    lookup_attribute, request_views, scalar, taint_blocks,
};

/// One device of a brute-force solution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedResult {
    pub request: String,
    pub driver: String,
    pub pool: String,
    pub device: String,
    pub admin: bool,
}

/// What upstream returns for the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// `All` requested while some pool of the node is incomplete or invalid.
    Fatal,
    Unsatisfiable {
        invalid_pools: bool,
    },
    Allocated(Vec<Vec<ExpectedResult>>),
}

#[derive(Debug, Clone)]
struct Pick<'a> {
    claim: usize,
    view: ReqView,
    device: ODevice<'a>,
}

/// One alternative for one request: the subrequest (or request) and its devices.
#[derive(Debug, Clone)]
struct Alternative<'a> {
    view: ReqView,
    devices: Vec<ODevice<'a>>,
}

fn combinations<T: Clone>(items: &[T], k: usize) -> Vec<Vec<T>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, first) in items.iter().enumerate() {
        for mut rest in combinations(&items[i + 1..], k - 1) {
            rest.insert(0, first.clone());
            out.push(rest);
        }
    }
    out
}

/// Brute-force `Allocate(node, claims)` given what `ledger` already holds.
pub fn allocate(
    scenario: &Scenario,
    selectors: &mut Selectors,
    node: &Node,
    claims: &[usize],
    ledger: &Ledger,
) -> Expected {
    let pools = gather_pools(scenario, node);
    let bad_pool = pools.iter().any(|p| !p.usable());
    let invalid_pools = pools.iter().any(|p| p.invalid);
    let candidates: Vec<ODevice<'_>> = pools
        .iter()
        .filter(|p| p.usable())
        .flat_map(|p| p.devices.iter().copied())
        .collect();

    // Per request, in claim order then request order: its alternatives in search order.
    let mut slots: Vec<(usize, Vec<Alternative<'_>>)> = Vec::new();
    for (c, &claim_index) in claims.iter().enumerate() {
        for request in claim_requests(&scenario.claims[claim_index]) {
            let mut alternatives = Vec::new();
            for view in request_views(request) {
                if view.all && bad_pool {
                    return Expected::Fatal;
                }
                let selectable: Vec<ODevice<'_>> = candidates
                    .iter()
                    .copied()
                    .filter(|d| selectors.selectable(scenario, &view, d, node))
                    .collect();
                if view.all {
                    if !selectable.is_empty() {
                        alternatives.push(Alternative {
                            view,
                            devices: selectable,
                        });
                    }
                    continue;
                }
                let usable: Vec<ODevice<'_>> = selectable
                    .into_iter()
                    .filter(|d| !taint_blocks(d.device, &view.tolerations))
                    .collect();
                for devices in combinations(&usable, view.count as usize) {
                    alternatives.push(Alternative {
                        view: view.clone(),
                        devices,
                    });
                }
            }
            slots.push((c, alternatives));
        }
    }

    let committed: BTreeSet<(String, String, String)> = ledger
        .allocations()
        .flat_map(|a| a.devices.iter().flat_map(|d| d.results.iter().flatten()))
        .filter(|r| r.admin_access != Some(true) && r.share_id.is_none())
        .map(|r| (r.driver.clone(), r.pool.clone(), r.device.clone()))
        .collect();
    let claim_objects: Vec<&ResourceClaim> = claims.iter().map(|c| &scenario.claims[*c]).collect();
    let mut picks: Vec<Pick<'_>> = Vec::new();
    if !search(&slots, 0, &mut picks, &committed, &claim_objects) {
        return Expected::Unsatisfiable { invalid_pools };
    }
    let mut out = vec![Vec::new(); claims.len()];
    for p in picks {
        out[p.claim].push(ExpectedResult {
            request: p.view.full_name(),
            driver: p.device.driver().to_string(),
            pool: p.device.pool_name().to_string(),
            device: p.device.device.name.clone(),
            admin: p.view.admin,
        });
    }
    Expected::Allocated(out)
}

fn search<'a>(
    slots: &[(usize, Vec<Alternative<'a>>)],
    slot: usize,
    picks: &mut Vec<Pick<'a>>,
    committed: &BTreeSet<(String, String, String)>,
    claims: &[&ResourceClaim],
) -> bool {
    let Some((claim, alternatives)) = slots.get(slot) else {
        return true;
    };
    for alternative in alternatives {
        let before = picks.len();
        for d in &alternative.devices {
            picks.push(Pick {
                claim: *claim,
                view: alternative.view.clone(),
                device: *d,
            });
        }
        if valid(picks, committed, claims) && search(slots, slot + 1, picks, committed, claims) {
            return true;
        }
        picks.truncate(before);
    }
    false
}

/// Every rule that depends on more than one device, on a set of picks in pick order.
fn valid(
    picks: &[Pick<'_>],
    committed: &BTreeSet<(String, String, String)>,
    claims: &[&ResourceClaim],
) -> bool {
    for (i, p) in picks.iter().enumerate() {
        if taint_blocks(p.device.device, &p.view.tolerations) {
            return false;
        }
        if p.device.shared() {
            continue;
        }
        let triple = p.device.triple();
        let earlier: Vec<&Pick<'_>> = picks[..i]
            .iter()
            .filter(|q| q.device.triple() == triple)
            .collect();
        if earlier.iter().any(|q| q.claim == p.claim) {
            return false;
        }
        if !p.view.admin && (!earlier.is_empty() || committed.contains(&triple)) {
            return false;
        }
    }
    for (c, claim) in claims.iter().enumerate() {
        let constraints = claim
            .spec
            .as_ref()
            .and_then(|s| s.devices.as_ref())
            .and_then(|d| d.constraints.as_deref())
            .unwrap_or_default();
        for constraint in constraints {
            let listed = constraint.requests.clone().unwrap_or_default();
            let (attribute, distinct) =
                match (&constraint.match_attribute, &constraint.distinct_attribute) {
                    (Some(a), _) => (a, false),
                    (None, Some(a)) => (a, true),
                    (None, None) => continue,
                };
            let mut values = Vec::new();
            for p in picks.iter().filter(|p| p.claim == c) {
                if !constraint_applies(&listed, &p.view.base, p.view.sub.as_deref()) {
                    continue;
                }
                match lookup_attribute(p.device.device, p.device.driver(), attribute)
                    .and_then(scalar)
                {
                    Some(v) => values.push(v),
                    None => return false,
                }
            }
            let ok = if distinct {
                values.iter().collect::<BTreeSet<_>>().len() == values.len()
            } else {
                values.windows(2).all(|w| w[0] == w[1])
            };
            if !ok {
                return false;
            }
        }
    }
    true
}
