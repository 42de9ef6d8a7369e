//! Worst-case cost estimation: a port of cel-go's `checker/cost.go` with the Kubernetes
//! `library.CostEstimator` call costs and the DRA size estimator (sizes of the `device`
//! fields from the API limits), as the API server runs it when validating selectors.

use std::collections::HashMap;

use crate::ast::{ACCUMULATOR, Expr, ExprId, ExprKind, Literal};
use crate::checker::Checked;
use crate::types::{QUANTITY_TYPE, SEMVER_TYPE, Type};

/// Estimated cost range of an expression in CEL cost units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostEstimate {
    /// Lower bound.
    pub min: u64,
    /// Upper bound; the API server rejects selectors whose `max` exceeds 1,000,000.
    pub max: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Size {
    min: u64,
    max: u64,
}

const UNKNOWN: Size = Size {
    min: 0,
    max: u64::MAX,
};

fn fixed(n: u64) -> CostEstimate {
    CostEstimate { min: n, max: n }
}

fn add_sat(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

fn mul_sat(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

fn mul_factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let c = (xf * f).ceil();
    if c >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        c as u64
    }
}

impl CostEstimate {
    fn add(self, o: CostEstimate) -> CostEstimate {
        CostEstimate {
            min: add_sat(self.min, o.min),
            max: add_sat(self.max, o.max),
        }
    }
    fn multiply(self, o: CostEstimate) -> CostEstimate {
        CostEstimate {
            min: mul_sat(self.min, o.min),
            max: mul_sat(self.max, o.max),
        }
    }
    fn union(self, o: CostEstimate) -> CostEstimate {
        CostEstimate {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

impl Size {
    fn add(self, o: Size) -> Size {
        Size {
            min: add_sat(self.min, o.min),
            max: add_sat(self.max, o.max),
        }
    }
    fn multiply(self, o: Size) -> Size {
        Size {
            min: mul_sat(self.min, o.min),
            max: mul_sat(self.max, o.max),
        }
    }
    fn factor(self, f: f64) -> CostEstimate {
        CostEstimate {
            min: mul_factor(self.min, f),
            max: mul_factor(self.max, f),
        }
    }
    fn times_cost(self, c: CostEstimate) -> CostEstimate {
        CostEstimate {
            min: mul_sat(self.min, c.min),
            max: mul_sat(self.max, c.max),
        }
    }
    fn union(self, o: Size) -> Size {
        Size {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct EntrySize {
    is_list: bool,
    key: Size,
    val: Size,
}

struct Local {
    path: Vec<String>,
    size: Option<Size>,
    entry: Option<EntrySize>,
}

struct Coster<'c> {
    checked: &'c Checked,
    paths: HashMap<ExprId, Vec<String>>,
    sizes: HashMap<ExprId, Size>,
    entries: HashMap<ExprId, EntrySize>,
    locals: Vec<(String, Local)>,
}

const STRING_FACTOR: f64 = 0.1;
const REGEX_FACTOR: f64 = 0.25;

pub(crate) fn estimate(expr: &Expr, checked: &Checked) -> CostEstimate {
    let mut c = Coster {
        checked,
        paths: HashMap::new(),
        sizes: HashMap::new(),
        entries: HashMap::new(),
        locals: Vec::new(),
    };
    c.cost(expr)
}

/// The DRA size estimator: maximum sizes of what `device` exposes, by path.
fn dra_size(path: &[String]) -> Option<Size> {
    if path.first().map(String::as_str) != Some("device") {
        return None;
    }
    #[derive(Clone, Copy)]
    enum N {
        Device,
        Driver,
        Multi,
        OuterAttrs,
        InnerAttrs,
        Attr,
        OuterCaps,
        InnerCaps,
        Domain,
        Id,
        Quantity,
    }
    let mut node = N::Device;
    for name in &path[1..] {
        node = match (node, name.as_str()) {
            (N::Device, "driver") => N::Driver,
            (N::Device, "allowMultipleAllocations") => N::Multi,
            (N::Device, "attributes") => N::OuterAttrs,
            (N::Device, "capacity") => N::OuterCaps,
            (N::OuterAttrs, "@values") => N::InnerAttrs,
            (N::OuterCaps, "@values") => N::InnerCaps,
            (N::OuterAttrs | N::OuterCaps, "@keys") => N::Domain,
            (N::InnerAttrs | N::InnerCaps, "@keys") => N::Id,
            (N::InnerAttrs, _) => N::Attr,
            (N::InnerCaps, "@values") => N::Quantity,
            _ => return None,
        };
    }
    let max = match node {
        N::Device | N::Quantity => return None,
        N::Driver | N::Domain => 63,
        N::Multi => 1,
        N::OuterAttrs | N::InnerAttrs | N::OuterCaps | N::InnerCaps => 32,
        N::Attr => 64,
        N::Id => 32,
    };
    Some(Size { min: 0, max })
}

fn literal_size(e: &Expr) -> Option<Size> {
    let n = match &e.kind {
        ExprKind::Literal(Literal::String(s)) => s.chars().count() as u64,
        ExprKind::Literal(Literal::Bytes(b)) => b.len() as u64,
        ExprKind::Literal(_) => 1,
        ExprKind::List { elements, .. } => elements.len() as u64,
        ExprKind::Map { entries } => entries.len() as u64,
        _ => return None,
    };
    Some(Size { min: n, max: n })
}

impl Coster<'_> {
    fn ty(&self, e: &Expr) -> Type {
        self.checked.type_of(e.id)
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l)
    }

    fn path(&self, e: &Expr) -> Vec<String> {
        if let ExprKind::Ident(name) = &e.kind
            && let Some(l) = self.local(name)
        {
            return l.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    fn size(&mut self, e: &Expr) -> Option<Size> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        if let Some(s) = literal_size(e) {
            return Some(s);
        }
        let path = self.path(e);
        if !path.is_empty()
            && path[0] != ACCUMULATOR
            && let Some(s) = dra_size(&path)
        {
            self.sizes.insert(e.id, s);
            return Some(s);
        }
        if self.ty(e).is_scalar() {
            return Some(Size { min: 1, max: 1 });
        }
        if let ExprKind::Ident(name) = &e.kind
            && let Some(s) = self.local(name).and_then(|l| l.size)
        {
            return Some(s);
        }
        None
    }

    fn size_or_unknown(&mut self, e: &Expr) -> Size {
        self.size(e).unwrap_or(UNKNOWN)
    }

    fn entry(&self, e: &Expr) -> Option<EntrySize> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        if let ExprKind::Ident(name) = &e.kind {
            return self.local(name).and_then(|l| l.entry);
        }
        None
    }

    fn push_local(
        &mut self,
        name: &str,
        path: Vec<String>,
        size: Option<Size>,
        entry: Option<EntrySize>,
    ) {
        self.locals
            .push((name.to_string(), Local { path, size, entry }));
    }

    fn cost(&mut self, e: &Expr) -> CostEstimate {
        match &e.kind {
            ExprKind::Literal(_) => fixed(0),
            ExprKind::Ident(name) => {
                let path = match self.local(name) {
                    Some(l) => l.path.clone(),
                    None => vec![name.clone()],
                };
                self.paths.insert(e.id, path);
                fixed(1)
            }
            ExprKind::Select {
                operand,
                field,
                test_only,
            } => {
                if *test_only {
                    // PresenceTestHasCost(false) in the Kubernetes base environment.
                    return self.cost(operand);
                }
                let mut sum = self.cost(operand);
                if matches!(
                    self.ty(operand),
                    Type::Map(..) | Type::Struct(_) | Type::Param(_)
                ) {
                    sum = sum.add(fixed(1));
                }
                let mut p = self.path(operand);
                p.push(field.clone());
                self.paths.insert(e.id, p);
                sum
            }
            ExprKind::Call {
                target,
                function,
                args,
            } => match self.checked.qualified_calls.get(&e.id) {
                Some(qualified) => {
                    let qualified = qualified.clone();
                    self.cost_call(e, None, &qualified, args)
                }
                None => self.cost_call(e, target.as_deref(), function, args),
            },
            ExprKind::List { elements, .. } => {
                let mut sum = fixed(0);
                let mut item = Size {
                    min: if elements.is_empty() { 0 } else { u64::MAX },
                    max: 0,
                };
                for el in elements {
                    sum = sum.add(self.cost(el));
                    let s = self.size_or_unknown(el);
                    item = item.union(s);
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        is_list: true,
                        key: Size { min: 1, max: 1 },
                        val: item,
                    },
                );
                sum.add(fixed(10))
            }
            ExprKind::Map { entries } => {
                let mut sum = fixed(0);
                let empty = entries.is_empty();
                let mut key = Size {
                    min: if empty { 0 } else { u64::MAX },
                    max: 0,
                };
                let mut val = key;
                for en in entries {
                    sum = sum.add(self.cost(&en.key));
                    sum = sum.add(self.cost(&en.value));
                    let ks = self.size_or_unknown(&en.key);
                    key = key.union(ks);
                    let vs = self.size_or_unknown(&en.value);
                    val = val.union(vs);
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        is_list: false,
                        key,
                        val,
                    },
                );
                sum.add(fixed(30))
            }
            ExprKind::Struct { fields, .. } => {
                let mut sum = fixed(40);
                for f in fields {
                    sum = sum.add(self.cost(&f.value));
                }
                sum
            }
            ExprKind::Comprehension(c) => {
                let is_bind = matches!(&c.iter_range.kind, ExprKind::List { elements, .. } if elements.is_empty())
                    && matches!(
                        c.loop_condition.kind,
                        ExprKind::Literal(Literal::Bool(false))
                    )
                    && c.accu_var != "__result__";
                if is_bind {
                    let mut sum = self.cost(&c.iter_range);
                    sum = sum.add(self.cost(&c.accu_init));
                    let path = self.path(&c.accu_init);
                    let size = self.size(&c.accu_init);
                    let entry = self.entry(&c.accu_init);
                    self.push_local(&c.accu_var, path, size, entry);
                    sum = sum.add(self.cost(&c.result));
                    self.locals.pop();
                    if let Some(s) = self.size(&c.result) {
                        self.sizes.insert(e.id, s);
                    }
                    if let Some(en) = self.entry(&c.result) {
                        self.entries.insert(e.id, en);
                    }
                    return sum;
                }
                let mut sum = self.cost(&c.iter_range);
                sum = sum.add(self.cost(&c.accu_init));
                let path = self.path(&c.accu_init);
                let size = self.size(&c.accu_init);
                let entry = self.entry(&c.accu_init);
                self.push_local(&c.accu_var, path, size, entry);
                let range_entry = self.entry(&c.iter_range);
                let range_is_list = match range_entry {
                    Some(en) => en.is_list,
                    None => matches!(self.ty(&c.iter_range), Type::List(_)),
                };
                let range_path = self.path(&c.iter_range);
                let pushed = if c.iter_var2.is_some() {
                    let mut kp = range_path.clone();
                    kp.push(if range_is_list { "@indices" } else { "@keys" }.to_string());
                    self.push_local(&c.iter_var, kp, range_entry.map(|e| e.key), None);
                    let mut vp = range_path;
                    vp.push(if range_is_list { "@items" } else { "@values" }.to_string());
                    let var2 = c.iter_var2.clone().unwrap_or_default();
                    self.push_local(&var2, vp, range_entry.map(|e| e.val), None);
                    2
                } else {
                    let mut p = range_path;
                    let size = if range_is_list {
                        p.push("@items".to_string());
                        range_entry.map(|e| e.val)
                    } else {
                        p.push("@keys".to_string());
                        range_entry.map(|e| e.key)
                    };
                    self.push_local(&c.iter_var, p, size, None);
                    1
                };
                let loop_cost = self.cost(&c.loop_condition);
                let step_cost = self.cost(&c.loop_step);
                for _ in 0..pushed {
                    self.locals.pop();
                }
                sum = sum.add(self.cost(&c.result));
                self.locals.pop();
                let range_count = self.size_or_unknown(&c.iter_range);
                sum = sum.add(range_count.times_cost(step_cost.add(loop_cost)));
                match &c.accu_init.kind {
                    ExprKind::Literal(_) => {
                        if let Some(s) = self.size(&c.accu_init) {
                            self.sizes.insert(e.id, s);
                        }
                    }
                    ExprKind::List { .. } | ExprKind::Map { .. } => {
                        self.sizes.insert(e.id, range_count);
                        if let Some(en) = self.entry(&c.loop_step) {
                            self.entries.insert(e.id, en);
                        }
                    }
                    _ => {}
                }
                sum
            }
        }
    }

    fn cost_call(
        &mut self,
        e: &Expr,
        target: Option<&Expr>,
        function: &str,
        args: &[Expr],
    ) -> CostEstimate {
        if function == "dyn" && target.is_none() && args.len() == 1 {
            let c = self.cost(&args[0]);
            if let Some(s) = self.size(&args[0]) {
                self.sizes.insert(e.id, s);
            }
            if let Some(en) = self.entry(&args[0]) {
                self.entries.insert(e.id, en);
            }
            return fixed(1).add(c);
        }
        let arg_costs: Vec<CostEstimate> = args.iter().map(|a| self.cost(a)).collect();
        let overloads = self
            .checked
            .overloads
            .get(&e.id)
            .cloned()
            .unwrap_or_default();
        if overloads.is_empty() {
            return fixed(0);
        }
        let mut sum = fixed(0);
        if let Some(t) = target {
            sum = sum.add(self.cost(t));
        }
        let mut fn_cost = CostEstimate {
            min: u64::MAX,
            max: 0,
        };
        let mut result_size: Option<Size> = None;
        for id in &overloads {
            let (c, rs) = self.function_cost(e, function, id, target, args, &arg_costs);
            fn_cost = fn_cost.union(c);
            if let Some(rs) = rs {
                result_size = Some(match result_size {
                    None => rs,
                    Some(prev) => prev.union(rs),
                });
            }
            match *id {
                "index_list" | "index_map" if !args.is_empty() => {
                    result_size = self.entry(&args[0]).map(|en| en.val);
                    let mut p = self.path(&args[0]);
                    p.push(
                        if *id == "index_list" {
                            "@items"
                        } else {
                            "@values"
                        }
                        .to_string(),
                    );
                    self.paths.insert(e.id, p);
                }
                _ => {}
            }
            if result_size.is_none() {
                result_size = self.size(e);
            }
        }
        if let Some(rs) = result_size {
            self.sizes.insert(e.id, rs);
        }
        sum.add(fn_cost)
    }

    fn list_elem_cost(&mut self, target: &Expr) -> CostEstimate {
        let elem_type = match self.ty(target) {
            Type::List(t) => Some(*t),
            _ => None,
        };
        let mut el = fixed(1);
        if let Some(t) = elem_type
            && matches!(t, Type::String | Type::Bytes)
        {
            let mut p = self.path(target);
            p.push("@items".to_string());
            let s = dra_size(&p).unwrap_or(UNKNOWN);
            el = el.add(s.factor(STRING_FACTOR));
        }
        el
    }

    #[allow(clippy::too_many_arguments)]
    fn function_cost(
        &mut self,
        e: &Expr,
        function: &str,
        overload: &str,
        target: Option<&Expr>,
        args: &[Expr],
        arg_costs: &[CostEstimate],
    ) -> (CostEstimate, Option<Size>) {
        let arg_sum = arg_costs.iter().fold(fixed(0), |a, c| a.add(*c));
        // Kubernetes library estimates (library.CostEstimator.EstimateCallCost).
        match function {
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes" => {
                if let Some(t) = target {
                    if overload == "dra_includes_dyn_dyn" {
                        return (CostEstimate { min: 0, max: 48 }.add(arg_sum), None);
                    }
                    if matches!(self.ty(t), Type::List(_)) {
                        let el = self.list_elem_cost(t);
                        let s = self.size_or_unknown(t);
                        return (s.times_cost(el).add(arg_sum), None);
                    }
                    if !overload.starts_with("string_") {
                        let s = self.size_or_unknown(t);
                        return (s.factor(STRING_FACTOR).add(arg_sum), None);
                    }
                }
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                if let Some(t) = target {
                    let s = self.size_or_unknown(t);
                    return (s.factor(STRING_FACTOR).add(arg_sum), Some(s));
                }
            }
            "replace" => {
                if let (Some(t), 2..) = (target, args.len()) {
                    let sz = self.size_or_unknown(t);
                    let from = self.size_or_unknown(&args[0]);
                    let to = self.size_or_unknown(&args[1]);
                    let (mut count, mut retained) =
                        (Size { min: 0, max: 0 }, Size { min: 0, max: 0 });
                    if from.min == 0 {
                        count.max = if sz.max < u64::MAX {
                            sz.max + 1
                        } else {
                            sz.max
                        };
                        retained.max = sz.max;
                    } else if to.max <= from.min {
                        retained.max = sz.max;
                    } else {
                        count.max = (sz.max as f64 / from.min as f64).ceil() as u64;
                    }
                    if from.max == 0 {
                        count.min = if sz.min < u64::MAX {
                            sz.min + 1
                        } else {
                            sz.min
                        };
                        retained.min = sz.min;
                    } else if from.max <= to.min {
                        retained.min = sz.min;
                    } else {
                        count.min = (sz.min as f64 / from.max as f64).ceil() as u64;
                    }
                    let size = count.multiply(to).add(retained);
                    return (sz.factor(2.0 * STRING_FACTOR).add(arg_sum), Some(size));
                }
            }
            "split" => {
                if let Some(t) = target {
                    let sz = self.size_or_unknown(t);
                    let mut max = sz.max;
                    if let Some(ExprKind::Literal(Literal::Int(i))) = args.get(1).map(|a| &a.kind) {
                        max = *i as u64;
                    }
                    return (
                        sz.factor(2.0 * STRING_FACTOR).add(arg_sum),
                        Some(Size { min: 0, max }),
                    );
                }
            }
            "join" => {
                if let Some(t) = target {
                    let list = self.size_or_unknown(t);
                    let mut p = self.path(t);
                    p.push("@items".to_string());
                    let elem = dra_size(&p).unwrap_or(UNKNOWN);
                    let mut sz = list.multiply(elem);
                    if let Some(sep) = args.first() {
                        let sep = self.size_or_unknown(sep);
                        let seps = Size {
                            min: list.min.saturating_sub(1),
                            max: list.max.saturating_sub(1),
                        };
                        sz = sz.add(sep.multiply(seps));
                    }
                    return (sz.factor(STRING_FACTOR).add(arg_sum), Some(sz));
                }
            }
            "find" | "findAll" => {
                if let (Some(t), Some(re)) = (target, args.first()) {
                    let sz = self.size_or_unknown(t);
                    let str_cost = sz.add(Size { min: 1, max: 1 }).factor(STRING_FACTOR);
                    let re_cost = self.size_or_unknown(re).factor(REGEX_FACTOR);
                    return (
                        str_cost.multiply(re_cost).add(arg_sum),
                        Some(Size {
                            min: 0,
                            max: sz.max,
                        }),
                    );
                }
            }
            "quantity" | "isQuantity" | "semver" | "isSemver" => {
                if let Some(a) = args.first() {
                    let s = self.size_or_unknown(a);
                    return (s.factor(STRING_FACTOR).add(arg_sum), None);
                }
            }
            "cidr" | "isIP" | "isCIDR" if overload != "cidr_ip" => {
                if let Some(a) = args.first() {
                    let s = self.size_or_unknown(a);
                    return (s.factor(STRING_FACTOR).add(arg_sum), None);
                }
            }
            "ip" => {
                if overload == "cidr_ip" {
                    return (fixed(1).add(arg_sum), None);
                }
                if let Some(a) = args.first() {
                    let s = self.size_or_unknown(a);
                    return (s.factor(STRING_FACTOR).add(arg_sum), None);
                }
            }
            "ip.isCanonical" => {
                if let Some(a) = args.first() {
                    let s = self.size_or_unknown(a);
                    return (s.factor(2.0 * STRING_FACTOR).add(arg_sum), None);
                }
            }
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => {
                return (fixed(1).add(arg_sum), None);
            }
            "containsIP" | "containsCIDR" if !args.is_empty() => {
                let ip = Size { min: 4, max: 16 };
                let mut cost = ip.add(ip).factor(STRING_FACTOR);
                if function == "containsCIDR" {
                    cost = cost.add(ip.factor(STRING_FACTOR)).add(fixed(1));
                }
                if overload.ends_with("_string") {
                    let s = self.size_or_unknown(&args[0]);
                    cost = cost.add(s.factor(STRING_FACTOR));
                }
                return (cost.add(arg_sum), None);
            }
            "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan"
            | "isLessThan" | "compareTo" | "add" | "sub" | "major" | "minor" | "patch" => {
                return (fixed(1).add(arg_sum), None);
            }
            "_==_" if args.len() == 2 => {
                let (l, r) = (self.ty(&args[0]), self.ty(&args[1]));
                if l == r
                    && matches!(l, Type::Struct(n) if [QUANTITY_TYPE, SEMVER_TYPE, crate::types::IP_TYPE, crate::types::CIDR_TYPE].contains(&n))
                {
                    return (fixed(1).add(arg_sum), None);
                }
            }
            "sets.contains" | "sets.equivalent" | "sets.intersects" if args.len() == 2 => {
                let a = self.size_or_unknown(&args[0]);
                let b = self.size_or_unknown(&args[1]);
                return (a.multiply(b).factor(1.0).add(fixed(1)).add(arg_sum), None);
            }
            _ => {}
        }
        // cel-go's built-in estimates.
        match overload {
            "starts_with_string" | "ends_with_string" => {
                if let Some(a) = args.first() {
                    let s = self.size_or_unknown(a);
                    return (s.factor(STRING_FACTOR).add(arg_sum), None);
                }
            }
            "string_to_bytes" | "bytes_to_string" | "strings_quote" => {
                if let Some(a) = args.first() {
                    let s = self.size_or_unknown(a);
                    return (s.factor(STRING_FACTOR).add(arg_sum), None);
                }
            }
            "in_list" if args.len() == 2 => {
                let s = self.size_or_unknown(&args[1]);
                return (s.factor(1.0).add(arg_sum), None);
            }
            "matches" | "matches_string" => {
                let (text, pattern) = match target {
                    Some(t) => (Some(t), args.first()),
                    None => (args.first(), args.get(1)),
                };
                if let (Some(t), Some(p)) = (text, pattern) {
                    let str_cost = self
                        .size_or_unknown(t)
                        .add(Size { min: 1, max: 1 })
                        .factor(STRING_FACTOR);
                    let re_cost = self.size_or_unknown(p).factor(REGEX_FACTOR);
                    return (str_cost.multiply(re_cost).add(arg_sum), None);
                }
            }
            "contains_string" => {
                if let (Some(t), Some(a)) = (target, args.first()) {
                    let str_cost = self.size_or_unknown(t).factor(STRING_FACTOR);
                    let sub_cost = self.size_or_unknown(a).factor(STRING_FACTOR);
                    return (str_cost.multiply(sub_cost).add(arg_sum), None);
                }
            }
            "logical_or" | "logical_and" => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                return (
                    CostEstimate {
                        min: l.min,
                        max: l.add(r).max,
                    },
                    None,
                );
            }
            "conditional" => {
                let size = self
                    .size_or_unknown(&args[1])
                    .union(self.size_or_unknown(&args[2]));
                if let (Some(a), Some(b)) = (self.entry(&args[1]), self.entry(&args[2])) {
                    self.entries.insert(
                        e.id,
                        EntrySize {
                            is_list: a.is_list,
                            key: a.key.union(b.key),
                            val: a.val.union(b.val),
                        },
                    );
                }
                return (
                    arg_costs[0].add(arg_costs[1].union(arg_costs[2])),
                    Some(size),
                );
            }
            "add_string" | "add_bytes" | "add_list" if args.len() == 2 => {
                let l = self.size_or_unknown(&args[0]);
                let r = self.size_or_unknown(&args[1]);
                let size = l.add(r);
                if let (Some(a), Some(b)) = (self.entry(&args[0]), self.entry(&args[1])) {
                    self.entries.insert(
                        e.id,
                        EntrySize {
                            is_list: a.is_list,
                            key: a.key.union(b.key),
                            val: a.val.union(b.val),
                        },
                    );
                }
                if overload == "add_list" {
                    return (fixed(1).add(arg_sum), Some(size));
                }
                return (size.factor(STRING_FACTOR).add(arg_sum), Some(size));
            }
            id if is_size_compare(id) && args.len() == 2 => {
                let l = self.size_or_unknown(&args[0]);
                let r = self.size_or_unknown(&args[1]);
                let smallest = l.max.min(r.max);
                let min = if smallest > 0 { 1 } else { 0 };
                return (
                    Size { min, max: smallest }
                        .factor(STRING_FACTOR)
                        .add(arg_sum),
                    None,
                );
            }
            _ => {}
        }
        (fixed(1).add(arg_sum), None)
    }
}

fn is_size_compare(id: &str) -> bool {
    matches!(
        id,
        "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals"
    )
}
