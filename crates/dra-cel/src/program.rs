//! The planner turns a checked AST into a tree of [`Node`]s with pre-resolved device
//! lookups, folded constants and precompiled regular expressions; the evaluator walks
//! that tree. Runtime cost is counted like cel-go's cost tracker and bounded.

use std::rc::Rc;

use dra_types::{Quantity, Semver};
use regex::Regex;

use crate::ast::{Expr, ExprKind, Literal, Source};
use crate::checker::{Checked, IdentRef};
use crate::device::DeviceInput;
use crate::error::{CompileError, RuntimeErrorKind};
use crate::functions::{self, Func};
use crate::types::Type;
use crate::value::{
    Bytes, Err, MapValue, QuantityRef, SemverRef, Str, Val, Value, equals, err, no_such_key,
    no_such_overload, other,
};

/// A constant owned by the program (thread-safe, borrowed into values at evaluation).
#[derive(Debug)]
pub(crate) enum Const {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Box<str>),
    Bytes(Box<[u8]>),
    Quantity(Quantity),
    Semver(Semver),
    Type(Type),
}

impl Const {
    fn value(&self) -> Value<'_> {
        match self {
            Const::Null => Value::Null,
            Const::Bool(b) => Value::Bool(*b),
            Const::Int(i) => Value::Int(*i),
            Const::Uint(u) => Value::Uint(*u),
            Const::Double(d) => Value::Double(*d),
            Const::Str(s) => Value::Str(Str::Borrowed(s)),
            Const::Bytes(b) => Value::Bytes(Bytes::Borrowed(b)),
            Const::Quantity(q) => Value::Quantity(QuantityRef::Borrowed(q)),
            Const::Semver(v) => Value::Semver(SemverRef::Borrowed(v)),
            Const::Type(t) => Value::Type(Rc::new(t.clone())),
        }
    }
}

#[derive(Debug)]
pub(crate) struct CallNode {
    pub func: Func,
    pub args: Vec<Node>,
    /// Precompiled constant regular expression (`matches`, `find`, `findAll`).
    pub regex: Option<Regex>,
}

#[derive(Debug)]
pub(crate) struct Fold {
    range: Node,
    var_slot: usize,
    two_vars: bool,
    accu_slot: usize,
    init: Node,
    condition: Node,
    step: Node,
    result: Node,
}

#[derive(Debug)]
pub(crate) enum Node {
    Const(Const),
    Device,
    Local(usize),
    Driver,
    AllowMultipleAllocations,
    AttrDomain(Box<str>),
    CapDomain(Box<str>),
    Attr(Box<str>, Box<str>),
    Cap(Box<str>, Box<str>),
    HasAttr(Box<str>, Box<str>),
    HasCap(Box<str>, Box<str>),
    Select(Box<Node>, Box<str>),
    Has(Box<Node>, Box<str>),
    OptSelect(Box<Node>, Box<str>),
    Index(Box<Node>, Box<Node>),
    OptIndex(Box<Node>, Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    NotStrictlyFalse(Box<Node>),
    Cond(Box<(Node, Node, Node)>),
    Eq(Box<Node>, Box<Node>),
    Ne(Box<Node>, Box<Node>),
    InConstList(Box<Node>, Vec<Const>),
    OptOr(Box<Node>, Box<Node>),
    OptOrValue(Box<Node>, Box<Node>),
    Call(Box<CallNode>),
    List(Vec<Node>, Vec<usize>),
    Map(Vec<(Node, Node, bool)>),
    Fold(Box<Fold>),
    /// `cel.bind(var, init, result)`: evaluate `init` into a slot, then `result`.
    Bind(Box<(usize, Node, Node)>),
    /// `@result + [items]` in a macro's loop step: appends in place (cel-go's mutable
    /// accumulator), so `map`/`filter` stay linear.
    AccuAppend(usize, Vec<Node>),
}

pub(crate) struct Planner<'c> {
    checked: &'c Checked,
    source: &'c Source,
    scopes: Vec<String>,
}

fn lit_str(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Literal(Literal::String(s)) => Some(s),
        _ => None,
    }
}

