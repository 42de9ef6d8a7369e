//! The conformance reference loop (`dra simulate --node-pick first-fit`), exactly as
//! `conformance/README.md` defines it: pods in input order, each pod's claims allocated together
//! on the first node (by name) where they fit, results recorded so later pods see the devices.
//!
//! It is deliberately simple and stays unchanged as the full scheduler model grows around it:
//! it is what the upstream allocator's expected results were produced with.
//!
//! One shortcut keeps it from costing nodes × pods when a cluster fills up
//! ([`KnownRejections`]): a pod that any node may take, with plain claims only, starts at the
//! first node not known to reject claims like its own. The skipped nodes are counted as
//! Allocate calls, which is what they would have been (each an immediate rejection without a
//! search step), so the report is the same to the last figure as visiting every node
//! ([`run_first_fit_every_node`]).

use std::sync::Arc;

use dra_alloc::hashing::WordHashMap;

use dra_alloc::{
    AllocatedState, Allocation, ClaimPicks, Index, NodeId, Outcome, PreparedClaim, allocate_picks,
    rejection_key,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim};

use crate::claims::{
    ClaimStore, MadeClaims, PodClaimError, TemplateMaker, TemplateSpecs, namespace_of,
};
use crate::parallel::{
    CLAIMS_AHEAD_BATCH, CLAIMS_AHEAD_BATCHES, CLAIMS_AHEAD_MIN_PODS, claims_ahead, map_in_order,
    thread_count,
};
use crate::report::{PodOutcome, PodStatus, Report};
use crate::{SimError, SimInput, Snapshot};
use dra_types::parallel::map_ahead;

/// Runs the reference loop over `input`.
pub fn run_first_fit(input: &SimInput<'_>) -> Result<Report, SimError> {
    run_first_fit_snapshot(input, &Snapshot::new(input)?)
}

/// [`run_first_fit`] without the shortcut over nodes known to reject a pod's claims: the
/// allocator runs on every node it is counted for. The report is the same; it exists to test
/// that.
pub fn run_first_fit_every_node(input: &SimInput<'_>) -> Result<Report, SimError> {
    run(input, &Snapshot::new(input)?, false, None, false)
}

/// [`run_first_fit`] with the claims from templates made ahead on a helper thread whatever
/// the number of pods and cores (by default only from 1,000 such pods on, with two cores or
/// more). The report is the same; it exists to test that.
pub fn run_first_fit_claims_ahead(input: &SimInput<'_>) -> Result<Report, SimError> {
    run(input, &Snapshot::new(input)?, true, None, true)
}

/// [`run_first_fit`] over a [`Snapshot`] built beforehand from the same input; the input's
/// ResourceSlices are not read again. The caller keeps the snapshot (a process about to exit
/// need not free it).
pub fn run_first_fit_snapshot(
    input: &SimInput<'_>,
    snapshot: &Snapshot,
) -> Result<Report, SimError> {
    run(input, snapshot, true, None, false)
}

/// [`run_first_fit_snapshot`] handing each pod's outcome to `each` as soon as it is final
/// instead of keeping it, for a caller that writes the answer while the loop goes on: the
/// loop decides the pods one at a time, in input order, and never comes back to one. The
/// report it returns has no `results`; its totals count the outcomes handed over. Its
/// `claims` hold, for each claim the loop allocated, only what a later pod reads of the
/// allocation (its node selector): the devices went out with the outcome, which is their one
/// copy. An error comes before the first outcome.
pub fn run_first_fit_snapshot_each(
    input: &SimInput<'_>,
    snapshot: &Snapshot,
    mut each: impl FnMut(PodOutcome),
) -> Result<Report, SimError> {
    run(input, snapshot, true, Some(&mut each), false)
}

