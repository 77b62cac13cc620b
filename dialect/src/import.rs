//! MLIR text → graph IR.
//!
//! The text is parsed and verified by MLIR itself (through melior), so anything MLIR rejects is
//! reported with MLIR's own message and location. The verified module is then walked: every
//! `func.func` becomes a [`Graph`], every op a node. What f16c cannot represent (an op outside
//! [`crate::op::SUPPORTED_OPS`], a dynamic shape, an unsupported element type, a region) is
//! reported as a located error; all of them are collected before import gives up.
//!
//! Weights come in three spellings and all are read: decimal `dense<[...]>`, hex
//! `dense<"0x...">` (both through MLIR's raw element data) and `dense_resource<key>`, whose bytes
//! are read from the file's `{-# dialect_resources: { builtin: { key: "0x..." } } #-}` section.

use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::graph::{Graph, Module, NodeId};
use crate::mlir::{from_mlir_location, MlirSession};
use crate::op::{BinaryOp, Conv3dAttrs, ConvAttrs, Op, PoolAttrs, ReduceKind, Region, RescaleAttrs, Rounding, TransposeConvAttrs, UnaryOp};
use crate::tensor::{Data, Tensor};
use crate::types::{DType, TensorType, TypeParseError, ValueType};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, AttributeLike, BlockLike, BlockRef, RegionLike, ValueLike};
use melior::StringRef;
use std::collections::HashMap;

/// Parses, verifies and imports MLIR text. `filename` is used in locations and diagnostics.
pub fn parse_module(source: &str, filename: &str) -> Result<Module, Diagnostics> {
    parse_module_releasing(source, filename, &|_| {})
}

/// [`parse_module`], calling `release` with each resource blob's hex (a slice of `source`) once
/// it is read: past its call, the import reads those bytes at most once more, to decode them.
/// A caller that maps the file can drop those pages from memory, so that a model's hex never
/// sits in memory beside its decoded weights (GPT-2's 1.3 GB of text beside 0.5 GB of f32).
pub fn parse_module_releasing(source: &str, filename: &str, release: &(dyn Fn(&str) + Sync)) -> Result<Module, Diagnostics> {
    // Large decimal weights are read first; everything after works on the text MLIR will
    // parse, a few kilobytes of a 178 MB model (screening the whole source took 0.13 s).
    // Resource blobs stay slices of the source (decoded on demand); MLIR parses the text with
    // each cut to its alignment header, so that neither it nor a copy of the text holds them.
    let resources = resource_hex(source, release);
    check_resource_headers(source, filename, &resources)?;
    let cuts = blob_cuts(source, &resources);
    let decimal = read_decimal_weights(source, &cuts, release);
    if decimal.text.is_some() {
        // MLIR parses the copy: the ops' text, searched through for literals, is done with.
        release(&source[..cuts.section_start]);
    }
    let text = decimal.text.as_deref().unwrap_or(source);
    let columns = &decimal.columns;
    let fix = |loc: &mut Location| {
        if let Some((file, line, col)) = &mut loc.file {
            if &**file == filename {
                *col = columns.original(*line, *col);
            }
        }
    };
    let fix_all = |mut d: Diagnostics| {
        fn walk(d: &mut Diagnostic, fix: &dyn Fn(&mut Location)) {
            fix(&mut d.location);
            d.notes.iter_mut().for_each(|n| walk(n, fix));
        }
        d.0.iter_mut().for_each(|d| walk(d, &fix));
        d
    };
    screen(text, filename).map_err(fix_all)?;
    match import(text, filename, &resources, decimal.blobs, release) {
        Ok(mut module) => {
            if !columns.is_empty() {
                for g in &mut module.functions {
                    fix(&mut g.location);
                    for id in g.node_ids().collect::<Vec<_>>() {
                        let mut loc = g.location(id);
                        fix(&mut loc);
                        g.set_location(id, loc);
                    }
                }
            }
            Ok(module)
        }
        Err(d) => Err(fix_all(d)),
    }
}

/// Parses `text` (the source with large decimal literals already read into `decimal_blobs`)
/// with MLIR and imports it.
fn import(text: &str, filename: &str, resources: &[(String, usize, &str)], decimal_blobs: HashMap<String, Data>, release: &(dyn Fn(&str) + Sync)) -> Result<Module, Diagnostics> {
    let session = MlirSession::new();
    *session.filename.borrow_mut() = filename.to_string();
    let ctx = &session.context;
    // MLIR's module parser wraps top-level functions in an implicit `builtin.module`, as
    // mlir-opt does. SAFETY: the string ref points into a live &str for the call.
    let raw = unsafe { mlir_sys::mlirModuleCreateParse(ctx.to_raw(), StringRef::new(text).to_raw()) };
    if raw.ptr.is_null() {
        let mut d = session.take_diagnostics();
        if d.0.is_empty() {
            d.0.push(Diagnostic::error(Location::file(filename, 1, 1), "could not parse the file as MLIR"));
        }
        return Err(d);
    }
    // SAFETY: non-null module freshly created by the parser; we own it.
    let module_op = unsafe { melior::ir::Module::from_raw(raw) };
    let top = module_op.as_operation();
    if !top.verify() {
        return Err(session.take_diagnostics());
    }
    let blobs = Blobs { decimal: std::cell::RefCell::new(decimal_blobs), hex: resources.iter().map(|(key, _, hex)| (key.as_str(), *hex)).collect(), release };
    let mut importer = Importer { blobs: &blobs, errors: Vec::new(), file: filename };
    let mut module = Module::default();
    if top.name().as_string_ref().as_str() != Ok("builtin.module") {
        return Err(Diagnostic::error(from_mlir_location(top.location(), filename), "expected a 'builtin.module' at the top level").into());
    }
    let body = top.region(0).ok().and_then(|r| r.first_block());
    let mut next = body.and_then(|b| b.first_operation());
    while let Some(op) = next {
        match op_name(&op).as_str() {
            "func.func" => {
                if let Some(g) = importer.function(op) {
                    module.functions.push(g);
                }
            }
            "tosa.variable" => importer.error(&op, crate::op::unsupported_message("tosa.variable")),
            other => importer.error(&op, format!("'{other}' at module level is not supported by f16c (expected 'func.func')")),
        }
        next = op.next_in_block();
    }
    if importer.errors.is_empty() {
        Ok(module)
    } else {
        Err(Diagnostics(importer.errors))
    }
}

/// How deeply `{`, `[` and `(` may nest in a file. MLIR's parser recurses once per level and
/// overflows the stack on a few thousand (`mlir-opt` crashes on 2,000 nested `module {`); real
/// models nest a dozen levels.
pub const MAX_NESTING: usize = 256;

/// Rejects, with a located error, what MLIR's parser is known to abort on rather than report:
/// nesting deeper than [`MAX_NESTING`], a `dense_resource` blob whose alignment header (its
/// first four bytes) is not a power of two (MLIR asserts, or tries to allocate with it), and a
/// dense array of `index` elements (`array<index: ...>`: MLIR 22's parser dereferences a null
/// float type and crashes, `mlir-opt` too; found by `f16c-fuzz`).
fn screen(source: &str, filename: &str) -> Result<(), Diagnostics> {
    let at = |offset: usize| offset_location(source, filename, offset);
    // A `tosa.const` or `tosa.const_shape` without its `values` attribute: MLIR reports it,
    // but another op's verifier may read the missing attribute first and crash (a reshape whose
    // shape operand it is: found by `f16c-fuzz`, `mlir-opt` crashes too). The attributes come
    // before the op's type, whose `->` ends the search.
    for i in memchr::memmem::find_iter(source.as_bytes(), b"tosa.const") {
        let name = if source[i..].starts_with("tosa.const_shape") { "tosa.const_shape" } else { "tosa.const" };
        let after = &source[i + name.len()..];
        // The op's name, custom (`tosa.const_shape {...}`) or generic (`"tosa.const"() ...`),
        // not a longer name, a comment, or another string.
        let generic = source[..i].ends_with('"') && after.strip_prefix('"').is_some_and(|a| a.trim_start().starts_with('('));
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.') || in_string_or_comment(source, i) && !generic {
            continue;
        }
        let signature = after.find("->").map_or(after, |e| &after[..e]);
        if !signature.contains("values") {
            return Err(Diagnostic::error(at(i), format!("'{name}' without its 'values' attribute: f16c refuses it (MLIR's verifier can crash on a use of it)")).into());
        }
    }
    let (mut depth, mut in_string, mut escaped, mut in_comment) = (0usize, false, false, false);
    let bytes = source.as_bytes();
    // Bytes that change the state outside strings and comments; runs of anything else (the
    // bulk of a model: numbers, blanks, names) are skipped in a tight loop.
    let mut interesting = [false; 256];
    for c in *b"\"/a{[(}])" {
        interesting[c as usize] = true;
    }
    let mut i = 0;
    while i < bytes.len() {
        if !in_comment && !in_string && !interesting[bytes[i] as usize] {
            i += 1;
            continue;
        }
        let c = bytes[i];
        if in_comment {
            in_comment = c != b'\n';
        } else if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'/' if bytes.get(i + 1) == Some(&b'/') => in_comment = true,
                b'a' if bytes[i..].starts_with(b"array")
                    && !bytes[..i].last().is_some_and(|&p| p.is_ascii_alphanumeric() || p == b'_')
                    && skip_blank(&source[i + 5..]).strip_prefix('<').is_some_and(|rest| skip_blank(rest).starts_with("index")) =>
                {
                    return Err(Diagnostic::error(at(i), "a dense array of 'index' elements: f16c refuses it (MLIR's parser crashes on it); write i64").into());
                }
                b'{' | b'[' | b'(' => {
                    depth += 1;
                    if depth > MAX_NESTING {
                        return Err(Diagnostic::error(at(i), format!("brackets nest more than {MAX_NESTING} levels deep here: f16c refuses the file (MLIR's parser would overflow its stack)")).into());
                    }
                }
                b'}' | b']' | b')' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += 1;
    }
    Ok(())
}

