//! The claims of a simulation: those in the input plus those created from
//! ResourceClaimTemplates, and how a pod's `spec.resourceClaims` resolve to them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::BuildHasherDefault;
use std::sync::{Arc, OnceLock};

use dra_alloc::hashing::WordHasher;
use dra_alloc::{Allocation, Index, PreparedClaim, PreparedSpec};
use indexmap::IndexMap;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{
    AllocationResult, ResourceClaim, ResourceClaimConsumerReference, ResourceClaimStatus,
    ResourceClaimTemplate,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::SimInput;

/// Why a pod's claims cannot be resolved (the pod cannot be scheduled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodClaimError(pub String);

/// Annotation the resourceclaim controller sets on claims it creates from a template.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// Every claim of the simulation by (namespace, name), including generated ones.
#[derive(Debug, Clone, Default)]
pub struct ClaimStore {
    claims: ByNamespace<StoredClaim>,
    /// Shared with the claims made from them ([`LeanClaim`]).
    templates: ByNamespace<Arc<ResourceClaimTemplate>>,
    /// Whether [`ClaimStore::claims_of_pod`] keeps the claims it makes from templates lean
    /// ([`ClaimStore::make_claims_lean`]).
    lean: bool,
}

/// A claim as the store holds it. Boxed either way: a claim is several hundred bytes, and a
/// hash map's slots and a B-tree's nodes hold room for more values than they hold.
#[derive(Debug, Clone)]
enum StoredClaim {
    Object(Box<ResourceClaim>),
    /// Made by the scheduler model from a template, kept as what it is made of.
    Made(Box<LeanClaim>),
}

/// A claim the scheduler model made from a template for a pod, kept as the template, the
/// pod's names and the claim's status until someone asks for the object: every such claim
/// is the template's spec and metadata with the same few fields filled in, and a run that
/// prints no claims (`-o json`) never asks. Its allocation is the one the pod's result
/// holds, shared rather than copied. Making the object and copying the allocation for each
/// claim took a tenth of a scored pod's instructions and half the memory a scored run adds
/// while it schedules (BENCHMARKS.md, "Claims made from templates kept lean").
#[derive(Debug, Clone)]
struct LeanClaim {
    template: Arc<ResourceClaimTemplate>,
    pod_name: String,
    pod_claim_name: String,
    owner_uid: String,
    /// The status without its allocation, which is `allocation` (there only with a status).
    status: Option<ResourceClaimStatus>,
    /// `status.reservedFor` is the pod the claim was made for, and `status.reservedFor` holds
    /// nothing: almost every such claim is reserved for that pod alone, and the entry is four
    /// allocations. Any other change of the reservations writes the entry out first.
    reserved_by_owner: bool,
    allocation: Option<Arc<Allocation>>,
    /// The object, made the first time it is read through a shared reference; a change of
    /// status afterwards turns the entry into [`StoredClaim::Object`].
    object: OnceLock<Box<ResourceClaim>>,
}

impl StoredClaim {
    /// The object; a made claim's is made now if it was not yet.
    fn object(&self, namespace: &str, name: &str) -> &ResourceClaim {
        match self {
            StoredClaim::Object(claim) => claim,
            StoredClaim::Made(made) => made
                .object
                .get_or_init(|| Box::new(made.to_object(namespace, name))),
        }
    }

    fn into_object(self, namespace: &str, name: &str) -> Box<ResourceClaim> {
        match self {
            StoredClaim::Object(claim) => claim,
            StoredClaim::Made(mut made) => match made.object.take() {
                Some(claim) => claim,
                None => Box::new(made.to_object(namespace, name)),
            },
        }
    }

    fn allocation(&self) -> Option<&AllocationResult> {
        match self {
            StoredClaim::Object(claim) => claim.status.as_ref()?.allocation.as_ref(),
            StoredClaim::Made(made) => made.allocation.as_deref().map(|a| &**a),
        }
    }

    fn reserved_for(&self) -> Cow<'_, [ResourceClaimConsumerReference]> {
        let status = match self {
            StoredClaim::Object(claim) => claim.status.as_ref(),
            StoredClaim::Made(made) if made.reserved_by_owner => {
                return Cow::Owned(vec![made.owner_reservation()]);
            }
            StoredClaim::Made(made) => made.status.as_ref(),
        };
        Cow::Borrowed(
            status
                .and_then(|s| s.reserved_for.as_deref())
                .unwrap_or_default(),
        )
    }

    /// Adds the pod to `status.reservedFor` unless its UID is there; the status is created if
    /// there is none.
    fn reserve(&mut self, pod_name: &str, pod_uid: &str) {
        if let StoredClaim::Made(made) = self
            && made.object.get().is_none()
            && made.pod_name == pod_name
            && made.owner_uid == pod_uid
            && made
                .status
                .as_ref()
                .is_none_or(|s| s.reserved_for.is_none())
        {
            made.status.get_or_insert_with(ResourceClaimStatus::default);
            made.reserved_by_owner = true;
            return;
        }
        reserve_in(
            self.status_mut()
                .get_or_insert_with(ResourceClaimStatus::default),
            pod_name,
            pod_uid,
        );
    }

    /// A made claim whose object was made becomes that object, so that a change never
    /// leaves the object behind.
    fn prepare_change(&mut self) {
        if let StoredClaim::Made(made) = self
            && let Some(claim) = made.object.take()
        {
            *self = StoredClaim::Object(claim);
        }
    }

    /// Sets the allocation; the status is created if there is none.
    fn set_allocation(&mut self, allocation: NewAllocation) {
        self.prepare_change();
        match self {
            StoredClaim::Object(claim) => {
                claim
                    .status
                    .get_or_insert_with(ResourceClaimStatus::default)
                    .allocation = Some(allocation.owned());
            }
            StoredClaim::Made(made) => {
                made.allocation = Some(allocation.shared());
                made.status.get_or_insert_with(ResourceClaimStatus::default);
            }
        }
    }

    /// The status to change other than the allocation (with the reservations written out).
    fn status_mut(&mut self) -> &mut Option<ResourceClaimStatus> {
        self.prepare_change();
        match self {
            StoredClaim::Object(claim) => &mut claim.status,
            StoredClaim::Made(made) => {
                if std::mem::take(&mut made.reserved_by_owner) {
                    let reservation = made.owner_reservation();
                    made.status
                        .get_or_insert_with(ResourceClaimStatus::default)
                        .reserved_for = Some(vec![reservation]);
                }
                &mut made.status
            }
        }
    }

    /// Clears the allocation and the devices' status; returns the allocation.
    fn clear_allocation(&mut self) -> Option<AllocationResult> {
        self.prepare_change();
        match self {
            StoredClaim::Object(claim) => {
                let status = claim.status.as_mut()?;
                status.devices = None;
                status.allocation.take()
            }
            StoredClaim::Made(made) => {
                let status = made.status.as_mut()?;
                status.devices = None;
                made.allocation
                    .take()
                    .map(|a| Arc::unwrap_or_clone(a).into_result())
            }
        }
    }

    fn is_being_deleted(&self) -> bool {
        match self {
            StoredClaim::Object(claim) => claim.metadata.deletion_timestamp.is_some(),
            StoredClaim::Made(_) => false,
        }
    }

    /// `metav1.IsControlledBy(claim, pod)` by UID, or by name for an input pod without one.
    fn controlled_by(&self, pod: &Pod, uid: &str) -> bool {
        match self {
            StoredClaim::Object(claim) => controlled_by(claim, pod, uid),
            // Its one owner reference: the pod it was made for, a controller.
            StoredClaim::Made(made) => {
                made.owner_uid == uid
                    || (pod.metadata.uid.is_none()
                        && pod.metadata.name.as_deref() == Some(made.pod_name.as_str()))
            }
        }
    }

    /// Whether the claim's controller is the pod with this UID.
    fn controlled_by_uid(&self, uid: &str) -> bool {
        match self {
            StoredClaim::Object(claim) => pod_controllers(claim).any(|o| o.uid == uid),
            StoredClaim::Made(made) => made.owner_uid == uid,
        }
    }
}

