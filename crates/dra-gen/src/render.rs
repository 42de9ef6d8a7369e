//! Multi-document YAML output.

use std::fmt::Write as _;

use serde::Serialize;

use crate::{Cluster, GenError};

/// Size at which buffered YAML is handed to the sink.
const CHUNK: usize = 1 << 16;

/// Renders objects one by one as YAML documents separated by `---`, handing the text
/// to a sink in chunks of about 64 KiB.
pub(crate) struct DocumentWriter<F: FnMut(&str) -> Result<(), GenError>> {
    buffer: String,
    first: bool,
    sink: F,
}

impl<F: FnMut(&str) -> Result<(), GenError>> DocumentWriter<F> {
    pub fn new(sink: F) -> Self {
        DocumentWriter {
            buffer: String::with_capacity(CHUNK + CHUNK / 4),
            first: true,
            sink,
        }
    }

    pub fn push<T: Serialize>(&mut self, object: &T) -> Result<(), GenError> {
        if !self.first {
            self.buffer.push_str("---\n");
        }
        self.first = false;
        serde_saphyr::to_fmt_writer(&mut self.buffer, object)?;
        if self.buffer.len() >= CHUNK {
            (self.sink)(&self.buffer)?;
            self.buffer.clear();
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<(), GenError> {
        if !self.buffer.is_empty() {
            (self.sink)(&self.buffer)?;
        }
        Ok(())
    }
}

/// Renders `cluster` in the documented order through `sink`.
pub(crate) fn render(
    cluster: &Cluster,
    sink: impl FnMut(&str) -> Result<(), GenError>,
) -> Result<(), GenError> {
    let mut out = DocumentWriter::new(sink);
    cluster.namespaces.iter().try_for_each(|o| out.push(o))?;
    cluster
        .priority_classes
        .iter()
        .try_for_each(|o| out.push(o))?;
    cluster
        .device_classes
        .iter()
        .try_for_each(|o| out.push(o))?;
    cluster.nodes.iter().try_for_each(|o| out.push(o))?;
    cluster
        .resource_slices
        .iter()
        .try_for_each(|o| out.push(o))?;
    cluster
        .resource_claims
        .iter()
        .try_for_each(|o| out.push(o))?;
    cluster
        .resource_claim_templates
        .iter()
        .try_for_each(|o| out.push(o))?;
    cluster.pods.iter().try_for_each(|o| out.push(o))?;
    out.finish()
}

/// `# key: value` lines, for provenance at the top of a generated file (the YAML
/// output itself carries no comments).
pub fn header_comment(entries: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (key, value) in entries {
        let value = value.replace('\n', " ");
        let _ = writeln!(out, "# {key}: {value}");
    }
    out
}
