//! The shared LLVM emitter run on this machine: every parity case compiled by the LLVM x86-64
//! backend (the family bodies the NVPTX backend wraps in GPU threads, including the paired
//! half2 form and the row regions), loaded by the runtime's CPU executor and compared with the
//! reference interpreter: bit for bit, math functions included (they go through the runtime's
//! table); contractions within the reduction tolerance. Every shared model matches too.

use f16c_compiler::backend::llvm_cpu::X86_64 as LlvmCpuBackend;
use f16c_compiler::backend::Backend;
use f16c_compiler::driver::{self, Options};
use f16c_compiler::policy::Precision;
use f16c_compiler::target::Target;
use f16c_dialect::import::parse_file;
use f16c_dialect::{reference, Graph, Tensor};
use f16c_runtime::{loader, npy};
use f16c_tests::cases::{parity_cases, vector_edge_cases};
use f16c_tests::{max_rel_to_peak, model_path, MODELS};

/// Values spread over [-3, 3) by a multiplicative hash of their index and `seed`.
fn values(shape: &[usize], seed: u32) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_f32(shape.to_vec(), (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) >> 8) as f32 / (1 << 24) as f32 * 6.0 - 3.0).collect()).unwrap()
}

fn run(g: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
    run_on(&LlvmCpuBackend, g, inputs)
}

fn run_on(backend: &f16c_compiler::backend::llvm_cpu::LlvmCpuBackend, g: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
    let program = driver::lower_for(g, backend).map_err(|d| d.to_string())?;
    let artifact = backend.artifact(&program).map_err(|e| e.to_string())?;
    let exec = loader::load(artifact, 2).map_err(|e| e.to_string())?;
    exec.run(inputs).map_err(|e| e.to_string())
}

