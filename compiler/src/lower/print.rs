//! The text form of a lowered [`Program`] (`f16c compile --emit=kernels`): every kernel with its
//! family, shapes, element types, fused ops and buffers, then the buffer plan. `lit/Lower/`
//! pins the lowering's fusion decisions against it, so that every backend shares a layer whose
//! behaviour is checked by text.
//!
//! ```text
//! program @forward: 3 kernels, 9 buffers
//!   input  b0 tensor<1x16xf32>
//!   output b8 tensor<1x4xf32>
//! k0_matmul: contraction matmul batch=1 m=1 n=32 k=16 acc=f32 result=f16 @ net.mlir:12:5 (3 ops)
//!   a  b3 tensor<1x1x16xf16> row-stride=16
//!   b  b1 tensor<1x16x32xf16> row-major constant
//!   epilogue v2 = add(v0, v1) : f16; v3 = clamp[0, 6](v2) : f16
//!     in1 b2 f16 row-strides=[0] col-stride=1
//!   out b5 tensor<1x1x32xf16>
//! plan: arena 192 bytes (liveness lower bound 192)
//!   b5 @0 128 bytes
//! ```

use super::*;
use std::fmt::{self, Display, Formatter, Write};

fn expr_text(e: &Expr) -> String {
    let mut s = String::new();
    for (i, op) in e.ops.iter().enumerate() {
        if i > 0 {
            s.push_str("; ");
        }
        let args: Vec<String> = op.args.iter().map(|a| format!("v{a}")).collect();
        let _ = write!(s, "v{} = {}({}) : {}", e.inputs.len() + i, ew_name(op), args.join(", "), op.dtype);
    }
    s
}

fn ew_name(op: &EwOp) -> String {
    match op.kind {
        EwKind::Unary(u) => format!("{u:?}").to_lowercase(),
        EwKind::Binary(b) => format!("{b:?}").to_lowercase(),
        EwKind::Clamp { min, max } => format!("clamp[{min:?}, {max:?}]"),
        EwKind::Select => "select".into(),
        EwKind::Cast => "cast".into(),
        EwKind::Rescale(r) => format!("rescale[{}{}]", r.rounding.name().to_lowercase(), if r.per_channel { ", per-channel" } else { "" }),
    }
}

fn operand(o: &Operand) -> String {
    format!("b{} {}", o.buffer.0, o.ty)
}

impl Kernel {
    /// The first line of its description without its name and location: what it computes
    /// (`contraction matmul batch=1 m=8 n=8 k=8 acc=f32 result=f32 (3 ops)`).
    pub fn summary(&self) -> String {
        let text = self.to_string();
        let first = text.lines().next().unwrap_or_default();
        let body = first.strip_prefix(&format!("{}: ", self.name)).unwrap_or(first);
        let at = format!(" @ {} ", self.location);
        match body.split_once(&at) {
            Some((what, ops)) => format!("{what} {ops}"),
            None => body.to_string(),
        }
    }
}

