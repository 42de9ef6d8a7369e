//! Builders the unit tests of several modules share.

use k8s_openapi::api::resource::v1::AllocationResult;

/// An allocation of `devices` of one driver's pool, each for `request`, as the API writes it.
pub(crate) fn allocation(
    request: &str,
    driver: &str,
    pool: &str,
    devices: &[&str],
) -> AllocationResult {
    let results: Vec<serde_json::Value> = devices
        .iter()
        .map(|device| {
            serde_json::json!({"request": request, "driver": driver, "pool": pool,
                "device": device})
        })
        .collect();
    serde_json::from_value(serde_json::json!({"devices": {"results": results}}))
        .expect("an allocation result")
}
