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
use crate::op::{BinaryOp, ConvAttrs, Op, PoolAttrs, ReduceKind, RescaleAttrs, Rounding, TransposeConvAttrs, UnaryOp};
use crate::tensor::{Data, Tensor};
use crate::types::{DType, TensorType, TypeParseError, ValueType};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, AttributeLike, BlockLike, RegionLike, ValueLike};
use melior::StringRef;
use std::collections::HashMap;

/// Parses, verifies and imports MLIR text. `filename` is used in locations and diagnostics.
pub fn parse_module(source: &str, filename: &str) -> Result<Module, Diagnostics> {
    let resources = resource_hex(source);
    screen(source, filename, &resources)?;
    let session = MlirSession::new();
    *session.filename.borrow_mut() = filename.to_string();
    let ctx = &session.context;
    // MLIR's module parser wraps top-level functions in an implicit `builtin.module`, as
    // mlir-opt does. SAFETY: the string ref points into a live &str for the call.
    let raw = unsafe { mlir_sys::mlirModuleCreateParse(ctx.to_raw(), StringRef::new(source).to_raw()) };
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
    let blobs = resource_blobs(resources);
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
fn screen(source: &str, filename: &str, resources: &[(String, usize, &str)]) -> Result<(), Diagnostics> {
    let at = |offset: usize| {
        let before = &source[..offset];
        let line = before.matches('\n').count() + 1;
        let col = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        Location::file(filename, line as u32, col as u32)
    };
    let (mut depth, mut in_string, mut escaped, mut in_comment) = (0usize, false, false, false);
    let bytes = source.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
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
    }
    for &(ref key, offset, hex) in resources {
        let alignment = hex.get(..8).and_then(|h| u32::from_str_radix(h, 16).ok()).map(u32::swap_bytes);
        match alignment {
            Some(a) if a.is_power_of_two() => {}
            Some(a) => {
                return Err(Diagnostic::error(at(offset), format!("resource '{key}' declares alignment {a}: the first four bytes of a dense_resource blob are its alignment, a power of two")).into());
            }
            None => return Err(Diagnostic::error(at(offset), format!("resource '{key}' is not hex data with a four-byte alignment header")).into()),
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

struct Importer<'b> {
    blobs: &'b HashMap<String, Vec<u8>>,
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
        let mut values: HashMap<usize, NodeId> = HashMap::new();
        let errors_before = self.errors.len();
        for i in 0..block.argument_count() {
            let arg = block.argument(i).expect("index below argument_count");
            let ty_text = arg.r#type().to_string();
            match ValueType::parse(&ty_text) {
                Ok(ValueType::Tensor(t)) => {
                    let id = g.add_input(t, from_mlir_location(arg.location(), self.file));
                    values.insert(arg.to_raw().ptr as usize, id);
                }
                Ok(ValueType::Shape(_)) => {
                    self.error(&func, format!("argument #{i} of '@{name}': function arguments must be ranked tensors, not '{ty_text}'"));
                }
                Err(e) => {
                    let why = type_error_text(&ty_text, Some(e));
                    self.error(&func, format!("argument #{i} of '@{name}': {why}"));
                }
            }
        }
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let name = op_name(&op);
            if name == "func.return" {
                for v in op.operands() {
                    if let Some(&id) = values.get(&(v.to_raw().ptr as usize)) {
                        g.add_output(id);
                    }
                }
                continue;
            }
            if let Some((id, raw)) = self.op(&mut g, &op, &name, &values) {
                values.insert(raw, id);
            }
        }
        (self.errors.len() == errors_before).then_some(g)
    }

    /// Imports one op; `None` (after reporting) if it cannot be represented.
    fn op(&mut self, g: &mut Graph, op: &OperationRef, name: &str, values: &HashMap<usize, NodeId>) -> Option<(NodeId, usize)> {
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
            match values.get(&(v.to_raw().ptr as usize)) {
                Some(&id) => operands.push(id),
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
        "tosa.conv2d" | "tosa.depthwise_conv2d" => &["pad", "stride", "dilation", "acc_type", "local_bound"],
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
            format!("element type '{el}' in '{text}' is not supported by f16c (f32, f16, bf16, f64, i1, i8, i32, i64)")
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
fn dense_to_tensor(attr: Attribute, ty: &TensorType, blobs: &HashMap<String, Vec<u8>>) -> Result<Tensor, String> {
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
                let len = if splat { ty.dtype.byte_size() } else { n * ty.dtype.byte_size() };
                let ptr = mlir_sys::mlirDenseElementsAttrGetRawData(raw) as *const u8;
                let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(ptr, len) };
                let one = Data::from_le_bytes(ty.dtype, bytes).ok_or("malformed raw element data")?;
                if splat { one.gather(&vec![0; n]) } else { one }
            }
        } else if mlir_sys::mlirAttributeIsADenseResourceElements(raw) {
            let text = attr.to_string();
            let key = text
                .strip_prefix("dense_resource<")
                .and_then(|r| r.split_once('>'))
                .map(|(k, _)| k.to_string())
                .ok_or_else(|| format!("cannot read the resource key of {text}"))?;
            let blob = blobs
                .get(&key)
                .ok_or_else(|| format!("resource '{key}' is not in the file's dialect_resources section"))?;
            let payload = blob.get(4..).ok_or_else(|| format!("resource '{key}' is shorter than its alignment header"))?;
            let data = Data::from_le_bytes(ty.dtype, payload)
                .filter(|d| d.len() == n)
                .ok_or_else(|| format!("resource '{key}' holds {} bytes, but {ty} needs {}", payload.len(), ty.byte_size()))?;
            data
        } else {
            return Err(format!("constant attribute '{}' is not supported by f16c", attr));
        }
    };
    Tensor::new(ty.shape.clone(), data).map_err(|e| e.to_string())
}

