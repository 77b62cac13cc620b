//! Graph IR → MLIR text.
//!
//! The module is rebuilt as real MLIR operations through melior, verified by MLIR, and printed
//! by MLIR's own printer, so the text is exactly what `mlir-opt` would print for it (custom op
//! forms, `tosa.const` in generic form) and `mlir-opt` accepts it. Import of the printed text
//! gives back the same graph.

use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::graph::{Graph, Module, NodeId};
use crate::mlir::{to_mlir_location, MlirSession};
use crate::op::{BinaryOp, Op, PoolAttrs};
use crate::tensor::Tensor;
use crate::types::{DType, ValueType};
use melior::ir::attribute::{StringAttribute, TypeAttribute};
use melior::ir::{Attribute, BlockLike, TypeLike};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationPrintingFlags};
use melior::ir::r#type::FunctionType;
use melior::ir::{Block, Identifier, Module as MlirModule, Region, RegionLike, Type, Value};
use melior::Context;
use std::collections::HashMap;

/// How to print.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintOptions {
    /// Print `loc(...)` after every op (`--mlir-print-debuginfo`).
    pub debug_info: bool,
    /// Print every op in generic form (`--mlir-print-op-generic`).
    pub generic: bool,
    /// Elide constants with more elements than this (`--mlir-elide-elementsattrs-if-larger`).
    pub elide_elements_larger_than: Option<usize>,
}

/// Prints a module as MLIR text. Fails (with the verifier's diagnostics) only if the graph does
/// not make valid MLIR, which the graph verifier is meant to rule out.
pub fn print_module(module: &Module, options: PrintOptions) -> Result<String, Diagnostics> {
    let session = MlirSession::new();
    let ctx = &session.context;
    let m = MlirModule::new(melior::ir::Location::unknown(ctx));
    for g in &module.functions {
        let f = build_function(ctx, g).map_err(|d| Diagnostics(vec![d]))?;
        m.body().append_operation(f);
    }
    let op = m.as_operation();
    if !op.verify() {
        let mut d = session.take_diagnostics();
        d.0.push(Diagnostic::error(Location::unknown(), "internal error: the exported MLIR does not verify (please report this f16c bug)"));
        return Err(d);
    }
    let mut flags = OperationPrintingFlags::new().enable_debug_info(options.debug_info, false);
    if options.generic {
        flags = flags.print_generic_operation_form();
    }
    if let Some(limit) = options.elide_elements_larger_than {
        flags = flags.elide_large_elements_attributes(limit);
    }
    let text = op.to_string_with_flags(flags).map_err(|e| Diagnostics::single(Diagnostic::error(Location::unknown(), e.to_string())))?;
    Ok(text.trim_end().to_string() + "\n")
}

fn parse_type<'c>(ctx: &'c Context, ty: &ValueType) -> Result<Type<'c>, Diagnostic> {
    Type::parse(ctx, &ty.to_string()).ok_or_else(|| Diagnostic::error(Location::unknown(), format!("internal error: MLIR rejects type {ty}")))
}

fn parse_attr<'c>(ctx: &'c Context, text: &str) -> Result<Attribute<'c>, Diagnostic> {
    Attribute::parse(ctx, text).ok_or_else(|| Diagnostic::error(Location::unknown(), format!("cannot build attribute `{text}`")))
}

fn build_function<'c>(ctx: &'c Context, g: &Graph) -> Result<melior::ir::Operation<'c>, Diagnostic> {
    let block = build_block(ctx, g, g.inputs().len(), &[], "func.return")?;
    let in_types: Vec<Type> = g.inputs().iter().map(|&i| parse_type(ctx, g.ty(i))).collect::<Result<_, _>>()?;
    let out_types: Vec<Type> = g.outputs().iter().map(|&o| parse_type(ctx, g.ty(o))).collect::<Result<_, _>>()?;
    let region = Region::new();
    region.append_block(block);
    Ok(melior::dialect::func::func(
        ctx,
        StringAttribute::new(ctx, &g.name),
        TypeAttribute::new(FunctionType::new(ctx, &in_types, &out_types).into()),
        region,
        &[],
        to_mlir_location(ctx, &g.location),
    ))
}