impl<'c> Planner<'c> {
    pub(crate) fn new(checked: &'c Checked, source: &'c Source) -> Planner<'c> {
        Planner {
            checked,
            source,
            scopes: Vec::new(),
        }
    }

    fn is_device(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Ident(_))
            && self.checked.idents.get(&e.id) == Some(&IdentRef::Device)
    }

    /// `device.attributes` / `device.capacity`: Some(true) for attributes.
    fn device_map(&self, e: &Expr) -> Option<bool> {
        if let ExprKind::Select {
            operand,
            field,
            test_only: false,
        } = &e.kind
            && self.is_device(operand)
        {
            return match field.as_str() {
                "attributes" => Some(true),
                "capacity" => Some(false),
                _ => None,
            };
        }
        None
    }

    /// `device.attributes["domain"]` with a constant domain.
    fn device_domain<'e>(&self, e: &'e Expr) -> Option<(bool, &'e str)> {
        if let ExprKind::Call {
            target: None,
            function,
            args,
        } = &e.kind
            && function == "_[_]"
            && args.len() == 2
            && let (Some(is_attr), Some(domain)) = (self.device_map(&args[0]), lit_str(&args[1]))
        {
            return Some((is_attr, domain));
        }
        None
    }

    pub(crate) fn plan(&mut self, e: &Expr) -> Result<Node, CompileError> {
        Ok(match &e.kind {
            ExprKind::Literal(lit) => Node::Const(match lit {
                Literal::Null => Const::Null,
                Literal::Bool(b) => Const::Bool(*b),
                Literal::Int(i) => Const::Int(*i),
                Literal::Uint(u) => Const::Uint(*u),
                Literal::Double(d) => Const::Double(*d),
                Literal::String(s) => Const::Str(s.as_ref().into()),
                Literal::Bytes(b) => Const::Bytes(b.as_ref().into()),
            }),
            ExprKind::Ident(name) => match self.checked.idents.get(&e.id) {
                Some(IdentRef::Device) => Node::Device,
                Some(IdentRef::TypeName(t)) => Node::Const(Const::Type(t.clone())),
                _ => match self.scopes.iter().rposition(|n| n == name) {
                    Some(slot) => Node::Local(slot),
                    None => Node::Const(Const::Null),
                },
            },
            ExprKind::Select {
                operand,
                field,
                test_only,
            } => {
                if let Some((is_attr, domain)) = self.device_domain(operand) {
                    let (d, f) = (domain.into(), field.as_str().into());
                    return Ok(match (is_attr, *test_only) {
                        (true, false) => Node::Attr(d, f),
                        (false, false) => Node::Cap(d, f),
                        (true, true) => Node::HasAttr(d, f),
                        (false, true) => Node::HasCap(d, f),
                    });
                }
                if !test_only && self.is_device(operand) {
                    match field.as_str() {
                        "driver" => return Ok(Node::Driver),
                        "allowMultipleAllocations" => return Ok(Node::AllowMultipleAllocations),
                        _ => {}
                    }
                }
                let op = Box::new(self.plan(operand)?);
                if *test_only {
                    Node::Has(op, field.as_str().into())
                } else {
                    Node::Select(op, field.as_str().into())
                }
            }
            ExprKind::Call {
                target,
                function,
                args,
            } => match self.checked.qualified_calls.get(&e.id) {
                Some(qualified) => self.plan_call(e, None, qualified, args)?,
                None => self.plan_call(e, target.as_deref(), function, args)?,
            },
            ExprKind::List {
                elements,
                optional_indices,
            } => Node::List(
                elements
                    .iter()
                    .map(|el| self.plan(el))
                    .collect::<Result<_, _>>()?,
                optional_indices.clone(),
            ),
            ExprKind::Map { entries } => Node::Map(
                entries
                    .iter()
                    .map(|en| Ok((self.plan(&en.key)?, self.plan(&en.value)?, en.optional)))
                    .collect::<Result<_, CompileError>>()?,
            ),
            ExprKind::Struct { .. } => Node::Const(Const::Null),
            ExprKind::Comprehension(c)
                if matches!(&c.iter_range.kind, ExprKind::List { elements, .. } if elements.is_empty())
                    && matches!(
                        c.loop_condition.kind,
                        ExprKind::Literal(Literal::Bool(false))
                    ) =>
            {
                // cel.bind (and the sortBy helper): the loop never runs.
                let init = self.plan(&c.accu_init)?;
                let slot = self.scopes.len();
                self.scopes.push(c.accu_var.clone());
                let result = self.plan(&c.result)?;
                self.scopes.truncate(slot);
                Node::Bind(Box::new((slot, init, result)))
            }
            ExprKind::Comprehension(c) => {
                let range = self.plan(&c.iter_range)?;
                let init = self.plan(&c.accu_init)?;
                let accu_slot = self.scopes.len();
                self.scopes.push(c.accu_var.clone());
                let var_slot = self.scopes.len();
                self.scopes.push(c.iter_var.clone());
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push(v2.clone());
                }
                let condition = self.plan(&c.loop_condition)?;
                let step = self.plan(&c.loop_step)?;
                self.scopes.truncate(accu_slot + 1);
                let result = self.plan(&c.result)?;
                self.scopes.truncate(accu_slot);
                Node::Fold(Box::new(Fold {
                    range,
                    var_slot,
                    two_vars: c.iter_var2.is_some(),
                    accu_slot,
                    init,
                    condition,
                    step,
                    result,
                }))
            }
        })
    }

    fn plan_call(
        &mut self,
        e: &Expr,
        target: Option<&Expr>,
        function: &str,
        args: &[Expr],
    ) -> Result<Node, CompileError> {
        let two = |p: &mut Self| -> Result<(Box<Node>, Box<Node>), CompileError> {
            Ok((Box::new(p.plan(&args[0])?), Box::new(p.plan(&args[1])?)))
        };
        match (function, target.is_some(), args.len()) {
            ("_&&_", false, 2) => {
                let (a, b) = two(self)?;
                return Ok(Node::And(a, b));
            }
            ("_||_", false, 2) => {
                let (a, b) = two(self)?;
                return Ok(Node::Or(a, b));
            }
            ("!_", false, 1) => return Ok(Node::Not(Box::new(self.plan(&args[0])?))),
            ("@not_strictly_false", false, 1) => {
                return Ok(Node::NotStrictlyFalse(Box::new(self.plan(&args[0])?)));
            }
            ("_?_:_", false, 3) => {
                return Ok(Node::Cond(Box::new((
                    self.plan(&args[0])?,
                    self.plan(&args[1])?,
                    self.plan(&args[2])?,
                ))));
            }
            ("_==_", false, 2) => {
                let (a, b) = two(self)?;
                return Ok(Node::Eq(a, b));
            }
            ("_!=_", false, 2) => {
                let (a, b) = two(self)?;
                return Ok(Node::Ne(a, b));
            }
            ("_[_]", false, 2) => {
                if let Some(is_attr) = self.device_map(&args[0])
                    && let Some(domain) = lit_str(&args[1])
                {
                    return Ok(if is_attr {
                        Node::AttrDomain(domain.into())
                    } else {
                        Node::CapDomain(domain.into())
                    });
                }
                if let (Some((is_attr, domain)), Some(id)) =
                    (self.device_domain(&args[0]), lit_str(&args[1]))
                {
                    return Ok(if is_attr {
                        Node::Attr(domain.into(), id.into())
                    } else {
                        Node::Cap(domain.into(), id.into())
                    });
                }
                let (a, b) = two(self)?;
                return Ok(Node::Index(a, b));
            }
            ("_+_", false, 2) => {
                if let (
                    ExprKind::Ident(name),
                    ExprKind::List {
                        elements,
                        optional_indices,
                    },
                ) = (&args[0].kind, &args[1].kind)
                    && name == crate::ast::ACCUMULATOR
                    && optional_indices.is_empty()
                    && let Some(slot) = self.scopes.iter().rposition(|n| n == name)
                {
                    let items = elements
                        .iter()
                        .map(|el| self.plan(el))
                        .collect::<Result<_, _>>()?;
                    return Ok(Node::AccuAppend(slot, items));
                }
            }
            ("_[?_]", false, 2) => {
                let (a, b) = two(self)?;
                return Ok(Node::OptIndex(a, b));
            }
            ("_?._", false, 2) => {
                let field = lit_str(&args[1]).unwrap_or_default();
                return Ok(Node::OptSelect(
                    Box::new(self.plan(&args[0])?),
                    field.into(),
                ));
            }
            ("@in", false, 2) => {
                if let ExprKind::List {
                    elements,
                    optional_indices,
                } = &args[1].kind
                {
                    let consts: Option<Vec<Const>> = if optional_indices.is_empty() {
                        elements.iter().map(const_of).collect()
                    } else {
                        None
                    };
                    if let Some(consts) = consts {
                        return Ok(Node::InConstList(Box::new(self.plan(&args[0])?), consts));
                    }
                }
            }
            ("or", true, 1) | ("orValue", true, 1) => {
                let ids = self.checked.overloads.get(&e.id);
                let is_optional = ids.is_some_and(|ids| {
                    ids.iter()
                        .all(|id| *id == "optional_or_optional" || *id == "optional_orValue_value")
                });
                if is_optional {
                    let t = Box::new(self.plan(target.unwrap_or(&args[0]))?);
                    let a = Box::new(self.plan(&args[0])?);
                    return Ok(if function == "or" {
                        Node::OptOr(t, a)
                    } else {
                        Node::OptOrValue(t, a)
                    });
                }
            }
            _ => {}
        }
        let ids: Vec<&'static str> = self
            .checked
            .overloads
            .get(&e.id)
            .cloned()
            .unwrap_or_default();
        let func = functions::resolve(function, target.is_some(), &ids);
        // Constant folding of quantity() and semver() literals: the value is the same on
        // every evaluation; an invalid literal stays a call so the error is raised at
        // runtime, as upstream does.
        if target.is_none()
            && args.len() == 1
            && let Some(s) = lit_str(&args[0])
        {
            match func {
                Func::Quantity => {
                    if let Ok(q) = Quantity::parse(s) {
                        return Ok(Node::Const(Const::Quantity(q)));
                    }
                }
                Func::Semver => {
                    if let Ok(v) = Semver::parse(s) {
                        return Ok(Node::Const(Const::Semver(v)));
                    }
                }
                _ => {}
            }
        }
        // cel-go's ValidateDurationLiterals / ValidateTimestampLiterals.
        if target.is_none()
            && args.len() == 1
            && matches!(func, Func::ToDuration | Func::ToTimestamp)
            && let Some(s) = lit_str(&args[0])
        {
            let valid = if func == Func::ToDuration {
                functions::parse_go_duration(s).is_some()
            } else {
                functions::parse_rfc3339(s).is_some()
            };
            if !valid {
                let name = if func == Func::ToDuration {
                    "duration"
                } else {
                    "timestamp"
                };
                return Err(self.invalid_argument(&args[0], name));
            }
        }
        let mut planned = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            planned.push(self.plan(t)?);
        }
        for a in args {
            planned.push(self.plan(a)?);
        }
        let mut regex = None;
        if matches!(func, Func::Matches | Func::Find | Func::FindAll) {
            let pattern_index = if target.is_some() { 0 } else { 1 };
            if let Some(pattern_expr) = args.get(pattern_index)
                && let Some(pattern) = lit_str(pattern_expr)
            {
                match functions::compile_regex(pattern) {
                    Ok(re) => regex = Some(re),
                    Err(message) => {
                        let position = self.source.position(pattern_expr.id);
                        if target.is_none() {
                            return Err(self.invalid_argument(pattern_expr, "matches"));
                        }
                        return Err(CompileError::Program { message, position });
                    }
                }
            }
        }
        Ok(Node::Call(Box::new(CallNode {
            func,
            args: planned,
            regex,
        })))
    }
}

