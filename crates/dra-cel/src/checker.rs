//! The type checker: a port of cel-go's `checker` (type parameters, substitution,
//! overload resolution, comprehension scopes) over this crate's AST, with the DRA
//! `device` declaration. Produces a type and the candidate overload ids per node.

use std::collections::HashMap;

use crate::ast::{Expr, ExprId, ExprKind, Literal, Source};
use crate::decls::{Declarations, Overload};
use crate::error::Issue;
use crate::types::{DEVICE_TYPE, QUANTITY_TYPE, SEMVER_TYPE, Type};

/// Declared shape of the `device` variable.
#[derive(Clone, Debug)]
pub(crate) struct DeviceDecl {
    pub attribute_type: Type,
    pub has_allow_multiple_allocations: bool,
}

impl DeviceDecl {
    pub(crate) fn field_type(&self, field: &str) -> Option<Type> {
        match field {
            "driver" => Some(Type::String),
            "attributes" => Some(Type::map(
                Type::String,
                Type::map(Type::String, self.attribute_type.clone()),
            )),
            "capacity" => Some(Type::map(
                Type::String,
                Type::map(Type::String, Type::Struct(QUANTITY_TYPE)),
            )),
            "allowMultipleAllocations" if self.has_allow_multiple_allocations => Some(Type::Bool),
            _ => None,
        }
    }
}

/// What an identifier refers to after checking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IdentRef {
    Device,
    Local,
    /// A type name used as a value (`int`, `string`, ...).
    TypeName(Type),
}

pub(crate) struct Checked {
    pub types: Vec<Option<Type>>,
    pub overloads: HashMap<ExprId, Vec<&'static str>>,
    pub idents: HashMap<ExprId, IdentRef>,
    /// Calls written as `ns.fn(...)` that resolved to the global function `ns.fn`.
    pub qualified_calls: HashMap<ExprId, String>,
    pub result_type: Type,
}

impl Checked {
    pub(crate) fn type_of(&self, id: ExprId) -> Type {
        self.types
            .get(id as usize)
            .and_then(Clone::clone)
            .unwrap_or(Type::Dyn)
    }
}

type Mapping = HashMap<String, Type>;

struct Checker<'a> {
    decls: &'a Declarations,
    device: &'a DeviceDecl,
    source: &'a Source,
    types: Vec<Option<Type>>,
    overloads: HashMap<ExprId, Vec<&'static str>>,
    idents: HashMap<ExprId, IdentRef>,
    qualified_calls: HashMap<ExprId, String>,
    mapping: Mapping,
    free_vars: u32,
    scopes: Vec<(String, Type)>,
    issues: Vec<Issue>,
}

pub(crate) fn check(
    expr: &Expr,
    source: &Source,
    decls: &Declarations,
    device: &DeviceDecl,
    node_count: usize,
) -> Result<Checked, Vec<Issue>> {
    let mut c = Checker {
        decls,
        device,
        source,
        types: vec![None; node_count + 1],
        overloads: HashMap::new(),
        idents: HashMap::new(),
        qualified_calls: HashMap::new(),
        mapping: HashMap::new(),
        free_vars: 0,
        scopes: Vec::new(),
        issues: Vec::new(),
    };
    c.check(expr);
    // Final substitution: remaining type parameters become dyn.
    let mapping = std::mem::take(&mut c.mapping);
    for t in c.types.iter_mut().flatten() {
        *t = substitute(&mapping, t, true);
    }
    if !c.issues.is_empty() {
        return Err(c.issues);
    }
    let result_type = c.types[expr.id as usize].clone().unwrap_or(Type::Dyn);
    let checked = Checked {
        types: c.types,
        overloads: c.overloads,
        idents: c.idents,
        qualified_calls: c.qualified_calls,
        result_type,
    };
    let mut issues = Vec::new();
    validate_homogeneous(expr, &checked, source, &mut issues);
    if issues.is_empty() {
        Ok(checked)
    } else {
        Err(issues)
    }
}

