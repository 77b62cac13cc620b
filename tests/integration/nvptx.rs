//! The NVPTX backend without a GPU (DESIGN.md "Checking what cannot run here"): every shared
//! model at every precision and every parity case compile for every sm target; every PTX
//! assembles with `ptxas` for its target; contraction kernels spill nothing; tensor-core
//! kernels contain WMMA in their PTX and HMMA in their SASS (CUDA 12.8's `nvdisasm`, which still
//! reads sm_70 cubins). On a GPU, `scripts/gpu-check` runs the same cases.

use f16c_compiler::backend::nvptx::{self, legal};
use f16c_compiler::backend::Backend;
use f16c_compiler::driver::{self, Options};
use f16c_compiler::lower::{KernelKind, Program};
use f16c_compiler::policy::Precision;
use f16c_compiler::target::Target;
use f16c_dialect::import::parse_file;
use f16c_dialect::Graph;
use f16c_tests::cases::{matmul_graph, parity_cases};
use f16c_tests::{model_path, MODELS};
use std::path::{Path, PathBuf};
use std::process::Command;

const SMS: [u32; 6] = [70, 75, 80, 86, 89, 90];

/// A tool from the project's `.venv` (installed by `scripts/setup.sh`).
fn venv_tool(rel: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/lib");
    let found = std::fs::read_dir(&root)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("site-packages/nvidia").join(rel))
        .find(|p| p.exists());
    found.unwrap_or_else(|| panic!("{rel} is missing under {}: run scripts/setup.sh", root.display()))
}

fn lower(g: &Graph, sm: u32) -> Program {
    let backend = nvptx::backend(sm).unwrap();
    driver::lower_for(g, backend).unwrap_or_else(|d| panic!("{} sm_{sm}: {d}", g.name))
}

/// Assembles `ptx` for `sm` with `ptxas -v`; returns the cubin's path and the log.
fn ptxas(ptx: &str, sm: u32, dir: &Path, name: &str) -> (PathBuf, String) {
    let src = dir.join(format!("{name}.sm_{sm}.ptx"));
    let cubin = src.with_extension("cubin");
    std::fs::write(&src, ptx).unwrap();
    let out = Command::new(venv_tool("cuda_nvcc/bin/ptxas")).arg(format!("-arch=sm_{sm}")).arg("-v").arg(&src).arg("-o").arg(&cubin).output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name} sm_{sm}: ptxas failed:\n{log}");
    (cubin, log)
}

/// Spill bytes (stores + loads) per kernel, from `ptxas -v`.
fn spills(log: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut current = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        }
        if line.contains("bytes spill stores") {
            let n: u64 = line.split_whitespace().filter_map(|w| w.parse::<u64>().ok()).skip(1).sum();
            out.push((current.clone().unwrap_or_default(), n));
        }
    }
    out
}