/// The location of byte `offset` of `source`.
fn offset_location(source: &str, filename: &str, offset: usize) -> Location {
    let before = &source[..offset];
    let line = memchr::memchr_iter(b'\n', before.as_bytes()).count() + 1;
    let col = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Location::file(filename, line as u32, col as u32)
}

/// Drops the `{-# dialect_resources ... #-}` section at the end of a parsed source (its blobs
/// are in the module once imported; no op is located in it), returning the memory.
pub fn drop_resource_section(source: &mut String) {
    if let Some(start) = resource_section_start(source) {
        source.truncate(start);
        source.shrink_to_fit();
    }
}

/// Where the `{-# dialect_resources ... #-}` section at the end of a source starts, if it has
/// one after some text. Searched for forwards, through the ops only: searching backwards from
/// the end read every blob of the section (a gigabyte of GPT-2's hex) on the way.
fn resource_section_start(source: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&source.as_bytes()[from..], b"dialect_resources").map(|i| from + i) {
        if let Some(start) = memchr::memmem::rfind(&source.as_bytes()[..at], b"{-#") {
            let between = &source[start + 3..at];
            if between.trim().is_empty() && !source[..start].trim_end().is_empty() && !in_string_or_comment(source, at) {
                return Some(start);
            }
        }
        from = at + 1;
    }
    None
}

/// Rejects a `dense_resource` blob whose alignment header (its first four bytes) is not a
/// power of two, with its location in `source` (MLIR asserts, or tries to allocate with it).
fn check_resource_headers(source: &str, filename: &str, resources: &[(String, usize, &str)]) -> Result<(), Diagnostics> {
    for &(ref key, offset, hex) in resources {
        let alignment = hex.get(..8).and_then(|h| u32::from_str_radix(h, 16).ok()).map(u32::swap_bytes);
        match alignment {
            Some(a) if a.is_power_of_two() => {}
            Some(a) => {
                let at = offset_location(source, filename, offset);
                return Err(Diagnostic::error(at, format!("resource '{key}' declares alignment {a}: the first four bytes of a dense_resource blob are its alignment, a power of two")).into());
            }
            None => {
                let at = offset_location(source, filename, offset);
                return Err(Diagnostic::error(at, format!("resource '{key}' is not hex data with a four-byte alignment header")).into());
            }
        }
    }
    Ok(())
}

/// `s` from its first token: whitespace and `//` comments skipped, as MLIR's lexer does.
fn skip_blank(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        match s.strip_prefix("//") {
            Some(rest) => s = rest.split_once('\n').map_or("", |(_, after)| after),
            None => return s,
        }
    }
}

/// Reads a `.mlir` file and imports it; I/O failures become diagnostics too.
pub fn parse_file(path: &std::path::Path) -> Result<(Module, String), Diagnostics> {
    let name = path.display().to_string();
    let source = std::fs::read_to_string(path)
        .map_err(|e| Diagnostics::single(Diagnostic::error(Location::unknown(), format!("cannot read '{name}': {e}"))))?;
    parse_module(&source, &name).map(|m| (m, source))
}

fn op_name(op: &OperationRef) -> String {
    op.name().as_string_ref().as_str().unwrap_or_default().to_string()
}

/// A graph being imported (a function body or a region) and the MLIR values it names.
struct Scope {
    g: Graph,
    values: HashMap<usize, NodeId>,
    /// Values of enclosing scopes this one uses (MLIR lets a TOSA region capture them), in the
    /// order they became inputs after the block arguments.
    captured: Vec<usize>,
}

/// The node naming MLIR value `raw` in the innermost scope. A value of an enclosing scope
/// becomes an input of each scope between it and the innermost (a capture).
fn lookup(scopes: &mut [Scope], raw: usize) -> Option<NodeId> {
    let top = scopes.len() - 1;
    if let Some(&id) = scopes[top].values.get(&raw) {
        return Some(id);
    }
    let level = (0..top).rev().find(|&l| scopes[l].values.contains_key(&raw))?;
    for l in level + 1..=top {
        let outer = scopes[l - 1].values[&raw];
        let ty = scopes[l - 1].g.tensor_ty(outer)?.clone();
        let loc = scopes[l - 1].g.location(outer);
        let id = scopes[l].g.add_input(ty, loc);
        scopes[l].values.insert(raw, id);
        scopes[l].captured.push(raw);
    }
    Some(scopes[top].values[&raw])
}

/// The bytes constants read by key: decimal literals read before MLIR parsed the text, and the
/// file's resource blobs, decoded from their hex only when a constant asks (so that a model's
/// weights are not held a third time, as bytes, beside the text and the tensors).
struct Blobs<'t> {
    /// Literals read before MLIR parsed the text, each under a key only its own constant uses:
    /// taken out when that constant is built, so the bytes and the tensors are not all held
    /// at once.
    decimal: std::cell::RefCell<HashMap<String, Data>>,
    hex: HashMap<&'t str, &'t str>,
    /// Called with a blob's hex once it is decoded ([`parse_module_releasing`]).
    release: &'t (dyn Fn(&str) + Sync),
}

impl Blobs<'_> {
    /// The bytes of `key` (with MLIR's 4-byte alignment header).
    fn get(&self, key: &str) -> Result<Vec<u8>, String> {
        let hex = self.hex.get(key).ok_or_else(|| format!("resource '{key}' is not in the file's dialect_resources section"))?;
        let bytes = decode_hex(hex).ok_or_else(|| format!("resource '{key}' is not valid hex"))?;
        (self.release)(hex);
        Ok(bytes)
    }

    /// The `n` elements of `dtype` that resource `key` holds, decoded from its hex straight into
    /// the tensor's memory (one copy of the weight, not a byte blob and then the tensor) where
    /// the hex is exactly that many elements of a type stored as its bytes; `None` otherwise
    /// (the caller takes [`Blobs::get`]'s bytes and reports what is wrong with them).
    fn data(&self, key: &str, dtype: DType, n: usize) -> Option<Result<Data, String>> {
        const HEADER: usize = 8; // hex digits of the alignment header
        let hex = self.hex.get(key)?;
        // (i1 and i48 are not stored as their bytes: those take the byte path.)
        if hex.len() != HEADER + 2 * n * dtype.byte_size() || matches!(dtype, DType::I1 | DType::I48) {
            return None;
        }
        let decoded = decode_elements(&hex[HEADER..], Data::zeroed(dtype, n), self.release).ok_or_else(|| format!("resource '{key}' is not valid hex"));
        (self.release)(hex);
        Some(decoded)
    }
}

struct Importer<'b> {
    blobs: &'b Blobs<'b>,
    errors: Vec<Diagnostic>,
    file: &'b str,
}

