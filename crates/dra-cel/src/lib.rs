//! The Kubernetes DRA CEL environment: compile, type-check, cost-bound and evaluate
//! device selectors the way Kubernetes 1.37 does (`k8s.io/dynamic-resource-allocation/cel`
//! on cel-go with the Kubernetes base environment).
//!
//! * [`Compiler`] holds one environment ([`CompilerOptions`]: stored or new expressions,
//!   feature gates, runtime cost limit) and compiles expression strings into
//!   [`Selector`]s, with a thread-safe cache keyed by expression ([`Compiler::compile_cached`]).
//! * [`Selector`] is a checked, planned program; cheap to clone and share across threads.
//!   [`Selector::evaluate`] runs it against a [`DeviceInput`] and returns the bool or a
//!   [`RuntimeError`] worded like upstream; [`Selector::cost_estimate`] is the API server's
//!   worst-case estimate, [`Selector::check_cost_budget`] its validation rule.
//! * [`DeviceInput`] is the `device` variable, built once per device.
//! * [`SelectorContext`] formats upstream's error prefixes (`class x: selector #0: ...`).
//!
//! Design: an evaluator of our own rather than the `cel` crate (see `DECISION.md`): a
//! parser with cel-go's grammar and macros, a port of cel-go's type checker and cost
//! estimator, and a planner that resolves overloads and `device.attributes["d"].x` lookups
//! ahead of time, so evaluation allocates nothing on the common paths. Everything that
//! could be observable (map iteration, error choice) is deterministic.
//!
//! ```
//! use dra_cel::{AttributeValue, Compiler, DeviceInput};
//!
//! let compiler = Compiler::default();
//! let selector = compiler
//!     .compile(r#"device.attributes["gpu.example.com"].model == "a100""#)
//!     .unwrap();
//! let device = DeviceInput::new(
//!     "gpu.example.com",
//!     [("model", AttributeValue::String("a100".into()))],
//!     [],
//!     false,
//! );
//! assert!(selector.evaluate(&device).unwrap());
//! ```

mod ast;
mod checker;
mod cost;
mod decls;
mod device;
mod error;
mod functions;
mod net;
mod parser;
mod program;
mod shortcut;
mod types;
mod value;

use dra_types::hashing::WordHashMap;
use std::sync::{Arc, RwLock};

pub use ast::Position;
pub use cost::CostEstimate;
pub use device::{AttributeValue, DeviceInput, version_converts};
pub use error::{
    CompileError, CostExceeded, Issue, RuntimeError, RuntimeErrorKind, SelectorContext,
    SelectorOwner,
};
pub use shortcut::{Shortcut, ShortcutValue};

use crate::checker::DeviceDecl;
use crate::decls::{DeclOptions, Declarations};
use crate::program::{Ctx, Node, Planner};
use crate::types::Type;
use crate::value::Value;

/// `CELSelectorExpressionMaxCost`: the default runtime cost limit and the estimate budget.
pub const SELECTOR_MAX_COST: u64 = 1_000_000;
/// `CELSelectorExpressionMaxLength` in bytes (API validation of new expressions).
pub const SELECTOR_MAX_LENGTH: usize = 10 * 1024;

/// Which declarations apply, as the API server chooses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Environment {
    /// `StoredExpressions`: what the scheduler uses; every versioned declaration regardless
    /// of feature gates (list attributes, `includes`, `allowMultipleAllocations`).
    #[default]
    StoredExpressions,
    /// `NewExpressions`: API validation of created or changed selectors; feature-gated
    /// declarations follow [`Features`], and the 10 KiB length limit applies.
    NewExpressions,
}

/// DRA feature gates that change the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// DRAConsumableCapacity (beta in 1.37, on by default): declares
    /// `device.allowMultipleAllocations` for new expressions.
    pub consumable_capacity: bool,
    /// DRAListTypeAttributes (alpha, off by default): list attributes and `includes()`
    /// for new expressions.
    pub list_type_attributes: bool,
}

impl Default for Features {
    fn default() -> Features {
        Features {
            consumable_capacity: true,
            list_type_attributes: false,
        }
    }
}

/// Options of a [`Compiler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompilerOptions {
    /// Stored (scheduler) or new (API validation) expressions.
    pub environment: Environment,
    /// Feature gates (only affect [`Environment::NewExpressions`]).
    pub features: Features,
    /// Runtime cost limit per evaluation (default [`SELECTOR_MAX_COST`]).
    pub cost_limit: u64,
}

impl Default for CompilerOptions {
    fn default() -> CompilerOptions {
        CompilerOptions {
            environment: Environment::StoredExpressions,
            features: Features::default(),
            cost_limit: SELECTOR_MAX_COST,
        }
    }
}