/// The reference loop; with `each`, the outcomes go there instead of into the report. A
/// helper thread makes the claims from templates ahead of the loop where that pays
/// ([`crate::parallel::claims_ahead`]), or always with `claims_ahead_always`.
fn run(
    input: &SimInput<'_>,
    snapshot: &Snapshot,
    skip: bool,
    mut each: Option<&mut dyn FnMut(PodOutcome)>,
    claims_ahead_always: bool,
) -> Result<Report, SimError> {
    let index = &snapshot.index;
    let mut claims = ClaimStore::new(input);
    if each.is_some() {
        // The store's claims are not part of the answer (see `run_first_fit_snapshot_each`).
        claims.make_claims_lean();
    }
    let mut state = AllocatedState::new(index);
    for (claim, allocation) in claims.allocated() {
        state.add(index, allocation).map_err(|e| SimError::Claim {
            claim: claim_display(claim),
            message: e.to_string(),
        })?;
    }
    let nodes = index.node_ids_by_name();

    let mut known = KnownRejections::new(index, &nodes, skip);
    let mut report = Report {
        results: Vec::with_capacity(if each.is_some() { 0 } else { input.pods.len() }),
        ..Report::default()
    };
    // Kept outcomes leave the store a whole copy of each allocation; handed-over ones own
    // theirs, and copying the devices into the store too was a tenth of a small run's heap.
    let mut record = if each.is_some() {
        Record::NodeSelector(Vec::new())
    } else {
        Record::Whole
    };
    let ahead =
        claims_ahead_always || claims_ahead(&input.pods, thread_count(0), CLAIMS_AHEAD_MIN_PODS);
    let mut specs = TemplateSpecs::default();
    std::thread::scope(|scope| {
        let maker = TemplateMaker::new(input);
        let mut made = ahead.then(|| {
            map_ahead(
                scope,
                &input.pods,
                CLAIMS_AHEAD_BATCH,
                CLAIMS_AHEAD_BATCHES,
                move |pod| maker.make(pod),
            )
        });
        for pod in &input.pods {
            let mut made = made.as_mut().and_then(Iterator::next).unwrap_or_default();
            let (outcome, skipped) = schedule_pod(
                index,
                &mut state,
                (&mut claims, &mut specs),
                &nodes,
                &mut known,
                (pod, &mut made),
                &mut record,
            );
            report.steps += outcome.steps;
            report.allocate_calls += outcome.allocate_calls;
            report.skipped_calls += skipped as u64;
            match each.as_mut() {
                Some(each) => each(outcome),
                None => report.results.push(outcome),
            }
        }
    });
    report.claims = claims;
    Ok(report)
}

/// A job for another thread while the reference loop starts over `snapshot`: gathering the
/// nodes' pools (which the index keeps for the allocator) from the last node the loop tries
/// to the first. The loop gathers them all from the first one on before its first pod
/// ([`KnownRejections`]); the two meet in the middle (a node's pools are gathered once, by
/// whoever asks first: this job skips a node the loop has begun, and the loop waits for one
/// this job is gathering), and the loop's answer is the same.
pub fn gather_pools_from_the_last_node(snapshot: &Snapshot) -> impl FnOnce() + Send + 'static {
    let index = Arc::clone(&snapshot.index);
    move || {
        for node in index.node_ids_by_name().into_iter().rev() {
            // An error is kept with the node's pools, for the allocator to report.
            index.gather_node_pools_ahead(node);
        }
    }
}

/// The candidate devices of every node for the requests of the input's claim templates,
/// computed a node at a time in the reference loop's node order by another thread when it
/// has nothing else to do ([`CandidatesAhead::next_node`]; `dra simulate`'s JSON writer while
/// it waits for the loop's outcomes). The loop computes a node's candidates the first time a
/// pod reaches it (each of the node's devices against the requests' selectors); a node's list
/// is computed once, by whoever asks first (this skips a list the loop has begun; the loop
/// waits for one this is computing), so the loop's answer is the same, and its pods find
/// most lists ready (gpu-nic: 0.62 M of the loop's 5.7 M instructions).
pub struct CandidatesAhead {
    index: Arc<Index>,
    /// A claim with each template's spec, until the first node prepares them: the requests
    /// whose selectors the loop's claims from templates evaluate.
    claims: Option<Vec<ResourceClaim>>,
    /// Their selector sets, once prepared.
    sets: Vec<dra_alloc::SelSetId>,
    /// The loop's node order, once asked, and how far this has come.
    nodes: Vec<NodeId>,
    next: usize,
}