/// An allocation handed to the store: a claim kept as an object holds it by value, a lean
/// claim behind an `Arc`; each form is converted only when the claim needs the other.
enum NewAllocation {
    Owned(AllocationResult),
    Shared(Arc<Allocation>),
}

impl NewAllocation {
    fn owned(self) -> AllocationResult {
        match self {
            NewAllocation::Owned(allocation) => allocation,
            NewAllocation::Shared(allocation) => Arc::unwrap_or_clone(allocation).into_result(),
        }
    }

    fn shared(self) -> Arc<Allocation> {
        match self {
            NewAllocation::Owned(allocation) => Arc::new(Allocation::new(allocation)),
            NewAllocation::Shared(allocation) => allocation,
        }
    }
}

impl LeanClaim {
    fn to_object(&self, namespace: &str, name: &str) -> ResourceClaim {
        let mut claim = claim_from_template(
            &self.template,
            namespace,
            &self.pod_name,
            name,
            &self.pod_claim_name,
            &self.owner_uid,
        );
        claim.status = self.status.clone();
        if let Some(status) = &mut claim.status {
            status.allocation = self.allocation.as_deref().map(|a| a.result().into_owned());
            if self.reserved_by_owner {
                status.reserved_for = Some(vec![self.owner_reservation()]);
            }
        }
        claim
    }

    /// The pod the claim was made for, as `status.reservedFor` names it.
    fn owner_reservation(&self) -> ResourceClaimConsumerReference {
        ResourceClaimConsumerReference {
            api_group: None,
            name: self.pod_name.clone(),
            resource: "pods".to_string(),
            uid: self.owner_uid.clone(),
        }
    }
}

/// Objects by namespace, then name, looked up with borrowed names (a key of two `String`s
/// had to be built, two allocations, for every lookup of the reference loop). The names of a
/// namespace are hashed: generated claim names share long prefixes (`<pod>-<claim>`), and a
/// B-tree lookup among thousands of them was a dozen string comparisons. They keep the order
/// they were added in, and iteration sorts them by name (the order of a map keyed by the pair)
/// with a sort that takes sorted runs as they are: claims are created in queue order, mostly
/// in name order, and sorting 80,000 names from a hash map's order cost 2% of a simulation.
#[derive(Debug, Clone)]
struct ByNamespace<V>(BTreeMap<String, Names<V>>);

type Names<V> = IndexMap<String, V, BuildHasherDefault<WordHasher>>;

impl<V> Default for ByNamespace<V> {
    fn default() -> Self {
        ByNamespace(BTreeMap::new())
    }
}

impl<V> ByNamespace<V> {
    fn get(&self, namespace: &str, name: &str) -> Option<&V> {
        self.0.get(namespace)?.get(name)
    }

    fn get_mut(&mut self, namespace: &str, name: &str) -> Option<&mut V> {
        self.0.get_mut(namespace)?.get_mut(name)
    }

    fn contains(&self, namespace: &str, name: &str) -> bool {
        self.get(namespace, name).is_some()
    }

    /// Adds or replaces a value (a replaced one keeps its place).
    fn insert(&mut self, (namespace, name): (String, String), value: V) {
        self.0.entry(namespace).or_default().insert(name, value);
    }

    /// [`ByNamespace::insert`] with the namespace copied only when it is new.
    fn insert_in(&mut self, namespace: &str, name: String, value: V) {
        match self.0.get_mut(namespace) {
            Some(names) => {
                names.insert(name, value);
            }
            None => self.insert((namespace.to_string(), name), value),
        }
    }

    /// Adds a value unless one of the same name is there (the first of duplicates stays).
    fn insert_first(&mut self, key: (String, String), value: impl FnOnce() -> V) {
        if !self.contains(&key.0, &key.1) {
            self.insert(key, value());
        }
    }

    fn remove(&mut self, namespace: &str, name: &str) -> Option<V> {
        let names = self.0.get_mut(namespace)?;
        // The last entry takes the removed one's place: iteration sorts anyway.
        let value = names.swap_remove(name)?;
        if names.is_empty() {
            self.0.remove(namespace);
        }
        Some(value)
    }

