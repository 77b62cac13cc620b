//! The bridge to MLIR (through melior): contexts, parsing, diagnostics and locations.
//! Everything else in f16c sees only the graph IR.

use crate::diag::{Diagnostic, Diagnostics, Location, Severity};
use melior::ir::Location as MlirLocation;
use melior::{dialect::DialectRegistry, Context};
use std::cell::RefCell;
use std::rc::Rc;

/// A context with the dialects a TOSA model uses (builtin, func, arith, tosa) loaded, and a
/// handler that turns every MLIR diagnostic into an f16c [`Diagnostic`].
pub(crate) struct MlirSession {
    pub context: Context,
    pub diagnostics: Rc<RefCell<Vec<Diagnostic>>>,
    /// The name given to locations MLIR reports without a file (parsed from a string).
    pub filename: Rc<RefCell<String>>,
}

impl MlirSession {
    pub fn new() -> Self {
        let context = Context::new();
        let registry = DialectRegistry::new();
        // SAFETY: the handles are static descriptors; the registry outlives the calls.
        unsafe {
            for handle in [
                mlir_sys::mlirGetDialectHandle__func__(),
                mlir_sys::mlirGetDialectHandle__arith__(),
                mlir_sys::mlirGetDialectHandle__tosa__(),
            ] {
                mlir_sys::mlirDialectHandleInsertDialect(handle, registry.to_raw());
            }
        }
        context.append_dialect_registry(&registry);
        context.load_all_available_dialects();
        let diagnostics: Rc<RefCell<Vec<Diagnostic>>> = Rc::default();
        let sink = diagnostics.clone();
        let filename: Rc<RefCell<String>> = Rc::default();
        let name = filename.clone();
        context.attach_diagnostic_handler(move |d| {
            sink.borrow_mut().push(convert_diagnostic(&d, &name.borrow()));
            true
        });
        MlirSession { context, diagnostics, filename }
    }

    /// Takes what MLIR has reported so far.
    pub fn take_diagnostics(&self) -> Diagnostics {
        Diagnostics(std::mem::take(&mut *self.diagnostics.borrow_mut()))
    }
}

fn convert_diagnostic(d: &melior::diagnostic::Diagnostic, file: &str) -> Diagnostic {
    let severity = match d.severity() {
        melior::diagnostic::DiagnosticSeverity::Error => Severity::Error,
        melior::diagnostic::DiagnosticSeverity::Warning => Severity::Warning,
        melior::diagnostic::DiagnosticSeverity::Note => Severity::Note,
        melior::diagnostic::DiagnosticSeverity::Remark => Severity::Remark,
    };
    // MLIR attaches the failing op, printed in generic form, as a note to verifier errors; the
    // location already points at it.
    let notes = (0..d.note_count())
        .filter_map(|i| d.note(i).ok())
        .map(|n| convert_diagnostic(&n, file))
        .filter(|n| !n.message.starts_with("see current operation"))
        .collect();
    Diagnostic { severity, location: from_mlir_location(d.location(), file), message: d.to_string(), notes }
}

/// Converts an MLIR location: file positions, names (kept for `--keep-f32`), and the first known
/// position inside fused and call-site locations. Positions MLIR gives without a file name
/// (text parsed from a string) get `default_file`.
pub(crate) fn from_mlir_location(loc: MlirLocation, default_file: &str) -> Location {
    if loc.is_file_line_col_range() {
        let file = loc.file_line_col_range_filename();
        let mut file = file.as_string_ref().as_str().unwrap_or("<invalid utf-8>").to_string();
        if file.is_empty() || file == "-" {
            file = default_file.to_string();
        }
        Location::file(file, loc.file_line_col_range_start_line() as u32, loc.file_line_col_range_start_column() as u32)
    } else if loc.is_name() {
        let mut inner = from_mlir_location(loc.name_child_location(), default_file);
        let name = loc.name_value();
        inner.name = Some(name.as_string_ref().as_str().unwrap_or_default().to_string());
        inner
    } else if loc.is_call_site() {
        from_mlir_location(loc.call_site_callee(), default_file)
    } else if loc.is_fused() {
        (0..loc.fused_num_locations())
            .map(|i| from_mlir_location(loc.fused_location(i), default_file))
            .find(|l| *l != Location::default())
            .unwrap_or_default()
    } else {
        Location::unknown()
    }
}

/// Converts an f16c location back into MLIR.
pub(crate) fn to_mlir_location<'c>(context: &'c Context, loc: &Location) -> MlirLocation<'c> {
    let inner = match &loc.file {
        Some((file, line, col)) => MlirLocation::new(context, file, *line as usize, *col as usize),
        None => MlirLocation::unknown(context),
    };
    match &loc.name {
        Some(name) => MlirLocation::name(context, name, inner),
        None => inner,
    }
}
