//! Command-line definitions. Flags are declared once here and drive parsing and `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Simulate, explain and audit Kubernetes Dynamic Resource Allocation (DRA, Kubernetes 1.37).
///
/// Reads ordinary Kubernetes objects (files, directories, `-` for stdin; multi-document YAML,
/// JSON, `kind: List` as `kubectl get -o yaml` prints). Without input files, commands use the
/// built-in example cluster.
///
/// Exit codes: 0 success; 1 findings (lint problems, pending pods, claims that do not fit);
/// 2 usage or input errors.
#[derive(Debug, Parser)]
#[command(name = "dra", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Output format.
    #[arg(short, long, global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,

    /// When to use colour on stderr (NO_COLOR is honoured with `auto`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Print how long each phase of the command took on stderr (wall and CPU time), with the
    /// resident memory at its end (`load`, then for `simulate` `index`, `simulate` and
    /// `output`, then `rest`).
    #[arg(long, global = true)]
    pub timings: bool,
}

/// `-o`: readable table, or data for machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Yaml,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

// Input files shared by most commands. (Not a doc comment: clap would take it for the
// `about` of every subcommand that flattens it, as their arguments are defined last.)
#[derive(Debug, Args, Clone, Default)]
pub struct Inputs {
    /// Files or directories with Kubernetes objects (`-` reads stdin). Without any, the
    /// built-in example cluster is used.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

// Each subcommand's arguments are defined only when it is the one given (`defer`): clap
// otherwise builds every subcommand's arguments at each start, moving its `Command` value
// at every step, about 0.3 M instructions (0.05 ms) of a `dra simulate` that takes 3.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Where would the scheduler put each pod, with which devices; which stay pending and why.
    Simulate(SimulateArgs),
    /// Why a pod is pending: per node, claim and request, and what would let it fit.
    Explain(ExplainArgs),
    /// Exactly what upstream `Allocate` returns for these claims on this node.
    Allocate(AllocateArgs),
    /// What the API server would reject, CEL errors and cross-object problems.
    Lint(LintArgs),
    /// Migration from device plugins to DRA: inventory, plan, check.
    Migrate(MigrateArgs),
    /// Security audits (RBAC for DRA drivers and users).
    Audit(AuditArgs),
    /// Allocated devices per claim and pod, with attributes, taints and reported status.
    Status(StatusArgs),
    /// Generate realistic clusters and workloads as YAML.
    Gen(GenArgs),
    /// Run benchmark suites and print their figures.
    Bench(BenchArgs),
}

/// How `simulate` picks a node among those that fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum NodePick {
    /// kube-scheduler's default scoring as far as DRA is concerned (least allocated).
    #[default]
    Scored,
    /// The first node in name order that fits (the conformance reference loop).
    FirstFit,
    /// Bin packing: prefer the most allocated node.
    MostAllocated,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Node choice among feasible nodes.
    #[arg(long, value_enum, default_value_t = NodePick::Scored)]
    pub node_pick: NodePick,
    /// Threads that filter the nodes of one pod at once, and that build the scored modes'
    /// pre-check tables of all nodes (0: one per core); the others start only for work that
    /// would take one thread over a millisecond. The answer is the same for any number.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub threads: usize,
    #[command(flatten)]
    pub inputs: Inputs,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The pod, as NAMESPACE/NAME (or NAME in namespace `default`).
    pub pod: String,
    #[command(flatten)]
    pub inputs: Inputs,
}

#[derive(Debug, Args)]
pub struct AllocateArgs {
    /// The node to allocate on.
    #[arg(long)]
    pub node: String,
    /// Claims (NAMESPACE/NAME or NAME in `default`) followed by input files. An argument that
    /// names an existing file or directory (or `-`) is input; the others are claims, which are
    /// allocated together in the order given.
    #[arg(value_name = "CLAIM|FILE", required = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    pub inputs: Inputs,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(subcommand)]
    pub step: MigrateStep,
}

#[derive(Debug, Subcommand)]
pub enum MigrateStep {
    /// Which workloads ask for which extended resources, and how many.
    Inventory(Inputs),
    /// The DeviceClasses to create for the extended resources in use.
    Plan(Inputs),
    /// Whether the same workloads still fit when DRA devices serve them.
    Check(Inputs),
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub topic: AuditTopic,
}

#[derive(Debug, Subcommand)]
pub enum AuditTopic {
    /// Who can write ResourceSlices, claim status, DeviceClasses and DeviceTaintRules.
    Rbac(Inputs),
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub inputs: Inputs,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// The preset to generate (`dra gen --list` shows them).
    #[arg(required_unless_present_any = ["list", "spec"])]
    pub preset: Option<String>,
    /// Size of the preset (usually nodes; `--list` says what each preset counts).
    #[arg(long)]
    pub size: Option<u32>,
    /// A generator spec in YAML instead of a preset.
    #[arg(long, value_name = "FILE", conflicts_with = "preset")]
    pub spec: Option<PathBuf>,
    /// Seed of the generator: the same seed gives the same YAML.
    #[arg(long)]
    pub seed: Option<u64>,
    /// List the presets.
    #[arg(long)]
    pub list: bool,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Suites to run (all when none is given; `--list` shows them).
    pub suites: Vec<String>,
    /// Small sizes, for a smoke test.
    #[arg(long)]
    pub quick: bool,
    /// Size of every suite run (overrides the suite's own size).
    #[arg(long)]
    pub size: Option<u32>,
    /// Runs per suite; the run with the median total time is reported.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub repeat: u32,
    /// List the suites.
    #[arg(long)]
    pub list: bool,
    /// Run one suite in this process and print its figures as JSON (used internally, so each
    /// suite's peak memory is its own).
    #[arg(long, hide = true)]
    pub run_suite: Option<String>,
}
