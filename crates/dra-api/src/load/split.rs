//! Cutting a YAML stream into documents without parsing it.
//!
//! Documents are parsed one by one (and in parallel) rather than as one stream: each
//! gets its own resource budget, a bad document does not hide the others, and the
//! work spreads over cores. The cut is exact because YAML forbids a line that starts
//! with `---` or `...` followed by white space (or the end of the line) anywhere
//! inside a document's content: such a line always marks a document boundary.

/// A piece of the input holding at most one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk<'a> {
    pub(crate) text: &'a str,
    /// 1-based line of `text`'s first line in the whole input.
    pub(crate) first_line: u32,
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Splits `text` at document markers. Returns `None` when the stream uses
/// directives (`%YAML`, `%TAG`), whose scope the cut could break; the caller then
/// parses the stream as a whole.
pub(crate) fn split_documents(text: &str) -> Option<Vec<Chunk<'_>>> {
    let mut chunks = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1u32;
    let mut offset = 0usize;
    let mut line_no = 1u32;
    // Whether the next line begins a chunk (after a `...` line).
    let mut cut_before_next = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with('%') {
            return None;
        }
        if (cut_before_next || is_marker(line, "---")) && offset > start {
            chunks.push(Chunk {
                text: &text[start..offset],
                first_line: start_line,
            });
            start = offset;
            start_line = line_no;
        }
        cut_before_next = is_marker(line, "...");
        offset += line.len();
        line_no = line_no.saturating_add(1);
    }
    if offset > start {
        chunks.push(Chunk {
            text: &text[start..offset],
            first_line: start_line,
        });
    }
    Some(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Vec<(u32, &str)> {
        split_documents(text)
            .unwrap()
            .into_iter()
            .map(|c| (c.first_line, c.text))
            .collect()
    }

    #[test]
    fn cuts_at_markers_only() {
        assert_eq!(
            cut("a: 1\n---\nb: 2\n"),
            vec![(1, "a: 1\n"), (2, "---\nb: 2\n")]
        );
        assert_eq!(
            cut("---\na: 1\n--- \nb: 2"),
            vec![(1, "---\na: 1\n"), (3, "--- \nb: 2")]
        );
        assert_eq!(
            cut("--- {a: 1}\n---\n"),
            vec![(1, "--- {a: 1}\n"), (2, "---\n")]
        );
        // not markers: indented, or followed by other characters
        assert_eq!(
            cut("a: |\n  ---\nb: ---x\n----\n"),
            vec![(1, "a: |\n  ---\nb: ---x\n----\n")]
        );
        assert_eq!(
            cut("a: 1\n...\nb: 2\n"),
            vec![(1, "a: 1\n...\n"), (3, "b: 2\n")]
        );
        assert_eq!(
            cut("a: 1\r\n---\r\nb: 2\r\n"),
            vec![(1, "a: 1\r\n"), (2, "---\r\nb: 2\r\n")]
        );
        assert_eq!(cut(""), vec![]);
    }

    #[test]
    fn directives_disable_the_cut() {
        assert!(split_documents("%YAML 1.2\n---\na: 1\n").is_none());
    }
}
