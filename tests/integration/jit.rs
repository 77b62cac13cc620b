//! The x86-64 JIT against the reference interpreter: every shared model, every op × {f32, f16,
//! bf16} × sizes at vector edges, and the fp16/bf16 conversions bit for bit against `half`.

use f16c_dialect::import::parse_file;
use f16c_dialect::{BinaryOp, DType, Data, Graph, Op, PoolAttrs, ReduceKind, Tensor, TensorType, ValueType};
use f16c_jit::{self as jit, CompileOptions, Model};
use f16c_dialect::reference;
use f16c_runtime::npy;
use f16c_tests::cases::{argmax_graph, constant, contraction_tolerance, conv_graph, elementwise_graph, elementwise_ops, layer_norm, loc, random, reduce_graph, same_bits, softmax, tensor_ty, zero, Rng, Tolerance};
use f16c_tests::{max_rel_to_peak, model_path, MODELS};
use half::{bf16, f16};

/// Sizes on both sides of every 4-, 8-, 16- and 32-element edge (vectors of 4 to 16 lanes, GEMM
/// panels of 8 to 32 columns), and a large odd one.
const SIZES: &[usize] = &[1, 3, 7, 8, 9, 15, 16, 17, 33, 1031];

/// f32 runs of the shared models: the JIT meets the same bound against PyTorch as the reference.
const F32_TOLERANCE: f64 = 1e-5;

/// A mixed-precision model run: a contraction's f32 accumulation may round differently, which
/// can flip the f16 rounding of its result by one ulp (2⁻¹¹ relative) and that difference
/// propagates: 4 f16 ulp of the peak.
const FP16_MODEL_TOLERANCE: f64 = 4.0 / 2048.0;

/// Runs `g` on both engines; bit-exact, or within `tolerance` of the peak when given.
fn check(what: &str, g: &Graph, inputs: &[Tensor], tolerance: Option<f64>) {
    let want = reference::run(g, inputs).unwrap_or_else(|e| panic!("{what}: reference: {e}"));
    let model = Model::compile_graph(g, 2).unwrap_or_else(|e| panic!("{what}: compile: {e}"));
    let got = model.run(inputs).unwrap_or_else(|e| panic!("{what}: run: {e}"));
    for (a, b) in got.iter().zip(&want) {
        match tolerance {
            None => same_bits(a, b).unwrap_or_else(|e| panic!("{what}: {e}")),
            Some(t) => {
                let err = max_rel_to_peak(a, b);
                assert!(err <= t, "{what}: error {err:e} > {t:e}");
            }
        }
    }
}

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

#[test]
fn every_model_runs_on_the_jit_in_f32_and_o1_fp16() {
    for name in MODELS {
        let path = model_path(&format!("{name}.tosa.mlir"));
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        let want = npy::read(&model_path(&format!("{name}.out_f32.npy"))).unwrap();
        // With and without fold-batch-norm (the JIT's option reaches the pipeline: the batch
        // norms' subtractions are gone only when folding).
        for (precision, fold) in [("fp32", true), ("fp16", true), ("fp32", false), ("fp16", false)] {
            let options = CompileOptions { precision: precision.into(), threads: 2, fold_batch_norm: fold, ..CompileOptions::default() };
            let (mut module, _) = parse_file(&path).unwrap();
            jit::prepare(&mut module, &options).unwrap();
            let g = &module.functions[0];
            if *name == "depthwise_block" {
                let subs = g.node_ids().any(|n| matches!(g.op(n), Op::Binary(BinaryOp::Sub)));
                assert_eq!(subs, !fold, "{name}: fold_batch_norm {fold} not honoured");
            }
            let what = format!("{name} {precision}{}", if fold { "" } else { " unfolded" });
            let model = Model::compile_graph(g, 2).unwrap();
            let got = model.run(std::slice::from_ref(&input)).unwrap();
            let reference = reference::run(g, std::slice::from_ref(&input)).unwrap();
            let vs_ref = max_rel_to_peak(&got[0], &reference[0]);
            assert!(got[0].to_f32_vec().iter().all(|x| x.is_finite()), "{what}: non-finite output");
            if precision == "fp32" {
                let err = max_rel_to_peak(&got[0], &want);
                assert!(err <= F32_TOLERANCE, "{what}: JIT vs out_f32 {err:e}");
                assert!(vs_ref <= F32_TOLERANCE, "{what}: JIT vs reference {vs_ref:e}");
            } else {
                assert!(vs_ref <= FP16_MODEL_TOLERANCE, "{what}: JIT vs reference fp16 {vs_ref:e}");
            }
        }
    }
}

#[test]
fn compile_source_matches_compile_graph_and_model_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Model>();
    let path = model_path("mlp_small.tosa.mlir");
    let model = Model::compile_file(&path, &CompileOptions::fp16()).unwrap();
    let input = npy::read(&model_path("mlp_small.input.npy")).unwrap();
    let first = model.run(std::slice::from_ref(&input)).unwrap();
    // Several threads share one model.
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| model.run(std::slice::from_ref(&input)).unwrap())).collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), first);
        }
    });
    // The matmul weights are stored in fp16 (biases, added in f32 at O1 where they meet an f32
    // value, may stay f32): the total is close to half.
    let f32_model = Model::compile_file(&path, &CompileOptions::default()).unwrap();
    let ratio = model.weight_bytes() as f64 / f32_model.weight_bytes() as f64;
    assert!(ratio < 0.6, "fp16 weights {} vs f32 {} bytes", model.weight_bytes(), f32_model.weight_bytes());
}

/// Split steps run on the executor's kept threads; a run that finds them busy (another thread
/// running the same model) spawns its own; results are the same bits either way, at any
/// thread count.
#[test]
fn kept_threads_give_the_same_bits_under_concurrent_runs() {
    // A matmul big enough to be split (2·96·128·128 operations), then an elementwise tail.
    let mut rng = Rng(21);
    let mut g = Graph::new("split");
    let a = g.add_input(TensorType::new(DType::F32, [1, 96, 128]), loc());
    let w = constant(&mut g, random(&TensorType::new(DType::F32, [1, 128, 128]), &mut rng, -1.0, 1.0));
    let (z1, z2) = (zero(&mut g, DType::F32), zero(&mut g, DType::F32));
    let m = g.add_node(Op::MatMul, tensor_ty(DType::F32, &[1, 96, 128]), &[a, w, z1, z2], loc());
    let e = g.add_node(Op::Unary(f16c_dialect::UnaryOp::Tanh), tensor_ty(DType::F32, &[1, 96, 128]), &[m], loc());
    g.add_output(e);
    let input = random(&TensorType::new(DType::F32, [1, 96, 128]), &mut rng, -1.0, 1.0);
    let expected = run_jit(&g, std::slice::from_ref(&input))[0].data().to_le_bytes();
    for threads in [2, 3, 8] {
        let model = Model::compile_graph(&g, threads).unwrap();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..25).map(|_| model.run(std::slice::from_ref(&input)).unwrap()[0].data().to_le_bytes()).collect::<Vec<_>>()))
                .collect();
            for h in handles {
                assert!(h.join().unwrap().iter().all(|r| *r == expected), "{threads} threads");
            }
        });
    }
}

#[test]
fn wrong_inputs_are_rejected_before_any_code_runs() {
    let model = Model::compile_file(&model_path("mlp_small.tosa.mlir"), &CompileOptions::default()).unwrap();
    let wrong = Tensor::from_f32(vec![3, 64], vec![0.0; 192]).unwrap();
    let e = model.run(&[wrong]).unwrap_err().to_string();
    assert!(e.contains("input #0 of '@forward' must be tensor<2x64xf32>, got tensor<3x64xf32>"), "{e}");
    let e = model.run(&[]).unwrap_err().to_string();
    assert!(e.contains("takes 1 input(s), 0 given"), "{e}");
    let half_input = Tensor::new(vec![2, 64], Data::F16(vec![f16::ZERO; 128])).unwrap();
    let e = model.run(&[half_input]).unwrap_err().to_string();
    assert!(e.contains("element type f16"), "{e}");
}

/// A one-op graph `out = cast(in)` run on every bit pattern given.
fn cast_graph(from: DType, to: DType, n: usize) -> Graph {
    let mut g = Graph::new("cast");
    let x = g.add_input(TensorType::new(from, [n]), loc());
    let c = g.add_node(Op::Cast, tensor_ty(to, &[n]), &[x], loc());
    g.add_output(c);
    g
}

fn run_jit(g: &Graph, inputs: &[Tensor]) -> Vec<Tensor> {
    Model::compile_graph(g, 1).unwrap().run(inputs).unwrap()
}

