//! Name formats of k8s.io/apimachinery/pkg/util/validation, with its messages.
//!
//! Each function returns the problems found (empty when valid), worded as the API
//! server words them.

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_lower_alnum(b[0])
        && is_lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

pub(crate) fn max_len_message(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// RFC 1123 label (`metadata.namespace`, device and request names).
pub(crate) fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_message(DNS1123_LABEL_MAX));
    }
    if !matches_dns1123_label(s) {
        errs.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must \
             start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
             validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    errs
}

/// RFC 1123 subdomain (most object names, driver names).
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_message(DNS1123_SUBDOMAIN_MAX));
    }
    if !s.split('.').all(matches_dns1123_label) {
        errs.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and \
             must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation \
             is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    errs
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A qualified name such as a label key: `[prefix/]name`.
pub(crate) fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and \
                 end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
                 validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix \
                 and '/' (e.g. 'example.com/MyName')"
                    .to_string(),
            );
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else {
        if name.len() > QUALIFIED_NAME_MAX {
            errs.push(format!("name part {}", max_len_message(QUALIFIED_NAME_MAX)));
        }
        if !matches_qualified_name_part(name) {
            errs.push(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with \
                 an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
                 validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
                    .to_string(),
            );
        }
    }
    errs
}

/// A label value (may be empty).
pub(crate) fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > LABEL_VALUE_MAX {
        errs.push(max_len_message(LABEL_VALUE_MAX));
    }
    if !s.is_empty() && !matches_qualified_name_part(s) {
        errs.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and \
             must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
             regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                .to_string(),
        );
    }
    errs
}

/// `[A-Za-z_][A-Za-z0-9_]*`
pub(crate) fn c_identifier(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_');
    if ok {
        Vec::new()
    } else {
        vec![
            "a valid C identifier must start with alphabetic character or '_', followed by a string of \
             alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for \
             validation is '[A-Za-z_][A-Za-z0-9_]*')"
                .to_string(),
        ]
    }
}

/// Names of RBAC objects: any path segment except `.` and `..`, without `/` or `%`.
pub(crate) fn path_segment_name(s: &str) -> Vec<String> {
    if s == "." || s == ".." {
        return vec![format!("may not be '{s}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| s.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// An extended resource name as `v1helper.IsExtendedResourceName` accepts it:
/// contains a `/`, is not in the `kubernetes.io/` domain, does not start with
/// `requests.`, and `requests.<name>` is a qualified name.
pub(crate) fn is_extended_resource_name(s: &str) -> bool {
    let native = !s.contains('/') || s.contains("kubernetes.io/");
    !native && !s.starts_with("requests.") && qualified_name(&format!("requests.{s}")).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        for ok in ["a", "a-b", "0", "abc-123"] {
            assert!(dns1123_label(ok).is_empty(), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", &"a".repeat(64)] {
            assert!(!dns1123_label(bad).is_empty(), "{bad}");
        }
        for ok in ["a.b", "gpu.example.com", "a-b.c"] {
            assert!(dns1123_subdomain(ok).is_empty(), "{ok}");
        }
        for bad in ["", "a..b", ".a", "a.", "A.b", &"a".repeat(254)] {
            assert!(!dns1123_subdomain(bad).is_empty(), "{bad}");
        }
        for ok in ["a", "A_b.c-d", "example.com/Name", "x/y"] {
            assert!(qualified_name(ok).is_empty(), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a/b/c",
            "-a",
            "Example.com/a",
            &"a".repeat(64),
        ] {
            assert!(!qualified_name(bad).is_empty(), "{bad}");
        }
        assert!(label_value("").is_empty());
        assert!(!label_value("-x").is_empty());
        assert!(c_identifier("_a1").is_empty());
        assert!(!c_identifier("1a").is_empty());
        assert!(!c_identifier("").is_empty());
        assert!(is_extended_resource_name("example.com/gpu"));
        assert!(!is_extended_resource_name("gpu"));
        assert!(!is_extended_resource_name("kubernetes.io/gpu"));
        assert!(!is_extended_resource_name("example.com/g p u"));
        assert!(path_segment_name("a:b").is_empty());
        assert!(!path_segment_name("a/b").is_empty());
    }
}