    /// (namespace, name, value) in (namespace, name) order.
    fn entries(&self) -> impl Iterator<Item = (&str, &str, &V)> {
        self.0.iter().flat_map(|(namespace, names)| {
            by_name(names.iter())
                .into_iter()
                .map(move |(name, value)| (namespace.as_str(), name.as_str(), value))
        })
    }

    /// `f(namespace, name, value)` of every entry, in (namespace, name) order.
    fn into_mapped<T>(self, mut f: impl FnMut(&str, &str, V) -> T) -> Vec<T> {
        let mut out = Vec::new();
        for (namespace, names) in self.0 {
            out.extend(
                by_name(names.into_iter())
                    .into_iter()
                    .map(|(name, value)| f(&namespace, &name, value)),
            );
        }
        out
    }
}

/// One namespace's entries, in name order. Stable and adaptive: runs already in order cost
/// one comparison per entry.
fn by_name<K: Ord, V>(entries: impl Iterator<Item = (K, V)>) -> Vec<(K, V)> {
    let mut sorted: Vec<(K, V)> = entries.collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
}

/// An object's namespace as the API server defaults it (`default` when unset).
pub(crate) fn namespace_of(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

/// The name of the claim made from a template for the pod's claim `pod_claim_name`:
/// `<pod name>-<pod claim name>` (the real controller appends a random suffix; a simulation
/// must be reproducible).
fn generated_claim_name(pod_name: &str, pod_claim_name: &str) -> String {
    [pod_name, "-", pod_claim_name].concat()
}

/// An object's (namespace, name) key, as the stores hold it.
pub(crate) fn key_of(meta: &ObjectMeta) -> (String, String) {
    (
        namespace_of(meta).to_string(),
        meta.name.clone().unwrap_or_default(),
    )
}

impl ClaimStore {
    pub fn new(input: &SimInput<'_>) -> ClaimStore {
        let mut store = ClaimStore::default();
        for claim in &input.claims {
            let key = key_of(&claim.metadata);
            store
                .claims
                .insert_first(key, || StoredClaim::Object(Box::new((*claim).clone())));
        }
        for template in &input.templates {
            let key = key_of(&template.metadata);
            store
                .templates
                .insert_first(key, || Arc::new((*template).clone()));
        }
        store
    }

    /// Claims made from templates from now on are kept as [`LeanClaim`]s, made into objects
    /// only when read as objects: for a caller that reads a made claim's allocation and
    /// status but not its object (the reference loop handing its outcomes over, which made
    /// an object of every claim from a template and read its name back).
    pub(crate) fn make_claims_lean(&mut self) {
        self.lean = true;
    }

    /// Claims that have an allocation, in (namespace, name) order.
    pub fn allocated(&self) -> impl Iterator<Item = (&ResourceClaim, &AllocationResult)> {
        self.claims
            .entries()
            .filter(|(_, _, c)| c.allocation().is_some())
            .filter_map(|(namespace, name, c)| {
                let claim = c.object(namespace, name);
                let allocation = claim.status.as_ref()?.allocation.as_ref()?;
                Some((claim, allocation))
            })
    }

    /// The claim `namespace/name`; a claim the model made from a template is made into an
    /// object now, if it was not yet.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&ResourceClaim> {
        self.claims
            .get(namespace, name)
            .map(|claim| claim.object(namespace, name))
    }

    /// Whether the store has the claim `namespace/name`.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.claims.contains(namespace, name)
    }

    /// The allocation of the claim `namespace/name` (`None`: no such claim, or not allocated).
    pub fn allocation(&self, namespace: &str, name: &str) -> Option<&AllocationResult> {
        self.claims.get(namespace, name)?.allocation()
    }

    /// Whether the claim `namespace/name` exists and its controller is the pod with this UID.
    pub fn controlled_by_uid(&self, namespace: &str, name: &str, uid: &str) -> bool {
        self.claims
            .get(namespace, name)
            .is_some_and(|claim| claim.controlled_by_uid(uid))
    }

    /// Every claim in (namespace, name) order.
    pub fn all(&self) -> impl Iterator<Item = &ResourceClaim> {
        self.claims
            .entries()
            .map(|(namespace, name, claim)| claim.object(namespace, name))
    }

    /// Every claim in (namespace, name) order, taken out of the store as it holds them (boxed:
    /// a simulation's answer is most of its memory, and unboxing copied every claim once more
    /// at the peak).
    pub fn into_all(self) -> Vec<Box<ResourceClaim>> {
        self.claims
            .into_mapped(|namespace, name, claim| claim.into_object(namespace, name))
    }

    /// Sets a claim's allocation and reserves it for the pod, with one lookup. A claim the
    /// model made from a template shares the allocation; any other claim holds a copy.
    pub fn allocate_and_reserve(
        &mut self,
        namespace: &str,
        name: &str,
        allocation: Arc<Allocation>,
        pod_name: &str,
        pod_uid: &str,
    ) {
        if let Some(claim) = self.claims.get_mut(namespace, name) {
            claim.set_allocation(NewAllocation::Shared(allocation));
            claim.reserve(pod_name, pod_uid);
        }
    }

    /// Sets a claim's allocation to one that may be shared with other claims: a claim the
    /// model made from a template holds it as it is, any other claim a copy.
    pub fn set_shared_allocation(
        &mut self,
        namespace: &str,
        name: &str,
        allocation: Arc<Allocation>,
    ) {
        if let Some(claim) = self.claims.get_mut(namespace, name) {
            claim.set_allocation(NewAllocation::Shared(allocation));
        }
    }

    pub fn set_allocation(&mut self, namespace: &str, name: &str, allocation: AllocationResult) {
        if let Some(claim) = self.claims.get_mut(namespace, name) {
            claim.set_allocation(NewAllocation::Owned(allocation));
        }
    }

    /// Creates the claim `namespace/name` (a generated name) from the template in the pod's
    /// namespace, owned by the pod (by its UID as the input has it); `false` when the
    /// template is missing.
    ///
    /// A claim in `made` for the same entry, template, name and owner is taken instead of
    /// making it again: it was made the same way, from the same template.
    fn create_from_template(
        &mut self,
        (namespace, name): (&str, &str),
        template_name: &str,
        pod: &Pod,
        pod_claim_name: &str,
        made: &mut MadeClaims,
    ) -> bool {
        let owner_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        let claim =
            match made.take_claim((namespace, name), template_name, pod_claim_name, owner_uid) {
                Some(claim) => claim,
                None if self.lean => {
                    return self.make_from_template(
                        namespace,
                        name,
                        template_name,
                        pod_name,
                        pod_claim_name,
                        owner_uid,
                    );
                }
                None => {
                    let Some(template) = self.templates.get(namespace, template_name) else {
                        return false;
                    };
                    Box::new(claim_from_template(
                        template,
                        namespace,
                        pod_name,
                        name,
                        pod_claim_name,
                        owner_uid,
                    ))
                }
            };
        self.claims
            .insert_in(namespace, name.to_string(), StoredClaim::Object(claim));
        true
    }

    /// [`ClaimStore::create_from_template`] for the scheduler model, owned by the pod with
    /// `owner_uid`: the claim is kept as a [`LeanClaim`]. `false` when the template is missing.
    fn make_from_template(
        &mut self,
        namespace: &str,
        name: &str,
        template_name: &str,
        pod_name: &str,
        pod_claim_name: &str,
        owner_uid: &str,
    ) -> bool {
        let Some(template) = self.templates.get(namespace, template_name) else {
            return false;
        };
        let template = Arc::clone(template);
        let made = LeanClaim {
            template,
            pod_name: pod_name.to_string(),
            pod_claim_name: pod_claim_name.to_string(),
            owner_uid: owner_uid.to_string(),
            status: None,
            reserved_by_owner: false,
            allocation: None,
            object: OnceLock::new(),
        };
        self.claims.insert_in(
            namespace,
            name.to_string(),
            StoredClaim::Made(Box::new(made)),
        );
        true
    }

    /// The names of the pod's claims in `spec.resourceClaims` order, each once, creating claims
    /// from templates as `<pod name>-<pod claim name>` (the real controller appends a random
    /// suffix; a simulation must be reproducible).
    pub fn claims_of_pod(&mut self, pod: &Pod) -> Result<Vec<String>, PodClaimError> {
        let claims = self.claims_of_pod_made(pod, &mut MadeClaims::default())?;
        Ok(claims.into_iter().map(|(name, _)| name).collect())
    }

    /// [`ClaimStore::claims_of_pod`], taking the claims it creates from `made` where they
    /// were made ahead ([`TemplateMaker`]). Each name comes with the name of the template the
    /// claim was made from by this call, whose spec it has; `None` for a claim that was there.
    pub(crate) fn claims_of_pod_made<'p>(
        &mut self,
        pod: &'p Pod,
        made: &mut MadeClaims,
    ) -> Result<Vec<(String, Option<&'p str>)>, PodClaimError> {
        let namespace = namespace_of(&pod.metadata);
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        let mut names: Vec<(String, Option<&'p str>)> = Vec::new();
        for entry in pod
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_deref())
            .unwrap_or_default()
        {
            let name = if let Some(claim_name) = &entry.resource_claim_name {
                if !self.claims.contains(namespace, claim_name) {
                    return Err(PodClaimError(format!(
                        "resourceclaim \"{claim_name}\" not found"
                    )));
                }
                (claim_name.clone(), None)
            } else if let Some(template_name) = &entry.resource_claim_template_name {
                let generated = generated_claim_name(pod_name, &entry.name);
                if self.claims.contains(namespace, &generated) {
                    (generated, None)
                } else if self.create_from_template(
                    (namespace, &generated),
                    template_name,
                    pod,
                    &entry.name,
                    made,
                ) {
                    (generated, Some(template_name.as_str()))
                } else {
                    return Err(PodClaimError(format!(
                        "pod \"{namespace}/{pod_name}\": ResourceClaim not created yet: resourceclaimtemplate.resource.k8s.io \"{template_name}\" not found"
                    )));
                }
            } else {
                return Err(PodClaimError(format!(
                    "pod \"{namespace}/{pod_name}\", spec.resourceClaims[{:?}]: none of the supported fields are set",
                    entry.name
                )));
            };
            if !names.iter().any(|(known, _)| *known == name.0) {
                names.push(name);
            }
        }
        Ok(names)
    }
}