impl std::fmt::Debug for CandidatesAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CandidatesAhead")
            .field("sets", &self.sets.len())
            .field("next", &self.next)
            .field("nodes", &self.nodes.len())
            .finish_non_exhaustive()
    }
}

impl CandidatesAhead {
    /// For a small loop over `snapshot`: `None` where a helper makes the claims from
    /// templates ahead ([`claims_ahead`]), which shares the other CPU, or the input has no
    /// templates.
    pub fn new(input: &SimInput<'_>, snapshot: &Snapshot) -> Option<CandidatesAhead> {
        if input.templates.is_empty()
            || claims_ahead(&input.pods, thread_count(0), CLAIMS_AHEAD_MIN_PODS)
        {
            return None;
        }
        let claims = input
            .templates
            .iter()
            .filter_map(|template| {
                Some(ResourceClaim {
                    metadata: template.metadata.clone(),
                    spec: template.spec.as_ref()?.spec.clone(),
                    status: None,
                })
            })
            .collect();
        Some(CandidatesAhead {
            index: Arc::clone(&snapshot.index),
            claims: Some(claims),
            sets: Vec::new(),
            nodes: Vec::new(),
            next: 0,
        })
    }

    /// Computes the candidates of the next node (preparing the templates' requests first);
    /// `false` once every node's are computed.
    pub fn next_node(&mut self) -> bool {
        if let Some(claims) = self.claims.take() {
            for claim in claims {
                let prepared = PreparedClaim::new(&self.index, &claim);
                for request in &prepared.requests {
                    let specs = request.body.specs();
                    self.sets
                        .extend(specs.iter().filter_map(|spec| spec.selector_set.clone()));
                }
            }
            // Without a selector set there is nothing to compute on any node.
            if !self.sets.is_empty() {
                self.nodes = self.index.node_ids_by_name();
            }
        }
        let Some(&node) = self.nodes.get(self.next) else {
            return false;
        };
        self.next += 1;
        // A node whose pools cannot be gathered gets nothing; the loop reports why.
        if let Ok(pools) = self.index.node_pools(node) {
            for set in &self.sets {
                set.set.candidates_ahead(&self.index, node, &pools);
            }
        }
        true
    }
}