impl Display for Kernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let at = format!("@ {} ({} ops)", self.location, self.nodes.len());
        match &self.kind {
            KernelKind::Contraction(c) => {
                let (kind, geo) = match &c.kind {
                    ContractionKind::MatMul => ("matmul", None),
                    ContractionKind::Conv(g) => ("conv2d", Some(g)),
                    ContractionKind::Depthwise(g) => ("depthwise_conv2d", Some(g)),
                    ContractionKind::TransposeConv(g) => ("transpose_conv2d", Some(g)),
                };
                writeln!(f, "{}: contraction {kind} batch={} m={} n={} k={} acc={} result={} {at}", self.name, c.batch, c.m, c.n, c.k, c.acc, c.result)?;
                if let Some(g) = geo {
                    writeln!(
                        f,
                        "  geometry n={} in={}x{}x{} out={}x{}x{} kernel={}x{} stride={:?} dilation={:?} pad={:?}",
                        g.n, g.ih, g.iw, g.ic, g.oh, g.ow, g.oc, g.kh, g.kw, g.stride, g.dilation, g.pad
                    )?;
                }
                let view = |v: Option<super::View>| v.map_or(String::new(), |v| format!(" view +{} strides=[{}, {}, {}]", v.offset, v.batch, v.row, v.col));
                let stride = match (c.views.a, c.a_row_stride) {
                    (Some(v), _) => view(Some(v)),
                    (None, s) => s.map_or(" implicit-im2col".to_string(), |s| format!(" row-stride={s}")),
                };
                writeln!(f, "  a  {}{stride}", operand(&c.a))?;
                if !c.a_parts.is_empty() {
                    writeln!(f, "     the concatenation of {} along the channels", c.a_parts.iter().map(operand).collect::<Vec<_>>().join(", "))?;
                }
                let layout = if c.b_layout == MatrixLayout::RowMajor { "row-major" } else { "col-major" };
                writeln!(f, "  b  {} {layout}{}{}", operand(&c.b), if c.b_constant { " constant" } else { "" }, view(c.views.b))?;
                if let Some(b) = &c.bias {
                    writeln!(f, "  bias {}", operand(b))?;
                }
                if let Some(e) = &c.epilogue {
                    writeln!(f, "  epilogue {}", expr_text(&e.expr))?;
                    for (i, input) in e.inputs.iter().enumerate() {
                        writeln!(f, "    in{} b{} {} row-strides={:?} col-stride={}", i + 1, input.buffer.0, input.dtype, input.row_strides, input.col_stride)?;
                    }
                }
                writeln!(f, "  out {}{}", operand(&c.out), view(c.views.out))
            }
            KernelKind::Elementwise(e) => {
                writeln!(f, "{}: elementwise shape={:?} {at}", self.name, e.shape)?;
                for (i, input) in e.inputs.iter().enumerate() {
                    write!(f, "  in{i} b{} {} strides={:?}", input.buffer.0, input.dtype, input.strides)?;
                    match &input.rows {
                        Some(l) => writeln!(f, " rows of {} picked by b{} (a gather folded in)", l.len, l.indices.0)?,
                        None => writeln!(f)?,
                    }
                }
                writeln!(f, "  {}", expr_text(&e.expr))?;
                writeln!(f, "  out b{} {}", e.output.0, e.expr.result_dtype())
            }
            KernelKind::Reduction(r) => {
                let kind = r.kind.map_or("argmax".to_string(), |k| format!("reduce_{k:?}").to_lowercase());
                writeln!(f, "{}: reduction {kind} outer={} len={} inner={} {at}", self.name, r.outer, r.len, r.inner)?;
                writeln!(f, "  in  {}", operand(&r.input))?;
                writeln!(f, "  out {}", operand(&r.output))
            }
            KernelKind::Pool(p) => {
                let kind = if p.avg { "avg" } else { "max" };
                writeln!(f, "{}: pool {kind} kernel={:?} stride={:?} pad={:?} {at}", self.name, p.kernel, p.stride, p.pad)?;
                writeln!(f, "  in  {}", operand(&p.input))?;
                writeln!(f, "  out {}", operand(&p.output))
            }
            KernelKind::Copy(c) => {
                let fill = c.fill.map_or(String::new(), |b| format!(" fill=b{}", b.0));
                let convert = if c.converts() { format!(" from {}", c.source) } else { String::new() };
                writeln!(f, "{}: copy {} moves{convert}{fill} {at}", self.name, c.moves.len())?;
                for m in &c.moves {
                    writeln!(
                        f,
                        "  move b{}+{} strides={:?} -> +{} strides={:?} shape={:?}",
                        m.src.0, m.src_offset, m.src_strides, m.dst_offset, m.dst_strides, m.shape
                    )?;
                }
                writeln!(f, "  out {}", operand(&c.output))
            }
            KernelKind::Gather(g) => {
                writeln!(f, "{}: {} {at}", self.name, if g.scatter.is_some() { "scatter" } else { "gather" })?;
                writeln!(f, "  values  {}", operand(&g.values))?;
                match &g.index_sum {
                    Some(sum) => {
                        writeln!(f, "  indices {} summed as read over shape={:?}", g.indices.ty, sum.shape)?;
                        for (i, p) in sum.parts.iter().enumerate() {
                            writeln!(f, "    part{i} b{} {} strides={:?}", p.buffer.0, p.dtype, p.strides)?;
                        }
                    }
                    None => writeln!(f, "  indices {}", operand(&g.indices))?,
                }
                if let Some(input) = &g.scatter {
                    writeln!(f, "  input   {}", operand(input))?;
                }
                writeln!(f, "  out {}", operand(&g.output))
            }
            KernelKind::Rows(r) => {
                writeln!(f, "{}: rows rows={} len={} stages={} {at}", self.name, r.rows, r.len, r.stages.len())?;
                for (i, input) in r.inputs.iter().enumerate() {
                    let shape = if input.full { "full" } else { "scalar" };
                    let per = if input.per_row { "per-row" } else { "broadcast" };
                    writeln!(f, "  in v{i} b{} {} {shape} {per}", input.buffer.0, input.dtype)?;
                }
                for (i, stage) in r.stages.iter().enumerate() {
                    let v = r.inputs.len() + i;
                    match stage {
                        RowStage::Map { op, full } => {
                            let args: Vec<String> = op.args.iter().map(|a| format!("v{a}")).collect();
                            let over = if *full { "row" } else { "scalar" };
                            writeln!(f, "  v{v} = {}({}) : {} over {over}", ew_name(op), args.join(", "), op.dtype)?;
                        }
                        RowStage::Reduce { kind, arg, dtype } => {
                            writeln!(f, "  v{v} = reduce_{}(v{arg}) : {dtype}", format!("{kind:?}").to_lowercase())?;
                        }
                    }
                }
                writeln!(f, "  out b{}", r.output.0)
            }
        }
    }
}