/// The prepared specs of the claims a simulation makes from templates, by template
/// (namespace, name). Every claim made from a template has the template's spec, so the spec
/// is prepared for the first of them and shared by the others ([`PreparedClaim::with_spec`]);
/// a claim that was in the store already (made by the input's controller, perhaps from an
/// older version of the template) is prepared from its own spec.
#[derive(Debug, Default)]
pub(crate) struct TemplateSpecs(BTreeMap<String, Names<Arc<PreparedSpec>>>);

impl TemplateSpecs {
    /// The claim `namespace/name` made from `template`, with the spec prepared for that
    /// template, if one was.
    pub(crate) fn shared(
        &self,
        namespace: &str,
        name: &str,
        template: &str,
    ) -> Option<PreparedClaim> {
        let spec = self.0.get(namespace)?.get(template)?;
        Some(PreparedClaim::with_spec(
            namespace.to_string(),
            name.to_string(),
            Arc::clone(spec),
        ))
    }

    /// The claim prepared for the allocator; `template`: the template the claim was just
    /// made from in the claim's namespace, if it was.
    pub(crate) fn prepare(
        &mut self,
        index: &Index,
        claim: &ResourceClaim,
        template: Option<&str>,
    ) -> PreparedClaim {
        let Some(template) = template else {
            return PreparedClaim::new(index, claim);
        };
        let namespace = namespace_of(&claim.metadata);
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        if let Some(prepared) = self.shared(namespace, name, template) {
            return prepared;
        }
        let prepared = PreparedClaim::new(index, claim);
        self.0
            .entry(namespace.to_string())
            .or_default()
            .insert(template.to_string(), Arc::clone(prepared.spec()));
        prepared
    }
}