impl Planner<'_> {
    /// cel-go's literal validators: `invalid <fn> argument` at the literal.
    fn invalid_argument(&self, literal: &Expr, function: &str) -> CompileError {
        let issue = crate::error::Issue {
            message: format!("invalid {function} argument"),
            position: self.source.position(literal.id),
        };
        let display = crate::error::format_issues(self.source, std::slice::from_ref(&issue));
        CompileError::Invalid {
            issues: vec![issue],
            display,
        }
    }
}

fn const_of(e: &Expr) -> Option<Const> {
    match &e.kind {
        ExprKind::Literal(lit) => Some(match lit {
            Literal::Null => Const::Null,
            Literal::Bool(b) => Const::Bool(*b),
            Literal::Int(i) => Const::Int(*i),
            Literal::Uint(u) => Const::Uint(*u),
            Literal::Double(d) => Const::Double(*d),
            Literal::String(s) => Const::Str(s.as_ref().into()),
            Literal::Bytes(b) => Const::Bytes(b.as_ref().into()),
        }),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Evaluation

pub(crate) struct Ctx<'a> {
    pub device: &'a DeviceInput,
    locals: Vec<Val<'a>>,
    pub cost: u64,
    limit: u64,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(device: &'a DeviceInput, limit: u64) -> Ctx<'a> {
        Ctx {
            device,
            locals: Vec::new(),
            cost: 0,
            limit,
        }
    }

    #[inline]
    pub(crate) fn charge(&mut self, amount: u64) -> Result<(), Err> {
        self.cost = self.cost.saturating_add(amount);
        if self.cost > self.limit {
            return Err(err(
                RuntimeErrorKind::CostLimitExceeded,
                "operation cancelled: actual cost limit exceeded",
            ));
        }
        Ok(())
    }

    fn set_local(&mut self, slot: usize, v: Val<'a>) {
        if slot < self.locals.len() {
            self.locals[slot] = v;
        } else {
            while self.locals.len() < slot {
                self.locals.push(Ok(Value::Null));
            }
            self.locals.push(v);
        }
    }
}

fn is_fatal(e: &Err) -> bool {
    e.kind == RuntimeErrorKind::CostLimitExceeded
}

/// Cost of `==`/`!=` per cel-go (string/bytes/list traversal), 1 for Kubernetes types.
fn equality_cost(a: &Value<'_>, b: &Value<'_>) -> u64 {
    if matches!(a, Value::Quantity(_) | Value::Semver(_)) {
        return 1;
    }
    let min = a.actual_size().min(b.actual_size());
    (min as f64 * 0.1).ceil() as u64
}

impl Node {
    /// Nesting depth of the program tree (bounds the evaluator's recursion).
    pub(crate) fn depth(&self) -> usize {
        let children: Vec<&Node> = match self {
            Node::Select(a, _)
            | Node::Has(a, _)
            | Node::OptSelect(a, _)
            | Node::Not(a)
            | Node::NotStrictlyFalse(a)
            | Node::InConstList(a, _) => vec![a],
            Node::Index(a, b)
            | Node::OptIndex(a, b)
            | Node::And(a, b)
            | Node::Or(a, b)
            | Node::Eq(a, b)
            | Node::Ne(a, b)
            | Node::OptOr(a, b)
            | Node::OptOrValue(a, b) => vec![a, b],
            Node::Cond(parts) => vec![&parts.0, &parts.1, &parts.2],
            Node::Call(call) => call.args.iter().collect(),
            Node::List(items, _) => items.iter().collect(),
            Node::Map(entries) => entries.iter().flat_map(|(k, v, _)| [k, v]).collect(),
            Node::Fold(f) => vec![&f.range, &f.init, &f.condition, &f.step, &f.result],
            Node::Bind(b) => vec![&b.1, &b.2],
            Node::AccuAppend(_, items) => items.iter().collect(),
            _ => vec![],
        };
        1 + children.iter().map(|c| c.depth()).max().unwrap_or(0)
    }

    pub(crate) fn eval<'a>(&'a self, ctx: &mut Ctx<'a>) -> Val<'a> {
        match self {
            Node::Const(c) => Ok(c.value()),
            Node::Device => {
                ctx.charge(1)?;
                Ok(Value::Map(MapValue::Device(ctx.device)))
            }
            Node::Local(slot) => {
                ctx.charge(1)?;
                match ctx.locals.get(*slot) {
                    Some(v) => v.clone(),
                    None => Ok(Value::Null),
                }
            }
            Node::Driver => {
                ctx.charge(2)?;
                Ok(Value::Str(Str::Borrowed(&ctx.device.driver)))
            }
            Node::AllowMultipleAllocations => {
                ctx.charge(2)?;
                Ok(Value::Bool(ctx.device.allow_multiple_allocations))
            }
            Node::AttrDomain(d) => {
                ctx.charge(3)?;
                Ok(Value::Map(MapValue::AttrDomain(
                    ctx.device.attribute_domain(d),
                )))
            }
            Node::CapDomain(d) => {
                ctx.charge(3)?;
                Ok(Value::Map(MapValue::CapDomain(
                    ctx.device.capacity_domain(d),
                )))
            }
            Node::Attr(d, id) => {
                ctx.charge(4)?;
                match ctx.device.attribute_domain(d).get(id) {
                    Some(v) => v.to_value(),
                    None => Err(no_such_key(&Value::Str(Str::Borrowed(id)))),
                }
            }
            Node::Cap(d, id) => {
                ctx.charge(4)?;
                match ctx.device.capacity_value(d, id) {
                    Some(v) => Ok(v),
                    None => Err(no_such_key(&Value::Str(Str::Borrowed(id)))),
                }
            }
            Node::HasAttr(d, id) => {
                ctx.charge(3)?;
                Ok(Value::Bool(
                    ctx.device.attribute_domain(d).get(id).is_some(),
                ))
            }
            Node::HasCap(d, id) => {
                ctx.charge(3)?;
                Ok(Value::Bool(ctx.device.capacity_domain(d).get(id).is_some()))
            }
            Node::Select(operand, field) => {
                let v = operand.eval(ctx)?;
                ctx.charge(1)?;
                select(&v, field)
            }
            Node::Has(operand, field) => {
                let mut v = operand.eval(ctx)?;
                // `has()` on an optional tests the wrapped value.
                while let Value::Optional(inner) = v {
                    match inner {
                        Some(inner) => v = (*inner).clone(),
                        None => return Ok(Value::Bool(false)),
                    }
                }
                let key = Value::Str(Str::Borrowed(field));
                Ok(Value::Bool(match &v {
                    Value::Map(m) => m.find(&key)?.is_some(),
                    _ => false,
                }))
            }
            Node::OptSelect(operand, field) => {
                let v = operand.eval(ctx)?;
                ctx.charge(1)?;
                let key = Value::Str(Str::Borrowed(field));
                opt_lookup(&v, &key, false)
            }
            Node::Index(operand, index) => {
                let v = operand.eval(ctx)?;
                let i = index.eval(ctx)?;
                ctx.charge(1)?;
                index_value(&v, &i)
            }
            Node::OptIndex(operand, index) => {
                let v = operand.eval(ctx)?;
                let i = index.eval(ctx)?;
                ctx.charge(1)?;
                opt_lookup(&v, &i, true)
            }
            Node::And(a, b) => logic(ctx, a, b, false),
            Node::Or(a, b) => logic(ctx, a, b, true),
            Node::Not(a) => match a.eval(ctx)? {
                Value::Bool(b) => {
                    ctx.charge(1)?;
                    Ok(Value::Bool(!b))
                }
                _ => Err(no_such_overload()),
            },
            Node::NotStrictlyFalse(a) => {
                let v = a.eval(ctx);
                ctx.charge(1)?;
                match v {
                    Ok(Value::Bool(b)) => Ok(Value::Bool(b)),
                    Err(e) if is_fatal(&e) => Err(e),
                    _ => Ok(Value::Bool(true)),
                }
            }
            Node::Cond(parts) => match parts.0.eval(ctx)? {
                Value::Bool(true) => parts.1.eval(ctx),
                Value::Bool(false) => parts.2.eval(ctx),
                _ => Err(no_such_overload()),
            },
            Node::Eq(a, b) => {
                let x = a.eval(ctx)?;
                let y = b.eval(ctx)?;
                ctx.charge(equality_cost(&x, &y))?;
                Ok(Value::Bool(equals(&x, &y)?))
            }
            Node::Ne(a, b) => {
                let x = a.eval(ctx)?;
                let y = b.eval(ctx)?;
                ctx.charge(equality_cost(&x, &y))?;
                Ok(Value::Bool(!equals(&x, &y)?))
            }
            Node::InConstList(a, list) => {
                let x = a.eval(ctx)?;
                ctx.charge(list.len() as u64 + 10)?;
                for c in list {
                    if equals(&x, &c.value())? {
                        return Ok(Value::Bool(true));
                    }
                }
                Ok(Value::Bool(false))
            }
            Node::OptOr(a, b) => match a.eval(ctx)? {
                Value::Optional(Some(v)) => Ok(Value::Optional(Some(v))),
                Value::Optional(None) => b.eval(ctx),
                _ => Err(no_such_overload()),
            },
            Node::OptOrValue(a, b) => match a.eval(ctx)? {
                Value::Optional(Some(v)) => Ok((*v).clone()),
                Value::Optional(None) => b.eval(ctx),
                _ => Err(no_such_overload()),
            },
            Node::Call(call) => eval_call(call, ctx),
            Node::List(elements, optional_indices) => {
                let mut items = Vec::with_capacity(elements.len());
                for (i, el) in elements.iter().enumerate() {
                    let v = el.eval(ctx)?;
                    if optional_indices.contains(&i) {
                        match v {
                            Value::Optional(Some(inner)) => items.push((*inner).clone()),
                            Value::Optional(None) => {}
                            other_value => {
                                return Err(crate::value::no_such_overload_for(
                                    "optional",
                                    &[&other_value],
                                ));
                            }
                        }
                    } else {
                        items.push(v);
                    }
                }
                ctx.charge(10)?;
                Ok(Value::list(items))
            }
            Node::Map(entries) => {
                let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(entries.len());
                for (k, v, optional) in entries {
                    let key = k.eval(ctx)?;
                    let value = v.eval(ctx)?;
                    // As cel-go (a Go map): a repeated key overwrites; an absent optional
                    // entry removes the key.
                    let existing = out.iter().position(|(e, _)| {
                        e.type_name() == key.type_name() && equals(e, &key).unwrap_or(false)
                    });
                    let value = if *optional {
                        match value {
                            Value::Optional(Some(inner)) => (*inner).clone(),
                            Value::Optional(None) => {
                                if let Some(i) = existing {
                                    out.remove(i);
                                }
                                continue;
                            }
                            other_value => {
                                return Err(crate::value::no_such_overload_for(
                                    "optional",
                                    &[&other_value],
                                ));
                            }
                        }
                    } else {
                        value
                    };
                    match existing {
                        Some(i) => out[i].1 = value,
                        None => out.push((key, value)),
                    }
                }
                ctx.charge(30)?;
                Ok(Value::Map(MapValue::Owned(Rc::new(out))))
            }
            Node::Fold(fold) => eval_fold(fold, ctx),
            Node::AccuAppend(slot, items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(item.eval(ctx)?);
                }
                // The list literal, the accumulator read and the `+` call, as cel-go counts.
                ctx.charge(12)?;
                let taken = match ctx.locals.get_mut(*slot) {
                    Some(v) => std::mem::replace(v, Ok(Value::Null)),
                    None => Ok(Value::Null),
                };
                match taken? {
                    Value::List(mut list) => {
                        Rc::make_mut(&mut list).extend(values);
                        Ok(Value::List(list))
                    }
                    _ => Err(no_such_overload()),
                }
            }
            Node::Bind(bind) => {
                // cel-go charges the empty iteration-range list it builds.
                ctx.charge(10)?;
                let (slot, init, result) = &**bind;
                let value = init.eval(ctx);
                if let Err(e) = &value
                    && is_fatal(e)
                {
                    return value;
                }
                let base = ctx.locals.len().min(*slot);
                ctx.locals.truncate(base);
                ctx.set_local(*slot, value);
                let out = result.eval(ctx);
                ctx.locals.truncate(base);
                out
            }
        }
    }
}

fn logic<'a>(ctx: &mut Ctx<'a>, a: &'a Node, b: &'a Node, is_or: bool) -> Val<'a> {
    let short = !is_or;
    let first = a.eval(ctx);
    match &first {
        Ok(Value::Bool(v)) if *v == is_or => return Ok(Value::Bool(is_or)),
        Err(e) if is_fatal(e) => return first,
        _ => {}
    }
    let second = b.eval(ctx);
    match &second {
        Ok(Value::Bool(v)) if *v == is_or => return Ok(Value::Bool(is_or)),
        Err(e) if is_fatal(e) => return second,
        _ => {}
    }
    let first_ok = matches!(first, Ok(Value::Bool(_)));
    let second_ok = matches!(second, Ok(Value::Bool(_)));
    if first_ok && second_ok {
        return Ok(Value::Bool(short));
    }
    let pick = if !first_ok { first } else { second };
    match pick {
        Err(e) => Err(e),
        Ok(_) => Err(no_such_overload()),
    }
}

