//! Names the generated objects use, for code that inspects or extends them.

/// Driver of HGX and MIG GPUs.
pub const GPU_DRIVER: &str = "gpu.example.com";
/// Driver of HGX NICs.
pub const NIC_DRIVER: &str = "nic.example.com";
/// upstream scheduler_perf's driver name.
pub const TEST_DRIVER: &str = "test-driver.cdi.k8s.io";

/// Class of whole GPUs (`type == 'gpu'`, HGX and MIG nodes alike).
pub const GPU_CLASS: &str = "gpu.example.com";
/// Class of NICs.
pub const NIC_CLASS: &str = "nic.example.com";
/// Class of all MIG devices (`type == 'mig'`); per-profile classes are
/// `mig-<profile>.gpu.example.com`, e.g. `mig-1g.10gb.gpu.example.com`.
pub const MIG_CLASS: &str = "mig.gpu.example.com";
/// upstream scheduler_perf's class.
pub const TEST_CLASS: &str = "test-class";

/// Extended resource of device-plugin GPUs on legacy nodes.
pub const LEGACY_GPU_RESOURCE: &str = "example.com/gpu";

/// Standard attribute: PCIe root complex (`pci<domain>:<bus>`).
pub const PCIE_ROOT_ATTRIBUTE: &str = "resource.kubernetes.io/pcieRoot";
/// Standard attribute: PCI address (`dddd:bb:dd.f`).
pub const PCI_BUS_ID_ATTRIBUTE: &str = "resource.kubernetes.io/pciBusID";
/// Standard attribute: NUMA node (int).
pub const NUMA_NODE_ATTRIBUTE: &str = "resource.kubernetes.io/numaNode";
/// The test-driver attribute with a distinct value per device (upstream scheduler_perf).
pub const TEST_NUMA_ATTRIBUTE: &str = "dra.example.com/numa";

/// Finalizer the scheduler puts on claims it allocates.
pub const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// Label on nodes naming their zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// Label on nodes naming their hostname.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Label on nodes naming the generated node shape (e.g. `hgx-h100`).
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