/// The template named by the pod's `spec.resourceClaims` entry `pod_claim_name`.
pub(crate) fn template_of<'p>(pod: &'p Pod, pod_claim_name: &str) -> Option<&'p str> {
    template_entries(pod)
        .find(|(entry, _)| *entry == pod_claim_name)
        .map(|(_, template)| template)
}

/// One entry of a pod's `spec.resourceClaims`, resolved to a claim of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodClaim {
    /// The entry's `name` (what containers reference).
    pub pod_claim_name: String,
    pub claim_name: String,
    /// Created from a ResourceClaimTemplate (by the input's controller or by the simulation).
    pub from_template: bool,
    /// Created by this resolution from the template its entry names: its spec is that
    /// template's (so the spec prepared for the template serves it).
    pub made_now: bool,
}

/// Whether resolving a pod's claims creates missing claims from templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TemplateClaims {
    Create,
    ExistingOnly,
}

/// A deterministic UID for an object that has none (hand-written input): the scheduler and
/// the eviction controller match pods by UID in `reservedFor`.
pub fn stable_uid(kind: &str, namespace: &str, name: &str) -> String {
    dra_alloc::stable_uuid_of_parts(&[kind.as_bytes(), namespace.as_bytes(), name.as_bytes()])
}

/// The pod's UID, or a [`stable_uid`] when the input has none.
pub fn pod_uid(pod: &Pod) -> Cow<'_, str> {
    match pod.metadata.uid.as_deref().filter(|u| !u.is_empty()) {
        Some(uid) => Cow::Borrowed(uid),
        None => Cow::Owned(stable_uid(
            "Pod",
            namespace_of(&pod.metadata),
            pod.metadata.name.as_deref().unwrap_or_default(),
        )),
    }
}

/// `metav1.IsControlledBy(claim, pod)`, by UID (or by name when the input gives the pod no
/// UID and the simulation derived one).
fn controlled_by(claim: &ResourceClaim, pod: &Pod, uid: &str) -> bool {
    pod_controllers(claim).any(|o| {
        o.uid == uid || (pod.metadata.uid.is_none() && Some(&o.name) == pod.metadata.name.as_ref())
    })
}

/// The claim's owner references that name a Pod as its controller.
fn pod_controllers(claim: &ResourceClaim) -> impl Iterator<Item = &OwnerReference> {
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.controller == Some(true) && o.kind == "Pod")
}

impl ClaimStore {
    /// The claims of a pod as kube-scheduler's `foreachPodResourceClaim` finds them, with the
    /// resourceclaim controller simulated: a template entry without a
    /// `status.resourceClaimStatuses` entry gets its claim `<pod name>-<pod claim name>` (the
    /// real controller appends a random suffix). Errors are upstream's reasons for the pod
    /// being unschedulable. A claim named twice is returned once.
    pub fn resolve_pod_claims(&mut self, pod: &Pod) -> Result<Vec<PodClaim>, PodClaimError> {
        self.pod_claims(pod, TemplateClaims::Create)
    }

    /// The claims of a pod that exist already (a bound pod: the controller created its
    /// template claims long ago). A template entry without a status entry uses the claim
    /// `<pod name>-<pod claim name>` if the store has it and skips the entry otherwise.
    pub fn existing_pod_claims(&mut self, pod: &Pod) -> Result<Vec<PodClaim>, PodClaimError> {
        self.pod_claims(pod, TemplateClaims::ExistingOnly)
    }

