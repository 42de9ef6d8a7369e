//! `dra lint`.

use crate::Failure;
use crate::cli::{LintArgs, OutputFormat};
use crate::input;
use crate::output::Out;

pub fn run(out: &Out, args: &LintArgs) -> Result<(), Failure> {
    let loaded = input::load(out, &args.inputs.files)?;
    let findings = dra_audit::lint(&loaded.cluster, &dra_audit::LintOptions::default());
    match out.format {
        OutputFormat::Table => {
            let mut text = String::new();
            for f in &findings {
                text.push_str(&f.to_string());
                text.push('\n');
            }
            let errors = findings.iter().filter(|f| f.is_error()).count();
            text.push_str(&format!(
                "{} objects checked: {errors} error(s), {} warning(s)\n",
                loaded.cluster.object_count(),
                findings.len() - errors
            ));
            out.text(&text)?;
        }
        OutputFormat::Json | OutputFormat::Yaml => {
            let rows: Vec<serde_json::Value> = findings
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "severity": f.severity.to_string(),
                        "file": f.source.as_ref().map(|s| s.file.to_string()),
                        "line": f.source.as_ref().map(|s| s.line),
                        "object": f.object.as_ref().map(|o| o.to_string()),
                        "field": f.field,
                        "message": f.message,
                    })
                })
                .collect();
            out.data(&serde_json::json!({ "findings": rows }))?;
        }
    }
    if findings.iter().any(|f| f.is_error()) {
        return Err(Failure::Findings);
    }
    Ok(())
}