/// Compiles selector expressions in one environment; share it (it is `Sync`).
#[derive(Debug)]
pub struct Compiler {
    options: CompilerOptions,
    decls: &'static Declarations,
    device: DeviceDecl,
    cache: RwLock<WordHashMap<String, Result<Selector, CompileError>>>,
}

impl Default for Compiler {
    fn default() -> Compiler {
        Compiler::new(CompilerOptions::default())
    }
}

#[derive(Debug)]
struct SelectorInner {
    expression: String,
    program: Node,
    /// Evaluate on a large-stack helper thread (pathologically nested programs).
    deep: bool,
    cost_limit: u64,
    estimate: CostEstimate,
    shortcut: Option<Shortcut>,
}

/// A compiled selector; cloning shares the program.
#[derive(Clone, Debug)]
pub struct Selector {
    inner: Arc<SelectorInner>,
}

impl Compiler {
    /// A compiler for the given environment.
    pub fn new(options: CompilerOptions) -> Compiler {
        let (list_attrs, multi) = Compiler::environment_parts(&options);
        Compiler {
            options,
            decls: Declarations::shared(DeclOptions {
                includes: list_attrs,
            }),
            device: DeviceDecl {
                attribute_type: if list_attrs { Type::Dyn } else { Type::Any },
                has_allow_multiple_allocations: multi,
            },
            cache: RwLock::new(WordHashMap::default()),
        }
    }

    /// Makes what every compiler of `options` shares (the function declarations of its
    /// environment, once per process), so that a thread with nothing else to do can take
    /// that off the thread that will compile: `dra simulate`'s helper, while it waits for
    /// the input's first slice. Compilers are the same either way.
    pub fn prepare_environment(options: &CompilerOptions) {
        let (list_attrs, _) = Compiler::environment_parts(options);
        Declarations::shared(DeclOptions {
            includes: list_attrs,
        });
    }

    /// Whether `options` declare list-typed attributes (the `includes` function among
    /// them), and whether devices have `allowMultipleAllocations`.
    fn environment_parts(options: &CompilerOptions) -> (bool, bool) {
        match options.environment {
            Environment::StoredExpressions => (true, true),
            Environment::NewExpressions => (
                options.features.list_type_attributes,
                options.features.consumable_capacity,
            ),
        }
    }

    /// The options this compiler was built with.
    pub fn options(&self) -> &CompilerOptions {
        &self.options
    }

    /// Parses, type-checks and plans `expression`.
    ///
    /// Deeply bracketed input is compiled on a helper thread with a large stack, so the
    /// recursion cel-go allows (250 levels) never overflows the caller's stack.
    pub fn compile(&self, expression: &str) -> Result<Selector, CompileError> {
        if expression.len() > SHORT_EXPRESSION || bracket_depth(expression) > SHALLOW_NESTING {
            return with_large_stack(|| self.compile_inline(expression));
        }
        self.compile_inline(expression)
    }

    fn compile_inline(&self, expression: &str) -> Result<Selector, CompileError> {
        if self.options.environment == Environment::NewExpressions
            && expression.len() > SELECTOR_MAX_LENGTH
        {
            return Err(CompileError::TooLong {
                length: expression.len(),
                limit: SELECTOR_MAX_LENGTH,
            });
        }
        let parsed = parser::parse(expression).map_err(|(source, issues)| {
            let display = error::format_issues(&source, &issues);
            CompileError::Invalid { issues, display }
        })?;
        let checked = checker::check(
            &parsed.expr,
            &parsed.source,
            self.decls,
            &self.device,
            parsed.next_id as usize,
        )
        .map_err(|issues| {
            let display = error::format_issues(&parsed.source, &issues);
            CompileError::Invalid { issues, display }
        })?;
        let result = &checked.result_type;
        if *result != Type::Bool && *result != self.device.attribute_type {
            return Err(CompileError::ResultType {
                found: result.go_string(),
            });
        }
        let estimate = cost::estimate(&parsed.expr, &checked);
        let program = Planner::new(&checked, &parsed.source).plan(&parsed.expr)?;
        let deep = program.depth() > SHALLOW_NESTING;
        let shortcut = shortcut::find(&program, self.options.cost_limit);
        Ok(Selector {
            inner: Arc::new(SelectorInner {
                expression: expression.to_string(),
                program,
                deep,
                cost_limit: self.options.cost_limit,
                estimate,
                shortcut,
            }),
        })
    }

    /// Like [`Compiler::compile`], through a cache keyed by the expression string
    /// (results, including errors, are computed once).
    pub fn compile_cached(&self, expression: &str) -> Result<Selector, CompileError> {
        if let Ok(cache) = self.cache.read()
            && let Some(hit) = cache.get(expression)
        {
            return hit.clone();
        }
        let result = self.compile(expression);
        if let Ok(mut cache) = self.cache.write() {
            cache
                .entry(expression.to_string())
                .or_insert_with(|| result.clone());
        }
        result
    }
}