impl Importer<'_> {
    fn error(&mut self, op: &OperationRef, msg: impl Into<String>) {
        self.errors.push(Diagnostic::error(from_mlir_location(op.location(), self.file), msg));
    }

    fn function(&mut self, func: OperationRef) -> Option<Graph> {
        let name = func.attribute("sym_name").ok().map(|a| a.to_string().trim_matches('"').to_string()).unwrap_or_default();
        let mut g = Graph::new(name.clone());
        g.location = from_mlir_location(func.location(), self.file);
        let Some(block) = func.region(0).ok().and_then(|r| r.first_block()) else {
            self.error(&func, format!("function '@{name}' has no body: f16c needs a definition, not a declaration"));
            return None;
        };
        if block.next_in_region().is_some() {
            self.error(&func, format!("function '@{name}' has several blocks: f16c imports straight-line graphs only"));
            return None;
        }
        let errors_before = self.errors.len();
        let mut scopes = vec![Scope { g, values: HashMap::new(), captured: Vec::new() }];
        self.arguments(&func, &block, &mut scopes[0], &format!("'@{name}'"), "function");
        self.block_ops(block, &mut scopes, "func.return");
        let g = scopes.pop().expect("the function's scope").g;
        (self.errors.len() == errors_before).then_some(g)
    }

    /// Makes `block`'s arguments the inputs of `scope`'s graph.
    fn arguments(&mut self, owner: &OperationRef, block: &BlockRef, scope: &mut Scope, what: &str, kind: &str) {
        for i in 0..block.argument_count() {
            let arg = block.argument(i).expect("index below argument_count");
            let ty_text = arg.r#type().to_string();
            match ValueType::parse(&ty_text) {
                Ok(ValueType::Tensor(t)) => {
                    let id = scope.g.add_input(t, from_mlir_location(arg.location(), self.file));
                    scope.values.insert(arg.to_raw().ptr as usize, id);
                }
                Ok(_) => {
                    self.error(owner, format!("argument #{i} of {what}: {kind} arguments must be ranked tensors, not '{ty_text}'"));
                }
                Err(e) => {
                    let why = type_error_text(&ty_text, Some(e));
                    self.error(owner, format!("argument #{i} of {what}: {why}"));
                }
            }
        }
    }

    /// Imports the ops of `block` into the innermost scope; `terminator`'s operands become its
    /// graph's outputs.
    fn block_ops(&mut self, block: BlockRef, scopes: &mut Vec<Scope>, terminator: &str) {
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let name = op_name(&op);
            if name == terminator {
                for v in op.operands() {
                    if let Some(id) = lookup(scopes, v.to_raw().ptr as usize) {
                        scopes.last_mut().expect("a scope").g.add_output(id);
                    }
                }
                continue;
            }
            if name == "tosa.cond_if" || name == "tosa.while_loop" {
                self.control_flow(&op, &name, scopes);
                continue;
            }
            if let Some((id, raw)) = self.op(scopes, &op, &name) {
                scopes.last_mut().expect("a scope").values.insert(raw, id);
            }
        }
    }

    /// `tosa.cond_if` or `tosa.while_loop`: each region becomes a graph (its block arguments,
    /// then the values it captures from enclosing scopes, as inputs), the op one node of
    /// [`ValueType::Results`] and one `Op::Result` node per result.
    fn control_flow(&mut self, op: &OperationRef, name: &str, scopes: &mut Vec<Scope>) {
        if op.region_count() != 2 {
            self.error(op, format!("'{name}' must have two regions"));
            return;
        }
        let errors_before = self.errors.len();
        let loc = from_mlir_location(op.location(), self.file);
        let mut operands = Vec::new();
        for (i, v) in op.operands().enumerate() {
            match lookup(scopes, v.to_raw().ptr as usize) {
                Some(id) => operands.push(id),
                None => {
                    if self.errors.is_empty() {
                        self.error(op, format!("'{name}' operand #{i} is not produced by an op f16c imported"));
                    }
                    return;
                }
            }
        }
        let mut regions = Vec::new();
        for k in 0..op.region_count() {
            let region = op.region(k).expect("index below region_count");
            let Some(block) = region.first_block() else {
                self.error(op, format!("'{name}' region #{k} is empty"));
                return;
            };
            if block.next_in_region().is_some() {
                self.error(op, format!("'{name}' region #{k} has several blocks: f16c imports straight-line regions only"));
                return;
            }
            let mut g = Graph::new(format!("{name} region #{k}"));
            g.location = loc.clone();
            let mut scope = Scope { g, values: HashMap::new(), captured: Vec::new() };
            self.arguments(op, &block, &mut scope, &format!("'{name}' region #{k}"), "region");
            scopes.push(scope);
            self.block_ops(block, scopes, "tosa.yield");
            let scope = scopes.pop().expect("the region's scope");
            regions.push((Region { args: block.argument_count(), graph: scope.g }, scope.captured));
        }
        let mut types = Vec::new();
        for i in 0..op.result_count() {
            let text = op.result(i).expect("index below result_count").r#type().to_string();
            match ValueType::parse(&text) {
                Ok(ValueType::Tensor(t)) => types.push(t),
                other => {
                    self.error(op, format!("'{name}' result #{i}: {}", type_error_text(&text, other.err())));
                    return;
                }
            }
        }
        if self.errors.len() != errors_before {
            return;
        }
        for (_, captured) in &regions {
            operands.extend(captured.iter().map(|&raw| lookup(scopes, raw).expect("captured from an enclosing scope")));
        }
        let mut it = regions.into_iter().map(|(r, _)| Box::new(r));
        let (first, second) = (it.next().expect("two regions"), it.next().expect("two regions"));
        let node = if name == "tosa.cond_if" { Op::CondIf { then: first, otherwise: second } } else { Op::WhileLoop { cond: first, body: second } };
        let scope = scopes.last_mut().expect("a scope");
        let id = scope.g.add_node(node, ValueType::Results(types.clone()), &operands, loc.clone());
        for (i, t) in types.into_iter().enumerate() {
            let r = scope.g.add_node(Op::Result(i), ValueType::Tensor(t), &[id], loc.clone());
            scope.values.insert(op.result(i).expect("index below result_count").to_raw().ptr as usize, r);
        }
    }

    /// Imports one op into the innermost scope; `None` (after reporting) if it cannot be
    /// represented.
    fn op(&mut self, scopes: &mut [Scope], op: &OperationRef, name: &str) -> Option<(NodeId, usize)> {
        if op.region_count() > 0 || op.result_count() != 1 {
            self.error(op, crate::op::unsupported_message(name));
            return None;
        }
        let result = op.result(0).expect("one result");
        let ty_text = result.r#type().to_string();
        let ty = match ValueType::parse(&ty_text) {
            Ok(t) => t,
            Err(e) => {
                self.error(op, format!("'{name}' result: {}", type_error_text(&ty_text, Some(e))));
                // Every problem in one run: an op f16c does not know is reported too, not
                // hidden behind its type.
                if !crate::op::SUPPORTED_OPS.contains(&name) {
                    self.error(op, crate::op::unsupported_message(name));
                }
                return None;
            }
        };
        let mut operands = Vec::with_capacity(op.operand_count());
        for (i, v) in op.operands().enumerate() {
            match lookup(scopes, v.to_raw().ptr as usize) {
                Some(id) => operands.push(id),
                // The producer was already reported as unsupported; don't cascade.
                None if !self.errors.is_empty() => return None,
                None => {
                    self.error(op, format!("'{name}' operand #{i} is not produced by an op f16c imported"));
                    return None;
                }
            }
        }
        let parsed = match self.build_op(op, name, &ty) {
            Ok(o) => o,
            Err(msg) => {
                self.error(op, msg);
                return None;
            }
        };
        let g = &mut scopes.last_mut().expect("a scope").g;
        let id = g.add_node(parsed, ty, &operands, from_mlir_location(op.location(), self.file));
        let known = inherent_names(name);
        for i in 0..op.attribute_count() {
            if let Ok((key, value)) = op.attribute_at(i) {
                let key = key.as_string_ref().as_str().unwrap_or_default().to_string();
                if !known.contains(&key.as_str()) {
                    g.node_mut(id).attrs.push((key, value.to_string()));
                }
            }
        }
        Some((id, result.to_raw().ptr as usize))
    }

    fn build_op(&mut self, op: &OperationRef, name: &str, ty: &ValueType) -> Result<Op, String> {
        let attrs = Attrs { op, name };
        Ok(match name {
            "tosa.const" | "arith.constant" => {
                let key = if name == "tosa.const" { "values" } else { "value" };
                let t = ty.as_tensor().ok_or_else(|| format!("'{name}' must produce a tensor"))?;
                let attr = op.attribute(key).map_err(|_| format!("'{name}' has no '{key}' attribute"))?;
                Op::Const(dense_to_tensor(attr, t, self.blobs).map_err(|e| format!("'{name}': {e}"))?)
            }
            "tosa.const_shape" => {
                let attr = op.attribute("values").map_err(|_| "'tosa.const_shape' has no 'values'".to_string())?;
                Op::ConstShape(index_elements(attr))
            }
            "tosa.conv2d" | "tosa.depthwise_conv2d" => {
                let a = ConvAttrs {
                    pad: attrs.array("pad")?,
                    stride: attrs.array("stride")?,
                    dilation: attrs.array("dilation")?,
                    acc: attrs.dtype("acc_type")?,
                };
                if name == "tosa.conv2d" { Op::Conv2d(a) } else { Op::DepthwiseConv2d(a) }
            }
            "tosa.conv3d" => Op::Conv3d(Conv3dAttrs {
                pad: attrs.array("pad")?,
                stride: attrs.array("stride")?,
                dilation: attrs.array("dilation")?,
                acc: attrs.dtype("acc_type")?,
            }),
            "tosa.transpose_conv2d" => Op::TransposeConv2d(TransposeConvAttrs {
                out_pad: attrs.array("out_pad")?,
                stride: attrs.array("stride")?,
                acc: attrs.dtype("acc_type")?,
            }),
            "tosa.matmul" => Op::MatMul,
            "tosa.negate" => Op::Unary(UnaryOp::Negate),
            "tosa.abs" => Op::Unary(UnaryOp::Abs),
            "tosa.exp" => Op::Unary(UnaryOp::Exp),
            "tosa.log" => Op::Unary(UnaryOp::Log),
            "tosa.rsqrt" => Op::Unary(UnaryOp::Rsqrt),
            "tosa.reciprocal" => Op::Unary(UnaryOp::Reciprocal),
            "tosa.tanh" => Op::Unary(UnaryOp::Tanh),
            "tosa.sigmoid" => Op::Unary(UnaryOp::Sigmoid),
            "tosa.erf" => Op::Unary(UnaryOp::Erf),
            "tosa.ceil" => Op::Unary(UnaryOp::Ceil),
            "tosa.floor" => Op::Unary(UnaryOp::Floor),
            "tosa.sin" => Op::Unary(UnaryOp::Sin),
            "tosa.cos" => Op::Unary(UnaryOp::Cos),
            "tosa.bitwise_not" => Op::Unary(UnaryOp::BitwiseNot),
            "tosa.logical_not" => Op::Unary(UnaryOp::LogicalNot),
            "tosa.bitwise_and" => Op::Binary(BinaryOp::BitwiseAnd),
            "tosa.bitwise_or" => Op::Binary(BinaryOp::BitwiseOr),
            "tosa.bitwise_xor" => Op::Binary(BinaryOp::BitwiseXor),
            "tosa.logical_and" => Op::Binary(BinaryOp::LogicalAnd),
            "tosa.logical_or" => Op::Binary(BinaryOp::LogicalOr),
            "tosa.logical_xor" => Op::Binary(BinaryOp::LogicalXor),
            "tosa.clz" => Op::Unary(UnaryOp::Clz),
            "tosa.logical_left_shift" => Op::Binary(BinaryOp::ShiftLeft),
            "tosa.logical_right_shift" => Op::Binary(BinaryOp::ShiftRightLogical),
            "tosa.arithmetic_right_shift" => Op::Binary(BinaryOp::ShiftRightArith { round: attrs.flag("round")? }),
            "tosa.intdiv" => Op::Binary(BinaryOp::IntDiv),
            "tosa.add" => Op::Binary(BinaryOp::Add),
            "tosa.sub" => Op::Binary(BinaryOp::Sub),
            "tosa.mul" => Op::Binary(BinaryOp::Mul),
            "tosa.maximum" => {
                attrs.propagate_nans()?;
                Op::Binary(BinaryOp::Maximum)
            }
            "tosa.minimum" => {
                attrs.propagate_nans()?;
                Op::Binary(BinaryOp::Minimum)
            }
            "tosa.pow" => Op::Binary(BinaryOp::Pow),
            "tosa.equal" => Op::Binary(BinaryOp::Equal),
            "tosa.greater" => Op::Binary(BinaryOp::Greater),
            "tosa.greater_equal" => Op::Binary(BinaryOp::GreaterEqual),
            "tosa.clamp" => {
                attrs.propagate_nans()?;
                Op::Clamp { min: attrs.scalar("min_val")?, max: attrs.scalar("max_val")? }
            }
            "tosa.reduce_sum" | "tosa.reduce_max" | "tosa.reduce_min" | "tosa.reduce_product" | "tosa.reduce_all"
            | "tosa.reduce_any" => {
                let kind = match name {
                    "tosa.reduce_sum" => ReduceKind::Sum,
                    "tosa.reduce_max" => ReduceKind::Max,
                    "tosa.reduce_min" => ReduceKind::Min,
                    "tosa.reduce_product" => ReduceKind::Prod,
                    "tosa.reduce_all" => ReduceKind::All,
                    _ => ReduceKind::Any,
                };
                attrs.propagate_nans()?;
                Op::Reduce { kind, axis: attrs.int("axis")? }
            }
            "tosa.argmax" => {
                attrs.propagate_nans()?;
                Op::ArgMax { axis: attrs.int("axis")? }
            }
            "tosa.max_pool2d" | "tosa.avg_pool2d" => {
                let avg = name == "tosa.avg_pool2d";
                if !avg {
                    attrs.propagate_nans()?;
                }
                let p = PoolAttrs {
                    kernel: attrs.array("kernel")?,
                    stride: attrs.array("stride")?,
                    pad: attrs.array("pad")?,
                    acc: if avg { Some(attrs.dtype("acc_type")?) } else { None },
                };
                if avg { Op::AvgPool2d(p) } else { Op::MaxPool2d(p) }
            }
            "tosa.reshape" => Op::Reshape,
            "tosa.transpose" => Op::Transpose { perms: attrs.list("perms")? },
            "tosa.slice" => Op::Slice,
            "tosa.pad" => Op::Pad,
            "tosa.concat" => Op::Concat { axis: attrs.int("axis")? },
            "tosa.tile" => Op::Tile,
            "tosa.cast" => Op::Cast,
            "tosa.select" => Op::Select,
            "tosa.gather" => Op::Gather,
            "tosa.scatter" => Op::Scatter,
            "tosa.identity" => Op::Identity,
            "tosa.table" => Op::Table,
            "tosa.rescale" => {
                let mode = attrs.text("rounding_mode")?;
                let rounding = match mode.trim().trim_start_matches("#tosa.rounding_mode<").trim_end_matches('>') {
                    "SINGLE_ROUND" => Rounding::Single,
                    "INEXACT_ROUND" => Rounding::Inexact,
                    "DOUBLE_ROUND" => Rounding::Double,
                    _ => return Err(format!("'tosa.rescale' rounding_mode {mode} is not supported by f16c")),
                };
                Op::Rescale(RescaleAttrs {
                    scale32: attrs.flag("scale32")?,
                    rounding,
                    per_channel: attrs.flag("per_channel")?,
                    input_unsigned: attrs.flag("input_unsigned")?,
                    output_unsigned: attrs.flag("output_unsigned")?,
                })
            }
            "tosa.reverse" => Op::Reverse { axis: attrs.int("axis")? },
            "tosa.resize" => {
                let mode = attrs.text("mode")?;
                let bilinear = match mode.trim().trim_start_matches("#tosa.resize_mode<").trim_end_matches('>') {
                    "BILINEAR" => true,
                    "NEAREST_NEIGHBOR" => false,
                    _ => return Err(format!("'tosa.resize' mode {mode} is not supported by f16c (BILINEAR, NEAREST_NEIGHBOR)")),
                };
                Op::Resize { bilinear }
            }
            _ => return Err(crate::op::unsupported_message(name)),
        })
    }
}