    fn pod_claims(
        &mut self,
        pod: &Pod,
        templates: TemplateClaims,
    ) -> Result<Vec<PodClaim>, PodClaimError> {
        let namespace = namespace_of(&pod.metadata);
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        let uid = pod_uid(pod);
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.resource_claim_statuses.as_deref())
            .unwrap_or_default();
        let entries = pod
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_deref())
            .unwrap_or_default();
        let mut resolved: Vec<PodClaim> = Vec::with_capacity(entries.len());
        for entry in entries {
            let (claim_name, from_template) = if let Some(name) = &entry.resource_claim_name {
                (name.clone(), false)
            } else if let Some(template_name) = &entry.resource_claim_template_name {
                match statuses.iter().find(|s| s.name == entry.name) {
                    // The controller decided that no claim is needed.
                    Some(status) if status.resource_claim_name.is_none() => continue,
                    Some(status) => (status.resource_claim_name.clone().unwrap_or_default(), true),
                    None => {
                        let generated = generated_claim_name(pod_name, &entry.name);
                        if !self.claims.contains(namespace, &generated) {
                            if templates == TemplateClaims::ExistingOnly {
                                continue;
                            }
                            let made = self.make_from_template(
                                namespace,
                                &generated,
                                template_name,
                                pod_name,
                                &entry.name,
                                &uid,
                            );
                            if !made {
                                return Err(PodClaimError(format!(
                                    "pod \"{namespace}/{pod_name}\": ResourceClaim not created yet (resourceclaimtemplate.resource.k8s.io \"{template_name}\" not found)"
                                )));
                            }
                            // Just created for this pod: not being deleted, and the pod is
                            // its owner. A new name is not among those resolved so far.
                            resolved.push(PodClaim {
                                pod_claim_name: entry.name.clone(),
                                claim_name: generated,
                                from_template: true,
                                made_now: true,
                            });
                            continue;
                        }
                        (generated, true)
                    }
                }
            } else {
                return Err(PodClaimError(format!(
                    "pod \"{namespace}/{pod_name}\", spec.resourceClaims[{:?}]: none of the supported fields are set",
                    entry.name
                )));
            };
            let Some(claim) = self.claims.get(namespace, &claim_name) else {
                return Err(PodClaimError(format!(
                    "resourceclaim.resource.k8s.io \"{claim_name}\" not found"
                )));
            };
            if claim.is_being_deleted() {
                return Err(PodClaimError(format!(
                    "resourceclaim \"{claim_name}\" is being deleted"
                )));
            }
            if from_template && !claim.controlled_by(pod, &uid) {
                return Err(PodClaimError(format!(
                    "ResourceClaim {namespace}/{claim_name} was not created for Pod {namespace}/{pod_name} (Pod is not owner)"
                )));
            }
            if !resolved.iter().any(|r| r.claim_name == claim_name) {
                resolved.push(PodClaim {
                    pod_claim_name: entry.name.clone(),
                    claim_name,
                    from_template,
                    made_now: false,
                });
            }
        }
        Ok(resolved)
    }

    /// Adds a claim (the special extended-resource claim); replaces one of the same name.
    pub fn insert_generated(&mut self, claim: ResourceClaim) {
        let key = key_of(&claim.metadata);
        self.claims
            .insert(key, StoredClaim::Object(Box::new(claim)));
    }

    /// Removes a claim (deleted with its pod); returns it.
    pub fn remove(&mut self, namespace: &str, name: &str) -> Option<ResourceClaim> {
        self.claims
            .remove(namespace, name)
            .map(|claim| *claim.into_object(namespace, name))
    }

    /// Clears a claim's allocation (the resourceclaim controller deallocates a claim nobody
    /// reserves any more); returns the old allocation.
    pub fn clear_allocation(&mut self, namespace: &str, name: &str) -> Option<AllocationResult> {
        self.claims.get_mut(namespace, name)?.clear_allocation()
    }

    /// `status.reservedFor` of a claim.
    pub fn reserved_for(
        &self,
        namespace: &str,
        name: &str,
    ) -> Cow<'_, [ResourceClaimConsumerReference]> {
        self.claims
            .get(namespace, name)
            .map(StoredClaim::reserved_for)
            .unwrap_or_default()
    }

    /// Adds a pod to `status.reservedFor` unless it is there already.
    pub fn reserve(&mut self, namespace: &str, name: &str, pod_name: &str, pod_uid: &str) {
        if let Some(claim) = self.claims.get_mut(namespace, name) {
            claim.reserve(pod_name, pod_uid);
        }
    }

    /// Removes a pod from `status.reservedFor` (by UID, or by name for entries without one);
    /// returns how many consumers remain.
    pub fn unreserve(
        &mut self,
        namespace: &str,
        name: &str,
        pod_name: &str,
        pod_uid: &str,
    ) -> usize {
        let Some(claim) = self.claims.get_mut(namespace, name) else {
            return 0;
        };
        let status = claim.status_mut();
        let Some(list) = status.as_mut().and_then(|s| s.reserved_for.as_mut()) else {
            return 0;
        };
        list.retain(|r| {
            let is_pod = r.resource == "pods" && r.api_group.as_deref().unwrap_or("").is_empty();
            !(is_pod && (r.uid == pod_uid || (r.uid.is_empty() && r.name == pod_name)))
        });
        let remaining = list.len();
        if remaining == 0
            && let Some(status) = status.as_mut()
        {
            status.reserved_for = None;
        }
        remaining
    }
}

/// Adds the pod to a claim's `status.reservedFor` unless its UID is there.
fn reserve_in(status: &mut ResourceClaimStatus, pod_name: &str, pod_uid: &str) {
    let list = status.reserved_for.get_or_insert_with(Vec::new);
    if !list.iter().any(|r| r.uid == pod_uid) {
        // Most claims are reserved for one pod.
        dra_types::lists::reserve_first(list);
        list.push(ResourceClaimConsumerReference {
            api_group: None,
            name: pod_name.to_string(),
            resource: "pods".to_string(),
            uid: pod_uid.to_string(),
        });
    }
}

/// Makes the claims a pod's template entries create in the reference loop
/// ([`ClaimStore::claims_of_pod`]), on any thread, ahead of the pod's turn: a claim from a
/// template depends on the template and the pod alone, while whether it is created (a claim
/// of that name may exist, an earlier entry may fail) is left to the store when the pod's
/// turn comes. Only the claim object is made: it stays in the store, so the caller never
/// frees memory of the thread that made it. Preparing the claim for the allocator ahead too
/// cost the caller more in freeing the preparation than it saved, and the scheduler model,
/// whose pods cost twice the reference loop's, ran slower with a helper making its claims
/// (BENCHMARKS.md, "Claims from templates made ahead").
#[derive(Debug)]
pub(crate) struct TemplateMaker<'a> {
    /// The store's templates: the first of duplicates, as [`ClaimStore::new`] keeps them.
    templates: ByNamespace<&'a ResourceClaimTemplate>,
}

impl<'a> TemplateMaker<'a> {
    pub(crate) fn new(input: &SimInput<'a>) -> TemplateMaker<'a> {
        let mut templates = ByNamespace::default();
        for template in &input.templates {
            templates.insert_first(key_of(&template.metadata), || *template);
        }
        TemplateMaker { templates }
    }

    /// Whether the pod has an entry that a template's claim may be made for.
    pub(crate) fn has_work(pod: &Pod) -> bool {
        template_entries(pod).next().is_some()
    }

    /// The claims of the pod's template entries whose template exists, in entry order.
    pub(crate) fn make<'p>(&self, pod: &'p Pod) -> MadeClaims<'p> {
        let namespace = namespace_of(&pod.metadata);
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        // As the reference loop's `claims_of_pod` names the owner.
        let owner_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let mut made = Vec::new();
        for (pod_claim_name, template_name) in template_entries(pod) {
            let Some(template) = self.templates.get(namespace, template_name) else {
                continue;
            };
            let name = generated_claim_name(pod_name, pod_claim_name);
            let claim = claim_from_template(
                template,
                namespace,
                pod_name,
                &name,
                pod_claim_name,
                owner_uid,
            );
            made.push(MadeClaim {
                pod_claim_name,
                template_name,
                claim: Some(Box::new(claim)),
            });
        }
        MadeClaims(made)
    }
}

/// A pod's entries that name a template: (entry name, template name).
fn template_entries(pod: &Pod) -> impl Iterator<Item = (&str, &str)> {
    pod.spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|entry| entry.resource_claim_name.is_none())
        .filter_map(|entry| {
            let template = entry.resource_claim_template_name.as_deref()?;
            Some((entry.name.as_str(), template))
        })
}