fn claim_display(claim: &ResourceClaim) -> String {
    format!(
        "{}/{}",
        namespace_of(&claim.metadata),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Where the nodes that reject a kind of claims end, in node order.
///
/// `allocate` answers plain claims with a check before the search whose result depends only on
/// the claims' [`rejection_key`] and the allocations in the node's pools. For each key seen,
/// `leading[key]` counts the nodes at the start of the node order that were rejected that way
/// and whose pools have not changed since. An allocation changes the pools of one node, and of
/// the other nodes that see a pool of it; the counts fall back to the first of those nodes.
#[derive(Debug)]
struct KnownRejections {
    enabled: bool,
    leading: WordHashMap<Vec<u64>, usize>,
    /// Per node position: the lowest position of a node that shares a pool with it.
    lowest_sharer: Vec<usize>,
}

impl KnownRejections {
    fn new(index: &Index, nodes: &[NodeId], enabled: bool) -> KnownRejections {
        let mut lowest_sharer: Vec<usize> = (0..nodes.len()).collect();
        if enabled {
            // The lowest position that sees each pool, then per node the lowest over its pools.
            // A node whose pools cannot be gathered gets no allocation, so it needs none.
            // Gathering a node's pools is most of a large loop's first pod, and the index keeps
            // them for the allocator: on several threads where that pays.
            let (pool_keys, _): (Vec<Vec<u32>>, _) =
                map_in_order(nodes, thread_count(0), false, |node| {
                    index
                        .node_pools(*node)
                        .map(|p| p.pools.iter().map(|pool| pool.pool_key).collect())
                        .unwrap_or_default()
                });
            let mut lowest_of_pool = vec![usize::MAX; index.num_pool_keys()];
            for (position, keys) in pool_keys.iter().enumerate() {
                for key in keys {
                    if let Some(lowest) = lowest_of_pool.get_mut(*key as usize) {
                        *lowest = (*lowest).min(position);
                    }
                }
            }
            for (position, keys) in pool_keys.iter().enumerate() {
                for key in keys {
                    // A pool without a key (none is expected) could be anyone's: start over.
                    let lowest = lowest_of_pool.get(*key as usize).copied().unwrap_or(0);
                    lowest_sharer[position] = lowest_sharer[position].min(lowest);
                }
            }
        }
        KnownRejections {
            enabled,
            leading: WordHashMap::default(),
            lowest_sharer,
        }
    }

    /// The first `leading` nodes rejected claims with `key` before the search.
    fn learn(&mut self, key: Option<Vec<u64>>, leading: usize) {
        if let Some(key) = key
            && leading > 0
        {
            self.leading.insert(key, leading);
        }
    }

    /// The claims' allocations changed the pools of the node at `position`.
    fn allocated_at(&mut self, position: usize) {
        let lowest = self.lowest_sharer[position];
        for count in self.leading.values_mut() {
            *count = (*count).min(lowest);
        }
    }
}

/// What the claim store keeps of an allocation the loop made.
#[derive(Debug)]
enum Record {
    /// A copy of the whole allocation.
    Whole,
    /// The node selector alone, which is what a later pod of the claim reads (the devices are
    /// in the state). The usual one, `metadata.name In [<the node>]`, is made once per node
    /// (by node ID, on first use) and shared by the claims made from templates allocated on
    /// it: six allocations and an `Arc` less for each.
    NodeSelector(Vec<Option<Arc<Allocation>>>),
}

fn schedule_pod(
    index: &Arc<Index>,
    state: &mut AllocatedState,
    (claims, specs): (&mut ClaimStore, &mut TemplateSpecs),
    nodes: &[NodeId],
    known: &mut KnownRejections,
    (pod, made): (&Pod, &mut MadeClaims),
    record: &mut Record,
) -> (PodOutcome, usize) {
    let namespace = namespace_of(&pod.metadata);
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let mut outcome = PodOutcome::new([namespace, "/", pod_name].concat());
    let pod_claims = match claims.claims_of_pod_made(pod, made) {
        Ok(names) => names,
        Err(PodClaimError(message)) => {
            outcome.status = PodStatus::Unschedulable;
            outcome.reason = Some(message);
            return (outcome, 0);
        }
    };
    // Already allocated claims only restrict the node; the others are allocated together.
    let mut to_allocate = Vec::with_capacity(pod_claims.len());
    let mut prepared = Vec::with_capacity(pod_claims.len());
    let mut pinned = Vec::new();
    for (name, template) in pod_claims {
        // `claims_of_pod` only returns names of claims in the store; one it made from a
        // template just now (`template`) is there without an allocation, and is not looked up.
        if template.is_none() {
            if !claims.contains(namespace, &name) {
                continue;
            }
            if let Some(allocation) = claims.allocation(namespace, &name) {
                pinned.push(allocation.node_selector.clone());
                continue;
            }
        }
        // A claim just made from a template whose spec was prepared before is prepared by
        // its names alone: a claim kept lean is not made into an object for it.
        let shared = template.and_then(|template| specs.shared(namespace, &name, template));
        let claim = match shared {
            Some(claim) => claim,
            None => match claims.get(namespace, &name) {
                Some(claim) => specs.prepare(index, claim, template),
                None => continue,
            },
        };
        prepared.push(claim);
        to_allocate.push(name);
    }
    let prepared_refs: Vec<&PreparedClaim> = prepared.iter().collect();

    // Only for pods that every node passes before the allocator: then each skipped node is
    // exactly one Allocate call that rejects without a step.
    let key = (known.enabled && pinned.is_empty() && !prepared_refs.is_empty() && {
        let spec = pod.spec.as_ref();
        spec.and_then(|s| s.node_name.as_deref())
            .is_none_or(str::is_empty)
            && spec
                .and_then(|s| s.node_selector.as_ref())
                .is_none_or(|s| s.is_empty())
    })
    .then(|| rejection_key(&prepared_refs))
    .flatten();
    let start = key
        .as_ref()
        .and_then(|k| known.leading.get(k).copied())
        .unwrap_or(0);
    outcome.allocate_calls += start as u64;
    // The nodes from the start that rejected these claims before the search (`leading`), and
    // whether every node visited so far did.
    let (mut leading, mut all_rejected) = (start, true);

    for (position, &node) in nodes.iter().enumerate().skip(start) {
        let facts = index.node_facts(node);
        if !crate::fit::pod_node_name_and_selector_fit(pod, facts) {
            continue;
        }
        let pinned_ok = pinned.iter().all(|selector| match selector {
            None => true,
            // An unparsable node selector on an allocation makes the node unusable.
            Some(selector) => {
                dra_alloc::node_selector::node_selector_matches(selector, facts).unwrap_or(false)
            }
        });
        if !pinned_ok {
            continue;
        }
        if prepared_refs.is_empty() {
            outcome.status = PodStatus::Scheduled;
            outcome.node = Some(facts.name.clone());
            return (outcome, start);
        }
        let (result, stats) = allocate_picks(index, state, node, &prepared_refs);
        outcome.steps += stats.steps;
        outcome.allocate_calls += 1;
        all_rejected &= stats.rejected_before_search;
        if all_rejected {
            leading = position + 1;
        }
        match result {
            Outcome::Allocated(picks) => {
                known.learn(key, leading);
                outcome.status = PodStatus::Scheduled;
                outcome.node = Some(facts.name.clone());
                for ((name, claim), picks) in to_allocate.iter().zip(prepared).zip(picks) {
                    let allocation = record_allocation(
                        index,
                        state,
                        (claims, namespace, name),
                        node,
                        (claim, picks),
                        &mut *record,
                    );
                    outcome
                        .allocations
                        .insert(name.clone(), Arc::new(allocation));
                }
                known.allocated_at(position);
                return (outcome, start);
            }
            Outcome::Unsatisfiable(_) => continue,
            Outcome::Fatal(error) => {
                known.learn(key, leading);
                outcome.status = PodStatus::Error;
                outcome.error = Some(error.message);
                return (outcome, start);
            }
        }
    }
    known.learn(key, leading);
    outcome.status = PodStatus::Unschedulable;
    (outcome, start)
}

/// Records the allocation of a claim the loop allocated: in the state, and in the claim
/// store as `record` says; returns it for the pod's outcome. Handed-over outcomes keep the
/// picks, and the object is written where the outcome is read (by `dra simulate`'s JSON
/// writer, on its own thread).
fn record_allocation(
    index: &Arc<Index>,
    state: &mut AllocatedState,
    (claims, namespace, name): (&mut ClaimStore, &str, &str),
    node: NodeId,
    (claim, picks): (PreparedClaim, ClaimPicks),
    record: &mut Record,
) -> Allocation {
    state.add_picks(index, &claim, &picks);
    match record {
        Record::Whole => {
            let result = picks.build(index, node, &claim);
            claims.set_allocation(namespace, name, result.clone());
            Allocation::new(result)
        }
        Record::NodeSelector(this_node) => {
            let selector_only = |picks: &ClaimPicks| {
                Arc::new(Allocation::new(AllocationResult {
                    node_selector: picks.node_selector(index, node),
                    ..AllocationResult::default()
                }))
            };
            let kept = if picks.selects_this_node() {
                let at = node.0 as usize;
                if this_node.len() <= at {
                    this_node.resize(at + 1, None);
                }
                Arc::clone(this_node[at].get_or_insert_with(|| selector_only(&picks)))
            } else {
                selector_only(&picks)
            };
            claims.set_shared_allocation(namespace, name, kept);
            Allocation::from_picks(index, node, claim, picks)
        }
    }
}
