//! `dra-alloc`: the structured allocator of Kubernetes Dynamic Resource Allocation, returning
//! the same devices, in the same order, as kube-scheduler 1.37's allocator (the "incubating"
//! variant chosen with the default feature gates), and doing so much faster.
//!
//! # Shape
//! * [`Index`]: built once per cluster snapshot from nodes, ResourceSlices, DeviceClasses and
//!   DeviceTaintRules. It interns device identities, parses quantities, caches each node's pool
//!   list and every selector result. It is `Sync` and never changes what it answers.
//! * [`AllocatedState`]: which devices are taken, kept incrementally as claims are allocated.
//! * [`PreparedClaim`]: a ResourceClaim with its classes and selector sets resolved, prepared
//!   once and reused for every node.
//! * [`allocate`]: upstream's `Allocate(node, claims)`. Its [`Outcome`] is one of
//!   [`Outcome::Allocated`], [`Outcome::Unsatisfiable`] (on this node) or [`Outcome::Fatal`]
//!   (upstream returns an error that aborts the pod's scheduling attempt).
//! * [`allocate_picks`]: the same call answering each claim's [`ClaimPicks`], which write the
//!   `AllocationResult` when asked ([`ClaimPicks::build`]); an [`Allocation`] keeps them and
//!   reads as that object, written on first read (for simulations that schedule many pods
//!   and print the objects once, at the end).
//!
//! # Fidelity
//! The search is upstream's depth-first search, step for step: pools by `(driver, pool)` with
//! binding-condition pools last, slices by name, devices in slice order, requests and
//! subrequests in spec order, combinations (not permutations) within a request, the 32-result
//! limit and its special backtracking, constraints added and removed in the same places.
//! Selector evaluation is lazy in the same sense as upstream: a CEL error is reported only when
//! the search examines the device that causes it. Known upstream bugs that were fixed after the
//! 1.37 snapshot (counters not rolled back when a taint or constraint rejects a device,
//! kubernetes/kubernetes#140431) are implemented fixed; SPEC.md §3 lists them.
//!
//! The allocator is pure: no IO, no clock, no randomness (share IDs are derived from the claim
//! and device), no result depends on hash-map iteration order.
//!
//! ```ignore
//! let index = Index::build(&input, &IndexOptions::default())?;
//! let mut state = AllocatedState::new(&index);
//! let claim = PreparedClaim::new(&index, &resource_claim);
//! let node = index.node("node-1").unwrap();
//! match allocate(&index, &state, node, &[&claim]) { .. }
//! ```

mod allocation;
mod attributes;
mod claims;
mod index;
pub mod node_selector;
mod pools;
mod quantity;
mod result;
mod search;
mod selectors;
mod slice_json;
mod state;

use std::sync::Arc;

use k8s_openapi::api::resource::v1::AllocationResult;

pub use allocation::Allocation;
pub use claims::{
    AllocationMode, ConstraintSpec, PreparedClaim, PreparedRequest, PreparedSpec, RequestBody,
    RequestSpec,
};
/// The workspace's hasher for maps looked up by name ([`dra_types::hashing`]), where the
/// simulator has always found it.
pub use dra_types::hashing;
pub use index::{
    AttrValue, Capacity, ClassEntry, ClassId, DeviceEntry, DeviceIdx, DeviceKey, FittedRuns, Index,
    IndexError, IndexErrorKind, IndexInput, IndexOptions, NodeId, SliceEntry, SliceIdx, SliceInput,
    SliceRunAhead, prepare_selector_environment, taint_rule_selects,
};
pub use pools::{NodePools, PoolView};
pub use quantity::CapacityAmounts;
pub use result::{ClaimPicks, stable_uuid, stable_uuid_of_parts};
pub use search::tolerates_taint;
pub use selectors::{Match, SelSetId, SelectorFailure, SelectorOrigin};
pub use state::{AllocatedState, ResolvedAllocation, StateError};

/// The DRA feature gates that change allocation. `Default` is Kubernetes 1.37's default:
/// everything on (the incubating allocator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    pub admin_access: bool,
    pub prioritized_list: bool,
    pub partitionable_devices: bool,
    pub device_taints: bool,
    /// DRADeviceBindingConditions && DRAResourceClaimDeviceStatus.
    pub device_binding_and_status: bool,
    pub consumable_capacity: bool,
}

impl Default for Features {
    fn default() -> Features {
        Features {
            admin_access: true,
            prioritized_list: true,
            partitionable_devices: true,
            device_taints: true,
            device_binding_and_status: true,
            consumable_capacity: true,
        }
    }
}

/// Why the claims do not fit on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsatisfiable {
    /// Upstream returns "invalid resource pools were encountered" (still node-specific) when no
    /// solution was found and some pool of the node is invalid.
    pub invalid_pools: bool,
}

impl Unsatisfiable {
    /// The scheduler's message for this outcome.
    pub fn message(&self) -> &'static str {
        if self.invalid_pools {
            "invalid resource pools were encountered"
        } else {
            "cannot allocate all claims"
        }
    }
}

/// A fatal error: upstream's `Allocate` returns it and the scheduler aborts the pod's attempt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FatalError {
    pub message: String,
}

/// The result of [`allocate`] (`R`: its objects) and of [`allocate_picks`] ([`Picked`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<R = Vec<AllocationResult>> {
    /// One result per claim, in claim order.
    Allocated(R),
    Unsatisfiable(Unsatisfiable),
    Fatal(FatalError),
}

impl<R> Outcome<R> {
    /// The same outcome with its results turned into `f`'s.
    pub fn map<S>(self, f: impl FnOnce(R) -> S) -> Outcome<S> {
        match self {
            Outcome::Allocated(results) => Outcome::Allocated(f(results)),
            Outcome::Unsatisfiable(why) => Outcome::Unsatisfiable(why),
            Outcome::Fatal(e) => Outcome::Fatal(e),
        }
    }
}