/// A claim made ahead by a [`TemplateMaker`]. What it is compared by is borrowed from the pod
/// or held by the claim: what the thread that made it allocated and the caller frees is
/// little.
#[derive(Debug)]
struct MadeClaim<'p> {
    pod_claim_name: &'p str,
    template_name: &'p str,
    /// Taken when the store adds it.
    claim: Option<Box<ResourceClaim>>,
}

/// The claims made ahead for one pod ([`TemplateMaker::make`]); empty where none were.
#[derive(Debug, Default)]
pub(crate) struct MadeClaims<'p>(Vec<MadeClaim<'p>>);

impl MadeClaims<'_> {
    /// The claim made for this entry, template, (namespace, name) and owner, if one was.
    fn take_claim(
        &mut self,
        (namespace, name): (&str, &str),
        template_name: &str,
        pod_claim_name: &str,
        owner_uid: &str,
    ) -> Option<Box<ResourceClaim>> {
        self.0
            .iter_mut()
            .find(|m| {
                m.template_name == template_name
                    && m.pod_claim_name == pod_claim_name
                    && m.claim.as_ref().is_some_and(|claim| {
                        let meta = &claim.metadata;
                        meta.name.as_deref() == Some(name)
                            && meta.namespace.as_deref() == Some(namespace)
                            && meta
                                .owner_references
                                .iter()
                                .flatten()
                                .all(|owner| owner.uid == owner_uid)
                    })
            })?
            .claim
            .take()
    }
}