/// TOSA's maximum/minimum on signed zeros and NaN (the first of equal values; NaN if either is)
/// in elementwise ops, clamp, reductions and max pooling: the JIT gives the reference's bits
/// (issue 14: it gave +0 where TOSA gives −0).
#[test]
fn signed_zeros_and_nan_follow_tosa_on_the_jit() {
    let mut failures = Vec::new();
    for case in f16c_tests::cases::special_value_cases() {
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        for threads in [1, 2] {
            let got = Model::compile_graph(&case.graph, threads).and_then(|m| m.run(&case.inputs)).map_err(|e| e.to_string());
            // The NaNs' bits too: the JIT gives the reference's canonical NaN.
            if let (Ok(got), Tolerance::Exact) = (&got, &case.tolerance) {
                failures.extend(got.iter().zip(&want).filter_map(|(a, b)| f16c_tests::cases::same_bits_and_nans(a, b).err()).map(|e| format!("{}: {e}", case.name)));
            }
            failures.extend(case.failures(got, &want, 0));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `tosa.resize` (nearest and bilinear, up, down and odd scales) in every float type at
/// channel counts around the vector width, on one and two threads: the reference's bits. (i8
/// resize is in the integer cases.)
#[test]
fn resize_matches_the_reference_bit_for_bit() {
    let mut rng = Rng(15);
    let mut failures = Vec::new();
    for d in [DType::F32, DType::F16, DType::BF16, DType::F64] {
        for c in [1, 3, 8, 9] {
            for &(scale, offset, border, bilinear) in &f16c_tests::cases::RESIZES {
                let g = f16c_tests::cases::resize_graph(d, d, [2, 5, 7, c], scale, offset, border, bilinear);
                let x = f16c_dialect::semantics::cast(&random(&TensorType::new(DType::F32, [2, 5, 7, c]), &mut rng, -3.0, 3.0), d);
                let inputs = vec![x];
                let want = reference::run(&g, &inputs).unwrap();
                for threads in [1, 2] {
                    let got = Model::compile_graph(&g, threads).and_then(|m| m.run(&inputs)).unwrap();
                    if let Err(e) = same_bits(&got[0], &want[0]) {
                        failures.push(format!("{d} c={c} scale={scale:?} offset={offset:?} bilinear={bilinear} threads={threads}: {e}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The integer ops (bitwise, shifts, clz, intdiv, table, rescale, i8 resize, pooling, i8
/// matmul and convolutions) and the logical ops on i1, at every size of the JIT's suite, on one
/// and two threads: the reference's bits.
#[test]
fn integer_and_boolean_ops_are_bit_exact() {
    let mut failures = Vec::new();
    for case in f16c_tests::cases::integer_cases(SIZES).into_iter().chain(f16c_tests::cases::integer_contraction_cases(SIZES)) {
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        for threads in [1, 2] {
            let got = Model::compile_graph(&case.graph, threads).and_then(|m| m.run(&case.inputs)).map_err(|e| e.to_string());
            // The NaNs' bits too: the JIT gives the reference's canonical NaN.
            if let (Ok(got), Tolerance::Exact) = (&got, &case.tolerance) {
                failures.extend(got.iter().zip(&want).filter_map(|(a, b)| f16c_tests::cases::same_bits_and_nans(a, b).err()).map(|e| format!("{}: {e}", case.name)));
            }
            failures.extend(case.failures(got, &want, 0));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `tosa.cond_if` and `tosa.while_loop` (both branches, 0 to 4 iterations, captured values) at
/// every size of the JIT's suite, on one and two threads: the reference's bits.
#[test]
fn control_flow_matches_the_reference_bit_for_bit() {
    let mut failures = Vec::new();
    for case in f16c_tests::cases::control_flow_cases(SIZES) {
        f16c_dialect::verify::verify(&case.graph).unwrap_or_else(|d| panic!("{}: {d}", case.name));
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        for threads in [1, 2] {
            let got = Model::compile_graph(&case.graph, threads).and_then(|m| m.run(&case.inputs)).map_err(|e| e.to_string());
            // The NaNs' bits too: the JIT gives the reference's canonical NaN.
            if let (Ok(got), Tolerance::Exact) = (&got, &case.tolerance) {
                failures.extend(got.iter().zip(&want).filter_map(|(a, b)| f16c_tests::cases::same_bits_and_nans(a, b).err()).map(|e| format!("{}: {e}", case.name)));
            }
            failures.extend(case.failures(got, &want, 0));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn f16_and_bf16_widening_is_bit_exact_for_all_65536_values() {
    let n = 1 << 16;
    for (d, name) in [(DType::F16, "f16"), (DType::BF16, "bf16")] {
        let data = if d == DType::F16 {
            Data::F16((0..n).map(|b| f16::from_bits(b as u16)).collect())
        } else {
            Data::BF16((0..n).map(|b| bf16::from_bits(b as u16)).collect())
        };
        let x = Tensor::new(vec![n], data).unwrap();
        let got = run_jit(&cast_graph(d, DType::F32, n), std::slice::from_ref(&x));
        let Data::F32(v) = got[0].data() else { panic!() };
        for (b, y) in v.iter().enumerate() {
            let want = if d == DType::F16 { f16::from_bits(b as u16).to_f32() } else { bf16::from_bits(b as u16).to_f32() };
            assert_eq!(y.to_bits(), want.to_bits(), "{name} bits {b:#06x}: JIT {y:e}, half {want:e}");
        }
    }
}

/// f32 values that stress narrowing: every f16 and bf16 value and the midpoints between
/// neighbours (ties), one ulp either side of them, f32 subnormals, huge values, inf, NaNs with
/// payloads, and a large random sample of bit patterns. The count is odd so both the four-lane
/// loop and the scalar tail run.
fn narrowing_samples() -> Vec<f32> {
    let mut v = Vec::new();
    for b in 0..=u16::MAX {
        for w in [f16::from_bits(b).to_f32(), bf16::from_bits(b).to_f32()] {
            v.push(w);
            if w.is_finite() {
                // The midpoint to the next value up (a tie for f16 or bf16), and its neighbours.
                let up16 = f16::from_bits(b.wrapping_add(1)).to_f32();
                let up_bf = bf16::from_bits(b.wrapping_add(1)).to_f32();
                for up in [up16, up_bf] {
                    if up.is_finite() && up > w {
                        let mid = ((w as f64 + up as f64) / 2.0) as f32;
                        v.extend([mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits().saturating_sub(1))]);
                    }
                }
            }
        }
    }
    v.extend([f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN_POSITIVE, 1e-45, -1e-45, 65504.0, 65519.99, 65520.0, -65520.0]);
    v.extend([f32::from_bits(0x7f80_0001), f32::from_bits(0xffc1_2345), f32::from_bits(0x7fbf_ffff)]);
    let mut rng = Rng(7);
    v.extend((0..1_000_001).map(|_| f32::from_bits(rng.next() as u32)));
    if v.len() % 2 == 0 {
        v.push(0.5);
    }
    v
}

#[test]
fn f32_to_f16_and_bf16_narrowing_is_bit_exact_against_half() {
    let v = narrowing_samples();
    let n = v.len();
    let x = Tensor::from_f32(vec![n], v.clone()).unwrap();
    for d in [DType::F16, DType::BF16] {
        let got = run_jit(&cast_graph(DType::F32, d, n), std::slice::from_ref(&x));
        for (i, (&s, y)) in v.iter().zip(got[0].data().to_le_bytes().chunks(2)).enumerate() {
            let y = u16::from_le_bytes([y[0], y[1]]);
            let want = if d == DType::F16 { f16::from_f32(s).to_bits() } else { bf16::from_f32(s).to_bits() };
            assert_eq!(y, want, "{d} element {i}: f32 {s:e} ({:#010x}): JIT {y:#06x}, half {want:#06x}", s.to_bits());
        }
    }
}

fn inputs_for(g: &Graph, rng: &mut Rng, lo: f32, hi: f32) -> Vec<Tensor> {
    g.inputs().iter().map(|&i| random(g.tensor_ty(i).unwrap(), rng, lo, hi)).collect()
}

#[test]
fn elementwise_ops_are_bit_exact_in_every_float_type_and_size() {
    let ops = elementwise_ops();
    let mut rng = Rng(1);
    for op in &ops {
        for d in FLOATS {
            for &n in SIZES {
                let broadcasts: &[usize] = if matches!(op, Op::Binary(_) | Op::Select) { &[0, 1, 2] } else { &[0] };
                for &bc in broadcasts {
                    let g = elementwise_graph(op, d, n, bc);
                    // Values that overflow f16 in exp and pow, and negatives for log and rsqrt.
                    let inputs = inputs_for(&g, &mut rng, -12.0, 12.0);
                    check(&format!("{} {d} n={n} broadcast={bc}", op.mlir_name()), &g, &inputs, None);
                }
            }
        }
    }
}

#[test]
fn fused_elementwise_chains_round_after_every_op() {
    // (a * b + a) then clamp, in f16: three roundings, fused into one kernel.
    for d in FLOATS {
        for &n in SIZES {
            let mut g = Graph::new("chain");
            let shape = [3, n];
            let a = g.add_input(TensorType::new(d, shape), loc());
            let b = g.add_input(TensorType::new(d, [1, n]), loc());
            let shift = constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
            let m = g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, &shape), &[a, b, shift], loc());
            let s = g.add_node(Op::Binary(BinaryOp::Add), tensor_ty(d, &shape), &[m, a], loc());
            let c = g.add_node(Op::Clamp { min: -30.0, max: 30.0 }, tensor_ty(d, &shape), &[s], loc());
            let w = g.add_node(Op::Cast, tensor_ty(DType::F32, &shape), &[c], loc());
            g.add_output(w);
            let program = f16c_compiler::lower::lower(&g).unwrap();
            assert_eq!(program.kernels.len(), 1, "the chain fuses into one kernel");
            let inputs = inputs_for(&g, &mut Rng(n as u64), -8.0, 8.0);
            check(&format!("chain {d} n={n}"), &g, &inputs, None);
        }
    }
}

#[test]
fn reductions_argmax_and_pooling_match_the_reference_bit_for_bit() {
    let mut rng = Rng(3);
    // Reductions over a long axis with many outputs (a squeeze-and-excite mean): blocks of
    // sixteen outputs per work item, their chains side by side, then the last short block a
    // vector and a value at a time.
    for d in FLOATS {
        for shape in [[1, 49, 37], [2, 9, 64], [3, 20, 16], [1, 300, 20]] {
            for kind in [ReduceKind::Sum, ReduceKind::Max, ReduceKind::Prod] {
                let g = reduce_graph(kind, d, &shape, 1);
                let inputs = inputs_for(&g, &mut rng, -2.0, 2.0);
                check(&format!("reduce {kind:?} {d} shape={shape:?} axis=1"), &g, &inputs, None);
            }
        }
    }
    for d in FLOATS {
        for &n in SIZES {
            let shape = [2, n, 5];
            for axis in 0..3 {
                for kind in [ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Prod] {
                    let g = reduce_graph(kind, d, &shape, axis);
                    let inputs = inputs_for(&g, &mut rng, -2.0, 2.0);
                    check(&format!("reduce {kind:?} {d} n={n} axis={axis}"), &g, &inputs, None);
                }
                let g = argmax_graph(d, &shape, axis);
                let inputs = inputs_for(&g, &mut rng, -2.0, 2.0);
                check(&format!("argmax {d} n={n} axis={axis}"), &g, &inputs, None);
            }
            // Pooling over an n×n... image with n channels (small sizes only: cost is n^3).
            if n <= 33 {
                for avg in [false, true] {
                    let (h, w, c) = (n.max(2), 5, n);
                    let attrs = PoolAttrs { kernel: [2, 3], stride: [2, 1], pad: [1, 0, 1, 1], acc: if avg { Some(DType::F32) } else { None } };
                    let oh = (h + 1 - 2) / 2 + 1;
                    let ow = w + 2 - 3 + 1;
                    let mut g = Graph::new("pool");
                    let x = g.add_input(TensorType::new(d, [1, h, w, c]), loc());
                    let op = if avg { Op::AvgPool2d(attrs) } else { Op::MaxPool2d(attrs) };
                    let mut operands = vec![x];
                    if avg {
                        operands.push(zero(&mut g, d));
                        operands.push(zero(&mut g, d));
                    }
                    let p = g.add_node(op, tensor_ty(d, &[1, oh, ow, c]), &operands, loc());
                    g.add_output(p);
                    let inputs = inputs_for(&g, &mut rng, -4.0, 4.0);
                    check(&format!("pool avg={avg} {d} n={n}"), &g, &inputs, None);
                }
            }
        }
    }
}

#[test]
fn data_movement_copies_bits() {
    let mut rng = Rng(5);
    for d in [DType::F32, DType::F16, DType::BF16, DType::I32, DType::I1] {
        for &n in SIZES {
            let shape = [2, 3, n];
            let t = |s: &[usize]| tensor_ty(d, s);
            let mut graphs = Vec::new();
            // transpose
            let mut g = Graph::new("transpose");
            let x = g.add_input(TensorType::new(d, shape), loc());
            let o = g.add_node(Op::Transpose { perms: vec![2, 0, 1] }, t(&[n, 2, 3]), &[x], loc());
            g.add_output(o);
            graphs.push(("transpose", g));
            // slice
            let mut g = Graph::new("slice");
            let x = g.add_input(TensorType::new(d, shape), loc());
            let start = g.add_node(Op::ConstShape(vec![1, 1, (n / 2) as i64]), ValueType::Shape(3), &[], loc());
            let size = g.add_node(Op::ConstShape(vec![1, 2, (n - n / 2) as i64]), ValueType::Shape(3), &[], loc());
            let o = g.add_node(Op::Slice, t(&[1, 2, n - n / 2]), &[x, start, size], loc());
            g.add_output(o);
            graphs.push(("slice", g));
            // pad
            let mut g = Graph::new("pad");
            let x = g.add_input(TensorType::new(d, shape), loc());
            let pads = g.add_node(Op::ConstShape(vec![0, 1, 2, 0, 1, 3]), ValueType::Shape(6), &[], loc());
            let fill = constant(&mut g, Tensor::splat(&TensorType::new(d, [1]), 1.0));
            let o = g.add_node(Op::Pad, t(&[3, 5, n + 4]), &[x, pads, fill], loc());
            g.add_output(o);
            graphs.push(("pad", g));
            // concat
            let mut g = Graph::new("concat");
            let x = g.add_input(TensorType::new(d, shape), loc());
            let y = g.add_input(TensorType::new(d, [2, 1, n]), loc());
            let o = g.add_node(Op::Concat { axis: 1 }, t(&[2, 4, n]), &[x, y], loc());
            g.add_output(o);
            graphs.push(("concat", g));
            // reverse (a backwards source stride), along the outer and the innermost axis
            for axis in [0, 2] {
                let mut g = Graph::new("reverse");
                let x = g.add_input(TensorType::new(d, shape), loc());
                let o = g.add_node(Op::Reverse { axis }, t(&shape), &[x], loc());
                g.add_output(o);
                graphs.push(("reverse", g));
            }
            // tile
            let mut g = Graph::new("tile");
            let x = g.add_input(TensorType::new(d, shape), loc());
            let mult = g.add_node(Op::ConstShape(vec![2, 1, 3]), ValueType::Shape(3), &[], loc());
            let o = g.add_node(Op::Tile, t(&[4, 3, 3 * n]), &[x, mult], loc());
            g.add_output(o);
            graphs.push(("tile", g));
            // reshape (a view) feeding a transpose
            let mut g = Graph::new("reshape");
            let x = g.add_input(TensorType::new(d, shape), loc());
            let s = g.add_node(Op::ConstShape(vec![6, n as i64]), ValueType::Shape(2), &[], loc());
            let r = g.add_node(Op::Reshape, t(&[6, n]), &[x, s], loc());
            let o = g.add_node(Op::Transpose { perms: vec![1, 0] }, t(&[n, 6]), &[r], loc());
            g.add_output(o);
            graphs.push(("reshape", g));
            for (what, g) in graphs {
                let inputs = inputs_for(&g, &mut rng, -100.0, 100.0);
                check(&format!("{what} {d} n={n}"), &g, &inputs, None);
            }
        }
    }
}

#[test]
fn gather_and_scatter_match_and_reject_out_of_range_indices() {
    let mut rng = Rng(9);
    for d in FLOATS {
        for &c in SIZES {
            let mut g = Graph::new("gather");
            let v = g.add_input(TensorType::new(d, [2, 5, c]), loc());
            let i = g.add_input(TensorType::new(DType::I32, [2, 3]), loc());
            let o = g.add_node(Op::Gather, tensor_ty(d, &[2, 3, c]), &[v, i], loc());
            g.add_output(o);
            let values = random(&TensorType::new(d, [2, 5, c]), &mut rng, -1.0, 1.0);
            let idx = Tensor::new(vec![2, 3], Data::I32(vec![4, 0, 2, 1, 1, 3])).unwrap();
            check(&format!("gather {d} c={c}"), &g, &[values.clone(), idx], None);
            let bad = Tensor::new(vec![2, 3], Data::I32(vec![4, 0, 5, 1, 1, 3])).unwrap();
            let e = Model::compile_graph(&g, 1).unwrap().run(&[values.clone(), bad.clone()]).unwrap_err().to_string();
            assert!(e.contains("while running 'tosa.gather': an index is out of range"), "{e}");
            // Scatter with run-time indices: a repeat (the last row wins), then one out of range.
            let mut g = Graph::new("scatter");
            let v = g.add_input(TensorType::new(d, [2, 5, c]), loc());
            let i = g.add_input(TensorType::new(DType::I32, [2, 3]), loc());
            let x = g.add_input(TensorType::new(d, [2, 3, c]), loc());
            let o = g.add_node(Op::Scatter, tensor_ty(d, &[2, 5, c]), &[v, i, x], loc());
            g.add_output(o);
            let rows = random(&TensorType::new(d, [2, 3, c]), &mut rng, -1.0, 1.0);
            let repeat = Tensor::new(vec![2, 3], Data::I32(vec![4, 0, 4, 1, 1, 3])).unwrap();
            check(&format!("scatter {d} c={c}"), &g, &[values.clone(), repeat, rows.clone()], None);
            for threads in [1, 2] {
                let e = Model::compile_graph(&g, threads).unwrap().run(&[values.clone(), bad.clone(), rows.clone()]).unwrap_err().to_string();
                assert!(e.contains("while running 'tosa.scatter': an index is out of range"), "{e}");
            }
        }
    }
    // Gathers by constant indices that only an interpolation reads (folded into it at 17
    // values a row: the interpolation picks each row from the values as it reads it).
    for case in f16c_tests::cases::parity_cases().into_iter().filter(|c| c.name.starts_with("gather_lerp")) {
        check(&case.name, &case.graph, &case.inputs, None);
    }
}

#[test]
fn contractions_match_the_reference_within_the_reduction_tolerance() {
    let mut rng = Rng(11);
    for d in FLOATS {
        for &n in SIZES {
            // matmul [2, m, k] x [2, k, n], activation times activation and times a weight.
            for constant_b in [false, true] {
                let (m, k) = (n.min(40) + 2, 17 + n % 5);
                let mut g = Graph::new("matmul");
                let a = g.add_input(TensorType::new(d, [2, m, k]), loc());
                let b = if constant_b {
                    constant(&mut g, random(&TensorType::new(d, [2, k, n]), &mut rng, -1.0, 1.0))
                } else {
                    g.add_input(TensorType::new(d, [2, k, n]), loc())
                };
                let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
                let o = g.add_node(Op::MatMul, tensor_ty(d, &[2, m, n]), &[a, b, z1, z2], loc());
                g.add_output(o);
                let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
                // A low-precision result may round one ulp apart.
                let tol = contraction_tolerance(k, d != DType::F32);
                check(&format!("matmul {d} n={n} constant_b={constant_b}"), &g, &inputs, Some(tol));
            }
            if n <= 33 {
                for (op, fused) in [("conv", false), ("conv", true), ("depthwise", false), ("depthwise", true), ("depthwise_strided", false), ("depthwise_strided", true), ("depthwise_dilated", false), ("depthwise_dilated", true), ("transpose", false), ("conv3d", false), ("conv3d", true)] {
                    let (g, k) = conv_graph(op, d, n, n.min(10), 7, fused);
                    let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
                    let tol = contraction_tolerance(k, d != DType::F32);
                    // Depthwise and transpose conv multiply and add in the reference's order.
                    let tol = if op.starts_with("conv") { Some(tol) } else { None };
                    check(&format!("{op} fused={fused} {d} n={n}"), &g, &inputs, tol);
                }
            }
        }
        // 8 output pixels (one row block) by 576 channels: 72 panels in 16 column groups of
        // 5, the last one empty; f16 results are staged per group and narrowed at run time.
        let (g, k) = conv_graph("conv", d, 4, 8, 576, true);
        let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
        check(&format!("conv fused {d} n=4 o=576"), &g, &inputs, Some(contraction_tolerance(k, d != DType::F32)));
    }
}

/// An fp16 GEMM convolution widens the band of input rows each block of output rows reads, in
/// one runtime call: blocks that straddle two images, a vertical stride with top padding only
/// (mobilenet's first conv), a vertical dilation, and rows whose window lies wholly in the
/// bottom padding all read the right values.
#[test]
fn fp16_convolutions_read_their_input_band_across_images_and_padding() {
    use f16c_dialect::ConvAttrs;
    let mut rng = Rng(13);
    // (batch, ih, iw, ic, kernel, pad, stride, dilation)
    let cases: [(usize, usize, usize, usize, [usize; 2], [usize; 4], [usize; 2], [usize; 2]); 3] = [
        (3, 14, 14, 3, [3, 3], [1, 0, 1, 0], [2, 2], [1, 1]),
        (2, 11, 9, 4, [3, 2], [2, 2, 1, 0], [1, 1], [2, 1]),
        (2, 5, 6, 8, [1, 1], [0, 3, 0, 0], [1, 1], [1, 1]),
    ];
    for (batch, ih, iw, ic, [kh, kw], pad, stride, dilation) in cases {
        let d = DType::F16;
        let oc = 5;
        let oh = (ih + pad[0] + pad[1] - (kh - 1) * dilation[0] - 1) / stride[0] + 1;
        let ow = (iw + pad[2] + pad[3] - (kw - 1) * dilation[1] - 1) / stride[1] + 1;
        let mut g = Graph::new("conv_band");
        let x = g.add_input(TensorType::new(d, [batch, ih, iw, ic]), loc());
        let w = constant(&mut g, random(&TensorType::new(d, [oc, kh, kw, ic]), &mut rng, -1.0, 1.0));
        let b = constant(&mut g, random(&TensorType::new(d, [oc]), &mut rng, -1.0, 1.0));
        let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
        let a = ConvAttrs { pad, stride, dilation, acc: DType::F32 };
        let y = g.add_node(Op::Conv2d(a), tensor_ty(d, &[batch, oh, ow, oc]), &[x, w, b, z1, z2], loc());
        g.add_output(y);
        let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
        let what = format!("conv batch={batch} {ih}x{iw}x{ic} kernel={kh}x{kw} pad={pad:?} stride={stride:?} dilation={dilation:?}");
        check(&what, &g, &inputs, Some(contraction_tolerance(kh * kw * ic, true)));
    }
}

/// A one-row matmul (a classifier at batch 1) runs on its own path, split by weight panel: it
/// matches the reference, and its row is bit for bit that row of a many-row GEMM, fused
/// epilogue (bias, clamp) included, at panel edges and across reduction chunks.
#[test]
fn one_row_matmuls_match_the_gemm_bit_for_bit() {
    let mut rng = Rng(12);
    let graph = |d: DType, m: usize, k: usize, n: usize, w: &Tensor, bias: &Tensor| {
        let mut g = Graph::new("classifier");
        let a = g.add_input(TensorType::new(d, [1, m, k]), loc());
        let b = constant(&mut g, w.clone());
        let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
        let o = g.add_node(Op::MatMul, tensor_ty(d, &[1, m, n]), &[a, b, z1, z2], loc());
        let c = constant(&mut g, bias.clone());
        let o = g.add_node(Op::Binary(f16c_dialect::BinaryOp::Add), tensor_ty(d, &[1, m, n]), &[o, c], loc());
        let o = g.add_node(Op::Clamp { min: -0.5, max: 0.5 }, tensor_ty(d, &[1, m, n]), &[o], loc());
        g.add_output(o);
        g
    };
    for d in FLOATS {
        for (k, n) in [(1, 1), (5, 7), (300, 9), (17, 1000)] {
            let w = random(&TensorType::new(d, [1, k, n]), &mut rng, -1.0, 1.0);
            let bias = random(&TensorType::new(d, [1, 1, n]), &mut rng, -0.1, 0.1);
            let many = random(&TensorType::new(d, [1, 5, k]), &mut rng, -1.0, 1.0);
            let one = Tensor::new(vec![1, 1, k], many.data().gather(&(0..k).collect::<Vec<_>>())).unwrap();
            let g1 = graph(d, 1, k, n, &w, &bias);
            check(&format!("one-row matmul {d} k={k} n={n}"), &g1, std::slice::from_ref(&one), Some(contraction_tolerance(k, d != DType::F32)));
            let row = run_jit(&g1, &[one])[0].data().to_le_bytes();
            let rows = run_jit(&graph(d, 5, k, n, &w, &bias), &[many])[0].data().to_le_bytes();
            assert_eq!(row, rows[..row.len()], "one-row matmul {d} k={k} n={n}: not the GEMM's first row");
        }
    }
}

/// A matmul `[2, rows, k]` × the constant `w` (`[2, k, n]`), then a clamp to ±2 (an epilogue).
fn matmul_clamp(w: &Tensor, rows: usize) -> Graph {
    let (d, k, n) = (w.dtype(), w.shape()[1], w.shape()[2]);
    let mut g = Graph::new("matmul_rows");
    let a = g.add_input(TensorType::new(d, [2, rows, k]), loc());
    let b = constant(&mut g, w.clone());
    let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
    let o = g.add_node(Op::MatMul, tensor_ty(d, &[2, rows, n]), &[a, b, z1, z2], loc());
    let o = g.add_node(Op::Clamp { min: -2.0, max: 2.0 }, tensor_ty(d, &[2, rows, n]), &[o], loc());
    g.add_output(o);
    g
}

/// A 1×1 convolution (stride 1, no padding) over one row of `pixels` pixels with the constant
/// weight `w` (`[n, 1, 1, k]`) and `bias`, then ReLU6: both fused into one GEMM.
fn conv_1x1_relu6(w: &Tensor, bias: &Tensor, pixels: usize) -> Graph {
    use f16c_dialect::ConvAttrs;
    let (d, n, k) = (w.dtype(), w.shape()[0], w.shape()[3]);
    let mut g = Graph::new("conv_rows");
    let x = g.add_input(TensorType::new(d, [1, 1, pixels, k]), loc());
    let (wv, bv) = (constant(&mut g, w.clone()), constant(&mut g, bias.clone()));
    let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
    let a = ConvAttrs { pad: [0; 4], stride: [1, 1], dilation: [1, 1], acc: DType::F32 };
    let y = g.add_node(Op::Conv2d(a), tensor_ty(d, &[1, 1, pixels, n]), &[x, wv, bv, z1, z2], loc());
    let y = g.add_node(Op::Clamp { min: 0.0, max: 6.0 }, tensor_ty(d, &[1, 1, pixels, n]), &[y], loc());
    g.add_output(y);
    g
}

/// A matmul, or a 1×1 convolution with stride 1 and no padding, whose rows are all full (a
/// multiple of four) has its micro-kernel read A's rows in place instead of packing them: its
/// rows are bit for bit those of the same contraction with one more row (which packs), across
/// reduction chunks, row blocks, a batch and a fused epilogue, with an fp16 A widened first.
#[test]
fn gemms_reading_a_in_place_match_packed_ones_bit_for_bit() {
    let mut rng = Rng(17);
    for d in FLOATS {
        for (m, k, n) in [(4, 5, 3), (8, 300, 19), (68, 600, 40)] {
            let tol = Some(contraction_tolerance(k, d != DType::F32));
            let w = random(&TensorType::new(d, [2, k, n]), &mut rng, -1.0, 1.0);
            let matmul = |rows: usize| matmul_clamp(&w, rows);
            let more = random(&TensorType::new(d, [2, m + 1, k]), &mut rng, -1.0, 1.0);
            let first: Vec<usize> = (0..2).flat_map(|b| b * (m + 1) * k..(b * (m + 1) + m) * k).collect();
            let exact = Tensor::new(vec![2, m, k], more.data().gather(&first)).unwrap();
            let what = format!("in-place matmul {d} m={m} k={k} n={n}");
            check(&what, &matmul(m), std::slice::from_ref(&exact), tol);
            let got = run_jit(&matmul(m), &[exact])[0].data().to_le_bytes();
            let packed = run_jit(&matmul(m + 1), &[more])[0].data().to_le_bytes();
            let (row, size) = (n * d.byte_size(), d.byte_size());
            let want: Vec<u8> = (0..2).flat_map(|b| packed[b * (m + 1) * row..(b * (m + 1) + m) * row].to_vec()).collect();
            assert_eq!(got, want, "{what}: not the packed GEMM's rows ({size}-byte elements)");

            // A 1×1 convolution over one row of `pixels` pixels, bias and ReLU6 fused.
            let wc = random(&TensorType::new(d, [n, 1, 1, k]), &mut rng, -1.0, 1.0);
            let bias = random(&TensorType::new(d, [n]), &mut rng, -1.0, 1.0);
            let conv = |pixels: usize| conv_1x1_relu6(&wc, &bias, pixels);
            let more = random(&TensorType::new(d, [1, 1, m + 1, k]), &mut rng, -1.0, 1.0);
            let exact = Tensor::new(vec![1, 1, m, k], more.data().gather(&(0..m * k).collect::<Vec<_>>())).unwrap();
            let what = format!("in-place 1x1 conv {d} pixels={m} k={k} n={n}");
            check(&what, &conv(m), std::slice::from_ref(&exact), tol);
            let got = run_jit(&conv(m), &[exact])[0].data().to_le_bytes();
            let packed = run_jit(&conv(m + 1), &[more])[0].data().to_le_bytes();
            assert_eq!(got, packed[..got.len()], "{what}: not the packed GEMM's rows");
        }
    }
}

/// Where the CPU has AVX2 and FMA, the GEMM hands its micro-panels to the runtime's native loop
/// (`f16c_runtime::ukernel::tiles`); compiled for the generated loops (`Loops::Generated`), the generated
/// micro-kernel runs instead, and compiled for AVX2 on an AVX-512 machine, the AVX2 loops. They
/// give the same bits: A packed and in place, f32, fp16 and bf16 (an fp16 weight read and
/// widened by the native loop itself), reduction chunks, several row blocks and a batch, a
/// short last micro-panel, fused epilogues, and every remainder of its three-at-a-time loop;
/// and the one-row (gemv) loop's native and generated forms.
#[test]
fn the_native_gemm_loop_gives_the_generated_micro_kernels_bits() {
    if !f16c_runtime::libcalls::available(f16c_core::abi::Libcall::GemmTiles) {
        eprintln!("this CPU has no native GEMM loop: nothing to compare");
        return;
    }
    let mut rng = Rng(23);
    let mut cases: Vec<(String, Graph, Vec<Tensor>)> = Vec::new();
    for d in FLOATS {
        // m = 1 is the one-row loop: its items of eight panels, a short last item, and (640 ×
        // 130) an fp16 weight too large to widen once, read as fp16 by the native loop. An f32
        // A whose rows are not a whole number of micro-panels (150, 9, 67: reduction chunks
        // too) is read in place but for its last micro-panel, packed for a call of its own.
        for (m, k, n) in [(4, 5, 3), (4, 700, 40), (8, 300, 19), (68, 600, 40), (150, 40, 70), (9, 7, 8), (67, 600, 40), (1, 5, 70), (1, 300, 19), (1, 640, 130)] {
            let g = matmul_clamp(&random(&TensorType::new(d, [2, k, n]), &mut rng, -1.0, 1.0), m);
            let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
            cases.push((format!("matmul {d} m={m} k={k} n={n}"), g, inputs));
        }
        for (pixels, k, n) in [(12, 600, 40), (80, 24, 16), (13, 300, 24)] {
            let (w, bias) = (random(&TensorType::new(d, [n, 1, 1, k]), &mut rng, -1.0, 1.0), random(&TensorType::new(d, [n]), &mut rng, -1.0, 1.0));
            let g = conv_1x1_relu6(&w, &bias, pixels);
            let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
            cases.push((format!("1x1 conv {d} pixels={pixels} k={k} n={n}"), g, inputs));
        }
        for (size, c, o) in [(9, 3, 8), (17, 40, 33), (20, 130, 12), (2, 300, 20)] {
            let (g, _) = conv_graph("conv", d, size, c, o, true);
            let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
            cases.push((format!("conv {d} n={size} c={c} o={o}"), g, inputs));
        }
    }
    // bf16 on a CPU with AVX512-BF16 runs on the pair loops (`GemmPairsBf16`, no generated
    // form): compared with the f32 loops of code compiled without them instead.
    let pairs = f16c_compiler::backend::host_has_avx512_bf16();
    let host = f16c_compiler::backend::cranelift::Options::host().unwrap();
    let without_pairs = f16c_compiler::backend::cranelift::Options { dot_bf16: false, ..host };
    // The generated loops, with this host's FMA: the native loops' bits.
    let generated_loops = f16c_compiler::backend::cranelift::Options { dot_bf16: false, loops: f16c_compiler::backend::cranelift::Loops::Generated, ..host };
    for (what, g, inputs) in cases {
        let native = Model::compile_graph(&g, 2).unwrap().run(&inputs).unwrap();
        let other = Model::compile_graph_with(&g, 2, &without_pairs).unwrap().run(&inputs).unwrap();
        if pairs && what.contains("bf16") {
            assert_eq!(native[0].data().to_le_bytes(), other[0].data().to_le_bytes(), "{what}: the bf16 pair loops' bits differ from the f32 loops'");
        }
        // Both instruction sets' loops where this CPU has AVX-512.
        if host.loops == f16c_compiler::backend::cranelift::Loops::Avx512 {
            let avx2 = f16c_compiler::backend::cranelift::Options { loops: f16c_compiler::backend::cranelift::Loops::Avx2, ..without_pairs };
            let narrow = Model::compile_graph_with(&g, 2, &avx2).unwrap().run(&inputs).unwrap();
            assert_eq!(other[0].data().to_le_bytes(), narrow[0].data().to_le_bytes(), "{what}: the AVX-512 loops' bits differ from the AVX2 loops'");
        }
        let generated = Model::compile_graph_with(&g, 2, &generated_loops).unwrap().run(&inputs).unwrap();
        assert_eq!(native[0].data().to_le_bytes(), generated[0].data().to_le_bytes(), "{what}: the native loop's bits differ");
    }
}

/// An f32 convolution of `images` images `h` × `w` × `c` by `o` filters `kh` × `kw` (bias,
/// ReLU fused).
#[allow(clippy::too_many_arguments, reason = "a convolution's geometry")]
#[allow(clippy::too_many_arguments, reason = "a convolution's geometry and type")]
fn conv_window_rows(d: DType, images: usize, (h, w, c): (usize, usize, usize), (o, kh, kw): (usize, usize, usize), pad: [usize; 4], stride: [usize; 2], dilation: [usize; 2], rng: &mut Rng) -> Graph {
    use f16c_dialect::ConvAttrs;
    let mut g = Graph::new("conv_window_rows");
    let x = g.add_input(TensorType::new(d, [images, h, w, c]), loc());
    let wv = constant(&mut g, random(&TensorType::new(d, [o, kh, kw, c]), rng, -1.0, 1.0));
    let bv = constant(&mut g, random(&TensorType::new(d, [o]), rng, -1.0, 1.0));
    let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
    let oh = (h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
    let ow = (w + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
    let a = ConvAttrs { pad, stride, dilation, acc: DType::F32 };
    let y = g.add_node(Op::Conv2d(a), tensor_ty(d, &[images, oh, ow, o]), &[x, wv, bv, z1, z2], loc());
    let y = g.add_node(Op::Clamp { min: 0.0, max: if d == DType::F16 { 65504.0 } else { f64::from(f32::MAX) } }, tensor_ty(d, &[images, oh, ow, o]), &[y], loc());
    g.add_output(y);
    g
}

/// An f32 or fp16 convolution whose output rows are a whole number of micro-panels reads A's
/// rows in place as window rows of its input (padded once per run where it has padding; an
/// fp16 one widened to f32 in the same step), a chunk per window row (or part of one): its plan
/// says so, and its bits are those of the generated micro-kernels, which pack A (strides, dilation down, asymmetric padding, no padding, two
/// images, one input channel, window rows longer than a chunk, a 1 × 3 window over one row as
/// torch-mlir's conv1d, at stride 1 and 2). Where no row block of 16 to 64 rows (a multiple of
/// four) divides its output's rows exactly, it packs A.
#[test]
fn convolutions_read_window_rows_in_place_with_the_packed_bits() {
    use f16c_compiler::backend::cranelift::{plans, Loops, Options, CRANELIFT};
    let host = Options::host().unwrap();
    if host.loops == Loops::Generated {
        eprintln!("this CPU has no native GEMM loop: no window rows to compare");
        return;
    }
    let host = Options { dot_bf16: false, ..host };
    let generated = Options { loops: Loops::Generated, ..host };
    let mut rng = Rng(41);
    #[allow(clippy::type_complexity, reason = "a table of geometries")]
    let cases: [(usize, (usize, usize, usize), (usize, usize, usize), [usize; 4], [usize; 2], [usize; 2], bool); 8] = [
        (1, (9, 16, 5), (12, 3, 3), [1, 1, 1, 1], [1, 1], [1, 1], true),
        (2, (11, 33, 3), (8, 3, 3), [1, 0, 0, 1], [2, 2], [1, 1], true),
        (1, (10, 18, 20), (40, 3, 3), [0; 4], [1, 1], [2, 1], true),
        (1, (7, 16, 1), (4, 3, 3), [1, 1, 1, 1], [1, 1], [1, 1], true),
        (1, (6, 16, 130), (9, 2, 3), [1, 1, 1, 1], [1, 1], [1, 1], true),
        (1, (1, 24, 16), (24, 1, 3), [0, 0, 1, 1], [1, 1], [1, 1], true),
        (1, (1, 49, 16), (24, 1, 3), [0, 0, 1, 0], [1, 2], [1, 1], true),
        (1, (9, 8, 5), (12, 3, 3), [1, 1, 1, 1], [1, 1], [1, 1], false),
    ];
    for (d, (images, input, filters, pad, stride, dilation, windows)) in [DType::F32, DType::F16].into_iter().flat_map(|d| cases.map(|case| (d, case))) {
        let what = format!("{d} conv images={images} input={input:?} filters={filters:?} pad={pad:?} stride={stride:?} dilation={dilation:?}");
        let g = conv_window_rows(d, images, input, filters, pad, stride, dilation, &mut rng);
        let program = f16c_compiler::driver::lower_for(&g, &CRANELIFT).unwrap();
        let plan = plans(&program, &host).unwrap().into_iter().flatten().find(|p| p.starts_with("tiles")).expect("a GEMM plan");
        assert_eq!(plan.contains("window rows"), windows, "{what}: {plan}");
        let staged = match (d, pad != [0; 4]) {
            (DType::F16, true) => "padded and widened to f32 once per run",
            (DType::F16, false) => "widened to f32 once per run",
            _ => "padded once per run",
        };
        assert_eq!(plan.contains(staged), windows && (pad != [0; 4] || d == DType::F16), "{what}: {plan}");
        let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
        check(&what, &g, &inputs, Some(contraction_tolerance(filters.1 * filters.2 * input.2, d != DType::F32)));
        for threads in [1, 2] {
            let native = Model::compile_graph_with(&g, threads, &host).unwrap().run(&inputs).unwrap();
            let packed = Model::compile_graph_with(&g, threads, &generated).unwrap().run(&inputs).unwrap();
            assert_eq!(native[0].data().to_le_bytes(), packed[0].data().to_le_bytes(), "{what}, {threads} threads: not the packed GEMM's bits");
        }
    }
}

/// A depthwise convolution (channel multiplier 1, 3×3, padding 1) with its bias and, by
/// `finish`, nothing more, a ReLU6 as `maximum`/`minimum` with one-element constants (as
/// torch-mlir writes it), one as a clamp, or a residual add first.
fn depthwise_finished(d: DType, size: usize, channels: usize, stride: usize, finish: &str, rng: &mut Rng) -> Graph {
    use f16c_dialect::ConvAttrs;
    let mut g = Graph::new("depthwise");
    let x = g.add_input(TensorType::new(d, [1, size, size, channels]), loc());
    let w = constant(&mut g, random(&TensorType::new(d, [3, 3, channels, 1]), rng, -1.0, 1.0));
    let b = constant(&mut g, random(&TensorType::new(d, [channels]), rng, -1.0, 1.0));
    let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
    // Bottom and right padding that make the stride divide the padded extent.
    let end = (size + 1 + stride - 1) % stride;
    let a = ConvAttrs { pad: [1, end, 1, end], stride: [stride, stride], dilation: [1, 1], acc: DType::F32 };
    let o = (size + 1 + end - 3) / stride + 1;
    let ty = tensor_ty(d, &[1, o, o, channels]);
    let mut y = g.add_node(Op::DepthwiseConv2d(a), ty.clone(), &[x, w, b, z1, z2], loc());
    match finish {
        "max_min" => {
            let one = TensorType::new(d, vec![1; 4]);
            let (lo, hi) = (constant(&mut g, Tensor::splat(&one, 0.0)), constant(&mut g, Tensor::splat(&one, 6.0)));
            y = g.add_node(Op::Binary(BinaryOp::Maximum), ty.clone(), &[y, lo], loc());
            y = g.add_node(Op::Binary(BinaryOp::Minimum), ty, &[y, hi], loc());
        }
        "clamp" => y = g.add_node(Op::Clamp { min: 0.0, max: 6.0 }, ty, &[y], loc()),
        "residual" => {
            let r = g.add_input(TensorType::new(d, [1, o, o, channels]), loc());
            y = g.add_node(Op::Binary(BinaryOp::Add), ty, &[y, r], loc());
        }
        _ => {}
    }
    g.add_output(y);
    g
}

/// Where the CPU has AVX-512 or AVX2, a depthwise convolution with channel multiplier 1 hands
/// each output row to the runtime's native loop (`f16c_runtime::ukernel::depthwise`), which also adds
/// the bias and applies a ReLU6 where that is all the epilogue does; compiled for the generated
/// loops, the generated loop runs instead (and compiled for AVX2 on an AVX-512 machine, the
/// AVX2 loop). Both give the reference's bits: f32, fp16 and bf16, channel
/// counts that leave vector tails, strides 1 and 2, each finish, values past 6 and NaNs.
#[test]
fn the_native_depthwise_loop_gives_the_generated_loops_bits() {
    if !f16c_runtime::libcalls::available(f16c_core::abi::Libcall::DepthwiseRow) {
        eprintln!("this CPU has no native depthwise loop: nothing to compare");
        return;
    }
    let mut rng = Rng(29);
    for d in FLOATS {
        for (size, channels, stride) in [(9, 3, 1), (8, 16, 2), (7, 20, 1), (5, 40, 2), (6, 72, 1)] {
            for finish in ["bias", "max_min", "clamp", "residual"] {
                let what = format!("depthwise {d} size={size} channels={channels} stride={stride} {finish}");
                let g = depthwise_finished(d, size, channels, stride, finish, &mut rng);
                let mut inputs = inputs_for(&g, &mut rng, -8.0, 8.0);
                // A NaN with a payload and an infinity in the image.
                let mut x: Vec<f32> = inputs[0].to_f32_vec();
                x[channels + 1] = f32::from_bits(0x7fa0_1234);
                x[2 * channels] = f32::INFINITY;
                let data = match d {
                    DType::F16 => Data::F16(x.iter().map(|&v| f16::from_f32(v)).collect()),
                    DType::BF16 => Data::BF16(x.iter().map(|&v| bf16::from_f32(v)).collect()),
                    _ => Data::F32(x),
                };
                inputs[0] = Tensor::new(inputs[0].shape().to_vec(), data).unwrap();
                check(&what, &g, &inputs, None);
                let host = f16c_compiler::backend::cranelift::Options::host().unwrap();
                let native = Model::compile_graph_with(&g, 2, &host).unwrap().run(&inputs).unwrap();
                let generated_loops = f16c_compiler::backend::cranelift::Options { loops: f16c_compiler::backend::cranelift::Loops::Generated, ..host };
                let generated = Model::compile_graph_with(&g, 2, &generated_loops).unwrap().run(&inputs).unwrap();
                if host.loops == f16c_compiler::backend::cranelift::Loops::Avx512 {
                    let avx2 = f16c_compiler::backend::cranelift::Options { loops: f16c_compiler::backend::cranelift::Loops::Avx2, ..host };
                    let narrow = Model::compile_graph_with(&g, 2, &avx2).unwrap().run(&inputs).unwrap();
                    assert_eq!(native[0].data().to_le_bytes(), narrow[0].data().to_le_bytes(), "{what}: the AVX-512 loop's bits differ from the AVX2 loop's");
                }
                assert_eq!(native[0].data().to_le_bytes(), generated[0].data().to_le_bytes(), "{what}: the native loop's bits differ");
            }
        }
    }
}

/// Softmax and layer norm each run as one row kernel, bit for bit the unfused graph's.
#[test]
fn softmax_and_layer_norm_are_single_kernels_bit_exact() {
    let mut rng = Rng(21);
    for d in FLOATS {
        for &n in SIZES {
            let rows = 3;
            for variant in ["softmax", "layer_norm", "layer_norm_f64", "escaping"] {
                if variant == "layer_norm_f64" && d != DType::F32 {
                    continue;
                }
                let mut g = Graph::new(variant);
                let x = g.add_input(TensorType::new(d, [rows, n]), loc());
                let y = match variant {
                    "softmax" => softmax(&mut g, x, d, rows, n),
                    "escaping" => {
                        // The residual sum is also a result: it leaves the region, which
                        // still fuses the rest.
                        let res = g.add_input(TensorType::new(d, [rows, n]), loc());
                        let h = g.add_node(Op::Binary(BinaryOp::Add), tensor_ty(d, &[rows, n]), &[x, res], loc());
                        g.add_output(h);
                        softmax(&mut g, h, d, rows, n)
                    }
                    _ => {
                        let res = g.add_input(TensorType::new(d, [rows, n]), loc());
                        layer_norm(&mut g, x, res, d, rows, n, variant == "layer_norm_f64", &mut rng)
                    }
                };
                g.add_output(y);
                let program = f16c_compiler::lower::lower(&g).unwrap();
                let rows_kernels = program.kernels.iter().filter(|k| matches!(k.kind, f16c_compiler::lower::KernelKind::Rows(_))).count();
                let expected = if variant == "escaping" { 2 } else { 1 };
                assert_eq!(program.kernels.len(), expected, "{variant} {d} n={n}: {:?}", program.kernels.iter().map(|k| &k.name).collect::<Vec<_>>());
                assert_eq!(rows_kernels, 1, "{variant} {d} n={n}");
                let inputs = inputs_for(&g, &mut rng, -4.0, 4.0);
                check(&format!("{variant} {d} n={n}"), &g, &inputs, None);
            }
        }
    }
}

/// The GEMM works through the reduction in chunks of 256 (`legal::KC`): matmuls whose `k` is
/// just below, at, above and a few times the chunk, and convs whose taps group into chunks
/// (100 channels), fill one exactly (256) or are split across two (300 channels).
#[test]
fn contractions_split_their_reduction_into_chunks_correctly() {
    let mut rng = Rng(5);
    for d in [DType::F32, DType::F16, DType::BF16] {
        // m = 4, one micro-panel, walks the whole reduction in one chunk.
        for (k, m) in [255, 256, 257, 600].into_iter().flat_map(|k| [(k, 9), (k, 4)]) {
            let n = 13;
            let mut g = Graph::new("matmul");
            let a = g.add_input(TensorType::new(d, [1, m, k]), loc());
            let b = constant(&mut g, random(&TensorType::new(d, [1, k, n]), &mut rng, -1.0, 1.0));
            let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
            let o = g.add_node(Op::MatMul, tensor_ty(d, &[1, m, n]), &[a, b, z1, z2], loc());
            g.add_output(o);
            let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
            let tol = contraction_tolerance(k, d != DType::F32);
            check(&format!("matmul {d} m={m} k={k}"), &g, &inputs, Some(tol));
        }
        // An f16 weight over 1 MiB as f32, used by one block of rows: widened chunk by chunk
        // in scratch rather than copied.
        if d != DType::F32 {
            let (m, k, n) = (5, 1100, 260);
            let mut g = Graph::new("matmul");
            let a = g.add_input(TensorType::new(d, [1, m, k]), loc());
            let b = constant(&mut g, random(&TensorType::new(d, [1, k, n]), &mut rng, -1.0, 1.0));
            let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
            let o = g.add_node(Op::MatMul, tensor_ty(d, &[1, m, n]), &[a, b, z1, z2], loc());
            g.add_output(o);
            let program = f16c_compiler::lower::lower(&g).unwrap();
            let artifact = f16c_compiler::backend::cranelift::compile(&program, &Default::default()).unwrap();
            assert!(artifact.functions.iter().all(|(name, _)| !name.ends_with("_widen_b")), "no f32 copy of a large weight");
            let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
            check(&format!("matmul {d} large weight"), &g, &inputs, Some(contraction_tolerance(k, true)));
        }
        for c in [100, 256, 300] {
            let (g, k) = conv_graph("conv", d, 5, c, 9, true);
            let inputs = inputs_for(&g, &mut rng, -1.0, 1.0);
            let tol = contraction_tolerance(k, d != DType::F32);
            check(&format!("conv {d} channels={c}"), &g, &inputs, Some(tol));
        }
    }
}

#[test]
fn epilogues_fuse_into_contractions_and_the_plan_is_near_its_lower_bound() {
    let (g, _) = conv_graph("conv", DType::F16, 16, 8, 12, true);
    let program = f16c_compiler::lower::lower(&g).unwrap();
    assert_eq!(program.kernels.len(), 1, "conv + add + clamp is one kernel: {:#?}", program.kernels.iter().map(|k| &k.name).collect::<Vec<_>>());
    for name in MODELS {
        let (mut module, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
        jit::prepare(&mut module, &CompileOptions::fp16()).unwrap();
        let program = f16c_compiler::lower::lower(&module.functions[0]).unwrap();
        let plan = &program.plan;
        assert!(plan.arena_bytes as f64 <= 1.2 * plan.lower_bound as f64, "{name}: arena {} vs lower bound {}", plan.arena_bytes, plan.lower_bound);
    }
}

/// A float cast folded into a copy (a transpose that converts, which the LLVM CPU backend asks
/// the lowering for) runs on the Cranelift backend too, bit for bit, though this backend does
/// not ask for it; so does an f32 pool whose result is cast to f16 or bf16 (folded for every
/// backend: the pool rounds at its store).
#[test]
fn casts_folded_into_copies_and_pools_match_the_reference_on_cranelift() {
    use f16c_compiler::backend::{cranelift::CRANELIFT, Backend};
    use f16c_compiler::lower::{lower_with, KernelKind, LowerOptions};
    let (mut copies, mut pools) = (0, 0);
    let folded = |name: &str| name.starts_with("transpose_last2") || name.contains("_pool_f32_to_");
    for case in f16c_tests::cases::parity_cases().into_iter().filter(|c| folded(&c.name)) {
        let program = lower_with(&case.graph, LowerOptions { converting_copies: true, multi_read_epilogues: false, plain_epilogues: false, wide_math_epilogues: false, contraction_views: false, concatenated_inputs: false }).unwrap();
        for k in &program.kernels {
            match &k.kind {
                KernelKind::Copy(c) if c.converts() => copies += 1,
                KernelKind::Pool(p) if p.input.ty.dtype != p.output.ty.dtype => pools += 1,
                _ => continue,
            }
            assert_eq!(program.kernels.len(), 1, "{}: the cast folds into its neighbour", case.name);
        }
        let artifact = CRANELIFT.artifact(&program).unwrap();
        let got = f16c_runtime::loader::load(artifact, 2).and_then(|e| e.run(&case.inputs)).map_err(|e| e.to_string());
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        let failures = case.failures(got, &want, 0);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
    assert_eq!(copies, 8, "f16 and bf16, a cast before and after, n = 1 and 17");
    assert_eq!(pools, 8, "f16 and bf16, max and average, n = 7 and 17");
}

/// Transposes (and a pad) that convert between f32 and f16 (a cast folded into the copy, as the
/// JIT's lowering does): runs staged and converted in bulk, in more than one run where the output
/// exceeds the staging area (an image's NCHW → NHWC), element by element where runs are short;
/// the reference's bits, NaN payloads, infinities, subnormals and overflow included.
#[test]
fn converting_transposes_match_the_reference_bit_for_bit() {
    let mut rng = Rng(23);
    let specials = [f32::NAN, -f32::NAN, f32::from_bits(0x7fd0_2000), f32::INFINITY, -f32::INFINITY, 7e4, -65520.0, 65519.0, 3e-8, -1e-7, 6e-5, -0.0];
    for (shape, perms) in [([3, 64, 64], [1, 2, 0]), ([5, 33, 40], [0, 2, 1]), ([2, 3, 17], [2, 0, 1]), ([1, 9, 4100], [0, 2, 1])] {
        let out: Vec<usize> = perms.iter().map(|&p| shape[p]).collect();
        for (from, to) in [(DType::F32, DType::F16), (DType::F16, DType::F32)] {
            // The cast before the transpose (it reads the input) and after it (it writes the
            // result).
            for cast_first in [true, false] {
                let mut g = Graph::new("converting_transpose");
                let x = g.add_input(TensorType::new(from, shape), loc());
                let transpose = |g: &mut Graph, v, d| g.add_node(Op::Transpose { perms: perms.to_vec() }, tensor_ty(d, &out), &[v], loc());
                let y = if cast_first {
                    let c = g.add_node(Op::Cast, tensor_ty(to, &shape), &[x], loc());
                    transpose(&mut g, c, to)
                } else {
                    let t = transpose(&mut g, x, from);
                    g.add_node(Op::Cast, tensor_ty(to, &out), &[t], loc())
                };
                g.add_output(y);
                let program = f16c_compiler::driver::lower_for(&g, &f16c_compiler::backend::cranelift::CRANELIFT).unwrap();
                assert_eq!(program.kernels.len(), 1, "{shape:?} {from}->{to}: the cast folds into the transpose");
                let n: usize = shape.iter().product();
                let mut v: Vec<f32> = (0..n).map(|_| rng.uniform(-3.0, 3.0)).collect();
                for (i, s) in specials.iter().enumerate() {
                    v[(i * 7919) % n] = *s;
                }
                let input = f16c_dialect::semantics::cast(&Tensor::from_f32(shape.to_vec(), v).unwrap(), from);
                let want = reference::run(&g, std::slice::from_ref(&input)).unwrap();
                let got = run_jit(&g, &[input]);
                f16c_tests::cases::same_bits_and_nans(&got[0], &want[0]).unwrap_or_else(|e| panic!("{shape:?} perms {perms:?} {from}->{to} cast first {cast_first}: {e}"));
            }
        }
    }
    // A pad that converts: the fill first, then its one move's rows (not dense in the output)
    // converted in runs of one padded row.
    for (from, to) in [(DType::F32, DType::F16), (DType::F16, DType::F32)] {
        let mut g = Graph::new("converting_pad");
        let x = g.add_input(TensorType::new(from, [2, 40, 40]), loc());
        let c = g.add_node(Op::Cast, tensor_ty(to, &[2, 40, 40]), &[x], loc());
        let pads = g.add_node(Op::ConstShape(vec![0, 0, 1, 2, 3, 1]), ValueType::Shape(6), &[], loc());
        let fill = constant(&mut g, Tensor::splat(&TensorType::new(to, [1]), -2.5));
        let y = g.add_node(Op::Pad, tensor_ty(to, &[2, 43, 44]), &[c, pads, fill], loc());
        g.add_output(y);
        let program = f16c_compiler::driver::lower_for(&g, &f16c_compiler::backend::cranelift::CRANELIFT).unwrap();
        assert_eq!(program.kernels.len(), 1, "pad {from}->{to}: the cast folds into the pad");
        let mut v: Vec<f32> = (0..3200).map(|_| rng.uniform(-3.0, 3.0)).collect();
        v[17] = f32::NAN;
        v[1234] = 7e4;
        let input = f16c_dialect::semantics::cast(&Tensor::from_f32(vec![2, 40, 40], v).unwrap(), from);
        let want = reference::run(&g, std::slice::from_ref(&input)).unwrap();
        let got = run_jit(&g, &[input]);
        f16c_tests::cases::same_bits_and_nans(&got[0], &want[0]).unwrap_or_else(|e| panic!("pad {from}->{to}: {e}"));
    }
}

/// The JIT emits the contract's f32 `exp`, `tanh`, `erf` (and `sigmoid` through `exp`) inline on
/// vector lanes ([`f16c_core::math`]): the same bits as the reference on about a million inputs.
#[test]
fn inline_math_functions_match_the_contract_bit_for_bit() {
    for case in f16c_tests::cases::math_function_cases() {
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        let got = Model::compile_graph(&case.graph, 2).unwrap().run(&case.inputs).unwrap();
        f16c_tests::cases::same_bits_and_nans(&got[0], &want[0]).unwrap_or_else(|e| panic!("{}: JIT: {e}", case.name));
    }
}

/// Row kernels on the rows that decide their corner cases: PyTorch's safe softmax (all -inf,
/// partly -inf, NaN rows), maxima/minima whose result is a zero of either sign (the four-lane
/// maximum rescans such a row in order) and torch-mlir's layer norm (its runs of stages one loop
/// each, the f64 sums in them; constant, huge, tiny, inf and NaN rows), and softmaxes of long
/// rows with and without the all-masked test (the runtime's softmax loop: lanes, tails, groups of
/// four, eight and fewer rows), on the JIT with one and two threads.
#[test]
fn row_kernel_corner_cases_match_the_reference_bit_for_bit() {
    let mut cases = vec![f16c_tests::cases::safe_softmax_case(), f16c_tests::cases::row_extremes_case(), f16c_tests::cases::layer_norm_case()];
    cases.extend(f16c_tests::cases::long_softmax_cases());
    for case in cases {
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        for threads in [1, 2] {
            let got = Model::compile_graph(&case.graph, threads).unwrap().run(&case.inputs).map_err(|e| e.to_string());
            let failures = case.failures(got, &want, 0);
            assert!(failures.is_empty(), "{} threads: {failures:?}", threads);
        }
    }
}

/// An f32 matmul or convolution followed by SiLU (`y · sigmoid(y)`, reading its result twice),
/// a sigmoid gate or GELU (the erf of `y / √2`) takes them as its epilogue on the JIT, the
/// sigmoid (erf) computed for each block of tiles by the runtime's sixteen-lane loop (SiLU's
/// block stored as `y`, then made `y · sigmoid(y)` in place by the runtime's SiLU loop): the
/// same bits as the same graph with the
/// activation a kernel of its own (the GEMM's result also an output, so nothing fuses), across
/// ragged rows and columns, reduction chunks, column groups, a batch and a bias.
#[test]
fn a_gemms_silu_epilogue_computed_a_block_at_a_time_gives_the_unfused_bits() {
    use f16c_dialect::{ConvAttrs, UnaryOp};
    let mut rng = Rng(41);
    let d = DType::F32;
    // (matmul batch, rows, k, n) and (conv pixels, k, n).
    let gemms: [(bool, usize, usize, usize, usize); 6] = [(false, 2, 13, 40, 19), (false, 1, 70, 600, 40), (false, 1, 3, 8, 8), (true, 1, 49, 320, 1280), (true, 1, 200, 24, 96), (true, 1, 9, 5, 3)];
    for (conv, batch, m, k, n) in gemms {
        // 0: SiLU, 1: a sigmoid gate, 2: GELU (`y · (erf(y · c) + 1) · ½`: the erf of a value
        // the epilogue computes from y).
        for form in 0..3 {
            let gate = form == 1;
            let build = |also_raw: bool, rng: &mut Rng| {
                let mut g = Graph::new("silu");
                let shift = constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
                let (shape, y) = if conv {
                    let x = g.add_input(TensorType::new(d, [1, 1, m, k]), loc());
                    let w = constant(&mut g, random(&TensorType::new(d, [n, 1, 1, k]), rng, -1.0, 1.0));
                    let b = constant(&mut g, random(&TensorType::new(d, [n]), rng, -1.0, 1.0));
                    let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
                    let a = ConvAttrs { pad: [0; 4], stride: [1, 1], dilation: [1, 1], acc: DType::F32 };
                    (vec![1, 1, m, n], g.add_node(Op::Conv2d(a), tensor_ty(d, &[1, 1, m, n]), &[x, w, b, z1, z2], loc()))
                } else {
                    let x = g.add_input(TensorType::new(d, [batch, m, k]), loc());
                    let w = constant(&mut g, random(&TensorType::new(d, [batch, k, n]), rng, -1.0, 1.0));
                    let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
                    (vec![batch, m, n], g.add_node(Op::MatMul, tensor_ty(d, &[batch, m, n]), &[x, w, z1, z2], loc()))
                };
                let out = if form == 2 {
                    erf_gelu(&mut g, y, d, &shape, shift)
                } else {
                    let s = g.add_node(Op::Unary(UnaryOp::Sigmoid), tensor_ty(d, &shape), &[y], loc());
                    if gate { s } else { g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, &shape), &[y, s, shift], loc()) }
                };
                g.add_output(out);
                if also_raw {
                    g.add_output(y);
                }
                g
            };
            let what = format!("{} batch={batch} m={m} k={k} n={n} {}", if conv { "conv" } else { "matmul" }, ["silu", "sigmoid", "gelu"][form]);
            let (fused, unfused) = (build(false, &mut Rng(7)), build(true, &mut Rng(7)));
            let inputs = inputs_for(&fused, &mut rng, -4.0, 4.0);
            let want = Model::compile_graph(&unfused, 2).unwrap().run(&inputs).unwrap();
            // On the AVX-512 loop SiLU is finished with the tiles by the runtime's sixteen-lane
            // loop (`FinishTilesF32`); on the AVX2 loop the block is stored as x first.
            use f16c_compiler::backend::cranelift::{Loops, Options};
            let host = Options::host().unwrap();
            let mut options = vec![(host, host.loops == Loops::Avx512)];
            if host.loops == Loops::Avx512 {
                options.push((Options { loops: Loops::Avx2, ..host }, false));
            }
            for (options, wide) in options {
                let model = Model::compile_graph_with(&fused, 2, &options).unwrap();
                let plans: Vec<String> = model.executor().unwrap().manifest().kernels.iter().map(|k| k.plan.clone()).collect();
                let block = match form {
                    0 if wide => "the tiles finished as x · sigmoid(x) by the runtime's 16-lane loop",
                    0 => "the block stored as x, then x · sigmoid(x) in place",
                    1 => "the epilogue's sigmoid for the block at once",
                    _ => "the epilogue's erf for the block at once",
                };
                assert!(plans.iter().any(|p| p.contains(block)), "{what}: not fused as a block: {plans:?}");
                assert_eq!(plans.len(), 1, "{what}: {plans:?}");
                let got = model.run(&inputs).unwrap();
                assert_eq!(got[0].data().to_le_bytes(), want[0].data().to_le_bytes(), "{what} ({block}): the block's epilogue changed the bits");
            }
        }
    }
}

/// A transpose that moves at least 64 KiB runs a slice of its outermost loop per work item
/// (an attention's heads back to tokens, and one whose innermost dimension moves, unrolled):
/// the reference's bits on one, two and three threads, in f32, f16 and i8.
#[test]
fn large_transposes_split_into_work_items_copy_bits() {
    let mut rng = Rng(77);
    // (A type, and the type a cast after the transpose makes of it: the cast folds into the
    // copy, which converts as it moves.)
    for (d, to) in [(DType::F32, None), (DType::F16, None), (DType::I8, None), (DType::F32, Some(DType::BF16))] {
        for (shape, perms) in [([6usize, 300, 64], [1usize, 0, 2]), ([3, 130, 70], [2, 0, 1]), ([2, 5, 4000], [1, 0, 2])] {
            let out: Vec<usize> = perms.iter().map(|&p| shape[p]).collect();
            let mut g = Graph::new("transpose");
            let x = g.add_input(TensorType::new(d, shape), loc());
            let o = g.add_node(Op::Transpose { perms: perms.to_vec() }, tensor_ty(d, &out), &[x], loc());
            let o = match to {
                Some(t) => g.add_node(Op::Cast, tensor_ty(t, &out), &[o], loc()),
                None => o,
            };
            g.add_output(o);
            let input = random(&TensorType::new(d, shape), &mut rng, -100.0, 100.0);
            let want = reference::run(&g, std::slice::from_ref(&input)).unwrap();
            for threads in [1, 2, 3] {
                let got = Model::compile_graph(&g, threads).unwrap().run(std::slice::from_ref(&input)).unwrap();
                same_bits(&got[0], &want[0]).unwrap_or_else(|e| panic!("{d} {shape:?} by {perms:?}, {threads} threads: {e}"));
            }
        }
    }
}

/// A depthwise convolution followed by SiLU (`y · sigmoid(y)`, EfficientNet's) takes it as its
/// epilogue on the JIT: the runtime's row loop finishes `y` (bias added) and one call of its
/// sixteen-lane SiLU turns the row into `y · sigmoid(y)` in place. The reference's bits, with
/// and without the convolution's own result also an output (then nothing fuses), across
/// channel counts that are and are not a multiple of the vector width, strides one and two,
/// padding, and one to three threads.
#[test]
fn a_depthwise_convolutions_silu_epilogue_gives_the_reference_bits() {
    use f16c_dialect::{ConvAttrs, UnaryOp};
    let mut rng = Rng(97);
    let d = DType::F32;
    for (h, w, c, stride) in [(9usize, 14usize, 16usize, 1usize), (7, 11, 19, 2), (12, 12, 96, 1), (5, 40, 8, 2)] {
        for also_raw in [false, true] {
            let mut g = Graph::new("dw_silu");
            let x = g.add_input(TensorType::new(d, [1, h, w, c]), loc());
            let weight = constant(&mut g, random(&TensorType::new(d, [3, 3, c, 1]), &mut rng, -1.0, 1.0));
            let bias = constant(&mut g, random(&TensorType::new(d, [c]), &mut rng, -1.0, 1.0));
            let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
            let (pb, pr) = if stride == 2 { (h % 2, w % 2) } else { (1, 1) };
            let a = ConvAttrs { pad: [1, pb, 1, pr], stride: [stride, stride], dilation: [1, 1], acc: DType::F32 };
            let (oh, ow) = ((h + 1 + pb - 3) / stride + 1, (w + 1 + pr - 3) / stride + 1);
            let shape = [1, oh, ow, c];
            let y = g.add_node(Op::DepthwiseConv2d(a), tensor_ty(d, &shape), &[x, weight, bias, z1, z2], loc());
            let s = g.add_node(Op::Unary(UnaryOp::Sigmoid), tensor_ty(d, &shape), &[y], loc());
            let shift = constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
            let out = g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, &shape), &[y, s, shift], loc());
            g.add_output(out);
            if also_raw {
                g.add_output(y);
            }
            let input = random(&TensorType::new(d, [1, h, w, c]), &mut rng, -4.0, 4.0);
            let want = reference::run(&g, std::slice::from_ref(&input)).unwrap();
            for threads in [1, 2, 3] {
                let got = Model::compile_graph(&g, threads).unwrap().run(std::slice::from_ref(&input)).unwrap();
                for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                    same_bits(a, b).unwrap_or_else(|e| panic!("{h}x{w}x{c} stride {stride}, raw {also_raw}, {threads} threads, result {k}: {e}"));
                }
            }
        }
    }
}

/// An elementwise SiLU, sigmoid gate or GELU (erf of `x · c`) on rows of 64 and more runs its
/// math a block of the row at a time by the runtime's sixteen-lane loop, in f32 and in bf16 (a
/// bf16 input widened into scratch first, the op's f32 value rounded to bf16 as the op rounds
/// it), a SiLU the whole row by one call of the runtime's SiLU loop of its type (fp16's the
/// F16C micro-kernel, where this CPU has it: blocks of 64 and a tail): the reference's bits,
/// rows shorter and longer than a block (4096), one and two threads.
#[test]
fn elementwise_math_by_the_runtimes_loop_gives_the_reference_bits_in_f32_bf16_and_f16() {
    use f16c_dialect::UnaryOp;
    let mut rng = Rng(131);
    let f16c = f16c_runtime::libcalls::available(f16c_core::abi::Libcall::SiluArrayF16);
    for d in [DType::F32, DType::BF16, DType::F16] {
        for len in [64usize, 200, 4100] {
            for form in 0..3 {
                let shape = [3, len];
                let mut g = Graph::new("wide_math");
                let x = g.add_input(TensorType::new(d, shape), loc());
                let shift = constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
                let out = match form {
                    0 => {
                        let s = g.add_node(Op::Unary(UnaryOp::Sigmoid), tensor_ty(d, &shape), &[x], loc());
                        g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, &shape), &[x, s, shift], loc())
                    }
                    1 => g.add_node(Op::Unary(UnaryOp::Sigmoid), tensor_ty(d, &shape), &[x], loc()),
                    _ => erf_gelu(&mut g, x, d, &shape, shift),
                };
                g.add_output(out);
                let input = random(&TensorType::new(d, shape), &mut rng, -8.0, 8.0);
                let want = reference::run(&g, std::slice::from_ref(&input)).unwrap();
                for threads in [1, 2] {
                    let model = Model::compile_graph(&g, threads).unwrap();
                    if form == 0 && (d != DType::F16 || f16c) {
                        let plans: Vec<String> = model.executor().unwrap().manifest().kernels.iter().map(|k| k.plan.clone()).collect();
                        let by = if d == DType::F16 { "the runtime's F16C loop" } else { "the runtime's 16-lane loop" };
                        assert!(plans.iter().any(|p| p.contains(&format!("x · sigmoid(x) in {d} by {by}"))), "{d}: {plans:?}");
                    }
                    let got = model.run(std::slice::from_ref(&input)).unwrap();
                    same_bits(&got[0], &want[0]).unwrap_or_else(|e| panic!("{d} rows of {len}, form {form}, {threads} threads: {e}"));
                }
            }
        }
    }
}

/// GELU of `y` as torch writes it, `y · (erf(y · (1/√2)) + 1) · ½`, its constants one value of
/// type `d` broadcast over `shape`; `shift` is the multiplies' zero shift.
fn erf_gelu(g: &mut Graph, y: f16c_dialect::NodeId, d: DType, shape: &[usize], shift: f16c_dialect::NodeId) -> f16c_dialect::NodeId {
    use f16c_dialect::UnaryOp;
    let mut one = |v: f32| constant(g, Tensor::splat(&TensorType::new(d, vec![1; shape.len()]), v as f64));
    let (c, unit, half) = (one(std::f32::consts::FRAC_1_SQRT_2), one(1.0), one(0.5));
    let t = g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, shape), &[y, c, shift], loc());
    let e = g.add_node(Op::Unary(UnaryOp::Erf), tensor_ty(d, shape), &[t], loc());
    let u = g.add_node(Op::Binary(BinaryOp::Add), tensor_ty(d, shape), &[e, unit], loc());
    let h = g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, shape), &[u, half, shift], loc());
    g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, shape), &[y, h, shift], loc())
}

/// A softmax as the precision pass leaves it in bf16 (the maximum and the difference in bf16,
/// exp, sum and product in f32, the result rounded to bf16; with PyTorch's all-masked test
/// right after the difference or after the product, as the graph's order puts it), or an f32
/// softmax whose result is rounded to bf16 (a bf16 BERT's attention), is one call of the
/// runtime's `SoftmaxRowsBf16` per work item (in fp16, of `SoftmaxRowsF16`, where this CPU
/// has the micro-kernel), with the reference's bits: rows around the
/// runtime's sixteen lanes, a row of -inf (masked: filled; else NaN), a NaN. Rows of one
/// value stay on the generic rows code (every value is then a full row: the test's i1 row was
/// kept in scratch as f32, and Cranelift panicked on the select reading it back).
#[test]
fn bf16_softmaxes_run_on_the_runtime_loop_with_the_reference_bits() {
    let mut rng = Rng(37);
    let rows = 9;
    // (input type, result type): as the precision pass leaves a softmax in bf16 or fp16, or
    // f32 rounded to bf16.
    for (input, out) in [(DType::BF16, DType::BF16), (DType::F32, DType::BF16), (DType::F16, DType::F16)] {
        for &n in &[1usize, 7, 16, 17, 197] {
            for masked in [None, Some("after the difference"), Some("after the product")] {
                let mut g = Graph::new("softmax_bf16");
                let (full, one) = (|d: DType| tensor_ty(d, &[rows, n]), |d: DType| tensor_ty(d, &[rows, 1]));
                let x = g.add_input(TensorType::new(input, [rows, n]), loc());
                let shift = constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
                let mask = match input {
                    DType::BF16 => Data::BF16(vec![bf16::NEG_INFINITY]),
                    DType::F16 => Data::F16(vec![f16::NEG_INFINITY]),
                    _ => Data::F32(vec![f32::NEG_INFINITY]),
                };
                let mask = constant(&mut g, Tensor::new(vec![1, 1], mask).unwrap());
                let fill = constant(&mut g, Tensor::new(vec![1, 1], Data::F32(vec![0.0])).unwrap());
                let m = g.add_node(Op::Reduce { kind: ReduceKind::Max, axis: 1 }, one(input), &[x], loc());
                let s = g.add_node(Op::Binary(BinaryOp::Sub), full(input), &[x, m], loc());
                let test = |g: &mut Graph| g.add_node(Op::Binary(BinaryOp::Equal), one(DType::I1), &[m, mask], loc());
                let early = (masked == Some("after the difference")).then(|| test(&mut g));
                let c = if input != DType::F32 { g.add_node(Op::Cast, full(DType::F32), &[s], loc()) } else { s };
                let e = g.add_node(Op::Unary(f16c_dialect::UnaryOp::Exp), full(DType::F32), &[c], loc());
                let sum = g.add_node(Op::Reduce { kind: ReduceKind::Sum, axis: 1 }, one(DType::F32), &[e], loc());
                let r = g.add_node(Op::Unary(f16c_dialect::UnaryOp::Reciprocal), one(DType::F32), &[sum], loc());
                let p = g.add_node(Op::Binary(BinaryOp::Mul), full(DType::F32), &[e, r, shift], loc());
                let p = match masked {
                    Some(_) => {
                        let t = early.unwrap_or_else(|| test(&mut g));
                        g.add_node(Op::Select, full(DType::F32), &[t, fill, p], loc())
                    }
                    None => p,
                };
                let y = g.add_node(Op::Cast, full(out), &[p], loc());
                g.add_output(y);
                let what = format!("{input} n={n} masked {masked:?}");
                let artifact = f16c_compiler::driver::artifact(&g, f16c_compiler::target::Target::X86_64).unwrap();
                let plans: Vec<&str> = artifact.manifest.kernels.iter().map(|k| k.plan.as_str()).collect();
                // (Rows of one value: every value is the row's scalar; the generic rows code. The
                // f32 form's test comes after the product only.)
                let form = match input {
                    DType::BF16 => "the softmax in bf16",
                    DType::F16 => "the softmax in f16",
                    _ => "the softmax in f32, the result rounded to bf16",
                };
                let f16_loop = input != DType::F16 || f16c_runtime::libcalls::available(f16c_core::abi::Libcall::SoftmaxRowsF16);
                if n > 1 && f16_loop && (input != DType::F32 || masked != Some("after the difference")) {
                    assert!(plans.len() == 1 && plans[0].contains(form), "{what}: {plans:?}");
                    assert_eq!(plans[0].contains("mask value filled"), masked.is_some(), "{what}: {plans:?}");
                }
                let mut values = inputs_for(&g, &mut rng, -30.0, 30.0).remove(0).to_f64_vec();
                values[..n].fill(f64::NEG_INFINITY);
                values[2 * n + n / 2] = f64::NAN;
                let data = match input {
                    DType::BF16 => Data::BF16(values.iter().map(|&v| bf16::from_f64(v)).collect()),
                    DType::F16 => Data::F16(values.iter().map(|&v| f16::from_f64(v)).collect()),
                    _ => Data::F32(values.iter().map(|&v| v as f32).collect()),
                };
                check(&what, &g, &[Tensor::new(vec![rows, n], data).unwrap()], None);
            }
        }
    }
}
