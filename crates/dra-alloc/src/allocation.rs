//! An allocation as a simulation keeps it: the Kubernetes `AllocationResult`, or the search's
//! picks with what it takes to write that object when someone reads it.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::resource::v1::AllocationResult;
use serde::{Serialize, Serializer};

use crate::claims::PreparedClaim;
use crate::index::{Index, NodeId};
use crate::result::ClaimPicks;

/// A claim's allocation. It reads as the `AllocationResult` (`Deref`, `Serialize`), whatever
/// its form: an allocation made from picks ([`Allocation::from_picks`]) writes the object on
/// its first read, the same object [`crate::allocate`] returns for the same search.
///
/// A scheduled pod's allocation is read when it is printed, rarely before: keeping the picks
/// (a device index per device) instead of the object (four strings per device, six
/// allocations of node selector) is most of what a large simulation's queue would otherwise
/// allocate per pod.
pub struct Allocation(Form);

enum Form {
    Written(AllocationResult),
    Picked(Picks),
}

/// Picks with what writing their object takes, and the object once written.
struct Picks {
    index: Arc<Index>,
    node: NodeId,
    claim: PreparedClaim,
    picks: ClaimPicks,
    written: OnceLock<Box<AllocationResult>>,
}

impl Picks {
    fn write(&self) -> AllocationResult {
        self.picks.build(&self.index, self.node, &self.claim)
    }
}

impl Allocation {
    /// An allocation that is an object already.
    pub fn new(result: AllocationResult) -> Allocation {
        Allocation(Form::Written(result))
    }

    /// The allocation of `claim` on `node` that `picks` describe, written when first read.
    pub fn from_picks(
        index: &Arc<Index>,
        node: NodeId,
        claim: PreparedClaim,
        picks: ClaimPicks,
    ) -> Allocation {
        Allocation(Form::Picked(Picks {
            index: Arc::clone(index),
            node,
            claim,
            picks,
            written: OnceLock::new(),
        }))
    }

    /// The object without keeping it: borrowed when it is written already, otherwise
    /// written for the caller alone. For readers that read every allocation once (printing a
    /// simulation's answer): kept objects would all be fresh memory at once, the very memory
    /// the picks spared.
    pub fn result(&self) -> Cow<'_, AllocationResult> {
        match &self.0 {
            Form::Written(result) => Cow::Borrowed(result),
            Form::Picked(picks) => match picks.written.get() {
                Some(result) => Cow::Borrowed(result),
                None => Cow::Owned(picks.write()),
            },
        }
    }

    /// The object, taken out (written now if it was not yet).
    pub fn into_result(self) -> AllocationResult {
        match self.0 {
            Form::Written(result) => result,
            Form::Picked(picks) => {
                let Picks {
                    index,
                    node,
                    claim,
                    picks,
                    written,
                } = picks;
                match written.into_inner() {
                    Some(result) => *result,
                    None => picks.build(&index, node, &claim),
                }
            }
        }
    }
}

impl Deref for Allocation {
    type Target = AllocationResult;

    fn deref(&self) -> &AllocationResult {
        match &self.0 {
            Form::Written(result) => result,
            Form::Picked(picks) => picks.written.get_or_init(|| Box::new(picks.write())),
        }
    }
}

impl From<AllocationResult> for Allocation {
    fn from(result: AllocationResult) -> Allocation {
        Allocation::new(result)
    }
}

impl Clone for Allocation {
    fn clone(&self) -> Allocation {
        Allocation::new(self.result().into_owned())
    }
}

impl PartialEq for Allocation {
    fn eq(&self, other: &Allocation) -> bool {
        self.result() == other.result()
    }
}

impl fmt::Debug for Allocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        AllocationResult::fmt(&self.result(), f)
    }
}

/// Serialised as the object, which picks not yet written serialise without making it
/// ([`ClaimPicks::serialize_result`]).
impl Serialize for Allocation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Form::Written(result) => result.serialize(serializer),
            Form::Picked(picks) => match picks.written.get() {
                Some(result) => result.serialize(serializer),
                None => {
                    picks
                        .picks
                        .serialize_result(&picks.index, picks.node, &picks.claim, serializer)
                }
            },
        }
    }
}