/// The inherent attribute names of each op (everything else is carried as a discardable one).
fn inherent_names(name: &str) -> &'static [&'static str] {
    match name {
        "tosa.const" | "tosa.const_shape" => &["values"],
        "arith.constant" => &["value"],
        "tosa.conv2d" | "tosa.depthwise_conv2d" | "tosa.conv3d" => &["pad", "stride", "dilation", "acc_type", "local_bound"],
        "tosa.transpose_conv2d" => &["out_pad", "stride", "acc_type", "local_bound"],
        "tosa.clamp" => &["min_val", "max_val", "nan_mode"],
        "tosa.maximum" | "tosa.minimum" => &["nan_mode"],
        "tosa.reduce_sum" | "tosa.reduce_product" | "tosa.reduce_all" | "tosa.reduce_any" | "tosa.concat" | "tosa.reverse" => &["axis"],
        "tosa.arithmetic_right_shift" => &["round"],
        "tosa.resize" => &["mode"],
        "tosa.rescale" => &["scale32", "rounding_mode", "per_channel", "input_unsigned", "output_unsigned"],
        "tosa.reduce_max" | "tosa.reduce_min" | "tosa.argmax" => &["axis", "nan_mode"],
        "tosa.max_pool2d" => &["kernel", "stride", "pad", "nan_mode"],
        "tosa.avg_pool2d" => &["kernel", "stride", "pad", "acc_type"],
        "tosa.transpose" => &["perms"],
        _ => &[],
    }
}

fn type_error_text(text: &str, e: Option<TypeParseError>) -> String {
    match e {
        Some(TypeParseError::Dynamic) => format!("dynamic shape '{text}' is not supported by f16c (static shapes only)"),
        Some(TypeParseError::UnsupportedElement(el)) => {
            format!("element type '{el}' in '{text}' is not supported by f16c (f32, f16, bf16, f64, i1, i8, i16, i32, i48, i64)")
        }
        Some(TypeParseError::TooLarge { bytes, limit }) => {
            let size = bytes.map_or_else(|| "more than 2^128 bytes".to_string(), |b| format!("{b} bytes ({:.1} GiB)", b as f64 / (1u64 << 30) as f64));
            format!(
                "'{text}' is {size}, more than f16c's limit of {limit} bytes per tensor (raise it with --max-tensor-bytes=N or F16C_MAX_TENSOR_BYTES)"
            )
        }
        _ => format!("type '{text}' is not supported by f16c (ranked tensors and !tosa.shape only)"),
    }
}

/// Typed access to an op's attributes, by their printed form.
struct Attrs<'a, 'c, 'o> {
    op: &'a OperationRef<'c, 'o>,
    name: &'a str,
}

impl Attrs<'_, '_, '_> {
    fn text(&self, key: &str) -> Result<String, String> {
        self.op.attribute(key).map(|a| a.to_string()).map_err(|_| format!("'{}' is missing attribute '{key}'", self.name))
    }

    /// `array<i64: 1, 2>` → `[1, 2]`.
    fn list(&self, key: &str) -> Result<Vec<usize>, String> {
        let t = self.text(key)?;
        let body = t.trim_start_matches("array<").trim_end_matches('>');
        let Some((_, items)) = body.split_once(':') else { return Ok(Vec::new()) };
        items
            .split(',')
            .map(|s| s.trim().parse::<usize>().map_err(|_| format!("'{}' attribute '{key}' = {t}: expected non-negative integers", self.name)))
            .collect()
    }

    fn array<const N: usize>(&self, key: &str) -> Result<[usize; N], String> {
        let v = self.list(key)?;
        v.try_into().map_err(|v: Vec<usize>| format!("'{}' attribute '{key}' has {} entries, expected {N}", self.name, v.len()))
    }

    /// `1 : i32` → 1.
    fn int(&self, key: &str) -> Result<usize, String> {
        let t = self.text(key)?;
        let n = t.split(':').next().unwrap_or_default().trim();
        n.parse().map_err(|_| format!("'{}' attribute '{key}' = {t}: expected a non-negative integer", self.name))
    }

    /// `true` / `false`.
    fn flag(&self, key: &str) -> Result<bool, String> {
        let t = self.text(key)?;
        t.trim().parse().map_err(|_| format!("'{}' attribute '{key}' = {t}: expected true or false", self.name))
    }

    fn dtype(&self, key: &str) -> Result<DType, String> {
        let t = self.text(key)?;
        DType::from_mlir(t.trim()).ok_or_else(|| format!("'{}' {key} = {t} is not supported by f16c", self.name))
    }

    /// A float or integer attribute: `0.000000e+00 : f32`, `0x7F800000 : f32`, `6 : i8`.
    fn scalar(&self, key: &str) -> Result<f64, String> {
        let t = self.text(key)?;
        parse_scalar_attr(&t).ok_or_else(|| format!("'{}' attribute '{key}' = {t}: cannot read the value", self.name))
    }

    fn propagate_nans(&self) -> Result<(), String> {
        match self.op.attribute("nan_mode") {
            Ok(a) if a.to_string().contains("IGNORE") => {
                Err(format!("'{}' with nan_mode IGNORE is not supported by f16c (only PROPAGATE)", self.name))
            }
            _ => Ok(()),
        }
    }
}

/// Reads a printed scalar attribute (`<value> : <type>`), hex bit patterns included.
pub(crate) fn parse_scalar_attr(text: &str) -> Option<f64> {
    let (value, ty) = text.rsplit_once(':')?;
    let (value, ty) = (value.trim(), ty.trim());
    if let Some(hex) = value.strip_prefix("0x") {
        let bits = u64::from_str_radix(hex, 16).ok()?;
        return Some(match DType::from_mlir(ty)? {
            DType::F32 => f32::from_bits(bits as u32) as f64,
            DType::F16 => half::f16::from_bits(bits as u16).to_f64(),
            DType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
            DType::F64 => f64::from_bits(bits),
            _ => bits as f64,
        });
    }
    match value {
        "true" => Some(1.0),
        "false" => Some(0.0),
        v => v.parse().ok(),
    }
}

/// The elements of a dense `index` tensor attribute.
fn index_elements(attr: Attribute) -> Vec<i64> {
    // SAFETY: attr is a live DenseElementsAttr of index type (checked by MLIR's verifier of
    // tosa.const_shape); positions are below its element count.
    unsafe {
        let raw = attr.to_raw();
        if !mlir_sys::mlirAttributeIsADenseElements(raw) {
            return Vec::new();
        }
        let n = mlir_sys::mlirElementsAttrGetNumElements(raw);
        (0..n).map(|i| mlir_sys::mlirDenseElementsAttrGetIndexValue(raw, i as isize) as i64).collect()
    }
}

