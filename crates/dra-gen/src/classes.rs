//! DeviceClasses for the generated drivers.

use k8s_openapi::api::resource::v1::{DeviceClass, DeviceClassSpec};

use crate::objects::{cel, cluster_meta};
use crate::spec::{ClassOptions, MigProfile};
use crate::well_known::{
    GPU_CLASS, GPU_DRIVER, MIG_CLASS, NIC_CLASS, NIC_DRIVER, TEST_CLASS, TEST_DRIVER,
};

/// Which groups of classes a spec needs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Families {
    pub gpu: bool,
    pub nic: bool,
    pub mig: bool,
    pub test: bool,
}

impl Families {
    pub fn all() -> Families {
        Families {
            gpu: true,
            nic: true,
            mig: true,
            test: true,
        }
    }
}

/// Name of the class of one MIG profile, e.g. `mig-1g.10gb.gpu.example.com`.
pub fn mig_profile_class(profile: MigProfile) -> String {
    format!("mig-{}.{GPU_DRIVER}", profile.name())
}

/// Name of extra class `i` (upstream's extended-resource benchmark).
pub(crate) fn extended_resource_class(i: u32) -> String {
    format!("{TEST_CLASS}-{i}")
}

/// Extended resource backed by extra class `i`.
pub(crate) fn extended_resource_name(i: u32) -> String {
    format!("example.com/gpu-{i}")
}

fn driver_is(driver: &str) -> String {
    format!("device.driver == '{driver}'")
}

fn attribute_is(driver: &str, attribute: &str, value: &str) -> String {
    format!("device.attributes['{driver}'].{attribute} == '{value}'")
}

fn class(name: &str, selectors: &[String], extended_resource: Option<&str>) -> DeviceClass {
    DeviceClass {
        metadata: cluster_meta(name),
        spec: Some(DeviceClassSpec {
            selectors: Some(selectors.iter().map(cel).collect()),
            extended_resource_name: extended_resource.map(str::to_owned),
            config: None,
        }),
    }
}

/// Classes in a fixed order: GPU, NIC, MIG (generic, then per profile), test driver,
/// then the extra extended-resource classes by index.
pub(crate) fn device_classes(families: Families, options: &ClassOptions) -> Vec<DeviceClass> {
    let mut out = Vec::new();
    if families.gpu {
        // Whole GPUs only: MIG nodes publish their partitions under the same driver.
        out.push(class(
            GPU_CLASS,
            &[
                driver_is(GPU_DRIVER),
                attribute_is(GPU_DRIVER, "type", "gpu"),
            ],
            options.gpu_extended_resource_name.as_deref(),
        ));
    }
    if families.nic {
        out.push(class(NIC_CLASS, &[driver_is(NIC_DRIVER)], None));
    }
    if families.mig {
        out.push(class(
            MIG_CLASS,
            &[
                driver_is(GPU_DRIVER),
                attribute_is(GPU_DRIVER, "type", "mig"),
            ],
            None,
        ));
        for profile in MigProfile::ALL {
            out.push(class(
                &mig_profile_class(profile),
                &[
                    driver_is(GPU_DRIVER),
                    attribute_is(GPU_DRIVER, "type", "mig"),
                    attribute_is(GPU_DRIVER, "profile", profile.name()),
                ],
                None,
            ));
        }
    }
    if families.test {
        // upstream's deviceclass.yaml uses double quotes; the expression is the same.
        out.push(class(
            TEST_CLASS,
            &[format!("device.driver == \"{TEST_DRIVER}\"")],
            None,
        ));
    }
    for i in 0..options.extended_resource_classes {
        out.push(class(
            &extended_resource_class(i),
            &[format!("device.driver == \"{TEST_DRIVER}\"")],
            Some(&extended_resource_name(i)),
        ));
    }
    out
}
