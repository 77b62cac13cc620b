//! `-verify-diagnostics`: checks the diagnostics a run produced against the
//! `// expected-error@+N {{...}}` comments in the input, with MLIR's semantics: every expected
//! diagnostic must be produced on its line with a message containing the text, and nothing
//! unexpected may be produced.

use f16c_dialect::{Diagnostic, Severity};
use regex::Regex;

/// One `expected-*` comment.
#[derive(Debug)]
struct Expected {
    severity: Severity,
    line: u32,
    text: String,
    comment_line: u32,
    matched: bool,
}

fn parse_expected(source: &str, first_line: u32) -> Vec<Expected> {
    let re = Regex::new(r"expected-(error|warning|note|remark)(?:@(above|below|[+-]\d+))?\s*\{\{(.*?)\}\}").expect("valid regex");
    let mut out = Vec::new();
    for (i, text) in source.lines().enumerate() {
        let line = first_line + i as u32;
        for c in re.captures_iter(text) {
            let severity = match &c[1] {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                "note" => Severity::Note,
                _ => Severity::Remark,
            };
            let target = match c.get(2).map(|m| m.as_str()) {
                None => line,
                Some("above") => line - 1,
                Some("below") => line + 1,
                Some(off) => (line as i64 + off.parse::<i64>().unwrap_or(0)) as u32,
            };
            out.push(Expected { severity, line: target, text: c[3].to_string(), comment_line: line, matched: false });
        }
    }
    out
}

/// Flattens diagnostics and their notes.
fn flatten(ds: &[Diagnostic]) -> Vec<&Diagnostic> {
    let mut v = Vec::new();
    for d in ds {
        v.push(d);
        v.extend(flatten(&d.notes));
    }
    v
}

/// Matches `produced` against the expectations in `source` (whose first line is `first_line`
/// of `file`). Returns the mismatches as error messages, empty when everything matched.
pub fn check(source: &str, first_line: u32, file: &str, produced: &[Diagnostic]) -> Vec<String> {
    let mut expected = parse_expected(source, first_line);
    let mut problems = Vec::new();
    for d in flatten(produced) {
        let line = d.location.line();
        let hit = expected
            .iter_mut()
            .find(|e| !e.matched && e.severity == d.severity && Some(e.line) == line && d.message.contains(&e.text));
        match hit {
            Some(e) => e.matched = true,
            None => problems.push(format!("{}: error: unexpected {}: {}", d.location, d.severity.as_str(), d.message)),
        }
    }
    for e in expected.iter().filter(|e| !e.matched) {
        problems.push(format!(
            "{file}:{}:1: error: expected {} \"{}\" was not produced (expected on line {})",
            e.comment_line,
            e.severity.as_str(),
            e.text,
            e.line
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use f16c_dialect::Location;

    #[test]
    fn offsets_and_mismatches() {
        let src = "a\n// expected-error@+1 {{bad thing}}\nb\nc // expected-warning {{meh}}\n";
        let ok = vec![
            Diagnostic::error(Location::file("f", 3, 1), "a bad thing here"),
            Diagnostic::warning(Location::file("f", 4, 1), "meh"),
        ];
        assert!(check(src, 1, "f", &ok).is_empty());
        let wrong_line = vec![Diagnostic::error(Location::file("f", 2, 1), "a bad thing here")];
        let p = check(src, 1, "f", &wrong_line);
        assert_eq!(p.len(), 3, "{p:?}");
    }
}