/// [`allocate_picks`]' answer: each claim's picks instead of its object.
pub type Picked = Outcome<Vec<ClaimPicks>>;

/// Search statistics of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Invocations of the search step (upstream's `NumAllocateOneInvocations`).
    pub steps: u64,
    /// The claims were rejected before the search by the check of plain claims, whose answer
    /// depends only on their [`rejection_key`] and on the allocations in the node's pools:
    /// while none of those pools changes, claims with the same key are rejected again.
    pub rejected_before_search: bool,
}

/// The key under which [`allocate`] remembers that a node rejected `claims` before the
/// search; `None` when some claim is not plain (its answer can depend on more).
pub fn rejection_key(claims: &[&PreparedClaim]) -> Option<Vec<u64>> {
    claims
        .iter()
        .all(|c| c.plain)
        .then(|| rejection_words(claims).collect())
}

/// The words of a [`rejection_key`]: each claim's fit key and a separator.
fn rejection_words<'c>(claims: &'c [&PreparedClaim]) -> impl Iterator<Item = u64> + 'c {
    claims
        .iter()
        .flat_map(|c| c.fit_key.iter().copied().chain([u64::MAX - 1]))
}

impl Index {
    /// The pools of a node in search order (upstream `GatherPools`), computed once.
    pub fn node_pools(&self, node: NodeId) -> Result<Arc<NodePools>, FatalError> {
        self.node_pools_ref(node).cloned()
    }

    /// Gathers `node`'s pools (see [`Index::node_pools`]) for a thread that works ahead of
    /// the one that needs them, unless another thread has begun them; never waits for it.
    pub fn gather_node_pools_ahead(&self, node: NodeId) {
        let _ = self.node_pools[node.0 as usize]
            .get_or_init_if_untaken(|| pools::gather_pools(self, node).map(Arc::new));
    }

    /// [`Index::node_pools`] without the reference count traffic of a clone: `allocate` runs
    /// millions of times on nodes that are full, where that is a noticeable part of its cost.
    fn node_pools_ref(&self, node: NodeId) -> Result<&Arc<NodePools>, FatalError> {
        self.node_pools[node.0 as usize]
            .get_or_init(|| pools::gather_pools(self, node).map(Arc::new))
            .as_ref()
            .map_err(|message| FatalError {
                message: format!("gather pool information: {message}"),
            })
    }
}

/// Upstream's `Allocate(node, claims)`: all `claims` together on `node`, given `state`.
pub fn allocate(
    index: &Index,
    state: &AllocatedState,
    node: NodeId,
    claims: &[&PreparedClaim],
) -> (Outcome, Stats) {
    let (picked, stats) = allocate_picks(index, state, node, claims);
    let outcome = picked.map(|picks| {
        picks
            .iter()
            .zip(claims)
            .map(|(picks, claim)| picks.build(index, node, claim))
            .collect()
    });
    (outcome, stats)
}

/// [`allocate`] with each claim's picks ([`ClaimPicks`]) instead of its `AllocationResult`:
/// the same search, the same errors; [`ClaimPicks::build`] writes the object `allocate`
/// returns.
pub fn allocate_picks(
    index: &Index,
    state: &AllocatedState,
    node: NodeId,
    claims: &[&PreparedClaim],
) -> (Picked, Stats) {
    let pools = match index.node_pools_ref(node) {
        Ok(p) => p,
        Err(e) => return (Picked::Fatal(e), Stats::default()),
    };
    if claims.iter().all(|c| c.plain) {
        // The pre-search check depends only on the allocations in the node's pools; its
        // negative answers are remembered until one of those pools changes.
        let version: u64 = pools
            .pools
            .iter()
            .map(|p| state.pool_version(p.pool_key))
            .sum();
        let key = || rejection_words(claims);
        // FNV-1a over the key's words.
        let hash = key().fold(0xcbf2_9ce4_8422_2325_u64, |h, word| {
            (h ^ word).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let rejected = state.was_rejected(hash, key(), node.0, version)
            || (search::cannot_fit(index, state, node, pools, claims) && {
                state.remember_rejection(hash, key().collect(), node.0, version);
                true
            });
        if rejected {
            return (
                Picked::Unsatisfiable(Unsatisfiable {
                    invalid_pools: pools.pools.iter().any(|p| p.invalid.is_some()),
                }),
                Stats {
                    steps: 0,
                    rejected_before_search: true,
                },
            );
        }
    }
    let mut search = match search::Search::new(index, state, node, pools, claims) {
        Ok(s) => s,
        Err(message) => return (Picked::Fatal(FatalError { message }), Stats::default()),
    };
    let done = if search.might_fit() {
        search.allocate_one(0, 0, 0, 0, false, (0, 0))
    } else {
        Ok(false)
    };
    let stats = Stats {
        steps: search.steps,
        rejected_before_search: false,
    };
    let outcome = match done {
        Err(search::Stop::Fatal(message)) => Picked::Fatal(FatalError { message }),
        // Swallowed at claim boundaries upstream; at the top it means "no solution".
        Err(search::Stop::MaxSizeExceeded) | Ok(false) => Picked::Unsatisfiable(Unsatisfiable {
            invalid_pools: pools.pools.iter().any(|p| p.invalid.is_some()),
        }),
        Ok(true) => match result::claim_picks(&mut search) {
            Ok(picks) => Picked::Allocated(picks),
            Err(message) => Picked::Fatal(FatalError { message }),
        },
    };
    (outcome, stats)
}