/// Reads a dense or dense_resource elements attribute into a tensor of type `ty`.
fn dense_to_tensor(attr: Attribute, ty: &TensorType, blobs: &Blobs<'_>) -> Result<Tensor, String> {
    let n = ty.num_elements();
    let raw = attr.to_raw();
    // SAFETY: each call is guarded by the matching IsA check; positions are below the count.
    let data = unsafe {
        if mlir_sys::mlirAttributeIsADenseElements(raw) {
            let count = mlir_sys::mlirElementsAttrGetNumElements(raw) as usize;
            if count != n {
                return Err(format!("constant has {count} elements but its type {ty} needs {n}"));
            }
            if ty.dtype == DType::I1 {
                Data::I1((0..n).map(|i| mlir_sys::mlirDenseElementsAttrGetBoolValue(raw, i as isize)).collect())
            } else {
                let splat = mlir_sys::mlirDenseElementsAttrIsSplat(raw);
                let size = Data::mlir_element_size(ty.dtype);
                let len = if splat { size } else { n * size };
                let ptr = mlir_sys::mlirDenseElementsAttrGetRawData(raw) as *const u8;
                let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(ptr, len) };
                let one = Data::from_mlir_bytes(ty.dtype, bytes).ok_or("malformed raw element data")?;
                if splat { one.repeat_first(n) } else { one }
            }
        } else if mlir_sys::mlirAttributeIsADenseResourceElements(raw) {
            let text = attr.to_string();
            let key = text
                .strip_prefix("dense_resource<")
                .and_then(|r| r.split_once('>'))
                .map(|(k, _)| k.to_string())
                .ok_or_else(|| format!("cannot read the resource key of {text}"))?;
            if let Some(data) = blobs.data(&key, ty.dtype, n) {
                return Tensor::new(ty.shape.clone(), data?).map_err(|e| e.to_string());
            }
            if let Some(data) = blobs.decimal.borrow_mut().remove(&key) {
                if data.dtype() != ty.dtype || data.len() != n {
                    return Err(format!("literal '{key}' holds {} elements of {}, but {ty} needs {n}", data.len(), data.dtype()));
                }
                return Tensor::new(ty.shape.clone(), data).map_err(|e| e.to_string());
            }
            let blob = blobs.get(&key)?;
            let payload = blob.get(4..).ok_or_else(|| format!("resource '{key}' is shorter than its alignment header"))?;
            let data = Data::from_mlir_bytes(ty.dtype, payload)
                .filter(|d| d.len() == n)
                .ok_or_else(|| format!("resource '{key}' holds {} bytes, but {ty} needs {}", payload.len(), ty.byte_size()))?;
            data
        } else {
            return Err(format!("constant attribute '{}' is not supported by f16c", attr));
        }
    };
    Tensor::new(ty.shape.clone(), data).map_err(|e| e.to_string())
}


/// Decimal f32 constants with at least this many elements are read by [`read_decimal_weights`].
pub const FAST_DECIMAL_ELEMENTS: usize = 256;

/// The prefix of the resource keys literals read by [`read_decimal_weights`] go under.
const DECIMAL_PREFIX: &str = "__f16c_decimal_";

/// Large decimal literals read by [`read_decimal_weights`].
struct DecimalWeights {
    /// The text MLIR parses, when a literal was read.
    text: Option<String>,
    /// Their values, by resource key.
    blobs: HashMap<String, Data>,
    /// How columns moved.
    columns: Columns,
}

/// Column shifts on lines where literals were shortened: per line, `(from, delta)` pairs in
/// increasing `from`; a column at or after `from` in the parsed text is `delta` more in the
/// source (the last pair that applies counts: deltas accumulate along the line).
#[derive(Default)]
struct Columns(HashMap<u32, Vec<(u32, u32)>>);

impl Columns {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The source column of `(line, col)` in the parsed text.
    fn original(&self, line: u32, col: u32) -> u32 {
        let shifts = self.0.get(&line).map_or(&[][..], Vec::as_slice);
        col + shifts.iter().rev().find(|&&(from, _)| col >= from).map_or(0, |&(_, d)| d)
    }
}

/// Reads large decimal f32 constants (`dense<[0.25, -1.5e-02, ...]> : tensor<AxBxf32>`, the
/// spelling of torch-mlir's exports) here instead of in MLIR's parser, whose per-element path
/// took 6.7 s on a mobilenet-v2 (0.5 s here, on two threads). Each such literal is replaced, in
/// the copy of the source MLIR parses, by `dense_resource<KEY>`: the values go into the blobs
/// under `KEY` (with the 4-byte alignment header of MLIR's resource blobs), and the columns
/// the shorter text moves are recorded, so that locations and diagnostics are mapped back to
/// the source's (lines do not move: only single-line literals are read). Values round as MLIR's
/// parser rounds them: decimal to the nearest f64, then to the nearest f32 (ties to even).
/// Anything unusual (special values, integers, a nesting that does not match the type, a value
/// that overflows f32, a literal over several lines, text in a string or a comment) is left to
/// MLIR, which reads it or reports it as before. Large hex literals (`dense<"0x...">` of at
/// least [`FAST_HEX_DIGITS`] digits, a float or i8..i64 tensor: how torch-mlir prints most
/// weights) are taken the same way, their bytes decoded once into the blob, so that MLIR
/// neither parses nor keeps a copy of them.
fn read_decimal_weights(source: &str, cuts: &BlobCuts, release: &(dyn Fn(&str) + Sync)) -> DecimalWeights {
    let none = || DecimalWeights { text: None, blobs: HashMap::new(), columns: Columns::default() };
    // memchr's SIMD search: the standard library's substring search took a quarter of a
    // second over the 178 MB of a resnet18's text. A source that already uses the prefix
    // keeps its literals for MLIR (only its blobs are cut).
    // Literals are searched for before the resource section (its hex is in strings); the
    // section's keys were read with it (searching its hex read every blob an extra time).
    let body = &source[..cuts.section_start];
    let taken = memchr::memmem::find(body.as_bytes(), DECIMAL_PREFIX.as_bytes()).is_some() || cuts.prefixed_key;
    let starts: Vec<usize> =
        if taken { Vec::new() } else { memchr::memmem::find_iter(body.as_bytes(), b"dense<[").filter(|&i| !in_string_or_comment(source, i)).collect() };
    // Large hex literals (`dense<"0x...">`, how torch-mlir prints most weights) become resource
    // blobs as they are: MLIR's hex is the raw little-endian data a resource blob holds.
    let hex_starts: Vec<usize> =
        if taken { Vec::new() } else { memchr::memmem::find_iter(body.as_bytes(), b"dense<\"0x").filter(|&i| !in_string_or_comment(source, i)).collect() };
    if starts.is_empty() && hex_starts.is_empty() && !cuts.alone {
        return none();
    }
    // Literals are independent: up to four threads take them largest first (sized by the
    // distance to the next one), so that one huge weight does not leave the others idle.
    // Indices below `starts.len()` are decimal literals, the rest hex ones.
    let all: Vec<usize> = starts.iter().chain(&hex_starts).copied().collect();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    let extent = |k: usize| {
        let at = all[k];
        let next = sorted.partition_point(|&x| x <= at);
        sorted.get(next).copied().unwrap_or(source.len()) - at
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4).min(all.len().max(1));
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_cached_key(|&k| std::cmp::Reverse(extent(k)));
    let decimals = starts.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut found: Vec<(usize, usize, Data)> = std::thread::scope(|s| {
        let (order, next, all) = (&order, &next, &all);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut mine = Vec::new();
                    while let Some(&k) = order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let at = all[k];
                        let read = if k >= decimals { hex_literal(&source[at..], release) } else { decimal_literal(&source[at..]).map(|(len, v)| (len, Data::F32(v))) };
                        if let Some((len, data)) = read {
                            release(&source[at..at + len]);
                            mine.push((at, len, data));
                        }
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("literal reader does not panic")).collect()
    });
    found.sort_unstable_by_key(|&(at, _, _)| at);
    if found.is_empty() && !cuts.alone {
        return none();
    }
    let cut_bytes: usize = cuts.spans.iter().map(|(a, b)| b - a).sum();
    let mut text = String::with_capacity(source.len() - cut_bytes);
    let mut blobs = HashMap::new();
    let mut columns = Columns::default();
    let (mut done, mut line, mut line_start) = (0usize, 1u32, 0usize);
    for (at, len, blob) in found {
        if source.as_bytes()[at..at + len].contains(&b'\n') {
            continue;
        }
        let before = &source[done..at];
        let breaks = before.bytes().filter(|&b| b == b'\n').count();
        if breaks > 0 {
            line += breaks as u32;
            line_start = done + before.rfind('\n').expect("a break") + 1;
        }
        text.push_str(before);
        let key = format!("{DECIMAL_PREFIX}{}", blobs.len());
        let replacement = format!("dense_resource<{key}>");
        // Columns after the literal in the parsed text start at `from`; in the source they are
        // `len - replacement.len()` more (plus what earlier literals on the line removed).
        let shifts = columns.0.entry(line).or_default();
        let earlier = shifts.last().map_or(0, |&(_, d)| d);
        let from = (at - line_start) as u32 + 1 - earlier + replacement.len() as u32;
        shifts.push((from, earlier + (len - replacement.len()) as u32));
        text.push_str(&replacement);
        blobs.insert(key, blob);
        done = at + len;
    }
    if blobs.is_empty() && !cuts.alone {
        return none();
    }
    // The resource section, each blob cut to its header (within its line: no line moves, and
    // no op is located after a blob on its line).
    for &(from, to) in &cuts.spans {
        text.push_str(&source[done..from]);
        done = to;
    }
    text.push_str(&source[done..]);
    DecimalWeights { text: Some(text), blobs, columns }
}

/// The resource blobs' bytes MLIR need not see: per blob, the span of its hex after the
/// 4-byte alignment header (f16c reads the blobs from the source).
struct BlobCuts {
    /// Where the `{-#` metadata holding the resources starts (the source's length if none).
    section_start: usize,
    /// Byte spans of the source, in order.
    spans: Vec<(usize, usize)>,
    /// Whether the blobs are most of the text, so that cutting them pays for a copy of the rest
    /// even when no literal is read (else they are cut only where the text is copied anyway).
    alone: bool,
    /// Whether a resource's key contains the prefix of the keys literals are read under.
    prefixed_key: bool,
}

