//! The parsed expression tree (after macro expansion), shared by the checker, the cost
//! estimator and the planner. Node ids index side tables (positions, types, overloads).

use std::sync::Arc;

pub(crate) type ExprId = u32;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
}

#[derive(Clone, Debug)]
pub(crate) struct Expr {
    pub id: ExprId,
    pub kind: ExprKind,
}

#[derive(Clone, Debug)]
pub(crate) struct MapEntry {
    /// Position of the entry's colon (kept for diagnostics, as in cel-go).
    #[allow(dead_code)]
    pub id: ExprId,
    pub key: Expr,
    pub value: Expr,
    pub optional: bool,
}

#[derive(Clone, Debug)]
#[allow(dead_code)]
pub(crate) struct StructField {
    pub id: ExprId,
    pub name: String,
    pub value: Expr,
    pub optional: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Comprehension {
    pub iter_range: Expr,
    pub iter_var: String,
    /// Second iteration variable of the two-variable comprehensions (index or key first).
    pub iter_var2: Option<String>,
    pub accu_var: String,
    pub accu_init: Expr,
    pub loop_condition: Expr,
    pub loop_step: Expr,
    pub result: Expr,
}

#[derive(Clone, Debug)]
pub(crate) enum ExprKind {
    Literal(Literal),
    Ident(String),
    Select {
        operand: Box<Expr>,
        field: String,
        test_only: bool,
    },
    Call {
        target: Option<Box<Expr>>,
        function: String,
        args: Vec<Expr>,
    },
    List {
        elements: Vec<Expr>,
        optional_indices: Vec<usize>,
    },
    Map {
        entries: Vec<MapEntry>,
    },
    Struct {
        type_name: String,
        fields: Vec<StructField>,
    },
    Comprehension(Box<Comprehension>),
}

/// Name of the hidden accumulator variable used by the macros (as in cel-go).
pub(crate) const ACCUMULATOR: &str = "@result";

/// The text of an expression plus the positions of every node.
#[derive(Debug)]
pub(crate) struct Source {
    pub text: String,
    /// Byte offset of each expression id (ids are dense, starting at 1).
    pub offsets: Vec<u32>,
    line_starts: Vec<usize>,
}

/// A position in the expression: 1-based line, 0-based column in characters, byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Line, starting at 1.
    pub line: u32,
    /// Column in Unicode code points, starting at 0 (cel-go prints it plus one).
    pub column: u32,
    /// Byte offset into the expression.
    pub offset: u32,
}

impl Source {
    pub(crate) fn new(text: &str) -> Source {
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        Source {
            text: text.to_string(),
            offsets: vec![0],
            line_starts,
        }
    }

    pub(crate) fn position_of_offset(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line_index = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line_index];
        let column = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count());
        Position {
            line: line_index as u32 + 1,
            column: column as u32,
            offset: offset as u32,
        }
    }

    pub(crate) fn position(&self, id: ExprId) -> Position {
        let offset = self.offsets.get(id as usize).copied().unwrap_or(0);
        self.position_of_offset(offset as usize)
    }

    /// The text of one line (1-based), without the newline.
    pub(crate) fn line_text(&self, line: u32) -> Option<&str> {
        let index = (line as usize).checked_sub(1)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |e| e - 1);
        self.text.get(start..end)
    }
}