fn scratch_dir(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("f16c-nvptx-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn every_model_compiles_for_every_sm_assembles_and_runs_contractions_on_tensor_cores() {
    let dir = scratch_dir("models");
    let nvdisasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/cuda12/nvdisasm");
    assert!(nvdisasm.exists(), "{} is missing: run scripts/setup.sh", nvdisasm.display());
    for name in MODELS {
        for sm in SMS {
            for precision in [Precision::Fp32, Precision::Fp16, Precision::Bf16] {
                let what = format!("{name} sm_{sm} {}", precision.name());
                let (mut module, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
                driver::prepare(&mut module, &Options::new(Target::Sm(sm)).with_precision(precision), &[]).unwrap_or_else(|e| panic!("{what}: {e}"));
                let program = lower(&module.functions[0], sm);
                let compiled = nvptx::compile(&program, sm).unwrap_or_else(|e| panic!("{what}: {e}"));
                let ptx = &compiled.ptx;
                assert!(ptx.contains(&format!(".target sm_{sm}")), "{what}: .target");
                let isa = legal::ptx_isa(sm).trim_start_matches("+ptx");
                assert!(ptx.contains(&format!(".version {}.{}", &isa[..1], &isa[1..])), "{what}: .version for {isa}");
                // bf16 below sm_80 is the reported downgrade: no bf16 tensor-core code.
                if sm < 80 {
                    assert!(!ptx.lines().any(|l| l.contains("wmma") && l.contains("bf16")), "{what}: bf16 WMMA below sm_80");
                }
                let (cubin, log) = ptxas(ptx, sm, &dir, &format!("{name}_{}", precision.name()));
                let tensor_core: Vec<String> = program
                    .kernels
                    .iter()
                    .filter(|k| legal::tensor_core_shape(Target::Sm(sm).info(), k).is_some())
                    .map(|k| format!("{}{}", nvptx::SYMBOL_PREFIX, k.name))
                    .collect();
                let contractions: Vec<String> = program
                    .kernels
                    .iter()
                    .filter(|k| matches!(k.kind, KernelKind::Contraction(_)))
                    .map(|k| format!("{}{}", nvptx::SYMBOL_PREFIX, k.name))
                    .collect();
                for (f, bytes) in spills(&log) {
                    assert!(!(contractions.contains(&f) && bytes > 0), "{what}: {f} spills {bytes} bytes");
                }
                if precision != Precision::Fp32 && (sm >= 80 || precision == Precision::Fp16) {
                    assert!(!tensor_core.is_empty(), "{what}: no contraction runs on tensor cores");
                }
                for f in &tensor_core {
                    let body = ptx.split(&format!(".entry {f}(")).nth(1).unwrap_or_else(|| panic!("{what}: {f} missing"));
                    let body = body.split("\n}\n").next().unwrap();
                    assert!(body.contains("wmma.mma.sync.aligned.row.") && body.contains("m16n16k16.f32"), "{what}: {f} has no WMMA mma");
                    assert!(!body.contains(".local"), "{what}: {f} uses local memory");
                }
                if !tensor_core.is_empty() {
                    let out = Command::new(&nvdisasm).arg(&cubin).output().unwrap();
                    assert!(out.status.success(), "{what}: nvdisasm failed: {}", String::from_utf8_lossy(&out.stderr));
                    let sass = String::from_utf8_lossy(&out.stdout);
                    for f in &tensor_core {
                        let body = sass.split(&format!(".text.{f}:")).nth(1).unwrap_or_else(|| panic!("{what}: no SASS for {f}"));
                        let body = body.split(".section").next().unwrap();
                        assert!(body.contains("HMMA."), "{what}: {f} has no HMMA in its SASS");
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_parity_case_compiles_for_every_sm_and_assembles() {
    let dir = scratch_dir("parity");
    let cases = parity_cases();
    // Two workers: each compiles and assembles its share (LLVM contexts are per thread).
    std::thread::scope(|s| {
        for w in 0..2 {
            let (cases, dir) = (&cases, &dir);
            s.spawn(move || {
                for case in cases.iter().skip(w).step_by(2) {
                    for sm in SMS {
                        let program = lower(&case.graph, sm);
                        let compiled = nvptx::compile(&program, sm).unwrap_or_else(|e| panic!("{} sm_{sm}: {e}", case.name));
                        ptxas(&compiled.ptx, sm, dir, &case.name);
                    }
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn f16_elementwise_is_computed_in_f32_and_rounded_once_and_math_stays_f32_only() {
    // An f16 add rounds once: LLVM turns fpext + f32 add + fptrunc into the native `add.rn.f16`,
    // which is the same for + − × (DESIGN.md "Numerics"); a bf16 add below sm_90 widens to f32
    // and rounds with cvt. Never an FMA (no fast-math flags).
    let cases = parity_cases();
    let find = |name: &str| cases.iter().find(|c| c.name == name).unwrap();
    let ptx = nvptx::compile(&lower(&find("add_f16_n17_bc1").graph, 70), 70).unwrap().ptx;
    assert!(ptx.contains("add.rn.f16") && ptx.contains("ld.global"), "{ptx}");
    // sm_80 has no bf16 multiply: LLVM uses `fma.rn.bf16 a, b, -0.0`, the exact product rounded
    // once (adding -0 changes nothing, not even the sign of a zero).
    let ptx = nvptx::compile(&lower(&find("mul_bf16_n17_bc1").graph, 80), 80).unwrap().ptx;
    assert!(ptx.contains("fma.rn.bf16") && ptx.contains("0x8000"), "{ptx}");
    // sm_70 has no bf16 arithmetic: widen, multiply in f32, round once in software.
    let ptx = nvptx::compile(&lower(&find("mul_bf16_n17_bc1").graph, 70), 70).unwrap().ptx;
    assert!(ptx.contains("mul.rn.f32") && !ptx.contains("bf16"), "{ptx}");
    // An even inner dimension runs two elements per thread: half2/bf16x2 arithmetic.
    let ptx = nvptx::compile(&lower(&find("add_f16_n16_bc0").graph, 70), 70).unwrap().ptx;
    assert!(ptx.contains("add.rn.f16x2") && ptx.contains("ld.global.b32"), "{ptx}");
    let ptx = nvptx::compile(&lower(&find("mul_bf16_n16_bc0").graph, 90), 90).unwrap().ptx;
    assert!(ptx.contains("mul.rn.bf16x2"), "{ptx}");
    for case in cases.iter().filter(|c| c.name.starts_with("mul_") || c.name.starts_with("add_")) {
        let ptx = nvptx::compile(&lower(&case.graph, 90), 90).unwrap().ptx;
        assert!(!ptx.contains("fma.rn.f32") && !ptx.contains("fma.rn.f16"), "{}: no contraction into FMA", case.name);
    }
    // f64 math is outside the NVPTX legality table: a located error, not PTX.
    let mut g = Graph::new("exp64");
    let x = g.add_input(f16c_dialect::TensorType::new(f16c_dialect::DType::F64, [4]), f16c_dialect::Location::unknown());
    let y = g.add_node(
        f16c_dialect::Op::Unary(f16c_dialect::UnaryOp::Exp),
        f16c_dialect::ValueType::Tensor(f16c_dialect::TensorType::new(f16c_dialect::DType::F64, [4])),
        &[x],
        f16c_dialect::Location::unknown(),
    );
    g.add_output(y);
    let err = driver::lower_for(&g, nvptx::backend(80).unwrap()).unwrap_err().to_string();
    assert!(err.contains("not supported by nvptx") && err.contains("f64"), "{err}");
    assert_eq!(nvptx::backend(80).unwrap().name(), "nvptx");
}

#[test]
fn wmma_tiles_are_planned_by_size_and_both_assemble_without_spills() {
    use f16c_compiler::backend::nvptx::wmma::Tile;
    use f16c_dialect::DType;
    let dir = scratch_dir("tiles");
    // Below the threshold the 64 × 64 tile (four warps); at and above it 128 × 128 (eight),
    // with rows and columns ragged, unless an operand stages element by element (its address
    // arithmetic would spill at 128 × 128). `f16c-gpu-cases` runs the same shapes on a GPU.
    let cases = [
        (1, 1024, 1024, 1024, DType::F16, Tile::SMALL),
        (1, 2100, 104, 2056, DType::F16, Tile::LARGE),
        (2, 1500, 72, 1504, DType::BF16, Tile::LARGE),
        (1, 2100, 100, 2050, DType::F16, Tile::SMALL),
    ];
    for (batch, m, k, n, dtype, want) in cases {
        let what = format!("{batch}x{m}x{k}x{n} {dtype}");
        let g = matmul_graph(batch, m, k, n, dtype);
        for sm in [80, 90] {
            let program = lower(&g, sm);
            let KernelKind::Contraction(c) = &program.kernels.iter().find(|k| matches!(k.kind, KernelKind::Contraction(_))).unwrap().kind else { unreachable!() };
            assert_eq!(Tile::of(c), want, "{what}");
            assert!(want.shared_bytes() <= 48 * 1024, "{what}: static shared memory");
            let compiled = nvptx::compile(&program, sm).unwrap_or_else(|e| panic!("{what} sm_{sm}: {e}"));
            let step = compiled.steps.iter().find(|s| compiled.symbols[s.function].contains("matmul")).expect("a matmul step");
            let launch = step.launch.unwrap();
            assert_eq!(launch.block, [want.threads() as u32, 1, 1], "{what}");
            assert_eq!(launch.grid, [n.div_ceil(want.bn) as u32, m.div_ceil(want.bm) as u32, batch as u32], "{what}");
            assert!(compiled.ptx.lines().any(|l| l.trim() == format!(".maxntid {}", want.threads())), "{what}: maxntid");
            let (_, log) = ptxas(&compiled.ptx, sm, &dir, &format!("tile_{m}_{n}_{sm}"));
            // Element-by-element staging keeps 32 loads and their 64-bit addresses in flight at
            // 255 registers: ptxas may spill a few bytes there (12 on sm_90); the vector-staged
            // tiles, both sizes, have room to spare.
            let element_staged = k % 8 != 0 || n % 8 != 0;
            for (f, bytes) in spills(&log) {
                assert!(bytes == 0 || (element_staged && bytes <= 32), "{what} sm_{sm}: {f} spills {bytes} bytes");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