pub(crate) fn select<'a>(v: &Value<'a>, field: &str) -> Val<'a> {
    let key = Value::Str(Str::Borrowed(field));
    match v {
        // Selecting on an optional yields an optional (cel-go's optional chaining).
        Value::Optional(_) => opt_lookup(v, &key, false),
        Value::Map(m) => match m.find(&key)? {
            Some(found) => Ok(found),
            None => Err(no_such_key(&key)),
        },
        _ => Err(no_such_key(&key)),
    }
}

fn list_index(len: usize, i: &Value<'_>) -> Result<Option<usize>, Err> {
    let idx: i64 = match i {
        Value::Int(n) => *n,
        Value::Uint(u) => {
            if *u > i64::MAX as u64 {
                return Err(other(format!("unsupported index value {u} in list")));
            }
            *u as i64
        }
        Value::Double(d) => {
            if d.fract() != 0.0 || !d.is_finite() || *d < -9.2e18 || *d > 9.2e18 {
                return Err(other(format!(
                    "unsupported index value {} in list",
                    crate::functions::format_go_float(*d)
                )));
            }
            *d as i64
        }
        other_value => {
            return Err(other(format!(
                "unsupported index type '{}' in list",
                other_value.type_name()
            )));
        }
    };
    if idx >= 0 && (idx as u64) < len as u64 {
        Ok(Some(idx as usize))
    } else {
        Ok(None)
    }
}