/// The bytes of each resource blob ([`resource_hex`]), by key.
fn resource_blobs(resources: Vec<(String, usize, &str)>) -> HashMap<String, Vec<u8>> {
    resources.into_iter().filter_map(|(key, _, hex)| Some((key, decode_hex(hex)?))).collect()
}

/// The `builtin` blobs of a file's `{-# dialect_resources: ... #-}` section: key, byte offset of
/// the blob's text in `source`, and its hex digits (after `0x`).
fn resource_hex(source: &str) -> Vec<(String, usize, &str)> {
    let mut blobs = Vec::new();
    let Some(start) = source.find("dialect_resources") else { return blobs };
    let Some(section) = source[start..].find("builtin").map(|i| &source[start + i..]) else { return blobs };
    let section = section.split("#-}").next().unwrap_or(section);
    let Some(open) = section.find('{') else { return blobs };
    let mut rest = &section[open + 1..];
    while let Some(colon) = rest.find(':') {
        let key = rest[..colon].trim().trim_start_matches(',').trim().trim_matches('"').to_string();
        let after = &rest[colon + 1..];
        let Some(q1) = after.find('"') else { break };
        let Some(q2) = after[q1 + 1..].find('"') else { break };
        let text = &after[q1 + 1..q1 + 1 + q2];
        if let Some(hex) = text.strip_prefix("0x") {
            blobs.push((key, text.as_ptr() as usize - source.as_ptr() as usize, hex));
        }
        rest = &after[q1 + 1 + q2 + 1..];
        if rest.trim_start().starts_with('}') {
            break;
        }
    }
    blobs
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    // On bytes: a non-ASCII character in the blob must not be sliced through.
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_attributes_in_every_spelling() {
        assert_eq!(parse_scalar_attr("0.000000e+00 : f32"), Some(0.0));
        assert_eq!(parse_scalar_attr("3.40282347E+38 : f32"), Some(3.40282347e38));
        assert_eq!(parse_scalar_attr("0x7F800000 : f32"), Some(f64::INFINITY));
        assert_eq!(parse_scalar_attr("0xFC00 : f16"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_scalar_attr("-6 : i8"), Some(-6.0));
    }

    #[test]
    fn resource_section_is_read() {
        let src = "module {}\n{-#\n  dialect_resources: {\n    builtin: {\n      a.b_1: \"0x040000000000803F\",\n      c: \"0x0400000001\"\n    }\n  }\n#-}\n";
        let b = resource_blobs(resource_hex(src));
        assert_eq!(b["a.b_1"], vec![4, 0, 0, 0, 0, 0, 0x80, 0x3f]);
        assert_eq!(b["c"], vec![4, 0, 0, 0, 1]);
    }
}