/// The ops of `g` as a block whose arguments are `g`'s first `args` inputs (its other inputs are
/// the enclosing block's `captures`, which a region uses directly), ended by `terminator`
/// (`func.return`, or `tosa.yield` in a region) of `g`'s outputs.
fn build_block<'c>(ctx: &'c Context, g: &Graph, args: usize, captures: &[Value<'c, '_>], terminator: &str) -> Result<Block<'c>, Diagnostic> {
    let order = g
        .topo_order()
        .ok_or_else(|| Diagnostic::error(g.location.clone(), format!("function '@{}' has a cycle", g.name)))?;
    let arg_types: Vec<(Type, melior::ir::Location)> = g.inputs()[..args]
        .iter()
        .map(|&i| Ok((parse_type(ctx, g.ty(i))?, to_mlir_location(ctx, &g.location(i)))))
        .collect::<Result<_, Diagnostic>>()?;
    let block = Block::new(&arg_types);
    let mut values: HashMap<NodeId, Value> = HashMap::new();
    for (k, &i) in g.inputs().iter().enumerate() {
        let v = if k < args { block.argument(k).expect("argument exists").into() } else { captures[k - args] };
        values.insert(i, v);
    }
    // The results of each control-flow op, which `Op::Result` nodes name.
    let mut results: HashMap<NodeId, Vec<Value>> = HashMap::new();
    for &id in &order {
        let node = g.node(id);
        match &node.op {
            Op::Arg(_) => continue,
            Op::Result(i) => {
                let from = g.operands(id)[0];
                values.insert(id, results[&from][*i]);
                continue;
            }
            _ => {}
        }
        let mut operands: Vec<Value> = g.operands(id).iter().map(|o| values[o]).collect();
        let mut attrs = Vec::new();
        for (key, text) in op_attributes(ctx, &node.op, &node.ty)? {
            attrs.push((Identifier::new(ctx, key), text));
        }
        for (key, text) in &node.attrs {
            attrs.push((Identifier::new(ctx, key), parse_attr(ctx, text)?));
        }
        let result_types: Vec<Type> = match &node.ty {
            ValueType::Results(ts) => ts.iter().map(|t| parse_type(ctx, &ValueType::Tensor(t.clone()))).collect::<Result<_, _>>()?,
            ty => vec![parse_type(ctx, ty)?],
        };
        let mut regions = Vec::new();
        if let Some(layout) = node.op.control_layout() {
            // MLIR's operands are the condition and the inputs; captures stay implicit.
            for (r, caps) in node.op.regions().into_iter().zip(layout.captures) {
                let block = build_block(ctx, &r.graph, r.args, &operands[caps], "tosa.yield")?;
                let region = Region::new();
                region.append_block(block);
                regions.push(region);
            }
            operands.truncate(layout.inputs.end);
        }
        let builder = OperationBuilder::new(node.op.mlir_name(), to_mlir_location(ctx, &g.location(id)))
            .add_operands(&operands)
            .add_results(&result_types)
            .add_attributes(&attrs);
        let builder = match <[Region; 2]>::try_from(regions) {
            Ok(two) => builder.add_regions(two),
            Err(_) => builder,
        };
        let op = builder
            .build()
            .map_err(|e| Diagnostic::error(g.location(id), format!("internal error building {}: {e}", node.op.mlir_name())))?;
        let op = block.append_operation(op);
        if node.op.is_control_flow() {
            results.insert(id, (0..result_types.len()).map(|i| op.result(i).expect("declared result").into()).collect());
        } else {
            values.insert(id, op.result(0).expect("one result").into());
        }
    }
    let outputs: Vec<Value> = g.outputs().iter().map(|o| values[o]).collect();
    let ret = OperationBuilder::new(terminator, to_mlir_location(ctx, &g.location))
        .add_operands(&outputs)
        .build()
        .map_err(|e| Diagnostic::error(g.location.clone(), e.to_string()))?;
    block.append_operation(ret);
    Ok(block)
}

fn ints(v: &[usize], width: u32) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    if items.is_empty() {
        format!("array<i{width}>")
    } else {
        format!("array<i{width}: {}>", items.join(", "))
    }
}

/// The exact bits of `value` in `dtype`, as MLIR's hex scalar attribute syntax.
fn scalar_attr(value: f64, dtype: DType) -> String {
    match dtype {
        DType::F32 => format!("0x{:08X} : f32", (value as f32).to_bits()),
        DType::F16 => format!("0x{:04X} : f16", half::f16::from_f64(value).to_bits()),
        DType::BF16 => format!("0x{:04X} : bf16", half::bf16::from_f64(value).to_bits()),
        DType::F64 => format!("0x{:016X} : f64", value.to_bits()),
        d => format!("{} : {d}", value as i64),
    }
}