fn blob_cuts(source: &str, resources: &[(String, usize, &str)]) -> BlobCuts {
    const HEADER: usize = 8; // hex digits of the alignment header
    let spans: Vec<(usize, usize)> =
        resources.iter().filter(|(_, _, h)| h.len() > HEADER && h.as_bytes()[..HEADER].is_ascii()).map(|(_, offset, hex)| (offset + 2 + HEADER, offset + 2 + hex.len())).collect();
    let cut: usize = spans.iter().map(|(a, b)| b - a).sum();
    let section_start = resources.first().and_then(|&(_, offset, _)| source[..offset].rfind("{-#")).unwrap_or(source.len());
    let prefixed_key = resources.iter().any(|(key, _, _)| key.contains(DECIMAL_PREFIX));
    BlobCuts { section_start, spans, alone: cut >= source.len() / 2, prefixed_key }
}

/// Whether byte `at` of `source` lies in a string literal or a `//` comment (MLIR's strings
/// and comments end at the line's end).
fn in_string_or_comment(source: &str, at: usize) -> bool {
    let line = &source.as_bytes()[source[..at].rfind('\n').map_or(0, |n| n + 1)..at];
    let (mut quoted, mut escaped) = (false, false);
    for (k, &c) in line.iter().enumerate() {
        match c {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b'/' if !quoted && line.get(k + 1) == Some(&b'/') => return true,
            _ => {}
        }
    }
    quoted
}

/// `text` starts with `dense<[`: the length of `dense<[...]>` and its values when it is a
/// decimal f32 literal of at least [`FAST_DECIMAL_ELEMENTS`] elements whose nesting matches the
/// `tensor<...xf32>` type after it.
/// Hex literals with at least this many digits are read by [`read_decimal_weights`] (a splat
/// spelled in hex has one element's digits, at most 16: it stays with MLIR).
pub const FAST_HEX_DIGITS: usize = 1024;

/// A large hex literal at the start of `text` (`dense<"0x...">` followed by `: tensor<...xT>`
/// with `T` a float or an integer of 8, 16, 32 or 64 bits, the digits exactly its elements):
/// its length in `text` and its elements, decoded straight into the tensor's memory.
fn hex_literal(text: &str, release: &(dyn Fn(&str) + Sync)) -> Option<(usize, Data)> {
    let open = "dense<\"0x".len();
    let digits = text[open..].find('"')?;
    if digits < FAST_HEX_DIGITS {
        return None;
    }
    let hex = &text[open..open + digits];
    let len = text[open + digits..].strip_prefix("\">")?.len();
    let len = text.len() - len;
    let ty = skip_blank(&text[len..]).strip_prefix(':').map(skip_blank)?.strip_prefix("tensor<")?;
    let (dims, _) = ty.split_once('>')?;
    let (shape, element) = dims.rsplit_once('x')?;
    let dtype = DType::from_mlir(element).filter(|d| !matches!(d, DType::I1 | DType::I48))?;
    let n = shape.split('x').try_fold(1usize, |n, d| n.checked_mul(d.parse().ok()?))?;
    if n.checked_mul(2 * dtype.byte_size()) != Some(digits) {
        return None;
    }
    Some((len, decode_elements(hex, Data::zeroed(dtype, n), release)?))
}

/// Each ASCII byte's hex digit value, 0xff for a non-digit.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Decodes `hex` (an even number of hex digits) into `out` (half as many bytes); `None` on a
/// non-digit or an odd length. A table lookup per digit: the weights of a GPT-2 export are
/// half a gigabyte of bytes, a billion digits.
/// `data` (of a type [`Data::le_bytes_mut`] writes) filled from `hex`, its little-endian bytes
/// ([`decode_hex_releasing`]): a weight decoded straight into its tensor's memory.
fn decode_elements(hex: &str, mut data: Data, release: &(dyn Fn(&str) + Sync)) -> Option<Data> {
    decode_hex_releasing(hex, data.le_bytes_mut()?, release)?;
    Some(data)
}

/// [`decode_hex_into`] 16 MiB of hex at a time, each piece released once decoded
/// ([`parse_module_releasing`]): a big weight's hex (GPT-2's embedding: 300 MB) is never all in
/// memory beside its values.
fn decode_hex_releasing(hex: &str, out: &mut [u8], release: &(dyn Fn(&str) + Sync)) -> Option<()> {
    const PIECE: usize = 16 << 20;
    if hex.len() != 2 * out.len() {
        return None;
    }
    for (h, o) in hex.as_bytes().chunks(PIECE).zip(out.chunks_mut(PIECE / 2)) {
        // Chunks of an ASCII-or-not byte string: checked as digits by the decoder, and a
        // piece boundary inside a multi-byte character only fails the decode, as it should.
        let piece = std::str::from_utf8(h).ok()?;
        decode_hex_into(piece, o)?;
        release(piece);
    }
    Some(())
}

fn decode_hex_into(hex: &str, out: &mut [u8]) -> Option<()> {
    let h = hex.as_bytes();
    if h.len() != 2 * out.len() {
        return None;
    }
    let mut bad = 0u8;
    for (o, pair) in out.iter_mut().zip(h.chunks_exact(2)) {
        let (hi, lo) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        bad |= hi | lo;
        *o = (hi << 4) | (lo & 0x0f);
    }
    // A non-digit's 0xff sets the high bit, which no digit value (0..15) has.
    (bad & 0x80 == 0).then_some(())
}

fn decimal_literal(text: &str) -> Option<(usize, Vec<f32>)> {
    let open = "dense<".len();
    let (len, values, shape) = decimal_list(&text[open..])?;
    let end = open + len + 1;
    text[open + len..].strip_prefix('>')?;
    let ty = skip_blank(&text[end..]).strip_prefix(':').map(skip_blank)?.strip_prefix("tensor<")?;
    let (dims, rest) = ty.split_once('>')?;
    let dims: Vec<usize> = dims.strip_suffix("xf32")?.split('x').map(|d| d.parse().ok()).collect::<Option<_>>()?;
    let _ = rest;
    (dims == shape && values.len() >= FAST_DECIMAL_ELEMENTS).then_some((end, values))
}

/// One pass over a nested list of decimal float literals (`[[1.5, 2.0], [3.25, 4.0]]`): its
/// length in bytes, its values rounded as MLIR rounds them, and its shape; `None` unless every
/// value is MLIR's float literal and every list at a depth has the same length.
fn decimal_list(list: &str) -> Option<(usize, Vec<f32>, Vec<usize>)> {
    let b = list.as_bytes();
    let mut values = Vec::new();
    // Per open depth: elements so far; per depth ever seen: its length (first list decides).
    let mut counts: Vec<usize> = Vec::new();
    let mut shape: Vec<Option<usize>> = Vec::new();
    let mut leaf_depth = None;
    let (mut i, mut expect_value) = (0, true);
    while i < b.len() {
        match b[i] {
            b' ' | b'\n' | b'\r' | b'\t' => i += 1,
            b'[' => {
                if !expect_value || leaf_depth.is_some_and(|d| counts.len() >= d) {
                    return None;
                }
                counts.push(0);
                if shape.len() < counts.len() {
                    shape.push(None);
                }
                i += 1;
            }
            b']' => {
                let d = counts.len().checked_sub(1)?;
                let n = counts.pop()?;
                if expect_value || *shape[d].get_or_insert(n) != n {
                    return None;
                }
                i += 1;
                match counts.last_mut() {
                    Some(c) => *c += 1,
                    None => return Some((i, values, shape.into_iter().collect::<Option<Vec<_>>>()?)),
                }
                expect_value = false;
            }
            b',' => {
                if expect_value || counts.is_empty() {
                    return None;
                }
                expect_value = true;
                i += 1;
            }
            _ => {
                // Values only at the innermost depth, the same for every list.
                if !expect_value || counts.is_empty() || *leaf_depth.get_or_insert(counts.len()) != counts.len() {
                    return None;
                }
                let start = i;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'-' | b'+') {
                    i += 1;
                }
                let v = decimal_f32(&list[start..i])?;
                if v.is_infinite() {
                    return None;
                }
                values.push(v);
                *counts.last_mut()? += 1;
                expect_value = false;
            }
        }
    }
    None
}

/// Powers of ten that f64 holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

/// An optionally negated MLIR float literal ([`is_float_literal`]) rounded as MLIR rounds it:
/// to the nearest f64, then to the nearest f32. `None` when it is not such a literal. Most
/// weights printed by exporters (`-7.8112826e-2`, `0.0172747858`) have at most 19 digits and a
/// small exponent: their digits `m` and decimal exponent `e` then give the f64 as one exactly
/// rounded operation, `m · 10^e` or `m / 10^-e` with both operands exact (Clinger's fast
/// path); anything else goes through the standard library's parser, which rounds the same.
fn decimal_f32(token: &str) -> Option<f32> {
    let b = token.as_bytes();
    let negative = b.first() == Some(&b'-');
    let mut i = negative as usize;
    // The digits as an integer (wrapping past 19 significant digits, which then go the slow
    // way), how many there are from the first non-zero one, and the power of ten they scale by.
    let (mut m, mut digits, mut scale) = (0u64, 0usize, 0i32);
    let mut digit = |d: u8| {
        m = m.wrapping_mul(10).wrapping_add((d - b'0') as u64);
        digits += (digits > 0 || d != b'0') as usize;
    };
    let whole_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        digit(b[i]);
        i += 1;
    }
    let whole = i - whole_start;
    if whole == 0 || b.get(i) != Some(&b'.') {
        return None;
    }
    i += 1;
    while i < b.len() && b[i].is_ascii_digit() {
        digit(b[i]);
        scale -= 1;
        i += 1;
    }
    let mut exponent = 0i32;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let sign = match b.get(i) {
            Some(b'-') => {
                i += 1;
                -1
            }
            Some(b'+') => {
                i += 1;
                1
            }
            _ => 1,
        };
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            exponent = exponent.saturating_mul(10).saturating_add((b[i] - b'0') as i32);
            i += 1;
        }
        if i == start {
            return None;
        }
        exponent *= sign;
    }
    if i != b.len() {
        return None;
    }
    let e = scale.saturating_add(exponent);
    // `digits` counts digits from the first non-zero one: at most 19 fit u64 without wrapping.
    let v = if digits <= 19 && m < 1 << 53 && (-22..=22).contains(&e) {
        let p = EXACT_POWERS_OF_TEN[e.unsigned_abs() as usize];
        let x = if e < 0 { m as f64 / p } else { m as f64 * p };
        if negative { -x } else { x }
    } else {
        token.parse::<f64>().ok()?
    };
    let v = v as f32;
    (!v.is_infinite()).then_some(v)
}

