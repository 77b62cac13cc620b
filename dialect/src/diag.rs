//! Source locations and diagnostics, rendered the way MLIR renders them:
//! `net.mlir:12:5: error: 'tosa.fft2d' is not supported by f16c`.

use std::fmt;
use std::sync::Arc;

/// Where an op came from: a file position and/or a name (`loc("conv1"("net.mlir":3:5))`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Location {
    /// `(file, line, column)`, 1-based, when known.
    pub file: Option<(Arc<str>, u32, u32)>,
    /// The name of a `NameLoc` (what `--keep-f32` matches), when there is one.
    pub name: Option<String>,
}

impl Location {
    /// An unknown location.
    pub fn unknown() -> Self {
        Location::default()
    }

    /// A file position.
    pub fn file(file: impl Into<Arc<str>>, line: u32, col: u32) -> Self {
        Location { file: Some((file.into(), line, col)), name: None }
    }

    /// The line, when known.
    pub fn line(&self) -> Option<u32> {
        self.file.as_ref().map(|f| f.1)
    }
}

impl fmt::Display for Location {
    /// `file:line:col`, or `loc(unknown)` like MLIR when there is no position.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some((file, line, col)) => write!(f, "{file}:{line}:{col}"),
            None => match &self.name {
                Some(n) => write!(f, "loc(\"{n}\")"),
                None => f.write_str("loc(unknown)"),
            },
        }
    }
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs, reason = "the severities MLIR prints")]
pub enum Severity {
    Note,
    Remark,
    Warning,
    Error,
}

impl Severity {
    /// MLIR's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
            Severity::Remark => "remark",
        }
    }
}

/// A located message for the user, with optional notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// Where.
    pub location: Location,
    /// What, in one line.
    pub message: String,
    /// Attached notes (rendered after the diagnostic).
    pub notes: Vec<Diagnostic>,
}

impl Diagnostic {
    /// An error at `location`.
    pub fn error(location: Location, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Error, location, message: message.into(), notes: Vec::new() }
    }

    /// A warning at `location`.
    pub fn warning(location: Location, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(location, message) }
    }

    /// A remark at `location`.
    pub fn remark(location: Location, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Remark, ..Diagnostic::error(location, message) }
    }

    /// Adds a note.
    pub fn with_note(mut self, location: Location, message: impl Into<String>) -> Self {
        self.notes.push(Diagnostic { severity: Severity::Note, ..Diagnostic::error(location, message) });
        self
    }

    /// Renders the diagnostic and its notes; with `source`, the offending line and a caret too,
    /// as MLIR does.
    pub fn render(&self, source: Option<&str>) -> String {
        let mut out = String::new();
        self.render_into(&mut out, source);
        out
    }

    fn render_into(&self, out: &mut String, source: Option<&str>) {
        // A problem of the whole file or run has no position: it reads as a plain error.
        if self.location.file.is_none() && self.location.name.is_none() {
            out.push_str(&format!("{}: {}\n", self.severity.as_str(), self.message));
        } else {
            out.push_str(&format!("{}: {}: {}\n", self.location, self.severity.as_str(), self.message));
        }
        if let (Some(src), Some((_, line, col))) = (source, &self.location.file) {
            if let Some(text) = src.lines().nth((*line as usize).saturating_sub(1)) {
                // A long line (a weight on one line, a generated file) is shown as a window of
                // [`SHOWN`] characters around the column, marked with "...".
                const SHOWN: usize = 160;
                let chars: Vec<char> = text.chars().collect();
                let col = (*col as usize).saturating_sub(1).min(chars.len());
                let start = if chars.len() <= SHOWN { 0 } else { col.saturating_sub(SHOWN / 2).min(chars.len() - SHOWN) };
                let end = (start + SHOWN).min(chars.len());
                let (lead, tail) = (if start > 0 { "..." } else { "" }, if end < chars.len() { "..." } else { "" });
                out.push_str(lead);
                out.extend(&chars[start..end]);
                out.push_str(tail);
                out.push('\n');
                out.push_str(&" ".repeat(lead.len() + col - start));
                out.push_str("^\n");
            }
        }
        for n in &self.notes {
            n.render_into(out, source);
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render(None).trim_end())
    }
}

/// A list of diagnostics that together make one failure; the error type of import, verify and
/// every pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// One error.
    pub fn single(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }

    /// True if any is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }

    /// Renders all of them (see [`Diagnostic::render`]).
    pub fn render(&self, source: Option<&str>) -> String {
        self.0.iter().map(|d| d.render(source)).collect()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render(None).trim_end())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}