fn op_attributes<'c>(ctx: &'c Context, op: &Op, ty: &ValueType) -> Result<Vec<(&'static str, Attribute<'c>)>, Diagnostic> {
    let a = |t: String| parse_attr(ctx, &t);
    let pool = |p: &PoolAttrs| -> Result<Vec<(&'static str, Attribute<'c>)>, Diagnostic> {
        let mut v = vec![("kernel", a(ints(&p.kernel, 64))?), ("stride", a(ints(&p.stride, 64))?), ("pad", a(ints(&p.pad, 64))?)];
        if let Some(acc) = p.acc {
            v.push(("acc_type", a(acc.to_string())?));
        }
        Ok(v)
    };
    Ok(match op {
        Op::Const(t) => vec![("values", dense_attr(ctx, t)?)],
        Op::ConstShape(s) => {
            let items: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            let text = if s.is_empty() {
                "dense<> : tensor<0xindex>".to_string()
            } else {
                format!("dense<[{}]> : tensor<{}xindex>", items.join(", "), s.len())
            };
            vec![("values", a(text)?)]
        }
        Op::Conv2d(c) | Op::DepthwiseConv2d(c) => vec![
            ("pad", a(ints(&c.pad, 64))?),
            ("stride", a(ints(&c.stride, 64))?),
            ("dilation", a(ints(&c.dilation, 64))?),
            ("acc_type", a(c.acc.to_string())?),
        ],
        Op::Conv3d(c) => vec![
            ("pad", a(ints(&c.pad, 64))?),
            ("stride", a(ints(&c.stride, 64))?),
            ("dilation", a(ints(&c.dilation, 64))?),
            ("acc_type", a(c.acc.to_string())?),
        ],
        Op::TransposeConv2d(c) => vec![
            ("out_pad", a(ints(&c.out_pad, 64))?),
            ("stride", a(ints(&c.stride, 64))?),
            ("acc_type", a(c.acc.to_string())?),
        ],
        Op::Clamp { min, max } => {
            let dtype = ty.as_tensor().map_or(DType::F32, |t| t.dtype);
            vec![("min_val", a(scalar_attr(*min, dtype))?), ("max_val", a(scalar_attr(*max, dtype))?)]
        }
        Op::Reduce { axis, .. } | Op::ArgMax { axis } | Op::Concat { axis } | Op::Reverse { axis } => {
            vec![("axis", a(format!("{axis} : i32"))?)]
        }
        Op::Binary(BinaryOp::ShiftRightArith { round }) => vec![("round", a(round.to_string())?)],
        Op::Rescale(r) => vec![
            ("scale32", a(r.scale32.to_string())?),
            ("rounding_mode", a(format!("#tosa.rounding_mode<{}>", r.rounding.name()))?),
            ("per_channel", a(r.per_channel.to_string())?),
            ("input_unsigned", a(r.input_unsigned.to_string())?),
            ("output_unsigned", a(r.output_unsigned.to_string())?),
        ],
        Op::Resize { bilinear } => {
            vec![("mode", a(format!("#tosa.resize_mode<{}>", if *bilinear { "BILINEAR" } else { "NEAREST_NEIGHBOR" }))?)]
        }
        Op::MaxPool2d(p) | Op::AvgPool2d(p) => pool(p)?,
        Op::Transpose { perms } => vec![("perms", a(ints(perms, 32))?)],
        Op::Arg(_)
        | Op::MatMul
        | Op::Unary(_)
        | Op::Binary(_)
        | Op::Reshape
        | Op::Slice
        | Op::Pad
        | Op::Tile
        | Op::Cast
        | Op::Select
        | Op::Gather
        | Op::Identity
        | Op::Table
        | Op::Scatter
        | Op::CondIf { .. }
        | Op::WhileLoop { .. }
        | Op::Result(_) => vec![],
    })
}

/// A dense elements attribute holding exactly the tensor's bits.
fn dense_attr<'c>(ctx: &'c Context, t: &Tensor) -> Result<Attribute<'c>, Diagnostic> {
    let ty = parse_type(ctx, &ValueType::Tensor(t.ty()))?;
    let n = t.len();
    // SAFETY: the buffers live across the calls, and their sizes match the type (one element for
    // a splat, all of them otherwise), which is what MLIR's raw-buffer constructor accepts.
    let raw = unsafe {
        if let crate::tensor::Data::I1(v) = t.data() {
            let ints: Vec<i32> = v.iter().map(|&b| b as i32).collect();
            mlir_sys::mlirDenseElementsAttrBoolGet(ty.to_raw(), n as isize, ints.as_ptr())
        } else {
            let mut bytes = t.data().to_mlir_bytes();
            if n > 1 && t.is_splat() {
                bytes.truncate(crate::tensor::Data::mlir_element_size(t.dtype()));
            }
            mlir_sys::mlirDenseElementsAttrRawBufferGet(ty.to_raw(), bytes.len(), bytes.as_ptr() as *const _)
        }
    };
    if raw.ptr.is_null() {
        return Err(Diagnostic::error(Location::unknown(), format!("internal error: cannot build a constant of type {}", t.ty())));
    }
    // SAFETY: non-null attribute owned by the context.
    Ok(unsafe { Attribute::from_raw(raw) })
}