impl Selector {
    /// The expression text.
    pub fn expression(&self) -> &str {
        &self.inner.expression
    }

    /// The API server's worst-case cost estimate.
    pub fn cost_estimate(&self) -> CostEstimate {
        self.inner.estimate
    }

    /// API validation: the estimate's maximum must not exceed `budget`
    /// ([`SELECTOR_MAX_COST`] for device selectors).
    pub fn check_cost_budget(&self, budget: u64) -> Result<(), CostExceeded> {
        let max = self.inner.estimate.max;
        if max > budget {
            return Err(CostExceeded {
                estimated_max: max,
                limit: budget,
            });
        }
        Ok(())
    }

    /// The selector as a plain comparison, when it is one ([`Shortcut`] says how to answer it
    /// without a [`DeviceInput`] and when the answer must come from [`Selector::evaluate`]).
    pub fn shortcut(&self) -> Option<&Shortcut> {
        self.inner.shortcut.as_ref()
    }

    /// Evaluates the selector against one device.
    pub fn evaluate(&self, device: &DeviceInput) -> Result<bool, RuntimeError> {
        self.evaluate_with_cost(device).0
    }

    /// Evaluates and also returns the runtime cost spent (cel-go's actual cost).
    pub fn evaluate_with_cost(&self, device: &DeviceInput) -> (Result<bool, RuntimeError>, u64) {
        if self.inner.deep {
            return with_large_stack(|| self.evaluate_inline(device));
        }
        self.evaluate_inline(device)
    }

    fn evaluate_inline(&self, device: &DeviceInput) -> (Result<bool, RuntimeError>, u64) {
        if let Some(message) = &device.conversion_error {
            return (
                Err(RuntimeError::new(
                    RuntimeErrorKind::Attribute,
                    message.clone(),
                )),
                0,
            );
        }
        let mut ctx = Ctx::new(device, self.inner.cost_limit);
        let result = self.inner.program.eval(&mut ctx);
        let out = match result {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(RuntimeError::new(
                RuntimeErrorKind::NotBool,
                format!(
                    "CEL result of type {} could not be converted to bool: {}",
                    other.type_name(),
                    conversion_detail(&other)
                ),
            )),
            Err(e) => Err(RuntimeError::new(e.kind, e.message)),
        };
        (out, ctx.cost)
    }
}

/// Nesting (brackets, or program depth) up to which work runs on the caller's stack.
const SHALLOW_NESTING: usize = 24;

/// Expressions up to this length cannot nest deeply enough to strain the caller's stack.
const SHORT_EXPRESSION: usize = 160;

/// Stack for compiling or evaluating deeper expressions (virtual; touched pages only).
const LARGE_STACK: usize = 256 << 20;

/// Upper bound of the bracket nesting of an expression (strings are not skipped, which
/// can only over-estimate).
fn bracket_depth(expression: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in expression.bytes() {
        match b {
            b'(' | b'[' | b'{' | b'?' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Runs `f` on a scoped helper thread with a large stack; inline if no thread can start.
fn with_large_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let mut f = Some(f);
    let outcome = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("dra-cel-deep".to_string())
            .stack_size(LARGE_STACK)
            .spawn_scoped(scope, || f.take().map(|f| f()));
        match spawned {
            Ok(handle) => handle.join().ok().flatten(),
            Err(_) => None,
        }
    });
    match (outcome, f) {
        (Some(r), _) => r,
        (None, Some(f)) => f(),
        (None, None) => unreachable_after_panic(),
    }
}

/// The helper thread panicked after taking the closure: re-raise on the caller's thread.
fn unreachable_after_panic() -> ! {
    panic!("dra-cel helper thread panicked")
}

/// The error cel-go's `ConvertToNative(bool)` gives for a non-bool result.
fn conversion_detail(v: &Value<'_>) -> String {
    match v {
        Value::Str(_) => "unsupported native conversion from string to 'bool'".to_string(),
        Value::Int(_) => "unsupported type conversion from 'int' to bool".to_string(),
        Value::Uint(_) => "unsupported type conversion from 'uint' to bool".to_string(),
        Value::Double(_) => "type conversion error from Double to 'bool'".to_string(),
        Value::Bytes(_) => "type conversion error from Bytes to 'bool'".to_string(),
        Value::Quantity(_) => "type conversion error from 'Quantity' to 'bool'".to_string(),
        Value::Semver(_) => "type conversion error from 'Semver' to 'bool'".to_string(),
        other => format!(
            "type conversion error from '{}' to 'bool'",
            other.type_name()
        ),
    }
}

#[cfg(test)]
mod tests;
