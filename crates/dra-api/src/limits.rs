//! Limits of the resource.k8s.io/v1 API (constants of k8s.io/api `resource/v1`) and
//! a few more that its validation enforces.

/// Driver names (DNS subdomain).
pub const DRIVER_NAME_MAX_LENGTH: usize = 63;
/// Pool names.
pub const POOL_NAME_MAX_LENGTH: usize = 253;
/// Devices per slice.
pub const RESOURCE_SLICE_MAX_DEVICES: usize = 128;
/// Devices per slice when any device uses taints, counter consumption or list attributes.
pub const RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES: usize = 64;
/// `sharedCounters` entries per slice.
pub const RESOURCE_SLICE_MAX_COUNTER_SETS: usize = 8;
/// Counters per counter set.
pub const RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET: usize = 32;
/// `consumesCounters` entries per device.
pub const RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE: usize = 2;
/// Counters per `consumesCounters` entry.
pub const RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION: usize = 32;
/// Attributes plus capacities per device.
pub const RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: usize = 32;
/// Attribute values per device, list elements counted one by one.
pub const RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE: usize = 48;
/// Domain part of a qualified name.
pub const DEVICE_MAX_DOMAIN_LENGTH: usize = 63;
/// Identifier part of a qualified name.
pub const DEVICE_MAX_ID_LENGTH: usize = 32;
/// String and version attribute values (each list element too).
pub const DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: usize = 64;
/// Taints per device.
pub const DEVICE_TAINTS_MAX_LENGTH: usize = 16;
/// Tolerations per request (documented; not enforced by the API server).
pub const DEVICE_TOLERATIONS_MAX_LENGTH: usize = 16;
/// `bindingConditions` per device.
pub const BINDING_CONDITIONS_MAX_SIZE: usize = 4;
/// `bindingFailureConditions` per device.
pub const BINDING_FAILURE_CONDITIONS_MAX_SIZE: usize = 4;
/// Requests per claim.
pub const DEVICE_REQUESTS_MAX_SIZE: usize = 32;
/// Results per allocation.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;
/// Subrequests per `firstAvailable`.
pub const FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE: usize = 8;
/// Selectors per request, subrequest or class.
pub const DEVICE_SELECTORS_MAX_SIZE: usize = 32;
/// Constraints per claim.
pub const DEVICE_CONSTRAINTS_MAX_SIZE: usize = 32;
/// Config entries per claim or class.
pub const DEVICE_CONFIG_MAX_SIZE: usize = 32;
/// Bytes of a CEL expression.
pub const CEL_SELECTOR_EXPRESSION_MAX_LENGTH: usize = 10 * 1024;
/// Estimated and runtime cost limit of a CEL expression.
pub const CEL_SELECTOR_EXPRESSION_MAX_COST: u64 = 1_000_000;
/// Bytes of `opaque.parameters` (compact JSON).
pub const OPAQUE_PARAMETERS_MAX_LENGTH: usize = 10 * 1024;
/// Entries of `status.reservedFor`.
pub const RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE: usize = 256;
/// Conditions per `status.devices[]` entry.
pub const ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS: usize = 8;
/// Bytes of `status.devices[].data`.
pub const ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH: usize = 10 * 1024;
/// `networkData.ips` entries.
pub const NETWORK_DEVICE_DATA_MAX_IPS: usize = 16;
/// `networkData.interfaceName` bytes.
pub const NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH: usize = 256;
/// `networkData.hardwareAddress` bytes.
pub const NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH: usize = 128;
/// Conditions of a DeviceTaintRule status.
pub const DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS: usize = 8;
/// `requestPolicy.validValues` entries.
pub const CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS: usize = 10;
/// Highest `value` of a PriorityClass not named `system-...`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;