/// The claim `namespace/name` the resourceclaim controller makes from `template` for the
/// pod `pod_name`'s entry `pod_claim_name`, owned by the pod with `owner_uid`.
fn claim_from_template(
    template: &ResourceClaimTemplate,
    namespace: &str,
    pod_name: &str,
    name: &str,
    pod_claim_name: &str,
    owner_uid: &str,
) -> ResourceClaim {
    let spec = template.spec.as_ref();
    let template_meta = spec.and_then(|s| s.metadata.as_ref());
    let mut annotations = template_meta
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(
        POD_CLAIM_NAME_ANNOTATION.to_string(),
        pod_claim_name.to_string(),
    );
    ResourceClaim {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: template_meta.and_then(|m| m.labels.clone()),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".to_string(),
                kind: "Pod".to_string(),
                name: pod_name.to_string(),
                uid: owner_uid.to_string(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: spec.and_then(|s| s.spec.clone()),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_takes_room_for_one_and_is_not_repeated() {
        let mut store = ClaimStore::default();
        let mut claim = ResourceClaim::default();
        claim.metadata.name = Some("shared".to_string());
        store.insert_generated(claim);
        store.reserve("default", "shared", "a", "uid-a");
        let reserved = store.reserved_for("default", "shared");
        assert_eq!(reserved.len(), 1);
        let list = store
            .get("default", "shared")
            .and_then(|c| c.status.as_ref())
            .and_then(|s| s.reserved_for.as_ref())
            .expect("reserved");
        assert_eq!(list.capacity(), 1);
        store.reserve("default", "shared", "a", "uid-a");
        store.reserve("default", "shared", "b", "uid-b");
        let reserved = store.reserved_for("default", "shared");
        let names: Vec<&str> = reserved.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    /// Claims are listed by namespace, then name, whatever order they were added, replaced
    /// and removed in.
    #[test]
    fn claims_are_listed_in_name_order() {
        let mut store = ClaimStore::default();
        let add = |store: &mut ClaimStore, namespace: &str, name: &str, label: &str| {
            let mut claim = ResourceClaim::default();
            claim.metadata.namespace = Some(namespace.to_string());
            claim.metadata.name = Some(name.to_string());
            claim.metadata.labels = Some(BTreeMap::from([("v".to_string(), label.to_string())]));
            store.insert_generated(claim);
        };
        for (namespace, name) in [
            ("b", "pod-2"),
            ("a", "pod-10"),
            ("b", "pod-1"),
            ("a", "pod-1"),
            ("b", "pod-3"),
            ("b", "pod-0"),
            ("a", "pod-09"),
        ] {
            add(&mut store, namespace, name, "first");
        }
        add(&mut store, "b", "pod-2", "second");
        assert!(store.remove("b", "pod-1").is_some());
        let listed = |claims: Vec<&ResourceClaim>| -> Vec<String> {
            claims
                .iter()
                .map(|c| {
                    let meta = &c.metadata;
                    let label = &meta.labels.as_ref().expect("labels")["v"];
                    format!(
                        "{}/{}:{label}",
                        meta.namespace.as_deref().unwrap_or_default(),
                        meta.name.as_deref().unwrap_or_default()
                    )
                })
                .collect()
        };
        let expected = [
            "a/pod-09:first",
            "a/pod-1:first",
            "a/pod-10:first",
            "b/pod-0:first",
            "b/pod-2:second",
            "b/pod-3:first",
        ];
        assert_eq!(listed(store.all().collect()), expected);
        let owned = store.into_all();
        assert_eq!(listed(owned.iter().map(|c| &**c).collect()), expected);
    }

    /// A store with one template (labels, annotations and a spec), and a pod that names it.
    fn store_and_pod() -> (ClaimStore, Pod) {
        let template: ResourceClaimTemplate = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu", "namespace": "team"},
            "spec": {
                "metadata": {"labels": {"app": "train"}, "annotations": {"note": "kept"}},
                "spec": {"devices": {"requests": [
                    {"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}
                ]}}
            }
        }))
        .expect("template");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "trainer", "namespace": "team", "uid": "uid-trainer"},
            "spec": {
                "containers": [{"name": "c"}],
                "resourceClaims": [{"name": "accel", "resourceClaimTemplateName": "gpu"}]
            }
        }))
        .expect("pod");
        let mut store = ClaimStore::default();
        store
            .templates
            .insert(key_of(&template.metadata), Arc::new(template));
        (store, pod)
    }

    fn allocation(device: &str) -> AllocationResult {
        crate::test_support::allocation("g", "gpu.example.com", "node-a", &[device])
    }

    /// The trainer pod's claim allocated (gpu-0) and reserved for the trainer.
    fn allocate_for_trainer(store: &mut ClaimStore) {
        store.allocate_and_reserve(
            "team",
            "trainer-accel",
            Arc::new(allocation("gpu-0").into()),
            "trainer",
            "uid-trainer",
        );
    }

    /// The object of a claim the model made from a template is the one the reference loop
    /// makes from the same template for the same pod, with the status it was given, whether
    /// the status changed before or after the object was first read.
    #[test]
    fn a_lean_claim_reads_as_the_claim_made_from_its_template() {
        let (mut store, pod) = store_and_pod();
        let resolved = store.resolve_pod_claims(&pod).expect("resolves");
        assert_eq!(resolved.len(), 1);
        assert!(resolved[0].made_now && resolved[0].from_template);
        assert_eq!(resolved[0].claim_name, "trainer-accel");
        assert!(matches!(
            store.claims.get("team", "trainer-accel"),
            Some(StoredClaim::Made(_))
        ));

        let (mut reference, _) = store_and_pod();
        let names = reference.claims_of_pod(&pod).expect("resolves");
        assert_eq!(names, ["trainer-accel"]);
        let mut expected = reference
            .get("team", "trainer-accel")
            .expect("made")
            .clone();
        assert_eq!(store.get("team", "trainer-accel"), Some(&expected));
        assert_eq!(
            expected.metadata.annotations.as_ref().expect("annotations")[POD_CLAIM_NAME_ANNOTATION],
            "accel"
        );
        assert_eq!(
            expected.metadata.owner_references.as_ref().expect("owner")[0].uid,
            "uid-trainer"
        );

        // Read above, so the status change turns the entry into its object.
        allocate_for_trainer(&mut store);
        assert!(matches!(
            store.claims.get("team", "trainer-accel"),
            Some(StoredClaim::Object(_))
        ));
        allocate_for_trainer(&mut reference);
        expected = reference
            .get("team", "trainer-accel")
            .expect("made")
            .clone();
        assert!(
            expected
                .status
                .as_ref()
                .is_some_and(|s| s.allocation.is_some())
        );
        assert_eq!(store.get("team", "trainer-accel"), Some(&expected));

        // Changed while lean, read afterwards.
        let (mut lean, _) = store_and_pod();
        lean.resolve_pod_claims(&pod).expect("resolves");
        allocate_for_trainer(&mut lean);
        // Reserved for the pod it was made for: kept implicit, and read as written out.
        assert!(matches!(
            lean.claims.get("team", "trainer-accel"),
            Some(StoredClaim::Made(made)) if made.reserved_by_owner
        ));
        lean.reserve("team", "trainer-accel", "trainer", "uid-trainer");
        let reserved = lean.reserved_for("team", "trainer-accel");
        let uids: Vec<&str> = reserved.iter().map(|r| r.uid.as_str()).collect();
        assert_eq!(uids, ["uid-trainer"]);
        drop(reserved);
        let read = lean.clone();
        assert_eq!(read.get("team", "trainer-accel"), Some(&expected));
        lean.reserve("team", "trainer-accel", "other", "uid-other");
        assert_eq!(lean.reserved_for("team", "trainer-accel").len(), 2);
        assert!(matches!(
            lean.claims.get("team", "trainer-accel"),
            Some(StoredClaim::Made(_))
        ));
        assert_eq!(
            lean.unreserve("team", "trainer-accel", "other", "uid-other"),
            1
        );
        // Deallocated while lean: the object keeps the rest of its status.
        let mut deallocated = lean.clone();
        assert_eq!(
            deallocated.clear_allocation("team", "trainer-accel"),
            Some(allocation("gpu-0"))
        );
        let object = deallocated.get("team", "trainer-accel").expect("claim");
        let status = object.status.as_ref().expect("status");
        assert!(status.allocation.is_none());
        assert_eq!(status.reserved_for.as_ref().map(Vec::len), Some(1));
        assert_eq!(lean.get("team", "trainer-accel"), Some(&expected));
        assert_eq!(lean.all().collect::<Vec<_>>(), [&expected]);
        assert_eq!(
            lean.clear_allocation("team", "trainer-accel"),
            Some(allocation("gpu-0"))
        );
        assert!(lean.allocation("team", "trainer-accel").is_none());
        assert_eq!(lean.reserved_for("team", "trainer-accel").len(), 1);
        let taken = lean.into_all();
        assert_eq!(taken.len(), 1);
        assert!(
            taken[0]
                .status
                .as_ref()
                .is_some_and(|s| s.allocation.is_none())
        );
        assert_eq!(taken[0].metadata, expected.metadata);
    }

    /// Resolving the pod again finds the claim it made and the pod as its owner; a pod of
    /// the same name with another UID is not its owner.
    #[test]
    fn a_lean_claim_knows_its_owner() {
        let (mut store, pod) = store_and_pod();
        store.resolve_pod_claims(&pod).expect("resolves");
        let again = store.resolve_pod_claims(&pod).expect("resolves");
        assert_eq!(again.len(), 1);
        assert!(!again[0].made_now && again[0].from_template);
        assert!(store.controlled_by_uid("team", "trainer-accel", "uid-trainer"));
        assert!(!store.controlled_by_uid("team", "trainer-accel", "uid-other"));
        let mut impostor = pod.clone();
        impostor.metadata.uid = Some("uid-other".to_string());
        let error = store
            .resolve_pod_claims(&impostor)
            .expect_err("not the owner");
        assert!(error.0.contains("Pod is not owner"), "{}", error.0);
        // Without a UID in the input, the pod is matched by name.
        let mut unnamed = pod.clone();
        unnamed.metadata.uid = None;
        assert!(store.resolve_pod_claims(&unnamed).is_ok());
        let removed = store.remove("team", "trainer-accel").expect("removed");
        assert_eq!(removed.metadata.name.as_deref(), Some("trainer-accel"));
        assert!(!store.contains("team", "trainer-accel"));
    }
}