pub(crate) fn index_value<'a>(v: &Value<'a>, i: &Value<'_>) -> Val<'a> {
    match v {
        Value::List(items) => match list_index(items.len(), i)? {
            Some(idx) => Ok(items[idx].clone()),
            None => Err(other(format!("index out of bounds: {}", i.display()))),
        },
        Value::Map(m) => match m.find(i)? {
            Some(found) => Ok(found),
            None => Err(no_such_key(i)),
        },
        Value::Optional(opt) => match opt {
            None => Ok(Value::Optional(None)),
            Some(inner) => opt_lookup(inner, i, true),
        },
        _ => Err(no_such_key(i)),
    }
}

fn opt_lookup<'a>(v: &Value<'a>, key: &Value<'_>, allow_list: bool) -> Val<'a> {
    match v {
        Value::Optional(None) => Ok(Value::Optional(None)),
        Value::Optional(Some(inner)) => opt_lookup(inner, key, allow_list),
        Value::Map(m) => Ok(Value::Optional(m.find(key)?.map(Rc::new))),
        Value::List(items) if allow_list => Ok(Value::Optional(
            list_index(items.len(), key)?.map(|i| Rc::new(items[i].clone())),
        )),
        _ => Err(no_such_key(key)),
    }
}

fn eval_call<'a>(call: &'a CallNode, ctx: &mut Ctx<'a>) -> Val<'a> {
    match call.args.len() {
        0 => functions::call(call, &[], ctx),
        1 => {
            let a = call.args[0].eval(ctx)?;
            functions::call(call, &[a], ctx)
        }
        2 => {
            let a = call.args[0].eval(ctx)?;
            let b = call.args[1].eval(ctx)?;
            functions::call(call, &[a, b], ctx)
        }
        3 => {
            let a = call.args[0].eval(ctx)?;
            let b = call.args[1].eval(ctx)?;
            let c = call.args[2].eval(ctx)?;
            functions::call(call, &[a, b, c], ctx)
        }
        _ => {
            let mut values = Vec::with_capacity(call.args.len());
            for a in &call.args {
                values.push(a.eval(ctx)?);
            }
            functions::call(call, &values, ctx)
        }
    }
}