/// The AVX-512 level (`--cpu=x86-64-v4`: zmm micro-kernels, 12 × 32 tiles) runs the parity
/// suite on a machine that has AVX-512; elsewhere its artifacts must be refused before loading.
/// (`x86-64-v4+bf16`, the level `native` picks where the machine also has AVX512-BF16, runs
/// the suite in [`every_parity_case_matches_the_reference`] there; elsewhere it is refused.)
#[test]
fn the_avx512_level_matches_the_reference_or_is_refused_without_avx512() {
    use f16c_compiler::backend::llvm_cpu::x86_64;
    use f16c_compiler::target::{Cpu, X86Level};
    let (v4, v4_bf16) = (x86_64(Cpu::Level(X86Level::V4)).expect("a level"), x86_64(Cpu::Level(X86Level::V4Bf16)).expect("a level"));
    let native = x86_64(Cpu::Native).expect("a level");
    let native_is_v4 = std::ptr::eq(native, v4) || std::ptr::eq(native, v4_bf16);
    let mut failures = Vec::new();
    let cases = parity_cases();
    if !std::ptr::eq(native, v4_bf16) {
        let bf16 = cases.iter().find(|c| c.name.contains("bf16")).expect("a bf16 case");
        let e = run_on(v4_bf16, &bf16.graph, &bf16.inputs).expect_err("an AVX512-BF16 artifact on a machine without it");
        assert!(e.contains("CPU features this machine lacks"), "{e}");
    }
    for case in cases.into_iter().chain(vector_edge_cases()) {
        let got = run_on(v4, &case.graph, &case.inputs);
        if !native_is_v4 {
            let e = got.expect_err("an AVX-512 artifact on a machine without AVX-512");
            assert!(e.contains("CPU features this machine lacks"), "{e}");
            return;
        }
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        failures.extend(case.failures(got, &want, 0));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_parity_case_matches_the_reference() {
    let mut failures = Vec::new();
    for case in parity_cases().into_iter().chain(vector_edge_cases()) {
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        failures.extend(case.failures(run(&case.graph, &case.inputs), &want, 0));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Matmuls whose B is computed at run time ([`f16c_tests::cases::run_time_b_cases`]): packed
/// per run a row per vector where a panel lies inside B, element by element where it does not,
/// at every x86-64 level this machine runs (x86-64-v4: sixteen lanes, the columns past `n`
/// masked off; x86-64-v4+bf16: the bf16 cases in pairs).
#[test]
fn run_time_b_panels_give_the_reference_results() {
    use f16c_compiler::backend::llvm_cpu::x86_64;
    use f16c_compiler::target::{Cpu, X86Level};
    let mut failures = Vec::new();
    let levels = [X86Level::V3, X86Level::V4, X86Level::V4Bf16].into_iter().filter(|&l| l <= X86Level::host());
    let cases = f16c_tests::cases::run_time_b_cases();
    for level in levels {
        let backend = x86_64(Cpu::Level(level)).expect("a level");
        for case in &cases {
            let want = reference::run(&case.graph, &case.inputs).unwrap();
            failures.extend(case.failures(run_on(backend, &case.graph, &case.inputs), &want, 0).into_iter().map(|f| format!("{level}: {f}")));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_model_matches_the_reference() {
    for name in MODELS {
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        for precision in [Precision::Fp32, Precision::Fp16] {
            let (mut module, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
            driver::prepare(&mut module, &Options::new(Target::X86_64).with_precision(precision), &[]).unwrap();
            let g = &module.functions[0];
            let want = reference::run(g, std::slice::from_ref(&input)).unwrap();
            let got = run(g, std::slice::from_ref(&input)).unwrap_or_else(|e| panic!("{name} {}: {e}", precision.name()));
            let err = max_rel_to_peak(&got[0], &want[0]);
            let tol = if precision == Precision::Fp32 { 1e-5 } else { 4.0 / 2048.0 };
            assert!(err <= tol, "{name} {}: {err:e} > {tol:e}", precision.name());
        }
    }
}

/// A program compiled in parts (`f16c compile --jobs`: each part optimised and generated on a
/// thread of its own, the objects linked together) computes what the whole module computes,
/// bit for bit, NaNs included: every shared model in every precision, in one and in three parts.
#[test]
fn a_program_compiled_in_parts_computes_the_same_bits() {
    use f16c_compiler::backend::llvm_cpu::Output;
    use f16c_compiler::backend::Emit;
    for name in MODELS {
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        for precision in [Precision::Fp32, Precision::Fp16, Precision::Bf16] {
            let (mut module, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
            driver::prepare(&mut module, &Options::new(Target::X86_64).with_precision(precision), &[]).unwrap();
            let program = driver::lower_for(&module.functions[0], &LlvmCpuBackend).unwrap();
            let what = format!("{name} {}", precision.name());
            let parts = LlvmCpuBackend.compile(&program, Output::Kernels, Emit::Lib, 3).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(parts.code.len(), 3, "{what}: three objects");
            let run = |jobs| {
                let artifact = LlvmCpuBackend.artifact_in(&program, jobs).unwrap_or_else(|e| panic!("{what}: {e}"));
                loader::load(artifact, 2).unwrap().run(std::slice::from_ref(&input)).unwrap_or_else(|e| panic!("{what}: {e}"))
            };
            let (whole, split) = (run(1), run(3));
            for (a, b) in whole.iter().zip(&split) {
                f16c_tests::cases::same_bits_and_nans(b, a).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
    }
}

/// The contract's f32 `exp`, `tanh`, `erf` and `sigmoid`, emitted inline (vectorised by LLVM):
/// the same bits as the reference on about a million inputs, NaN payloads included.
#[test]
fn inline_math_functions_match_the_contract_bit_for_bit() {
    for case in f16c_tests::cases::math_function_cases() {
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        let got = run(&case.graph, &case.inputs).unwrap();
        f16c_tests::cases::same_bits_and_nans(&got[0], &want[0]).unwrap_or_else(|e| panic!("{}: LLVM x86-64: {e}", case.name));
    }
}

/// Attention with 24 query rows in each of two heads (its scores, their softmax and the
/// products with the values, three kernels in a row): the LLVM backend's artifact runs them in
/// four bands of twelve rows, the JIT's (Cranelift's) in two of twenty-four, interleaved, with
/// the scores and the probabilities in per-thread windows only; the results are, bit for bit,
/// those of the same steps run one after the other over whole buffers (what a runtime that
/// ignores the bands does), on one thread and on two, and the reference's within the
/// reduction tolerance. In fp16 the LLVM backend's products widen their fp16 probabilities
/// to f32 band by band too (a fourth step in the group, its f32 rows a third window).
#[test]
fn attention_runs_in_bands_of_rows_with_the_bits_of_whole_kernels() {
    let text = r#"
func.func @forward(%q: tensor<2x24x16xf32>, %k: tensor<2x16x36xf32>, %v: tensor<2x36x8xf32>) -> tensor<2x24x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = tosa.matmul %q, %k, %zp, %zp : (tensor<2x24x16xf32>, tensor<2x16x36xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x36xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<2x24x36xf32>) -> tensor<2x24x1xf32>
  %d = tosa.sub %s, %m : (tensor<2x24x36xf32>, tensor<2x24x1xf32>) -> tensor<2x24x36xf32>
  %e = tosa.exp %d : (tensor<2x24x36xf32>) -> tensor<2x24x36xf32>
  %z = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x24x36xf32>) -> tensor<2x24x1xf32>
  %r = tosa.reciprocal %z : (tensor<2x24x1xf32>) -> tensor<2x24x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<2x24x36xf32>, tensor<2x24x1xf32>, tensor<1xi8>) -> tensor<2x24x36xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x24x36xf32>, tensor<2x36x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x8xf32>
  return %o : tensor<2x24x8xf32>
}
"#;
    let mut module = f16c_dialect::import::parse_module(text, "bands.mlir").unwrap();
    let f32_graph = module.functions[0].clone();
    let g = &f32_graph;
    let inputs = [values(&[2, 24, 16], 1), values(&[2, 16, 36], 2), values(&[2, 36, 8], 3)];
    // The banded artifact's results against the same steps run whole, on one and two threads,
    // and against the reference's (`want`) within `tol`.
    let same_as_whole = |what: &str, banded: &f16c_core::artifact::Artifact, want: &Tensor, tol: f64| {
        let mut plain = banded.clone();
        for s in &mut plain.manifest.steps {
            s.interleave = None;
        }
        for threads in [1, 2] {
            let got = loader::load(banded.clone(), threads).unwrap().run(&inputs).unwrap();
            let whole = loader::load(plain.clone(), threads).unwrap().run(&inputs).unwrap();
            f16c_tests::cases::same_bits_and_nans(&got[0], &whole[0]).unwrap_or_else(|e| panic!("{what}, {threads} threads: {e}"));
            let err = max_rel_to_peak(&got[0], want);
            assert!(err <= tol, "{what}, {threads} threads: {err:e} from the reference");
        }
    };
    let want = reference::run(g, &inputs).unwrap();
    let llvm = LlvmCpuBackend.artifact(&driver::lower_for(g, &LlvmCpuBackend).unwrap()).unwrap();
    let jit = driver::artifact(g, Target::X86_64).unwrap();
    for (what, banded, blocks, rows) in [("llvm", llvm, 4, 12), ("jit", jit, 2, 24)] {
        let group = banded.manifest.steps.iter().find_map(|s| s.interleave.clone()).unwrap_or_else(|| panic!("{what}: a banded group"));
        assert_eq!((group.steps, group.blocks, group.windows.len()), (3, blocks, 2), "{what}: {group:?}");
        let plan = &banded.manifest.kernels.iter().find(|k| k.plan.contains("bands")).expect("a plan that says so").plan;
        assert!(plan.contains(&format!("{blocks} bands of {rows} rows")), "{what}: {plan}");
        same_as_whole(what, &banded, &want[0], 1e-5);
    }
    driver::prepare(&mut module, &Options::new(Target::X86_64).with_precision(Precision::Fp16), &[]).unwrap();
    let g16 = &module.functions[0];
    let banded = LlvmCpuBackend.artifact(&driver::lower_for(g16, &LlvmCpuBackend).unwrap()).unwrap();
    let group = banded.manifest.steps.iter().find_map(|s| s.interleave.clone()).expect("fp16: a banded group");
    assert_eq!((group.steps, group.blocks, group.windows.len()), (4, 4, 3), "fp16: {group:?}");
    let plan = &banded.manifest.kernels.iter().rev().find(|k| k.plan.contains("bands")).expect("a plan that says so").plan;
    assert!(plan.contains("A widened to f32 band by band"), "fp16: {plan}");
    same_as_whole("llvm fp16", &banded, &reference::run(g16, &inputs).unwrap()[0], 4.0 / 2048.0);
}

/// An attention as torch-mlir writes it (`tests/data/attention_heads.mlir`), heads split from and
/// joined into the tokens' rows by transposes: on the LLVM backend the queries' and values' transposes fold into the matmuls
/// that read them (A, and B packed per run, through views of the projections' rows) and the
/// products write the joined rows themselves (the output through a view); the keys' transpose,
/// whose rows a view would read across, stays a copy. The plan says so, and the results are
/// the bits of the same program lowered with every copy (on one thread and two, banded), the
/// reference's within the reduction tolerance.
#[test]
fn head_transposes_fold_into_the_matmuls_with_the_same_bits() {
    use f16c_compiler::lower::{lower_with, KernelKind};
    let (module, _) = parse_file(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/attention_heads.mlir")).unwrap();
    let g = &module.functions[0];
    let inputs = [values(&[1, 24, 32], 1), values(&[1, 36, 32], 2)];
    let folded = driver::lower_for(g, &LlvmCpuBackend).unwrap();
    let copies = |p: &f16c_compiler::lower::Program| p.kernels.iter().filter(|k| matches!(k.kind, KernelKind::Copy(_))).count();
    let views: Vec<_> = folded.kernels.iter().filter_map(|k| if let KernelKind::Contraction(c) = &k.kind { Some(c.views) } else { None }).collect();
    assert_eq!(views.len(), 2);
    let (scores, products) = (views[0], views[1]);
    let a = scores.a.expect("the queries through a view");
    // Query (h, t, j) is x's element t·32 + h·16 + j.
    assert_eq!((a.offset, a.batch, a.row, a.col), (0, 16, 32, 1));
    assert!(scores.b.is_none() && scores.out.is_none(), "{scores:?}");
    let (b, out) = (products.b.expect("the values through a view"), products.out.expect("the joined rows through a view"));
    assert_eq!((b.batch, b.row, out.batch, out.row), (16, 32, 16, 32));
    assert_eq!(copies(&folded), 1, "the keys' transpose stays:\n{folded}");
    let options = LlvmCpuBackend.lowering();
    let plain = lower_with(g, f16c_compiler::lower::LowerOptions { contraction_views: false, ..options }).unwrap();
    assert_eq!(copies(&plain), 4, "{plain}");
    let folded_artifact = LlvmCpuBackend.artifact(&folded).unwrap();
    let plan = &folded_artifact.manifest.kernels.iter().rev().find(|k| k.plan.contains("bands")).expect("banded").plan;
    assert!(plan.contains("B, the output through a view (a copy folded in)"), "{plan}");
    let plain_artifact = LlvmCpuBackend.artifact(&plain).unwrap();
    let want = reference::run(g, &inputs).unwrap();
    for threads in [1, 2] {
        let got = loader::load(folded_artifact.clone(), threads).unwrap().run(&inputs).unwrap();
        let with_copies = loader::load(plain_artifact.clone(), threads).unwrap().run(&inputs).unwrap();
        f16c_tests::cases::same_bits_and_nans(&got[0], &with_copies[0]).unwrap_or_else(|e| panic!("{threads} threads: {e}"));
        let err = max_rel_to_peak(&got[0], &want[0]);
        assert!(err <= 1e-5, "{threads} threads: {err:e} from the reference");
    }
}

/// A U-Net decoder level as torch-mlir exports it (`tests/data/blocks/unet_level.mlir`): the
/// upsampled value and the skip connection concatenated along the channels, then a 3 × 3
/// convolution with padding. On the LLVM backend the concatenation folds into the convolution,
/// which pads its two parts into one input (f32 as they lie; bf16 widened to f32 on the way);
/// the results are the bits of the same program lowered with the copy (one thread and two).
/// An i8 convolution of a concatenation (`tests/data/concat_conv_i8.mlir`), which runs in the
/// backend's own loops, not on the micro-kernel, concatenates the parts first: the reference's
/// integers.
#[test]
fn a_concatenation_pads_into_the_convolution_with_the_same_bits() {
    use f16c_compiler::lower::{lower_with, KernelKind};
    let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
    let input = npy::read(&data.join("blocks/unet_level.in0.npy")).unwrap();
    let parts = |p: &f16c_compiler::lower::Program| -> Vec<usize> { p.kernels.iter().filter_map(|k| if let KernelKind::Contraction(c) = &k.kind { Some(c.a_parts.len()) } else { None }).filter(|&n| n > 0).collect() };
    let copies = |p: &f16c_compiler::lower::Program| p.kernels.iter().filter(|k| matches!(k.kind, KernelKind::Copy(_))).count();
    for precision in [Precision::Fp32, Precision::Bf16] {
        let (mut module, _) = parse_file(&data.join("blocks/unet_level.mlir")).unwrap();
        driver::prepare(&mut module, &Options::new(Target::X86_64).with_precision(precision), &[]).unwrap();
        let g = &module.functions[0];
        let folded = driver::lower_for(g, &LlvmCpuBackend).unwrap();
        let plain = lower_with(g, f16c_compiler::lower::LowerOptions { concatenated_inputs: false, ..LlvmCpuBackend.lowering() }).unwrap();
        assert_eq!(parts(&folded), [2], "{precision:?}:\n{folded}");
        assert_eq!(copies(&folded) + 1, copies(&plain), "{precision:?}: the concatenation's copy goes:\n{folded}");
        let folded_artifact = LlvmCpuBackend.artifact(&folded).unwrap();
        let plan = &folded_artifact.manifest.kernels.iter().find(|k| k.plan.contains("parts")).expect("a plan that says so").plan;
        assert!(plan.contains("A padded") && plan.contains("once per run from its 2 parts (a concatenation folded in)"), "{precision:?}: {plan}");
        let plain_artifact = LlvmCpuBackend.artifact(&plain).unwrap();
        for threads in [1, 2] {
            let got = loader::load(folded_artifact.clone(), threads).unwrap().run(std::slice::from_ref(&input)).unwrap();
            let with_copy = loader::load(plain_artifact.clone(), threads).unwrap().run(std::slice::from_ref(&input)).unwrap();
            f16c_tests::cases::same_bits_and_nans(&got[0], &with_copy[0]).unwrap_or_else(|e| panic!("{precision:?}, {threads} threads: {e}"));
        }
    }
    let (module, _) = parse_file(&data.join("concat_conv_i8.mlir")).unwrap();
    let g = &module.functions[0];
    let program = driver::lower_for(g, &LlvmCpuBackend).unwrap();
    assert_eq!(parts(&program), [2], "{program}");
    let artifact = LlvmCpuBackend.artifact(&program).unwrap();
    assert!(artifact.manifest.symbols.iter().any(|s| s.ends_with("conv2d_concat_a")), "a step that concatenates the parts first: {:?}", artifact.manifest.symbols);
    let x = values(&[1, 6, 7, 5], 7);
    let want = reference::run(g, std::slice::from_ref(&x)).unwrap();
    for threads in [1, 2] {
        let got = loader::load(artifact.clone(), threads).unwrap().run(std::slice::from_ref(&x)).unwrap();
        assert_eq!(got[0], want[0], "{threads} threads");
    }
}

/// Long rows, many of them, run twelve per work item (`families::row_group`): a softmax and a
/// layer norm's mean and variance over 775 rows of 300 (the last group repeats the last row)
/// give the reference's bits, the sums in each row's index order — on AVX-512 the twelve rows'
/// sums side by side in one vector's lanes (blocks of sixteen transposed in registers), the
/// elementwise runs sixteen lanes at a time, and the last twelve elements of each row under a
/// mask in both, as the maximum's last 44 (`families::RowVectors`; on AVX2, eight lanes, the
/// last four under `vmaskmovps`), with a NaN, the maximum and a zero maximum in those tails.
/// Fewer of them (100 rows) run eight per work item, their sums side by side in half a vector
/// on AVX-512 and in one of eight lanes on AVX2.
#[test]
fn long_rows_twelve_at_a_time_give_the_reference_bits() {
    long_rows(775, "12 rows of 300 per work item", ["the rows' chains interleaved, elementwise stages in 4 loops, 8 lanes at a time, maxima/minima in 4 chains of 16 lanes folded as vectors, a row's last 4 elements under a mask", "sums side by side in the lanes of a vector (blocks of 16 elements of each row transposed in registers), elementwise stages in 4 loops, 16 lanes at a time, maxima/minima in 4 chains of 16 lanes folded as vectors, a row's last 12 elements under a mask"]);
    long_rows(100, "8 rows of 300 per work item", ["sums side by side in the lanes of a vector (blocks of 8 elements of each row transposed in registers), elementwise stages in 4 loops, 8 lanes at a time", "sums side by side in the lanes of a vector (blocks of 16 elements of each row transposed in registers), elementwise stages in 4 loops, 16 lanes at a time"]);
}

/// [`long_rows_twelve_at_a_time_give_the_reference_bits`] over `rows` rows of 300.
fn long_rows(rows: usize, group: &str, plans: [&str; 2]) {
    let text = r#"
func.func @forward(%x: tensor<775x300xf32>) -> tensor<775x300xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.const"() <{values = dense<0.00333333> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<775x300xf32>) -> tensor<775x1xf32>
  %d = tosa.sub %x, %m : (tensor<775x300xf32>, tensor<775x1xf32>) -> tensor<775x300xf32>
  %e = tosa.exp %d : (tensor<775x300xf32>) -> tensor<775x300xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<775x300xf32>) -> tensor<775x1xf32>
  %r = tosa.reciprocal %s : (tensor<775x1xf32>) -> tensor<775x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<775x300xf32>, tensor<775x1xf32>, tensor<1xi8>) -> tensor<775x300xf32>
  %t = tosa.reduce_sum %p {axis = 1 : i32} : (tensor<775x300xf32>) -> tensor<775x1xf32>
  %mean = tosa.mul %t, %n, %shift : (tensor<775x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<775x1xf32>
  %c = tosa.sub %p, %mean : (tensor<775x300xf32>, tensor<775x1xf32>) -> tensor<775x300xf32>
  %q = tosa.mul %c, %c, %shift : (tensor<775x300xf32>, tensor<775x300xf32>, tensor<1xi8>) -> tensor<775x300xf32>
  %v = tosa.reduce_sum %q {axis = 1 : i32} : (tensor<775x300xf32>) -> tensor<775x1xf32>
  %y = tosa.mul %c, %v, %shift : (tensor<775x300xf32>, tensor<775x1xf32>, tensor<1xi8>) -> tensor<775x300xf32>
  return %y : tensor<775x300xf32>
}
"#
    .replace("775x", &format!("{rows}x"));
    let module = f16c_dialect::import::parse_module(&text, "rows.mlir").unwrap();
    let g = &module.functions[0];
    let n = rows * 300;
    let mut values: Vec<f32> = (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) >> 8) as f32 / (1 << 24) as f32) * 20.0 - 10.0).collect();
    // Rows whose tails (elements 288.. past the last 16-lane block, 256.. past the last block
    // of the maximum's four chains) decide: a NaN there, the maximum there, a row of zeros
    // (its maximum found again in order: -0 first), -∞ everywhere but the tail.
    values[300 + 295] = f32::NAN;
    values[2 * 300 + 299] = 50.0;
    for (j, v) in values[3 * 300..4 * 300].iter_mut().enumerate() {
        *v = if j % 7 == 0 { -0.0 } else { 0.0 };
    }
    for v in &mut values[5 * 300..5 * 300 + 256] {
        *v = f32::NEG_INFINITY;
    }
    // (and a row below zero: a masked-off lane must not count as +0)
    for v in &mut values[6 * 300..7 * 300] {
        *v = -v.abs() - 1.0;
    }
    let x = Tensor::from_f32(vec![rows, 300], values).unwrap();
    // AVX2 (eight lanes: twelve scalar chains) and, where this machine has it, AVX-512 (the
    // sums side by side).
    rows_on_both_levels(g, &x, group, plans);
}

/// `g` (a rows kernel over rows of 300) on the LLVM backend at x86-64-v3 and, where this
/// machine has AVX-512, at x86-64-v4: each level's plan starts with `group` and contains its
/// `plans` text, and the output on one and two threads is the reference's bits.
fn rows_on_both_levels(g: &Graph, x: &Tensor, group: &str, plans: [&str; 2]) {
    use f16c_compiler::backend::llvm_cpu::x86_64;
    use f16c_compiler::target::{Cpu, X86Level};
    let want = reference::run(g, std::slice::from_ref(x)).unwrap();
    let v4 = x86_64(Cpu::Level(X86Level::V4)).expect("a level");
    let native = x86_64(Cpu::Native).expect("a level");
    let avx512 = std::ptr::eq(native, v4) || std::ptr::eq(native, x86_64(Cpu::Level(X86Level::V4Bf16)).expect("a level"));
    let levels = [(x86_64(Cpu::Level(X86Level::V3)).expect("a level"), plans[0]), (v4, plans[1])];
    for (backend, plan) in levels.into_iter().take(if avx512 { 2 } else { 1 }) {
        let program = driver::lower_for(g, backend).unwrap();
        let artifact = backend.artifact(&program).unwrap();
        let kernels: Vec<&str> = artifact.manifest.kernels.iter().map(|k| k.plan.as_str()).collect();
        assert!(kernels.iter().any(|p| p.starts_with(group) && p.contains(plan)), "{kernels:?}");
        for threads in [1, 2] {
            let got = loader::load(artifact.clone(), threads).unwrap().run(std::slice::from_ref(x)).unwrap();
            f16c_tests::cases::same_bits_and_nans(&got[0], &want[0]).unwrap_or_else(|e| panic!("{plan}, {threads} threads: {e}"));
        }
    }
}

/// torch-mlir's layer norm, its variance in f64, over 775 rows of 300: on AVX-512 the twelve
/// rows' f64 sums go side by side in two vectors of eight lanes (rows 0–7 and 8–11, blocks of
/// eight transposed in registers, the two chains in one loop) and the row's last four under a
/// mask, the f32 sum in one vector of sixteen; each lane's chain is its row's sum in index
/// order, so the bits are the reference's (a NaN, an infinity, zeros and a large value in some
/// rows' tails). On AVX2 (four f64 lanes: three vectors) the f64 sums stay twelve chains.
/// Over 100 rows, eight per work item: the f64 sums in one vector of eight lanes (AVX2: two of
/// four), the f32 sum in half of one of sixteen (AVX2: one of eight).
#[test]
fn long_rows_f64_sums_side_by_side_give_the_reference_bits() {
    long_rows_f64(775, "12 rows of 300 per work item", ["the rows' chains interleaved", "sums side by side in the lanes of a vector (blocks of 16 f32 or 8 f64 elements of each row transposed in registers)"]);
    long_rows_f64(100, "8 rows of 300 per work item", ["sums side by side in the lanes of a vector (blocks of 8 f32 or 4 f64 elements of each row transposed in registers)", "sums side by side in the lanes of a vector (blocks of 16 f32 or 8 f64 elements of each row transposed in registers)"]);
}

/// [`long_rows_f64_sums_side_by_side_give_the_reference_bits`] over `rows` rows of 300.
fn long_rows_f64(rows: usize, group: &str, plans: [&str; 2]) {
    let text = r#"
func.func @forward(%x: tensor<775x300xf32>) -> tensor<775x300xf32> {
  %n64 = "tosa.const"() <{values = dense<3.3333333333333335e-03> : tensor<1x1xf64>}> : () -> tensor<1x1xf64>
  %n32 = "tosa.const"() <{values = dense<0.00333333> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = tosa.cast %x : (tensor<775x300xf32>) -> tensor<775x300xf64>
  %s = tosa.reduce_sum %c {axis = 1 : i32} : (tensor<775x300xf64>) -> tensor<775x1xf64>
  %m = tosa.mul %s, %n64, %sh : (tensor<775x1xf64>, tensor<1x1xf64>, tensor<1xi8>) -> tensor<775x1xf64>
  %d = tosa.sub %c, %m : (tensor<775x300xf64>, tensor<775x1xf64>) -> tensor<775x300xf64>
  %q = tosa.mul %d, %d, %sh : (tensor<775x300xf64>, tensor<775x300xf64>, tensor<1xi8>) -> tensor<775x300xf64>
  %v = tosa.reduce_sum %q {axis = 1 : i32} : (tensor<775x300xf64>) -> tensor<775x1xf64>
  %vm = tosa.mul %v, %n64, %sh : (tensor<775x1xf64>, tensor<1x1xf64>, tensor<1xi8>) -> tensor<775x1xf64>
  %vf = tosa.cast %vm : (tensor<775x1xf64>) -> tensor<775x1xf32>
  %s32 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<775x300xf32>) -> tensor<775x1xf32>
  %mean = tosa.mul %s32, %n32, %sh : (tensor<775x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<775x1xf32>
  %e = tosa.add %vf, %eps : (tensor<775x1xf32>, tensor<1x1xf32>) -> tensor<775x1xf32>
  %r = tosa.rsqrt %e : (tensor<775x1xf32>) -> tensor<775x1xf32>
  %y = tosa.sub %x, %mean : (tensor<775x300xf32>, tensor<775x1xf32>) -> tensor<775x300xf32>
  %z = tosa.mul %y, %r, %sh : (tensor<775x300xf32>, tensor<775x1xf32>, tensor<1xi8>) -> tensor<775x300xf32>
  return %z : tensor<775x300xf32>
}
"#
    .replace("775x", &format!("{rows}x"));
    let module = f16c_dialect::import::parse_module(&text, "layer_norm_f64.mlir").unwrap();
    let g = &module.functions[0];
    let n = rows * 300;
    let mut values: Vec<f32> = (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) >> 8) as f32 / (1 << 24) as f32) * 20.0 - 10.0).collect();
    values[300 + 297] = f32::NAN;
    values[2 * 300 + 298] = f32::INFINITY;
    values[9 * 300 + 299] = 3.0e7;
    for v in &mut values[3 * 300..4 * 300] {
        *v = 0.0;
    }
    let x = Tensor::from_f32(vec![rows, 300], values).unwrap();
    rows_on_both_levels(g, &x, group, plans);
}

/// Gathers whose indices are sums of broadcast integer vectors (a U-Net's upsampling after
/// canonicalize) add the parts as they read each index, on the JIT and on the LLVM backend:
/// the plan says so, the values gathered are the reference's bits (whole rows of the sum per
/// work item; parts of rows, three values per index, a batch of two), and an index out of
/// range either way (a negative one; one past the end through wrapping i32 addition) is an
/// error, not a read.
#[test]
fn gathers_sum_their_indices_as_they_read_them_with_the_same_bits() {
    let (module, _) = parse_file(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/gather_summed_indices.mlir")).unwrap();
    let ints = |shape: &[usize], f: &dyn Fn(usize) -> i32| Tensor::new(shape.to_vec(), f16c_dialect::Data::I32((0..shape.iter().product()).map(f).collect())).unwrap();
    let values = |shape: &[usize]| {
        let n: usize = shape.iter().product();
        Tensor::from_f32(shape.to_vec(), (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 8) as f32 / (1 << 24) as f32 - 0.5).collect()).unwrap()
    };
    // (function, good inputs, the index parts replaced by ones that leave the range)
    let rows = [values(&[1, 4096, 1]), ints(&[1058, 1], &|r| ((r * 37) % 64 * 64) as i32), ints(&[1, 62], &|c| ((c * 5) % 62) as i32)];
    // One column of every row out of range (the two columns taken alone), or one whole row
    // (four at a time).
    let (mut rows_bad, mut row_bad) = (rows.clone(), rows.clone());
    rows_bad[2] = ints(&[1, 62], &|c| if c == 61 { -1 } else { c as i32 });
    row_bad[1] = ints(&[1058, 1], &|r| if r == 1000 { 4096 } else { 0 });
    // Two of the parts carry i32::MIN: their sum wraps to the index only in i32.
    let parts = [
        values(&[2, 4096, 3]),
        ints(&[2, 128, 1], &|h| ((h * 11) % 128 * 16) as i32),
        ints(&[1, 1, 256], &|c| ((c % 16) as i32).wrapping_add(i32::MIN)),
        ints(&[2, 1, 1], &|n| ((n % 2 * 2048) as i32).wrapping_add(i32::MIN)),
    ];
    let mut parts_bad = parts.clone();
    parts_bad[1] = ints(&[2, 128, 1], &|h| if h == 5 { -100 } else { ((h * 11) % 128 * 16) as i32 });
    for (name, good, bads) in [("rows", &rows[..], vec![&rows_bad[..], &row_bad[..]]), ("parts", &parts[..], vec![&parts_bad[..]])] {
        let g = module.functions.iter().find(|f| f.name == name).unwrap();
        let want = reference::run(g, good).unwrap();
        assert!(bads.iter().all(|bad| reference::run(g, bad).is_err()), "{name}: the reference takes bad indices");
        let llvm = LlvmCpuBackend.artifact(&driver::lower_for(g, &LlvmCpuBackend).unwrap()).unwrap();
        let jit = driver::artifact(g, Target::X86_64).unwrap();
        for (what, artifact) in [("llvm", llvm), ("jit", jit)] {
            let gather = artifact.manifest.kernels.iter().find(|k| k.name.ends_with("_gather")).expect("a gather");
            assert_eq!(artifact.manifest.kernels.len(), 1, "{name} {what}: the sum is part of the gather");
            assert!(gather.plan.contains("computed as it is read"), "{name} {what}: {}", gather.plan);
            for threads in [1, 2] {
                let exec = loader::load(artifact.clone(), threads).unwrap();
                let got = exec.run(good).unwrap();
                f16c_tests::cases::same_bits(&got[0], &want[0]).unwrap_or_else(|e| panic!("{name} {what} {threads} threads: {e}"));
                for bad in &bads {
                    let e = exec.run(bad).unwrap_err().to_string();
                    assert!(e.contains("an index is out of range"), "{name} {what}: {e}");
                }
            }
        }
    }
}

/// A convolution without padding whose input torch-mlir sliced from the origin so that TOSA's
/// output size divides exactly (ResNet's stride-2 1 × 1 convolutions: 56 × 56 sliced to
/// 55 × 55) reads the unsliced value: no copy kernel, and on the LLVM backend and the JIT the
/// same bits as the convolution of the sliced value given as the input. A slice whose value
/// gives the convolution another output size over the whole input stays.
#[test]
fn convolutions_read_the_value_their_input_was_sliced_from() {
    use f16c_compiler::lower::{lower, KernelKind};
    let weights = |n: usize| (0..n).map(|i| format!("{:.3}", ((i * 37 % 23) as f32 - 11.0) / 16.0)).collect::<Vec<_>>().join(", ");
    // The weight (through a reshape: the parser takes a flat literal), bias and zero points,
    // then the convolution of `x` and the return, of a 1 × 1 conv2d and a 3 × 3 depthwise one.
    let constants = |n: usize, shape: &str, dims: &str, bias: &str| {
        format!(
            "  %w0 = \"tosa.const\"() <{{values = dense<[{}]> : tensor<{n}xf32>}}> : () -> tensor<{n}xf32>\n  %ws = tosa.const_shape {{values = dense<[{dims}]> : tensor<4xindex>}} : () -> !tosa.shape<4>\n  %w = tosa.reshape %w0, %ws : (tensor<{n}xf32>, !tosa.shape<4>) -> tensor<{shape}xf32>\n  %b = \"tosa.const\"() <{{values = dense<0.25> : tensor<{bias}xf32>}}> : () -> tensor<{bias}xf32>\n  %z = \"tosa.const\"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>\n",
            weights(n)
        )
    };
    let conv = |x: &str| {
        format!(
            "{}  %y = tosa.conv2d {x}, %w, %b, %z, %z {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}} : (tensor<1x7x7x8xf32>, tensor<6x1x1x8xf32>, tensor<6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x6xf32>\n  return %y : tensor<1x4x4x6xf32>\n}}\n",
            constants(48, "6x1x1x8", "6, 1, 1, 8", "6")
        )
    };
    let depthwise = |x: &str| {
        format!(
            "{}  %y = tosa.depthwise_conv2d {x}, %w, %b, %z, %z {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}} : (tensor<1x7x7x8xf32>, tensor<3x3x8x1xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x8xf32>\n  return %y : tensor<1x3x3x8xf32>\n}}\n",
            constants(72, "3x3x8x1", "3, 3, 8, 1", "8")
        )
    };
    // Slices from the origin to `size`, of `x` of type `from`, as torch-mlir writes them.
    let slice = |name: &str, x: &str, from: &str, size: &str| {
        format!(
            "  %at_{name} = tosa.const_shape {{values = dense<[0, 0, 0, 0]> : tensor<4xindex>}} : () -> !tosa.shape<4>\n  %n_{name} = tosa.const_shape {{values = dense<[{}]> : tensor<4xindex>}} : () -> !tosa.shape<4>\n  %{name} = tosa.slice {x}, %at_{name}, %n_{name} : (tensor<{from}xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<{size}xf32>\n",
            size.replace('x', ", ")
        )
    };
    let text = [
        format!("func.func @sliced(%x: tensor<1x8x8x8xf32>) -> tensor<1x4x4x6xf32> {{\n{}{}{}", slice("s1", "%x", "1x8x8x8", "1x7x8x8"), slice("s2", "%s1", "1x7x8x8", "1x7x7x8"), conv("%s2")),
        format!("func.func @presliced(%x: tensor<1x7x7x8xf32>) -> tensor<1x4x4x6xf32> {{\n{}", conv("%x")),
        format!("func.func @dw_sliced(%x: tensor<1x8x8x8xf32>) -> tensor<1x3x3x8xf32> {{\n{}{}", slice("s", "%x", "1x8x8x8", "1x7x7x8"), depthwise("%s")),
        format!("func.func @dw_presliced(%x: tensor<1x7x7x8xf32>) -> tensor<1x3x3x8xf32> {{\n{}", depthwise("%x")),
        format!("func.func @kept(%x: tensor<1x9x9x8xf32>) -> tensor<1x4x4x6xf32> {{\n{}{}", slice("s", "%x", "1x9x9x8", "1x7x7x8"), conv("%s")),
    ]
    .concat();
    let module = f16c_dialect::import::parse_module(&text, "sliced.mlir").unwrap();
    let f = |name: &str| module.functions.iter().find(|g| g.name == name).unwrap();
    let copies = |name: &str| lower(f(name)).unwrap().kernels.iter().filter(|k| matches!(k.kind, KernelKind::Copy(_))).count();
    assert_eq!((copies("sliced"), copies("dw_sliced"), copies("kept")), (0, 0, 1), "the slices of @sliced and @dw_sliced go; @kept's stays");
    let x: Vec<f32> = (0..512).map(|i| ((i * 53 % 97) as f32 - 48.0) / 8.0).collect();
    let full = Tensor::from_f32(vec![1, 8, 8, 8], x.clone()).unwrap();
    let part: Vec<f32> = (0..7).flat_map(|y| (0..7).flat_map(move |xx| (0..8).map(move |c| (y, xx, c)))).map(|(y, xx, c)| x[(y * 8 + xx) * 8 + c]).collect();
    let part = Tensor::from_f32(vec![1, 7, 7, 8], part).unwrap();
    let jit = |g: &Graph, t: &Tensor| f16c_jit::Model::compile_graph(g, 2).unwrap().run(std::slice::from_ref(t)).unwrap();
    for (sliced, presliced) in [("sliced", "presliced"), ("dw_sliced", "dw_presliced")] {
        let llvm = (run(f(sliced), std::slice::from_ref(&full)).unwrap(), run(f(presliced), std::slice::from_ref(&part)).unwrap());
        assert_eq!(llvm.0[0].data().to_le_bytes(), llvm.1[0].data().to_le_bytes(), "{sliced}: LLVM");
        let jits = (jit(f(sliced), &full), jit(f(presliced), &part));
        assert_eq!(jits.0[0].data().to_le_bytes(), jits.1[0].data().to_le_bytes(), "{sliced}: JIT");
        let want = reference::run(f(sliced), std::slice::from_ref(&full)).unwrap();
        assert!(max_rel_to_peak(&llvm.0[0], &want[0]) < 1e-5, "{sliced}: far from the reference");
    }
}

/// A convolution padded once per run runs, in each tile, only the kernel rows that meet the
/// image for some row of the tile (`Ir::kernel_rows_inside`): the same bits as the convolution
/// of the input padded by hand (every tap multiplied, the zeros too), on both levels and at
/// one and two threads — tiles in the first and last output rows and across two images, a
/// stride of 2 with padding on top only, a dilation along both axes (the taps' loop), a 5 × 5
/// kernel on a 3 × 3 image, padding taller than the kernel (output rows that meet no input row:
/// the bias alone), an image one row tall. Where the tiles never cross output rows, a tile at a
/// row's start or end multiplies each kernel column into only its pixels whose tap meets the
/// image (`Tile::edge_steps`; on AVX-512: rows of one tile, of two tiles, of three; a 5 × 5
/// kernel; a dilation; a one-dimensional convolution padded along x only, as Whisper's).
#[test]
fn padded_convolutions_skip_the_kernel_rows_that_meet_only_padding_with_the_same_bits() {
    use f16c_compiler::backend::llvm_cpu::x86_64;
    use f16c_compiler::target::{Cpu, X86Level};
    // (images, h, w, channels, outputs, kh, kw, pad [top, bottom, left, right], stride, dilation)
    type Geometry = (usize, usize, usize, usize, usize, usize, usize, [usize; 4], [usize; 2], [usize; 2]);
    // (and on AVX-512, whether the tiles leave out their edge pixels' taps in the padding
    // columns: tiles of 7, 6 and 12 rows that divide the output rows — a row one tile;
    // tiles at a row's start and end; and between them)
    let cases: [(Geometry, bool); 11] = [
        ((2, 7, 7, 8, 40, 3, 3, [1, 1, 1, 1], [1, 1], [1, 1]), true),
        ((1, 14, 14, 8, 24, 3, 3, [1, 0, 1, 0], [2, 2], [1, 1]), true),
        ((1, 9, 9, 4, 20, 3, 3, [2, 2, 2, 2], [1, 1], [2, 2]), false),
        ((2, 3, 3, 4, 20, 5, 5, [2, 2, 2, 2], [1, 1], [1, 1]), false),
        ((1, 4, 5, 4, 20, 3, 3, [4, 1, 1, 1], [1, 1], [1, 1]), false),
        ((1, 1, 6, 4, 20, 3, 3, [1, 1, 1, 1], [1, 1], [1, 1]), true),
        ((1, 2, 14, 8, 24, 3, 3, [1, 1, 1, 1], [1, 1], [1, 1]), true),
        ((1, 1, 21, 8, 24, 3, 3, [1, 1, 1, 1], [1, 1], [1, 1]), true),
        ((1, 2, 14, 8, 24, 5, 5, [2, 2, 2, 2], [1, 1], [1, 1]), true),
        ((1, 1, 24, 8, 24, 1, 3, [0, 0, 1, 1], [1, 1], [1, 1]), true),
        ((1, 2, 14, 8, 24, 3, 3, [2, 2, 2, 2], [1, 1], [2, 2]), true),
    ];
    let conv = |name: &str, (n, h, w, c, o, kh, kw, pad, stride, dil): Geometry| -> String {
        let out = |len: usize, before: usize, after: usize, k: usize, s: usize, d: usize| (len + before + after - (k - 1) * d - 1) / s + 1;
        let (oh, ow) = (out(h, pad[0], pad[1], kh, stride[0], dil[0]), out(w, pad[2], pad[3], kw, stride[1], dil[1]));
        let weights: Vec<String> = (0..o * kh * kw * c).map(|i| format!("{:.4}", ((i * 37 % 101) as f32 - 50.0) / 64.0)).collect();
        let biases: Vec<String> = (0..o).map(|i| format!("{:.3}", i as f32 / 8.0 - 1.0)).collect();
        format!(
            "func.func @{name}(%x: tensor<{n}x{h}x{w}x{c}xf32>) -> tensor<{n}x{oh}x{ow}x{o}xf32> {{\n  %w0 = \"tosa.const\"() <{{values = dense<[{}]> : tensor<{}xf32>}}> : () -> tensor<{}xf32>\n  %ws = tosa.const_shape {{values = dense<[{o}, {kh}, {kw}, {c}]> : tensor<4xindex>}} : () -> !tosa.shape<4>\n  %w = tosa.reshape %w0, %ws : (tensor<{}xf32>, !tosa.shape<4>) -> tensor<{o}x{kh}x{kw}x{c}xf32>\n  %b = \"tosa.const\"() <{{values = dense<[{}]> : tensor<{o}xf32>}}> : () -> tensor<{o}xf32>\n  %z = \"tosa.const\"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>\n  %y = tosa.conv2d %x, %w, %b, %z, %z {{acc_type = f32, dilation = array<i64: {}, {}>, pad = array<i64: {}, {}, {}, {}>, stride = array<i64: {}, {}>}} : (tensor<{n}x{h}x{w}x{c}xf32>, tensor<{o}x{kh}x{kw}x{c}xf32>, tensor<{o}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<{n}x{oh}x{ow}x{o}xf32>\n  return %y : tensor<{n}x{oh}x{ow}x{o}xf32>\n}}\n",
            weights.join(", "),
            weights.len(),
            weights.len(),
            weights.len(),
            biases.join(", "),
            dil[0],
            dil[1],
            pad[0],
            pad[1],
            pad[2],
            pad[3],
            stride[0],
            stride[1]
        )
    };
    let v4 = x86_64(Cpu::Level(X86Level::V4)).expect("a level");
    let native = x86_64(Cpu::Native).expect("a level");
    let avx512 = std::ptr::eq(native, v4) || std::ptr::eq(native, x86_64(Cpu::Level(X86Level::V4Bf16)).expect("a level"));
    let levels = [x86_64(Cpu::Level(X86Level::V3)).expect("a level"), v4];
    for (i, (geometry, edges)) in cases.into_iter().enumerate() {
        let (n, h, w, c, _, _, _, pad, _, _) = geometry;
        let (ph, pw) = (h + pad[0] + pad[1], w + pad[2] + pad[3]);
        let text = [conv("padded", geometry), conv("by_hand", (n, ph, pw, c, geometry.4, geometry.5, geometry.6, [0; 4], geometry.8, geometry.9))].concat();
        let module = f16c_dialect::import::parse_module(&text, "padded.mlir").unwrap_or_else(|e| panic!("case {i}: {e}\n{text}"));
        let x = values(&[n, h, w, c], 11 + i as u32);
        let mut by_hand = vec![0.0f32; n * ph * pw * c];
        for (at, v) in x.to_f32_vec().into_iter().enumerate() {
            let (img, y, xx, ch) = (at / (h * w * c), at / (w * c) % h, at / c % w, at % c);
            by_hand[((img * ph + y + pad[0]) * pw + xx + pad[2]) * c + ch] = v;
        }
        let by_hand = Tensor::from_f32(vec![n, ph, pw, c], by_hand).unwrap();
        let want = reference::run(&module.functions[0], std::slice::from_ref(&x)).unwrap();
        for (level, backend) in levels.into_iter().take(if avx512 { 2 } else { 1 }).enumerate() {
            let artifact = |g: &Graph| backend.artifact(&driver::lower_for(g, backend).unwrap()).unwrap();
            let (padded, plain) = (artifact(&module.functions[0]), artifact(&module.functions[1]));
            let plans: Vec<&str> = padded.manifest.kernels.iter().map(|k| k.plan.as_str()).collect();
            let rows = pad[0] + pad[1] > 0;
            assert!(plans.iter().any(|p| p.contains("A padded once per run, read in place") && p.contains("a tile's kernel rows that meet only padding skipped") == rows), "case {i}: {plans:?}");
            if level == 1 {
                assert_eq!(plans.iter().any(|p| p.contains("an output row's edge pixels' taps in the padding skipped")), edges, "case {i}: {plans:?}");
            }
            for threads in [1, 2] {
                let got = loader::load(padded.clone(), threads).unwrap().run(std::slice::from_ref(&x)).unwrap();
                let every_tap = loader::load(plain.clone(), threads).unwrap().run(std::slice::from_ref(&by_hand)).unwrap();
                f16c_tests::cases::same_bits_and_nans(&got[0], &every_tap[0]).unwrap_or_else(|e| panic!("case {i} {geometry:?}, {threads} threads: {e}"));
                assert!(max_rel_to_peak(&got[0], &want[0]) < 1e-5, "case {i}: far from the reference");
            }
        }
    }
}

/// A convolution whose epilogue adds a residual read for the last time (ResNet's bottleneck
/// end, `relu(conv(u) + t)`) writes its output over the residual in the LLVM backend's arena
/// (`plan::epilogue_in_place_inputs`): each tile reads a residual element in the finish that
/// writes the output's. The bits are those of the same graph with the residual also returned
/// (kept alive: no sharing), on both levels and at one and two threads, with tiles on the
/// ragged bottom and right edges; a residual that is also the convolution's input, and the
/// JIT's contractions, never share.
#[test]
fn a_residual_read_for_the_last_time_takes_the_convolutions_output() {
    use f16c_compiler::backend::llvm_cpu::x86_64;
    use f16c_compiler::lower::KernelKind;
    use f16c_compiler::target::{Cpu, X86Level};
    use f16c_core::artifact::Slot;
    let weights = |name: &str, o: usize, k: usize, c: usize, seed: usize| {
        let w: Vec<String> = (0..o * k * k * c).map(|i| format!("{:.4}", (((i + seed) * 37 % 101) as f32 - 50.0) / 256.0)).collect();
        format!(
            "  %{name}0 = \"tosa.const\"() <{{values = dense<[{}]> : tensor<{}xf32>}}> : () -> tensor<{}xf32>\n  %{name}s = tosa.const_shape {{values = dense<[{o}, {k}, {k}, {c}]> : tensor<4xindex>}} : () -> !tosa.shape<4>\n  %{name} = tosa.reshape %{name}0, %{name}s : (tensor<{}xf32>, !tosa.shape<4>) -> tensor<{o}x{k}x{k}x{c}xf32>\n",
            w.join(", "),
            w.len(),
            w.len(),
            w.len()
        )
    };
    let conv = |y: &str, x: &str, w: &str, (o, k, c): (usize, usize, usize)| {
        let p = k / 2;
        format!("  {y} = tosa.conv2d {x}, {w}, %b{o}, %z, %z {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: {p}, {p}, {p}, {p}>, stride = array<i64: 1, 1>}} : (tensor<1x5x7x{c}xf32>, tensor<{o}x{k}x{k}x{c}xf32>, tensor<{o}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x5x7x{o}xf32>\n")
    };
    // t = conv3x3(x); u = conv1x1(t); y = relu(conv1x1(u) + r), r = t (or x's conv itself).
    let function = |name: &str, residual: &str, keep: bool| {
        let results = if keep { "tensor<1x5x7x20xf32>, tensor<1x5x7x20xf32>" } else { "tensor<1x5x7x20xf32>" };
        format!(
            "func.func @{name}(%x: tensor<1x5x7x20xf32>) -> ({results}) {{\n{}{}{}  %b20 = \"tosa.const\"() <{{values = dense<0.125> : tensor<20xf32>}}> : () -> tensor<20xf32>\n  %b12 = \"tosa.const\"() <{{values = dense<-0.25> : tensor<12xf32>}}> : () -> tensor<12xf32>\n  %z = \"tosa.const\"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>\n{}{}{}  %s = tosa.add %c, {residual} : (tensor<1x5x7x20xf32>, tensor<1x5x7x20xf32>) -> tensor<1x5x7x20xf32>\n  %y = tosa.clamp %s {{max_val = 3.40282347E+38 : f32, min_val = 0.0 : f32}} : (tensor<1x5x7x20xf32>) -> tensor<1x5x7x20xf32>\n  return %y{} : {results}\n}}\n",
            weights("w1", 20, 3, 20, 1),
            weights("w2", 12, 1, 20, 2),
            weights("w3", 20, 1, 12, 3),
            conv("%t", "%x", "%w1", (20, 3, 20)),
            conv("%u", "%t", "%w2", (12, 1, 20)),
            conv("%c", "%u", "%w3", (20, 1, 12)),
            if keep { format!(", {residual}") } else { String::new() },
        )
    };
    // y = relu(conv1x1(t) + t): the residual is the convolution's A too.
    let own_input = format!(
        "func.func @own_input(%x: tensor<1x5x7x20xf32>) -> tensor<1x5x7x20xf32> {{\n{}{}  %b20 = \"tosa.const\"() <{{values = dense<0.125> : tensor<20xf32>}}> : () -> tensor<20xf32>\n  %z = \"tosa.const\"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>\n{}{}  %s = tosa.add %c, %t : (tensor<1x5x7x20xf32>, tensor<1x5x7x20xf32>) -> tensor<1x5x7x20xf32>\n  %y = tosa.clamp %s {{max_val = 3.40282347E+38 : f32, min_val = 0.0 : f32}} : (tensor<1x5x7x20xf32>) -> tensor<1x5x7x20xf32>\n  return %y : tensor<1x5x7x20xf32>\n}}\n",
        weights("w1", 20, 3, 20, 1),
        weights("w4", 20, 1, 20, 4),
        conv("%t", "%x", "%w1", (20, 3, 20)),
        conv("%c", "%t", "%w4", (20, 1, 20)),
    );
    let text = [function("shared", "%t", false), function("kept", "%t", true), own_input].concat();
    let module = f16c_dialect::import::parse_module(&text, "residual.mlir").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let f = |name: &str| module.functions.iter().find(|g| g.name == name).unwrap();
    let x = values(&[1, 5, 7, 20], 5);
    // Whether the contraction with an epilogue input writes over it, and the artifact.
    let shares = |backend: &dyn Backend, g: &Graph| {
        let program = driver::lower_for(g, backend).unwrap();
        let artifact = backend.artifact(&program).unwrap();
        let offset = |b: usize| match artifact.manifest.slots[b] {
            Slot::Arena { offset, .. } => Some(offset),
            _ => None,
        };
        let (out, residual) = program
            .kernels
            .iter()
            .find_map(|k| match &k.kind {
                KernelKind::Contraction(c) => c.epilogue.as_ref().and_then(|e| e.inputs.first()).map(|i| (c.out.buffer.0, i.buffer.0)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{}: a contraction with the residual in its epilogue:\n{program}", g.name));
        (offset(out).is_some() && offset(out) == offset(residual), artifact)
    };
    let v4 = x86_64(Cpu::Level(X86Level::V4)).expect("a level");
    let native = x86_64(Cpu::Native).expect("a level");
    let avx512 = std::ptr::eq(native, v4) || std::ptr::eq(native, x86_64(Cpu::Level(X86Level::V4Bf16)).expect("a level"));
    for backend in [x86_64(Cpu::Level(X86Level::V3)).expect("a level"), v4].into_iter().take(if avx512 { 2 } else { 1 }) {
        let (shared, artifact) = shares(backend, f("shared"));
        let (kept, apart) = shares(backend, f("kept"));
        assert!(shared && !kept, "the residual's place taken where it dies ({shared}), not where it is returned ({kept})");
        assert!(!shares(backend, f("own_input")).0, "a residual that is also read as A keeps its place");
        for threads in [1, 2] {
            let got = loader::load(artifact.clone(), threads).unwrap().run(std::slice::from_ref(&x)).unwrap();
            let want = loader::load(apart.clone(), threads).unwrap().run(std::slice::from_ref(&x)).unwrap();
            f16c_tests::cases::same_bits_and_nans(&got[0], &want[0]).unwrap_or_else(|e| panic!("{threads} threads: {e}"));
        }
    }
    assert!(!shares(&f16c_compiler::backend::cranelift::CRANELIFT, f("shared")).0, "the JIT's contractions keep their outputs apart");
}

/// AVX-512's exact tile (8 × 48, `CpuMachine::gemm_exact`) where it fills the matrix: each
/// output is its own chain of multiply-adds along `k` whatever the tile, so the rows it
/// computes are the bits of the same rows computed on another tile (the same matmul with two
/// more rows, which 8 × 48 does not fill), in f32 with a bias and a ReLU, with bf16 and fp16
/// weights (VDPBF16PS pairs where the machine has AVX512-BF16; fp16 widened), and for a 1 × 1
/// convolution (one more image row), at one and two threads.
#[test]
fn the_exact_tile_gives_the_bits_of_the_other_tiles() {
    use f16c_compiler::backend::llvm_cpu::x86_64;
    use f16c_compiler::target::{Cpu, X86Level};
    let native = x86_64(Cpu::Native).expect("a level");
    let (v4, v4_bf16) = (x86_64(Cpu::Level(X86Level::V4)).expect("a level"), x86_64(Cpu::Level(X86Level::V4Bf16)).expect("a level"));
    if !(std::ptr::eq(native, v4) || std::ptr::eq(native, v4_bf16)) {
        return;
    }
    let weights = |n: usize| (0..n).map(|i| format!("{:.4}", ((i * 37 % 101) as f32 - 50.0) / 64.0)).collect::<Vec<_>>().join(", ");
    let (k, n) = (40, 96);
    let matmul = |name: &str, m: usize| {
        format!(
            "func.func @{name}(%a: tensor<1x{m}x{k}xf32>) -> tensor<1x{m}x{n}xf32> {{\n  %w = \"tosa.const\"() <{{values = dense<[{}]> : tensor<{}xf32>}}> : () -> tensor<{}xf32>\n  %ws = tosa.const_shape {{values = dense<[1, {k}, {n}]> : tensor<3xindex>}} : () -> !tosa.shape<3>\n  %w3 = tosa.reshape %w, %ws : (tensor<{}xf32>, !tosa.shape<3>) -> tensor<1x{k}x{n}xf32>\n  %z = \"tosa.const\"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>\n  %y = tosa.matmul %a, %w3, %z, %z : (tensor<1x{m}x{k}xf32>, tensor<1x{k}x{n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x{m}x{n}xf32>\n  %r = tosa.clamp %y {{max_val = 3.0e+38 : f32, min_val = 0.0 : f32}} : (tensor<1x{m}x{n}xf32>) -> tensor<1x{m}x{n}xf32>\n  return %r : tensor<1x{m}x{n}xf32>\n}}\n",
            weights(k * n),
            k * n,
            k * n,
            k * n
        )
    };
    let conv = |name: &str, h: usize| {
        format!(
            "func.func @{name}(%x: tensor<1x{h}x6x{k}xf32>) -> tensor<1x{h}x6x{n}xf32> {{\n  %w0 = \"tosa.const\"() <{{values = dense<[{}]> : tensor<{}xf32>}}> : () -> tensor<{}xf32>\n  %ws = tosa.const_shape {{values = dense<[{n}, 1, 1, {k}]> : tensor<4xindex>}} : () -> !tosa.shape<4>\n  %w = tosa.reshape %w0, %ws : (tensor<{}xf32>, !tosa.shape<4>) -> tensor<{n}x1x1x{k}xf32>\n  %b = \"tosa.const\"() <{{values = dense<0.375> : tensor<{n}xf32>}}> : () -> tensor<{n}xf32>\n  %z = \"tosa.const\"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>\n  %y = tosa.conv2d %x, %w, %b, %z, %z {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}} : (tensor<1x{h}x6x{k}xf32>, tensor<{n}x1x1x{k}xf32>, tensor<{n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x{h}x6x{n}xf32>\n  return %y : tensor<1x{h}x6x{n}xf32>\n}}\n",
            weights(k * n),
            k * n,
            k * n,
            k * n
        )
    };
    let text = [matmul("exact", 16), matmul("other", 18), conv("conv_exact", 4), conv("conv_other", 5)].concat();
    let module = f16c_dialect::import::parse_module(&text, "exact.mlir").unwrap_or_else(|e| panic!("{e}"));
    let f = |name: &str| module.functions.iter().find(|g| g.name == name).unwrap().clone();
    let (a, x) = (values(&[1, 18, k], 3), values(&[1, 5, 6, k], 4));
    let first = |t: &Tensor, shape: Vec<usize>| {
        let len: usize = shape.iter().product();
        Tensor::from_f32(shape, t.to_f32_vec()[..len].to_vec()).unwrap()
    };
    let cases = [("exact", "other", a.clone(), first(&a, vec![1, 16, k])), ("conv_exact", "conv_other", x.clone(), first(&x, vec![1, 4, 6, k]))];
    for precision in [Precision::Fp32, Precision::Bf16, Precision::Fp16] {
        for (exact, other, input, part) in &cases {
            let prepared = |name: &str| {
                let mut m = f16c_dialect::Module { functions: vec![f(name)] };
                driver::prepare(&mut m, &Options::new(Target::X86_64).with_precision(precision), &[]).unwrap();
                m.functions.remove(0)
            };
            let (ge, go) = (prepared(exact), prepared(other));
            let program = driver::lower_for(&ge, native).unwrap();
            let artifact = native.artifact(&program).unwrap();
            let plans: Vec<&str> = artifact.manifest.kernels.iter().map(|k| k.plan.as_str()).collect();
            assert!(plans.iter().any(|p| p.starts_with("tiles 8x48")), "{exact} {precision:?}: {plans:?}");
            let other_artifact = native.artifact(&driver::lower_for(&go, native).unwrap()).unwrap();
            assert!(other_artifact.manifest.kernels.iter().all(|k| !k.plan.starts_with("tiles 8x48")), "{other} {precision:?}");
            for threads in [1, 2] {
                let got = loader::load(artifact.clone(), threads).unwrap().run(std::slice::from_ref(part)).unwrap();
                let all = loader::load(other_artifact.clone(), threads).unwrap().run(std::slice::from_ref(input)).unwrap();
                let want = first(&all[0], got[0].shape().to_vec());
                f16c_tests::cases::same_bits_and_nans(&got[0], &want).unwrap_or_else(|e| panic!("{exact} {precision:?}, {threads} threads: {e}"));
            }
        }
    }
}