impl Checker<'_> {
    fn error(&mut self, id: ExprId, message: String) {
        let position = self.source.position(id);
        self.issues.push(Issue { message, position });
    }

    fn set_type(&mut self, e: &Expr, t: Type) {
        if let Some(slot) = self.types.get_mut(e.id as usize) {
            *slot = Some(t);
        }
    }

    fn get_type(&self, e: &Expr) -> Type {
        self.types
            .get(e.id as usize)
            .and_then(Clone::clone)
            .unwrap_or(Type::Error)
    }

    fn new_type_var(&mut self) -> Type {
        let t = Type::Param(format!("_var{}", self.free_vars));
        self.free_vars += 1;
        t
    }

    fn is_assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        let mut copy = self.mapping.clone();
        if internal_is_assignable(&mut copy, t1, t2) {
            self.mapping = copy;
            true
        } else {
            false
        }
    }

    fn lookup_local(&self, name: &str) -> Option<Type> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    fn check(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Literal(lit) => {
                let t = match lit {
                    Literal::Null => Type::Null,
                    Literal::Bool(_) => Type::Bool,
                    Literal::Int(_) => Type::Int,
                    Literal::Uint(_) => Type::Uint,
                    Literal::Double(_) => Type::Double,
                    Literal::String(_) => Type::String,
                    Literal::Bytes(_) => Type::Bytes,
                };
                self.set_type(e, t);
            }
            ExprKind::Ident(name) => self.check_ident(e, name),
            ExprKind::Select {
                operand,
                field,
                test_only,
            } => {
                let mut t = self.check_select_field(e, operand, field, false);
                if *test_only {
                    t = Type::Bool;
                }
                let t = substitute(&self.mapping, &t, false);
                self.set_type(e, t);
            }
            ExprKind::Call {
                target,
                function,
                args,
            } => self.check_call(e, target.as_deref(), function, args),
            ExprKind::List {
                elements,
                optional_indices,
            } => {
                let mut elem_type: Option<Type> = None;
                for (i, el) in elements.iter().enumerate() {
                    self.check(el);
                    let mut t = self.get_type(el);
                    if optional_indices.contains(&i) {
                        match t {
                            Type::Optional(inner) => t = *inner,
                            other if other.is_dyn() => t = other,
                            other => {
                                self.error(
                                    el.id,
                                    format!(
                                        "expected type '{}' but found '{}'",
                                        Type::optional(other.clone()),
                                        other
                                    ),
                                );
                                t = other;
                            }
                        }
                    }
                    elem_type = Some(self.join_types(el, elem_type, t));
                }
                let elem_type = elem_type.unwrap_or_else(|| self.new_type_var());
                self.set_type(e, Type::list(elem_type));
            }
            ExprKind::Map { entries } => {
                let mut key_type: Option<Type> = None;
                let mut value_type: Option<Type> = None;
                for entry in entries {
                    self.check(&entry.key);
                    let kt = self.get_type(&entry.key);
                    key_type = Some(self.join_types(&entry.key, key_type, kt));
                    self.check(&entry.value);
                    let mut vt = self.get_type(&entry.value);
                    if entry.optional {
                        match vt {
                            Type::Optional(inner) => vt = *inner,
                            other if other.is_dyn() => vt = other,
                            other => {
                                self.error(
                                    entry.value.id,
                                    format!(
                                        "expected type '{}' but found '{}'",
                                        Type::optional(other.clone()),
                                        other
                                    ),
                                );
                                vt = other;
                            }
                        }
                    }
                    value_type = Some(self.join_types(&entry.value, value_type, vt));
                }
                let (k, v) = match (key_type, value_type) {
                    (Some(k), Some(v)) => (k, v),
                    _ => (self.new_type_var(), self.new_type_var()),
                };
                self.set_type(e, Type::map(k, v));
            }
            ExprKind::Struct { type_name, fields } => {
                for f in fields {
                    self.check(&f.value);
                }
                self.error(
                    e.id,
                    format!("undeclared reference to '{type_name}' (in container '')"),
                );
                self.set_type(e, Type::Error);
            }
            ExprKind::Comprehension(comp) => {
                self.check(&comp.iter_range);
                self.check(&comp.accu_init);
                let range_type = substitute(&self.mapping, &self.get_type(&comp.iter_range), false);
                let accu_type = self.get_type(&comp.accu_init);
                self.scopes.push((comp.accu_var.clone(), accu_type.clone()));
                let (var_type, var2_type) = match &range_type {
                    Type::List(elem) => {
                        if comp.iter_var2.is_some() {
                            (Type::Int, Some((**elem).clone()))
                        } else {
                            ((**elem).clone(), None)
                        }
                    }
                    Type::Map(k, v) => ((**k).clone(), Some((**v).clone())),
                    // `any` (the 1.31 attribute type) is not iterable, as in cel-go.
                    Type::Dyn | Type::Error | Type::Param(_) => {
                        self.is_assignable(&Type::Dyn, &range_type);
                        (Type::Dyn, Some(Type::Dyn))
                    }
                    other => {
                        self.error(
                            comp.iter_range.id,
                            format!(
                                "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                            ),
                        );
                        (Type::Error, Some(Type::Error))
                    }
                };
                let scope_len = self.scopes.len();
                self.scopes.push((comp.iter_var.clone(), var_type));
                if let Some(v2) = &comp.iter_var2 {
                    self.scopes
                        .push((v2.clone(), var2_type.unwrap_or(Type::Dyn)));
                }
                self.check(&comp.loop_condition);
                self.assert_type(&comp.loop_condition, &Type::Bool);
                self.check(&comp.loop_step);
                self.assert_type(&comp.loop_step, &accu_type);
                self.scopes.truncate(scope_len);
                self.check(&comp.result);
                self.scopes.pop();
                let t = substitute(&self.mapping, &self.get_type(&comp.result), false);
                self.set_type(e, t);
            }
        }
    }

    fn assert_type(&mut self, e: &Expr, t: &Type) {
        let actual = self.get_type(e);
        if !self.is_assignable(t, &actual) {
            self.error(
                e.id,
                format!("expected type '{}' but found '{}'", t, actual),
            );
        }
    }

    fn join_types(&mut self, e: &Expr, previous: Option<Type>, current: Type) -> Type {
        let Some(previous) = previous else {
            return current;
        };
        if self.is_assignable(&previous, &current) {
            return most_general(&previous, &current);
        }
        self.error(
            e.id,
            format!("expected type '{previous}' but found '{current}'"),
        );
        Type::Error
    }

    fn check_ident(&mut self, e: &Expr, name: &str) {
        let bare = name.strip_prefix('.').unwrap_or(name);
        if !name.starts_with('.')
            && let Some(t) = self.lookup_local(name)
        {
            self.idents.insert(e.id, IdentRef::Local);
            self.set_type(e, t);
            return;
        }
        if bare == "device" {
            self.idents.insert(e.id, IdentRef::Device);
            self.set_type(e, Type::Struct(DEVICE_TYPE));
            return;
        }
        if let Some(t) = type_name_value(bare) {
            self.idents.insert(e.id, IdentRef::TypeName(t.clone()));
            self.set_type(e, Type::Meta(Some(Box::new(t))));
            return;
        }
        self.set_type(e, Type::Error);
        self.error(
            e.id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
    }

    fn check_select_field(
        &mut self,
        e: &Expr,
        operand: &Expr,
        field: &str,
        optional: bool,
    ) -> Type {
        self.check(operand);
        let operand_type = substitute(&self.mapping, &self.get_type(operand), false);
        let (target, is_opt) = match operand_type {
            Type::Optional(inner) => (*inner, true),
            other => (other, false),
        };
        let result = match &target {
            Type::Map(_, v) => (**v).clone(),
            Type::Struct(name) => {
                let found = if *name == DEVICE_TYPE {
                    self.device.field_type(field)
                } else {
                    None
                };
                match found {
                    Some(t) => t,
                    None => {
                        self.error(e.id, format!("undefined field '{field}'"));
                        Type::Error
                    }
                }
            }
            Type::Param(_) => {
                self.is_assignable(&Type::Dyn, &target);
                Type::Dyn
            }
            other => {
                if !other.is_dyn_or_error() {
                    self.error(
                        e.id,
                        format!("type '{other}' does not support field selection"),
                    );
                }
                Type::Dyn
            }
        };
        if is_opt || optional {
            Type::optional(result)
        } else {
            result
        }
    }

    fn check_call(&mut self, e: &Expr, target: Option<&Expr>, function: &str, args: &[Expr]) {
        if function == "_?._" {
            if args.len() != 2 || target.is_some() {
                self.error(
                    e.id,
                    format!(
                        "unsupported optional field selection: incorrect signature. argument count: {}",
                        args.len()
                    ),
                );
                self.set_type(e, Type::Error);
                return;
            }
            let field = match &args[1].kind {
                ExprKind::Literal(Literal::String(s)) => s.to_string(),
                _ => {
                    self.error(
                        args[1].id,
                        "unsupported optional field selection".to_string(),
                    );
                    self.set_type(e, Type::Error);
                    return;
                }
            };
            let t = self.check_select_field(e, &args[0], &field, true);
            let t = substitute(&self.mapping, &t, false);
            self.set_type(e, t);
            self.overloads.insert(e.id, vec!["select_optional_field"]);
            return;
        }
        for arg in args {
            self.check(arg);
        }
        let Some(target) = target else {
            let name = function.strip_prefix('.').unwrap_or(function);
            match self.decls.lookup(name) {
                Some(overloads) => self.resolve_overload(e, name, overloads, None, args),
                None => {
                    self.error(
                        e.id,
                        format!("undeclared reference to '{function}' (in container '')"),
                    );
                    self.set_type(e, Type::Error);
                }
            }
            return;
        };
        // Namespaced global functions: `optional.of(x)`, `sets.contains(a, b)`, ...
        if let Some(prefix) = qualified_name(target) {
            let qualified = format!("{prefix}.{function}");
            if let Some(overloads) = self.decls.lookup(&qualified) {
                self.resolve_overload(e, &qualified, overloads, None, args);
                self.qualified_calls.insert(e.id, qualified);
                return;
            }
        }
        self.check(target);
        match self.decls.lookup(function) {
            Some(overloads) => self.resolve_overload(e, function, overloads, Some(target), args),
            None => {
                self.set_type(e, Type::Error);
                self.error(
                    e.id,
                    format!("undeclared reference to '{function}' (in container '')"),
                );
            }
        }
    }

    fn resolve_overload(
        &mut self,
        e: &Expr,
        name: &str,
        overloads: &[Overload],
        target: Option<&Expr>,
        args: &[Expr],
    ) {
        let mut arg_types = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            arg_types.push(self.get_type(t));
        }
        for a in args {
            arg_types.push(self.get_type(a));
        }
        let mut result: Option<Type> = None;
        let mut ids: Vec<&'static str> = Vec::new();
        for overload in overloads {
            if overload.member != target.is_some() {
                continue;
            }
            if name == "_&&_" || name == "_||_" {
                let mut failed = false;
                for (i, t) in arg_types.iter().enumerate() {
                    if !self.is_assignable(t, &Type::Bool) {
                        self.error(args[i].id, format!("expected type 'bool' but found '{t}'"));
                        failed = true;
                    }
                }
                if failed {
                    self.set_type(e, Type::Error);
                    return;
                }
                self.overloads.insert(e.id, vec![overload.id]);
                self.set_type(e, Type::Bool);
                return;
            }
            if overload.args.len() != arg_types.len() {
                continue;
            }
            // Fresh type variables for the overload's type parameters.
            let mut subs: Mapping = HashMap::new();
            let mut params = Vec::new();
            for t in overload
                .args
                .iter()
                .chain(std::iter::once(&overload.result))
            {
                collect_params(t, &mut params);
            }
            for p in params {
                subs.entry(p).or_insert_with(|| self.new_type_var());
            }
            let candidate_args: Vec<Type> = overload
                .args
                .iter()
                .map(|t| substitute(&subs, t, false))
                .collect();
            let candidate_result = substitute(&subs, &overload.result, false);
            let mut copy = self.mapping.clone();
            let ok = arg_types
                .iter()
                .zip(candidate_args.iter())
                .all(|(actual, formal)| internal_is_assignable(&mut copy, actual, formal));
            if ok {
                self.mapping = copy;
                ids.push(overload.id);
                let fn_result = substitute(&self.mapping, &candidate_result, false);
                result = Some(match result {
                    None => fn_result,
                    Some(r) if !r.is_dyn() && fn_result != r => Type::Dyn,
                    Some(r) => r,
                });
            }
        }
        match result {
            Some(t) => {
                self.overloads.insert(e.id, ids);
                self.set_type(e, t);
            }
            None => {
                let shown: Vec<String> = arg_types
                    .iter()
                    .map(|t| substitute(&self.mapping, t, true).to_string())
                    .collect();
                let signature = if target.is_some() {
                    format!("{}.({})", shown[0], shown[1..].join(", "))
                } else {
                    format!("({})", shown.join(", "))
                };
                self.error(
                    e.id,
                    format!("found no matching overload for '{name}' applied to '{signature}'"),
                );
                self.set_type(e, Type::Error);
            }
        }
    }
}