/// MLIR's float literal: `[0-9]+ '.' [0-9]* ([eE] [-+]? [0-9]+)?` (an integer is an error in
/// a float constant, and so must stay MLIR's to report). The tests' oracle for
/// [`decimal_f32`].
#[cfg(test)]
fn is_float_literal(t: &str) -> bool {
    let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let whole = digits(t);
    let Some(rest) = t[whole..].strip_prefix('.') else { return false };
    let rest = &rest[digits(rest)..];
    if whole == 0 {
        return false;
    }
    match rest.strip_prefix(['e', 'E']) {
        None => rest.is_empty(),
        Some(e) => {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && digits(e) == e.len()
        }
    }
}

/// The `builtin` blobs of a file's `{-# dialect_resources: ... #-}` section: key, byte offset of
/// the blob's text in `source`, and its hex digits (after `0x`).
fn resource_hex<'s>(source: &'s str, release: &(dyn Fn(&str) + Sync)) -> Vec<(String, usize, &'s str)> {
    let mut blobs = Vec::new();
    let Some(start) = memchr::memmem::find(source.as_bytes(), b"dialect_resources") else { return blobs };
    // (The ops' text was just read through; it is read again, the part MLIR needs, later.)
    release(&source[..start]);
    let Some(section) = source[start..].find("builtin").map(|i| &source[start + i..]) else { return blobs };
    let Some(open) = section.find('{') else { return blobs };
    let mut rest = &section[open + 1..];
    while let Some(colon) = memchr::memchr(b':', rest.as_bytes()) {
        // (The section ends with `#-}`; searching the whole text for it first read every blob
        // an extra time.)
        if memchr::memmem::find(&rest.as_bytes()[..colon], b"#-}").is_some() {
            break;
        }
        let key = rest[..colon].trim().trim_start_matches(',').trim().trim_matches('"').to_string();
        let after = &rest[colon + 1..];
        let Some(q1) = memchr::memchr(b'"', after.as_bytes()) else { break };
        let Some(q2) = find_releasing(&after[q1 + 1..], b'"', release) else { break };
        let text = &after[q1 + 1..q1 + 1 + q2];
        if let Some(hex) = text.strip_prefix("0x") {
            blobs.push((key, text.as_ptr() as usize - source.as_ptr() as usize, hex));
            release(hex);
        }
        rest = &after[q1 + 1 + q2 + 1..];
        if rest.trim_start().starts_with('}') {
            break;
        }
    }
    blobs
}

