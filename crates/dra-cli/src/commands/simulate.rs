//! `dra simulate`.

use dra_sim::{PodStatus, Report, SimInput};

use crate::Failure;
use crate::cli::{NodePick, OutputFormat, SimulateArgs};
use crate::commands::table;
use crate::input;
use crate::output::Out;

pub fn run(out: &Out, args: &SimulateArgs) -> Result<(), Failure> {
    let loaded = input::load(out, &args.inputs.files)?;
    let sim_input = SimInput::from_cluster(&loaded.cluster);
    let report = match args.node_pick {
        NodePick::FirstFit => dra_sim::run_first_fit(&sim_input),
        NodePick::Scored | NodePick::MostAllocated => {
            return Err(Failure::Input(
                "only --node-pick first-fit is available in this version".to_string(),
            ));
        }
    }
    .map_err(|e| Failure::Input(e.to_string()))?;
    match out.format {
        OutputFormat::Json | OutputFormat::Yaml => out.data(&report)?,
        OutputFormat::Table => out.text(&render(&report))?,
    }
    if report.results.iter().any(|r| r.status != PodStatus::Scheduled) {
        return Err(Failure::Findings);
    }
    Ok(())
}

fn render(report: &Report) -> String {
    let rows: Vec<Vec<String>> = report
        .results
        .iter()
        .map(|r| {
            let devices: Vec<String> = r
                .allocations
                .iter()
                .flat_map(|(claim, allocation)| {
                    allocation
                        .devices
                        .iter()
                        .flat_map(|d| d.results.iter().flatten())
                        .map(move |d| format!("{claim}/{}={}", d.request, d.device))
                })
                .collect();
            let detail = match r.status {
                PodStatus::Scheduled => devices.join(" "),
                PodStatus::Error => r.error.clone().unwrap_or_default(),
                PodStatus::Unschedulable => r
                    .reason
                    .clone()
                    .unwrap_or_else(|| "no node can allocate the pod's claims".to_string()),
            };
            vec![
                r.pod.clone(),
                format!("{:?}", r.status).to_lowercase(),
                r.node.clone().unwrap_or_else(|| "-".to_string()),
                detail,
            ]
        })
        .collect();
    let scheduled = report
        .results
        .iter()
        .filter(|r| r.status == PodStatus::Scheduled)
        .count();
    let mut text = table(&["POD", "STATUS", "NODE", "DEVICES / REASON"], &rows);
    text.push_str(&format!(
        "\n{scheduled} of {} pods scheduled, {} pending\n",
        report.results.len(),
        report.results.len() - scheduled
    ));
    text
}