/// `a.b.c` as a dotted name, if the expression is only identifiers and selects.
fn qualified_name(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n.clone()),
        ExprKind::Select {
            operand,
            field,
            test_only: false,
        } => qualified_name(operand).map(|p| format!("{p}.{field}")),
        _ => None,
    }
}

/// Type names usable as values (`type(x) == int`).
fn type_name_value(name: &str) -> Option<Type> {
    Some(match name {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "list" => Type::list(Type::Dyn),
        "map" => Type::map(Type::Dyn, Type::Dyn),
        "null_type" => Type::Null,
        "type" => Type::Meta(None),
        "dyn" => Type::Dyn,
        "google.protobuf.Duration" => Type::Duration,
        "google.protobuf.Timestamp" => Type::Timestamp,
        "optional_type" => Type::optional(Type::Dyn),
        "kubernetes.Quantity" => Type::Struct(QUANTITY_TYPE),
        "kubernetes.Semver" => Type::Struct(SEMVER_TYPE),
        "net.IP" => Type::Struct(crate::types::IP_TYPE),
        "net.CIDR" => Type::Struct(crate::types::CIDR_TYPE),
        _ => return None,
    })
}

fn collect_params(t: &Type, out: &mut Vec<String>) {
    match t {
        Type::Param(p) => out.push(p.clone()),
        other => {
            for p in other.params() {
                collect_params(p, out);
            }
        }
    }
}