impl Display for Program {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.write_with(f, &|_| None)
    }
}

impl Program {
    /// The text form with a line `  strategy: ...` after each kernel for which `strategy` says
    /// something (a backend's plan for it: `f16c compile --emit=kernels --target=T`).
    pub fn to_string_with(&self, strategy: &dyn Fn(&Kernel) -> Option<String>) -> String {
        struct With<'a>(&'a Program, &'a dyn Fn(&Kernel) -> Option<String>);
        impl Display for With<'_> {
            fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
                self.0.write_with(f, self.1)
            }
        }
        With(self, strategy).to_string()
    }

    fn write_with(&self, f: &mut Formatter<'_>, strategy: &dyn Fn(&Kernel) -> Option<String>) -> fmt::Result {
        writeln!(f, "program @{}: {} kernels, {} buffers", self.name, self.kernels.len(), self.buffers.len())?;
        for i in &self.inputs {
            writeln!(f, "  input  {}", operand(i))?;
        }
        for o in &self.outputs {
            writeln!(f, "  output {}", operand(o))?;
        }
        for (i, b) in self.buffers.iter().enumerate() {
            if let BufferKind::Constant(_) = b.kind {
                writeln!(f, "  const  b{i} {} bytes", b.bytes)?;
            }
        }
        for k in &self.kernels {
            write!(f, "{k}")?;
            if let Some(s) = strategy(k) {
                writeln!(f, "  strategy: {s}")?;
            }
        }
        writeln!(f, "plan: arena {} bytes (liveness lower bound {})", self.plan.arena_bytes, self.plan.lower_bound)?;
        for (i, b) in self.buffers.iter().enumerate() {
            if let Some(off) = self.plan.offset(BufferId(i)) {
                writeln!(f, "  b{i} @{off} {} bytes", b.bytes)?;
            }
        }
        Ok(())
    }
}
