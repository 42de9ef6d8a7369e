//! Extended resources backed by DRA (KEP-5004, GA in 1.37): which DeviceClass serves an
//! extended resource name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Among classes that set the same `extendedResourceName`, the one the scheduler uses: the
/// newest `creationTimestamp`, then the lexicographically smaller name. A class without a
/// timestamp counts as oldest.
pub fn extended_resource_winner<'a>(
    classes: impl IntoIterator<Item = &'a ObjectMeta>,
) -> Option<&'a ObjectMeta> {
    classes.into_iter().reduce(|best, candidate| {
        let best_time = best.creation_timestamp.as_ref().map(|t| t.0);
        let candidate_time = candidate.creation_timestamp.as_ref().map(|t| t.0);
        match candidate_time.cmp(&best_time) {
            std::cmp::Ordering::Greater => candidate,
            std::cmp::Ordering::Less => best,
            std::cmp::Ordering::Equal => {
                if candidate.name.as_deref().unwrap_or_default() < best.name.as_deref().unwrap_or_default() {
                    candidate
                } else {
                    best
                }
            }
        }
    })
}