pub(crate) fn substitute(m: &Mapping, t: &Type, type_param_to_dyn: bool) -> Type {
    if let Type::Param(p) = t {
        if let Some(sub) = m.get(p) {
            return substitute(m, sub, type_param_to_dyn);
        }
        if type_param_to_dyn {
            return Type::Dyn;
        }
        return t.clone();
    }
    match t {
        Type::List(e) => Type::list(substitute(m, e, type_param_to_dyn)),
        Type::Map(k, v) => Type::map(
            substitute(m, k, type_param_to_dyn),
            substitute(m, v, type_param_to_dyn),
        ),
        Type::Optional(e) => Type::optional(substitute(m, e, type_param_to_dyn)),
        Type::Meta(Some(e)) => Type::Meta(Some(Box::new(substitute(m, e, type_param_to_dyn)))),
        other => other.clone(),
    }
}

fn is_equal_or_less_specific(t1: &Type, t2: &Type) -> bool {
    if t1.is_dyn() || matches!(t1, Type::Param(_)) {
        return true;
    }
    if t2.is_dyn() || matches!(t2, Type::Param(_)) {
        return false;
    }
    if !t1.same_kind(t2) {
        return false;
    }
    match (t1, t2) {
        (Type::Optional(a), Type::Optional(b)) | (Type::List(a), Type::List(b)) => {
            is_equal_or_less_specific(a, b)
        }
        (Type::Map(k1, v1), Type::Map(k2, v2)) => {
            is_equal_or_less_specific(k1, k2) && is_equal_or_less_specific(v1, v2)
        }
        (Type::Meta(_), Type::Meta(_)) => true,
        _ => t1 == t2,
    }
}