/// The first `byte` (ASCII) in `text`, searched 16 MiB at a time, each piece searched in vain
/// released ([`parse_module_releasing`]): the end of a blob's hex.
fn find_releasing(text: &str, byte: u8, release: &(dyn Fn(&str) + Sync)) -> Option<usize> {
    const PIECE: usize = 16 << 20;
    let mut at = 0;
    while at < text.len() {
        let end = (at + PIECE).min(text.len());
        if let Some(i) = memchr::memchr(byte, &text.as_bytes()[at..end]) {
            return Some(at + i);
        }
        if let Some(piece) = text.get(at..end) {
            release(piece);
        }
        at = end;
    }
    None
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let mut out = vec![0u8; hex.len() / 2];
    decode_hex_into(hex, &mut out)?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The literals read from a source without a resource section.
    fn read_literals(source: &str) -> DecimalWeights {
        read_decimal_weights(source, &blob_cuts(source, &[]), &|_| {})
    }

    /// A function returning one `tosa.const` of `values` (decimal text) shaped `[n/16, 16]`,
    /// optionally followed on the same line by `tail`.
    fn const_source(values: &[String], tail: &str) -> String {
        let rows: Vec<String> = values.chunks(16).map(|r| format!("[{}]", r.join(", "))).collect();
        let ty = format!("tensor<{}x16xf32>", values.len() / 16);
        format!(
            "func.func @f() -> {ty} {{\n  %0 = \"tosa.const\"() <{{values = dense<[{}]> : {ty}}}> : () -> {ty}{tail}\n  return %0 : {ty}\n}}\n",
            rows.join(", ")
        )
    }

    fn constant(m: &Module) -> Tensor {
        let g = &m.functions[0];
        g.node_ids().find_map(|n| if let Op::Const(t) = g.op(n) { Some(t.clone()) } else { None }).expect("a constant")
    }

    #[test]
    fn decimal_values_round_as_the_standard_parser_does() {
        // The fast path's edges (19 and 20 digits, 2^53, exponents ±22 and ±23, leading and
        // trailing zeros, f32 overflow and underflow) and what is not a literal.
        let mut tokens: Vec<String> = [
            "0.0", "-0.0", "1.", "1.e5", "00.5", "0.0000000000000000000000001234", "1234567890123456789.0", "12345678901234567890.0",
            "9007199254740993.0", "9007199254740992.0", "1.0e22", "1.0e23", "1.0e-22", "1.0e-23", "123.456e-20", "3.4028235e38",
            "3.4028236e38", "18446744073709551621.", "1.0e39", "1.0e-46", "7.006492e-46", "0.1", "-0.30000001192092896", "1.0e+0", "1.0E-0",
            "1", "1e5", ".5", "-", "1.0e", "1.0e+", "1.0x", "--1.0", "+1.0", "1.0e999999999999", "1.0e-999999999999",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = format!("{}", x % 10u64.pow(1 + (i % 19) as u32));
            let point = (x >> 40) as usize % (digits.len() + 1);
            let exp = ((x >> 48) % 61) as i32 - 30;
            let (whole, frac) = digits.split_at(point.max(1).min(digits.len()));
            tokens.push(format!("{}{whole}.{frac}{}", if x & 1 == 1 { "-" } else { "" }, if i % 3 == 0 { String::new() } else { format!("e{exp}") }));
        }
        for t in &tokens {
            let oracle = is_float_literal(t.strip_prefix('-').unwrap_or(t)).then(|| t.parse::<f64>().ok()).flatten().map(|v| v as f32).filter(|v| !v.is_infinite());
            assert_eq!(decimal_f32(t).map(f32::to_bits), oracle.map(f32::to_bits), "{t}");
        }
    }

    #[test]
    fn decimal_weights_read_here_have_mlirs_bits() {
        // Long decimals, the double-rounding case (MLIR reads decimal → f64 → f32, giving 1.0
        // where one rounding would give the next f32), signed zeros, subnormals, the extremes,
        // integers, exponents in every spelling.
        let mut values: Vec<String> = [
            "1.00000005960464477539062500000000001", "-0.0", "0.0", "1.0e-45", "1.4e-45", "-7.0e-46", "3.40282347E+38", "-3.40282347e38",
            "7.", "-12.", "2.5E-3", "6.103515625e-05", "0.333333343", "1.e+2", "1.17549435E-38", "9.99999974E-6",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        while values.len() < 1024 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x) % 1e6;
            // MLIR's spelling: a '.' always, exponent as printed. Half of them as exporters
            // print f32 weights (the shortest digits, at most nine), which the fast path reads.
            let text = if values.len() % 2 == 0 { format!("{v:e}") } else { format!("{:e}", (v * 1e-7) as f32) };
            values.push(if !v.is_finite() { "1.5".into() } else if text.contains('.') { text } else { text.replacen('e', ".0e", 1) });
        }
        let fast = const_source(&values, "");
        let read = read_literals(&fast);
        assert!(read.text.is_some() && read.blobs.len() == 1, "the literal is read here");
        // The marker turns the fast path off, so MLIR reads the same literal itself.
        let slow = format!("{fast}// __f16c_decimal_\n");
        assert!(read_literals(&slow).text.is_none());
        let (a, b) = (constant(&parse_module(&fast, "f.mlir").unwrap()), constant(&parse_module(&slow, "f.mlir").unwrap()));
        assert_eq!(a.data().to_le_bytes(), b.data().to_le_bytes());
        assert_eq!(a.to_f32_vec()[0], 1.0, "double rounding, as MLIR does it");
    }

    #[test]
    fn decimal_weights_keep_every_location_and_error() {
        let values: Vec<String> = (0..256).map(|i| format!("{}.25", i)).collect();
        // An error after the literal on the same line is reported at the same column, with
        // and without the fast path.
        let bad = const_source(&values, " oops");
        let slow = format!("{bad}// __f16c_decimal_\n");
        assert!(read_literals(&slow).text.is_none());
        let fast_err = parse_module(&bad, "f.mlir").unwrap_err().to_string();
        let slow_err = parse_module(&slow, "f.mlir").unwrap_err().to_string();
        assert!(fast_err.contains("f.mlir:2:"), "{fast_err}");
        assert_eq!(fast_err, slow_err);
        // What the screen refuses after the literal (it reads the text MLIR will parse, with
        // the literal replaced): the source's column too.
        let bad = const_source(&values, " {a = array<index: 1>}");
        let slow = format!("{bad}// __f16c_decimal_
");
        let fast_err = parse_module(&bad, "f.mlir").unwrap_err().to_string();
        let column = bad.lines().nth(1).unwrap().find("array").unwrap() + 1;
        assert!(fast_err.contains(&format!("f.mlir:2:{column}")) && fast_err.contains("index"), "{fast_err}");
        assert_eq!(fast_err, parse_module(&slow, "f.mlir").unwrap_err().to_string());
        // Two literals on one line, then an op MLIR does not know: the same column too, and
        // the ops' locations are the source's.
        let lit = format!("dense<[{}]> : tensor<256xf32>", values.join(", "));
        let two = format!(
            "func.func @f() -> (tensor<256xf32>, tensor<256xf32>) {{\n  %0 = \"tosa.const\"() <{{values = {lit}}}> : () -> tensor<256xf32> %1 = \"tosa.const\"() <{{values = {lit}}}> : () -> tensor<256xf32> %2 = \"tosa.exp\"(%1) : (tensor<256xf32>) -> tensor<256xf32>\n  return %0, %2 : tensor<256xf32>, tensor<256xf32>\n}}\n"
        );
        assert_eq!(read_literals(&two).blobs.len(), 2);
        let slow = format!("{two}// __f16c_decimal_\n");
        let locations = |m: &Module| {
            let g = &m.functions[0];
            let mut l: Vec<String> = g.node_ids().map(|n| format!("{:?}", g.location(n))).collect();
            l.sort();
            l
        };
        let (a, b) = (parse_module(&two, "f.mlir").unwrap(), parse_module(&slow, "f.mlir").unwrap());
        assert_eq!(locations(&a), locations(&b));
        assert!(locations(&a).iter().any(|l| l.contains(&format!("2, {})", two.find("\"tosa.exp").unwrap() - two.find("  %0").unwrap() + 1))), "{:?}", locations(&a));
        let bad = two.replace("%2 = \"tosa.exp\"", "%2 = \"tosa.nope\"");
        let slow = format!("{bad}// __f16c_decimal_\n");
        assert_eq!(parse_module(&bad, "f.mlir").unwrap_err().to_string(), parse_module(&slow, "f.mlir").unwrap_err().to_string());
        // A literal whose nesting does not match its type, a non-decimal value and a short one
        // are left to MLIR.
        let mut wrong = values.clone();
        wrong.pop();
        wrong.push("0x7FC00000".into());
        assert!(read_literals(&const_source(&wrong, "")).text.is_none());
        for not_mlir in ["7", "1e5", ".5", "-.5", "1.e", "+1.0"] {
            let mut v = values.clone();
            v[3] = not_mlir.into();
            assert!(read_literals(&const_source(&v, "")).text.is_none(), "{not_mlir}");
        }
        let short = format!("dense<[{}]> : tensor<2x128xf32>", values.join(", "));
        assert!(read_literals(&short).text.is_none(), "one level of brackets for a rank-2 type");
        assert!(read_literals(&const_source(&values[..16], "")).text.is_none(), "16 elements: MLIR reads it");
        // Text inside strings and comments is never touched.
        let quoted = format!("// {}\n\"{}\"", &short.replace("2x128", "256"), short.replace("2x128", "256"));
        assert!(read_literals(&quoted).text.is_none());
    }

    #[test]
    fn scalar_attributes_in_every_spelling() {
        assert_eq!(parse_scalar_attr("0.000000e+00 : f32"), Some(0.0));
        assert_eq!(parse_scalar_attr("3.40282347E+38 : f32"), Some(3.40282347e38));
        assert_eq!(parse_scalar_attr("0x7F800000 : f32"), Some(f64::INFINITY));
        assert_eq!(parse_scalar_attr("0xFC00 : f16"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_scalar_attr("-6 : i8"), Some(-6.0));
    }

    /// 256 f32 values `i * step + offset` and their little-endian bytes in hex.
    fn ramp_hex(step: f32, offset: f32) -> (Vec<f32>, String) {
        let values: Vec<f32> = (0..256).map(|i| i as f32 * step + offset).collect();
        let hex = values.iter().flat_map(|v| v.to_le_bytes()).map(|b| format!("{b:02X}")).collect();
        (values, hex)
    }

    /// A model whose weights are resource blobs (most of its text): MLIR parses the text with
    /// the blobs cut to their headers, f16c reads the values from the original, and ops keep
    /// their locations.
    #[test]
    fn resource_blobs_are_read_from_the_text_not_from_mlir() {
        let (values, hex) = ramp_hex(0.25, -7.0);
        let src = format!(
            "func.func @f(%x: tensor<256xf32>) -> tensor<256xf32> {{\n  %c = \"tosa.const\"() <{{values = dense_resource<w> : tensor<256xf32>}}> : () -> tensor<256xf32>\n  %a = tosa.add %x, %c : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>\n  return %a : tensor<256xf32>\n}}\n{{-#\n  dialect_resources: {{\n    builtin: {{\n      w: \"0x04000000{hex}\"\n    }}\n  }}\n#-}}\n"
        );
        let resources = resource_hex(&src, &|_| {});
        let stubbed = read_decimal_weights(&src, &blob_cuts(&src, &resources), &|_| {}).text.expect("the blob is most of the text");
        assert!(stubbed.len() < 400 && stubbed.contains("w: \"0x04000000\""), "{stubbed}");
        let m = parse_module(&src, "w.mlir").unwrap();
        let g = &m.functions[0];
        let c = g.node_ids().find(|&id| matches!(g.op(id), Op::Const(_))).unwrap();
        let Op::Const(t) = g.op(c) else { unreachable!() };
        assert_eq!(t.to_f32_vec(), values);
        let add = g.node_ids().find(|&id| matches!(g.op(id), Op::Binary(_))).unwrap();
        assert_eq!(g.location(add).to_string(), "w.mlir:3:8");
        // A blob of the wrong size is still reported, by f16c.
        let short = src.replace(&hex[..16], "");
        let e = parse_module(&short, "w.mlir").unwrap_err().to_string();
        assert!(e.contains("resource 'w' holds 1016 bytes, but tensor<256xf32> needs 1024"), "{e}");
    }

    /// Large hex literals are read here (MLIR sees a resource reference): their values and
    /// location, and the literals MLIR still reads (a hex splat, an i1 list).
    #[test]
    fn large_hex_literals_are_read_here() {
        let (values, hex) = ramp_hex(0.5, -3.0);
        let src = format!(
            "func.func @f(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<4xi1>) {{\n  %c = \"tosa.const\"() <{{values = dense<\"0x{hex}\"> : tensor<256xf32>}}> : () -> tensor<256xf32> loc(\"w\")\n  %s = \"tosa.const\"() <{{values = dense<\"0x0000803F\"> : tensor<256xf32>}}> : () -> tensor<256xf32>\n  %b = \"tosa.const\"() <{{values = dense<[true, false, true, true]> : tensor<4xi1>}}> : () -> tensor<4xi1>\n  %zp = \"tosa.const\"() <{{values = dense<0> : tensor<1xi8>}}> : () -> tensor<1xi8>\n  %a = tosa.add %x, %c : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>\n  %m = tosa.mul %a, %s, %zp : (tensor<256xf32>, tensor<256xf32>, tensor<1xi8>) -> tensor<256xf32>\n  return %m, %b : tensor<256xf32>, tensor<4xi1>\n}}\n"
        );
        let read = read_literals(&src);
        let text = read.text.expect("the literal is read here");
        assert!(text.contains("dense_resource<__f16c_decimal_0>") && text.contains("dense<\"0x0000803F\">"), "{text}");
        let m = parse_module(&src, "h.mlir").unwrap();
        let g = &m.functions[0];
        let consts: Vec<Vec<f32>> = g.node_ids().filter_map(|id| if let Op::Const(t) = g.op(id) { Some(t.to_f32_vec()) } else { None }).collect();
        assert!(consts.contains(&values), "the hex weights");
        assert!(consts.contains(&vec![1.0; 256]), "the hex splat, read by MLIR");
        let c = g.node_ids().find(|&id| matches!(g.op(id), Op::Const(t) if t.len() == 256 && t.to_f32_vec() == values)).unwrap();
        assert_eq!(g.location(c).name.as_deref(), Some("w"));
    }

    /// Found by `f16c-fuzz` (a mutation of lit/Run/control-flow.mlir; `mlir-opt` crashes on it
    /// too): a reshape in one function verified against a `tosa.const_shape` that lost its
    /// `values` attribute in another. Refused before MLIR sees it, at the op.
    #[test]
    fn constants_without_values_are_refused_before_mlir_verifies_their_users() {
        let src = "func.func @branch(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<1xf32>) {\n  %z = \"tosa.const\"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>\n  %c1 = tosa.greater %s, %z : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>\n  %c = tosa.reshape %c1, %scalar : (tensor<1xi1>, !tosa.shape<0>) -> tensor<i1>\n  %r:2 = tosa.cond_if %c (%a = %x) : tensor<i1> (tensor<2xf32>) -> (tensor<2xf32>, tensor<1xf32>) {\n  }\n}\nfunc.func @loop(%x: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {\n  %s = tosa.reduce_sum %x {axis = 0 : i32} : (tensor<3xf32>) -> tensor<1xf32>\n  %scalar = tosa.const_shape {i16 = dense<> : tensor<0xindex>} : () -> !tosa.shape<0>\n  %zero = \"tosa.const\"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>\n  %r:2 = tosa.while_loop (%i = %zero, %acc = %x) : (tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {\n  } do {\n  }\n}\n";
        let e = parse_module(src, "m.mlir").unwrap_err().to_string();
        assert!(e.contains("m.mlir:10:13") && e.contains("'tosa.const_shape' without its 'values' attribute"), "{e}");
        let generic = "func.func @f() -> tensor<1xf32> {\n  %c = \"tosa.const\"() <{v = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>\n  return %c : tensor<1xf32>\n}\n";
        let e = parse_module(generic, "g.mlir").unwrap_err().to_string();
        assert!(e.contains("'tosa.const' without its 'values' attribute"), "{e}");
        // Named in a comment or a string, and the ops that have it: no error.
        let fine = "// tosa.const_shape : () -> x\nfunc.func @f() -> tensor<1xf32> {\n  %c = \"tosa.const\"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32> loc(\"tosa.const\")\n  return %c : tensor<1xf32>\n}\n";
        parse_module(fine, "ok.mlir").unwrap();
    }

    #[test]
    fn resource_section_is_read() {
        let src = "module {}\n{-#\n  dialect_resources: {\n    builtin: {\n      a.b_1: \"0x040000000000803F\",\n      c: \"0x0400000001\"\n    }\n  }\n#-}\n";
        let resources = resource_hex(src, &|_| {});
        let b = Blobs { decimal: Default::default(), hex: resources.iter().map(|(k, _, h)| (k.as_str(), *h)).collect(), release: &|_| {} };
        assert_eq!(&*b.get("a.b_1").unwrap(), [4, 0, 0, 0, 0, 0, 0x80, 0x3f]);
        assert_eq!(&*b.get("c").unwrap(), [4, 0, 0, 0, 1]);
        assert!(b.get("d").unwrap_err().contains("resource 'd' is not in the file's dialect_resources section"));
    }
}