fn eval_fold<'a>(fold: &'a Fold, ctx: &mut Ctx<'a>) -> Val<'a> {
    let range = fold.range.eval(ctx)?;
    let init = fold.init.eval(ctx);
    if let Err(e) = &init
        && is_fatal(e)
    {
        return init;
    }
    let base = ctx.locals.len().min(fold.accu_slot);
    ctx.locals.truncate(base);
    ctx.set_local(fold.accu_slot, init);
    // Iteration: (first var, second var) per element. Lists are walked in place.
    let map_pairs: Vec<(Value<'a>, Option<Value<'a>>)> = match &range {
        Value::List(_) => Vec::new(),
        Value::Map(m) => {
            let keys = m.keys();
            if fold.two_vars {
                let mut out = Vec::with_capacity(keys.len());
                for k in keys {
                    let v = m.find(&k)?.unwrap_or(Value::Null);
                    out.push((k, Some(v)));
                }
                out
            } else {
                keys.into_iter().map(|k| (k, None)).collect()
            }
        }
        other_value => {
            let message = if fold.two_vars {
                format!(
                    "unsupported comprehension range type: {}",
                    other_value.type_name()
                )
            } else {
                format!("got '{}', expected iterable type", other_value.go_type())
            };
            ctx.locals.truncate(base);
            return Err(other(message));
        }
    };
    let list_items: &[Value<'a>] = match &range {
        Value::List(items) => items,
        _ => &[],
    };
    let list_iter = list_items.iter().enumerate().map(|(i, v)| {
        if fold.two_vars {
            (Value::Int(i as i64), Some(v.clone()))
        } else {
            (v.clone(), None)
        }
    });
    let pairs = list_iter.chain(map_pairs);
    let condition_is_true = matches!(fold.condition, Node::Const(Const::Bool(true)));
    for (first, second) in pairs {
        ctx.set_local(fold.var_slot, Ok(first));
        if let Some(second) = second {
            ctx.set_local(fold.var_slot + 1, Ok(second));
        }
        if !condition_is_true {
            match fold.condition.eval(ctx) {
                Ok(Value::Bool(false)) => break,
                Err(e) if is_fatal(&e) => {
                    ctx.locals.truncate(base);
                    return Err(e);
                }
                _ => {}
            }
        }
        let next = fold.step.eval(ctx);
        if let Err(e) = &next
            && is_fatal(e)
        {
            ctx.locals.truncate(base);
            return next;
        }
        ctx.set_local(fold.accu_slot, next);
    }
    ctx.locals.truncate(fold.accu_slot + 1);
    let result = fold.result.eval(ctx);
    ctx.locals.truncate(base);
    result
}