fn most_general(t1: &Type, t2: &Type) -> Type {
    if is_equal_or_less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

fn not_referenced_in(m: &Mapping, t: &Type, within: &Type) -> bool {
    if t == within {
        return false;
    }
    match within {
        Type::Param(p) => match m.get(p) {
            None => true,
            Some(sub) => not_referenced_in(m, t, sub),
        },
        other => other.params().iter().all(|p| not_referenced_in(m, t, p)),
    }
}

fn is_valid_type_substitution(m: &mut Mapping, t1: &Type, t2: &Type) -> (bool, bool) {
    if t1 == t2 {
        return (true, true);
    }
    let Type::Param(p2) = t2 else {
        return (false, false);
    };
    if let Some(t2_sub) = m.get(p2).cloned() {
        if *t1 == t2_sub {
            return (true, true);
        }
        if internal_is_assignable(m, t1, &t2_sub) {
            let t2_new = most_general(t1, &t2_sub);
            if not_referenced_in(m, t2, &t2_new) {
                m.insert(p2.clone(), t2_new);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1) {
        m.insert(p2.clone(), t1.clone());
        return (true, false);
    }
    (false, false)
}

/// cel-go's `internalIsAssignable`: may `t2` be used where `t1` is expected (or the
/// reverse for type parameters), recording substitutions in `m`.
pub(crate) fn internal_is_assignable(m: &mut Mapping, t1: &Type, t2: &Type) -> bool {
    if matches!(t2, Type::Param(_)) {
        let (valid, has_sub) = is_valid_type_substitution(m, t1, t2);
        if valid {
            return true;
        }
        if has_sub {
            return false;
        }
    }
    if matches!(t1, Type::Param(_)) {
        let (valid, _) = is_valid_type_substitution(m, t2, t1);
        return valid;
    }
    if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
        return true;
    }
    if matches!(t1, Type::Null) {
        return t2.is_legacy_nullable() || matches!(t2, Type::Null);
    }
    if matches!(t2, Type::Null) {
        return t1.is_legacy_nullable();
    }
    match (t1, t2) {
        (Type::Meta(_), Type::Meta(_)) => true,
        (Type::Meta(_), _) => false,
        (Type::List(a), Type::List(b)) | (Type::Optional(a), Type::Optional(b)) => {
            internal_is_assignable(m, a, b)
        }
        (Type::Map(k1, v1), Type::Map(k2, v2)) => {
            internal_is_assignable(m, k1, k2) && internal_is_assignable(m, v1, v2)
        }
        (Type::List(_) | Type::Optional(_) | Type::Map(..), _) => false,
        _ => t1 == t2,
    }
}

/// cel-go's `ValidateHomogeneousAggregateLiterals` validator.
fn validate_homogeneous(e: &Expr, checked: &Checked, source: &Source, issues: &mut Vec<Issue>) {
    let strip = |t: Type, optional: bool| match (t, optional) {
        (Type::Optional(inner), true) => *inner,
        (t, _) => t,
    };
    match &e.kind {
        ExprKind::List {
            elements,
            optional_indices,
        } => {
            let mut first: Option<Type> = None;
            for (i, el) in elements.iter().enumerate() {
                let t = strip(checked.type_of(el.id), optional_indices.contains(&i));
                match &first {
                    None => first = Some(t),
                    Some(f) if !equivalent(f, &t) => {
                        issues.push(Issue {
                            message: format!("expected type '{f}' but found '{t}'"),
                            position: source.position(el.id),
                        });
                        break;
                    }
                    _ => {}
                }
            }
            for el in elements {
                validate_homogeneous(el, checked, source, issues);
            }
        }
        ExprKind::Map { entries } => {
            let mut first: Option<(Type, Type)> = None;
            for entry in entries {
                let kt = checked.type_of(entry.key.id);
                let vt = strip(checked.type_of(entry.value.id), entry.optional);
                match &first {
                    None => first = Some((kt, vt)),
                    Some((fk, fv)) => {
                        if !equivalent(fk, &kt) {
                            issues.push(Issue {
                                message: format!("expected type '{fk}' but found '{kt}'"),
                                position: source.position(entry.key.id),
                            });
                        }
                        if !equivalent(fv, &vt) {
                            issues.push(Issue {
                                message: format!("expected type '{fv}' but found '{vt}'"),
                                position: source.position(entry.value.id),
                            });
                        }
                    }
                }
            }
            for entry in entries {
                validate_homogeneous(&entry.key, checked, source, issues);
                validate_homogeneous(&entry.value, checked, source, issues);
            }
        }
        ExprKind::Select { operand, .. } => validate_homogeneous(operand, checked, source, issues),
        ExprKind::Call { target, args, .. } => {
            if let Some(t) = target {
                validate_homogeneous(t, checked, source, issues);
            }
            for a in args {
                validate_homogeneous(a, checked, source, issues);
            }
        }
        ExprKind::Struct { fields, .. } => {
            for f in fields {
                validate_homogeneous(&f.value, checked, source, issues);
            }
        }
        ExprKind::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_condition,
                &c.loop_step,
                &c.result,
            ] {
                validate_homogeneous(x, checked, source, issues);
            }
        }
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
    }
}

/// Type equivalence ignoring type-parameter names.
fn equivalent(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (Type::Param(_), Type::Param(_)) => true,
        (Type::List(x), Type::List(y)) | (Type::Optional(x), Type::Optional(y)) => equivalent(x, y),
        (Type::Map(k1, v1), Type::Map(k2, v2)) => equivalent(k1, k2) && equivalent(v1, v2),
        (Type::Meta(Some(x)), Type::Meta(Some(y))) => equivalent(x, y),
        _ => a == b,
    }
}
