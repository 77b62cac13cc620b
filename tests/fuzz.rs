//! Fuzzing f16c's readers on stable Rust: a seeded mutation harness (no nightly `cargo fuzz`).
//!
//! Four targets read untrusted bytes: the importer (MLIR text, then everything a model goes
//! through after import: verification, export and re-import, precision assignment, the
//! reference interpreter, the JIT, the LLVM x86-64 and NVPTX code generators), the `.npy`
//! reader, the policy parser and the artifact reader (and loader). Inputs are mutations of a
//! corpus seeded from the test models, the lit inputs and artifacts compiled at start-up: byte
//! flips and splices, and mutations that know the format (numbers swapped for boundary values,
//! element types swapped, lines deleted, duplicated or moved, `.npy` headers rewritten, artifact
//! manifests edited with the checksum fixed so that the reader gets past it).
//!
//! Each input runs in a worker process ([`worker`]) so that an abort, a stack overflow or a
//! blown memory limit is caught, not shared with the harness: the harness sends inputs over a
//! pipe, and a worker that dies, panics or takes longer than [`HANG_SECONDS`] is a finding,
//! saved with its input. An input whose outcome (ok, or the kind of error, numbers and names
//! removed) was not seen before joins the corpus: a cheap stand-in for coverage feedback.
//! A finding is also an invariant broken where one is checked: an imported module that does
//! not survive export and re-import, a `.npy` tensor that does not survive writing and
//! reading, a policy that does not survive `--print-policy` and reading back.

use crate::cases::Rng;
use f16c_compiler::driver::{self, Options};
use f16c_compiler::policy::{Policy, Precision};
use f16c_compiler::target::Target;
use f16c_core::artifact::{fnv1a64, Artifact, HEADER_BYTES};
use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::import::parse_module;
use f16c_dialect::{reference, Graph, Tensor};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// An input that takes longer than this is a hang.
pub const HANG_SECONDS: u64 = 20;

/// The tensor size limit the workers run with (`F16C_MAX_TENSOR_BYTES`): mutated shapes are
/// refused early instead of making every run slow.
pub const WORKER_TENSOR_LIMIT: u64 = 16 << 20;

/// The loop iteration limit the workers run with (`F16C_MAX_LOOP_ITERATIONS`): a mutated
/// `tosa.while_loop` whose condition never turns false is a run-time error, not a hang.
pub const WORKER_LOOP_LIMIT: u64 = 10_000;

/// The address-space limit of a worker: an input that makes f16c allocate more is a finding
/// (the process dies on the failed allocation), not a machine out of memory.
pub const WORKER_MEMORY_LIMIT: u64 = 8 << 30;

/// Corpus entries larger than this are not kept (mutating them is slow and finds nothing new).
const MAX_ENTRY_BYTES: usize = 256 << 10;

/// What is fuzzed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuzzTarget {
    /// MLIR text through import and the whole compiler.
    Importer,
    /// The `.npy` reader.
    Npy,
    /// The policy file parser.
    Policy,
    /// The artifact reader and loader.
    Artifact,
}

impl FuzzTarget {
    /// Every target.
    pub const ALL: [FuzzTarget; 4] = [FuzzTarget::Importer, FuzzTarget::Npy, FuzzTarget::Policy, FuzzTarget::Artifact];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FuzzTarget::Importer => "importer",
            FuzzTarget::Npy => "npy",
            FuzzTarget::Policy => "policy",
            FuzzTarget::Artifact => "artifact",
        }
    }

    /// The target named `s`.
    pub fn parse(s: &str) -> Option<FuzzTarget> {
        FuzzTarget::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The file extension a saved input gets.
    fn extension(self) -> &'static str {
        match self {
            FuzzTarget::Importer => "mlir",
            FuzzTarget::Npy => "npy",
            FuzzTarget::Policy => "toml",
            FuzzTarget::Artifact => "f16c",
        }
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

fn files_with(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            // lit's own output folders hold copies of what it ran.
            if p.file_name().is_some_and(|n| n != "Output") {
                files_with(&p, ext, out);
            }
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

/// The seed corpus of a target: the test models and lit inputs of its format (artifacts are
/// compiled from the test models for the JIT, the LLVM x86-64 backend and sm_80).
pub fn seeds(target: FuzzTarget) -> Vec<Vec<u8>> {
    let root = repo_root();
    let mut paths = Vec::new();
    match target {
        FuzzTarget::Importer => {
            files_with(&root.join("lit"), "mlir", &mut paths);
            files_with(&root.join("tests/data/models"), "mlir", &mut paths);
        }
        FuzzTarget::Npy => {
            files_with(&root.join("lit/Inputs"), "npy", &mut paths);
            files_with(&root.join("tests/data/models"), "npy", &mut paths);
        }
        FuzzTarget::Policy => files_with(&root.join("lit/Inputs"), "toml", &mut paths),
        FuzzTarget::Artifact => return artifact_seeds(),
    }
    let mut seeds: Vec<Vec<u8>> = paths.iter().filter_map(|p| std::fs::read(p).ok()).filter(|b| b.len() <= MAX_ENTRY_BYTES).collect();
    if target == FuzzTarget::Policy {
        // Every effective policy as --print-policy writes it.
        for spec in ["O0", "O1", "O2", "O3"] {
            for precision in [Precision::Fp16, Precision::Bf16] {
                let p = Policy::from_spec(spec, precision, Target::X86_64).expect("a level");
                seeds.push(p.to_toml().into_bytes());
            }
        }
    }
    seeds
}

fn artifact_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for name in ["mlp_small", "cnn_small"] {
        let path = repo_root().join(format!("tests/data/models/{name}.tosa.mlir"));
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        for (target, backend, precision) in [(Target::X86_64, None, Precision::Fp32), (Target::X86_64, Some(f16c_compiler::target::BackendName::Llvm), Precision::Fp16), (Target::Sm(80), None, Precision::Fp16)] {
            let Ok(mut module) = parse_module(&text, name) else { continue };
            if driver::prepare(&mut module, &Options::new(target).with_precision(precision), &[]).is_err() {
                continue;
            }
            let Ok(b) = driver::backend_named(target, backend, None) else { continue };
            if let Ok(a) = driver::artifact_with(&module.functions[0], b) {
                out.push(a.to_bytes());
            }
        }
    }
    out
}

// ---------------------------------------------------------------- mutation

const NUMBERS: &[&str] = &[
    "0", "1", "-1", "2", "3", "7", "8", "16", "17", "33", "255", "256", "1024", "65504", "65505", "65536", "2147483647", "2147483648", "-2147483648",
    "4294967296", "9223372036854775807", "18446744073709551615", "18446744073709551616", "1.0e38", "3.5e38", "-0.0", "0.0", "1.0e-45", "6.0e-8",
    "0x7FC00000", "0x7F800000", "0xFFFF", "0x7E00", "nan", "inf", "-inf", "1e309",
];
const WORDS: &[&str] = &["f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i48", "i64", "ui8", "index", "none", "tensor", "?", "*", "true", "false"];
const PUNCT: &[&str] = &["{", "}", "<", ">", "(", ")", "[", "]", "x", ",", ":", "\"", "%", "#", "^", "!", "@", "-", "0x", "\\", "\n", "=", "'", "\0", "\u{ff}"];

impl Rng {
    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// `[start, end)` of a random maximal run of bytes satisfying `class` in `s`, if any.
fn random_run(s: &[u8], rng: &mut Rng, class: impl Fn(u8) -> bool) -> Option<(usize, usize)> {
    for _ in 0..8 {
        let mut i = rng.below(s.len().max(1));
        if s.get(i).is_some_and(|&b| class(b)) {
            while i > 0 && class(s[i - 1]) {
                i -= 1;
            }
            let mut e = i;
            while e < s.len() && class(s[e]) {
                e += 1;
            }
            return Some((i, e));
        }
    }
    None
}

fn line_spans(s: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        if b == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < s.len() {
        spans.push((start, s.len()));
    }
    spans
}

/// One mutation of text that knows what MLIR and TOML look like.
fn mutate_text(s: &mut Vec<u8>, corpus: &[Vec<u8>], rng: &mut Rng) {
    let replace = |s: &mut Vec<u8>, (a, b): (usize, usize), with: &[u8]| {
        s.splice(a..b, with.iter().copied());
    };
    match rng.below(10) {
        0 => {
            if let Some(r) = random_run(s, rng, |b| b.is_ascii_digit()) {
                let n = rng.pick(NUMBERS).as_bytes().to_vec();
                replace(s, r, &n);
            }
        }
        1 => {
            if let Some(r) = random_run(s, rng, |b| b.is_ascii_alphanumeric() || b == b'_') {
                let w = rng.pick(WORDS).as_bytes().to_vec();
                replace(s, r, &w);
            }
        }
        2 | 3 => {
            let lines = line_spans(s);
            if lines.is_empty() {
                return;
            }
            let (a, b) = *rng.pick(&lines);
            let line = s[a..b].to_vec();
            match rng.below(3) {
                0 => replace(s, (a, b), b""),
                1 => {
                    let at = rng.pick(&lines).0;
                    s.splice(at..at, line);
                }
                _ => {
                    s.drain(a..b);
                    let lines = line_spans(s);
                    let at = if lines.is_empty() { 0 } else { rng.pick(&lines).0 };
                    s.splice(at..at, line);
                }
            }
        }
        4 => {
            // A line of another corpus entry.
            let other = rng.pick(corpus);
            let lines = line_spans(other);
            if let (Some(&(a, b)), false) = (lines.get(rng.below(lines.len())), s.is_empty()) {
                let at = rng.below(s.len());
                s.splice(at..at, other[a..b].iter().copied());
            }
        }
        5 => {
            let at = rng.below(s.len() + 1);
            let p = rng.pick(PUNCT).as_bytes().to_vec();
            s.splice(at..at, p);
        }
        6 => {
            if !s.is_empty() {
                let a = rng.below(s.len());
                let b = (a + 1 + rng.below(32)).min(s.len());
                s.drain(a..b);
            }
        }
        7 => {
            // Repeat a span: deep nesting, long lists.
            if !s.is_empty() {
                let a = rng.below(s.len());
                let b = (a + 1 + rng.below(16)).min(s.len());
                let span = s[a..b].to_vec();
                for _ in 0..1 + rng.below(64) {
                    s.splice(b..b, span.iter().copied());
                }
            }
        }
        _ => mutate_bytes(s, rng),
    }
}

/// One byte-level mutation.
fn mutate_bytes(s: &mut Vec<u8>, rng: &mut Rng) {
    if s.is_empty() {
        s.push(rng.next() as u8);
        return;
    }
    let i = rng.below(s.len());
    match rng.below(5) {
        0 => s[i] ^= 1 << rng.below(8),
        1 => s[i] = rng.next() as u8,
        2 => s[i] = *rng.pick(&[0u8, 0xff, 0x7f, 0x80, b'0', b'9']),
        3 => s.truncate(i),
        _ => {
            let n = rng.below(16) + 1;
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            s.splice(i..i, bytes);
        }
    }
}

/// A `.npy` file's header text and where its data starts, if the bytes have one.
fn npy_header(s: &[u8]) -> Option<(usize, usize)> {
    f16c_runtime::npy::header_span(s).map(|(start, len)| (start, start + len)).filter(|&(_, end)| end <= s.len())
}

fn mutate_npy(s: &mut Vec<u8>, corpus: &[Vec<u8>], rng: &mut Rng) {
    let Some((a, b)) = npy_header(s).filter(|_| rng.below(3) > 0) else { return mutate_bytes(s, rng) };
    let mut header = s[a..b].to_vec();
    match rng.below(3) {
        0 => {
            let descr = *rng.pick(&["'<f4'", "'<f2'", "'>f4'", "'<f8'", "'|b1'", "'|i1'", "'<i4'", "'<i8'", "'<u2'", "'<c8'", "'|V4'", "'<U3'", "'<f4', (2,)", "[('a', '<f4')]"]);
            if let Some(p) = find(&header, b"'descr': ") {
                let start = p + 9;
                let end = header[start..].iter().position(|&c| c == b',').map_or(header.len(), |e| start + e);
                header.splice(start..end, descr.bytes());
            }
        }
        1 => {
            if let Some(p) = find(&header, b"'fortran_order': ") {
                let start = p + 17;
                let end = header[start..].iter().position(|&c| c == b',').map_or(header.len(), |e| start + e);
                header.splice(start..end, rng.pick(&["True", "False", "1", "None"]).bytes());
            }
        }
        _ => mutate_text(&mut header, corpus, rng),
    }
    // Keep the header length field honest most of the time, so the reader looks further.
    let mut out = s[..a].to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(&s[b..]);
    if rng.below(4) > 0 {
        let len = header.len();
        if s[6] == 1 && len <= u16::MAX as usize {
            out[8..10].copy_from_slice(&(len as u16).to_le_bytes());
        } else if s[6] != 1 {
            out[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        }
    }
    *s = out;
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn mutate_artifact(s: &mut Vec<u8>, corpus: &[Vec<u8>], rng: &mut Rng) {
    let u64_at = |s: &[u8], o: usize| u64::from_le_bytes(s[o..o + 8].try_into().expect("8 bytes")) as usize;
    if s.len() < HEADER_BYTES {
        return mutate_bytes(s, rng);
    }
    let (m, c) = (u64_at(s, 16), u64_at(s, 24));
    let Some(rest) = HEADER_BYTES.checked_add(m).and_then(|e| e.checked_add(c)).filter(|&e| e <= s.len()) else { return };
    let mut manifest = s[HEADER_BYTES..HEADER_BYTES + m].to_vec();
    let code = s[HEADER_BYTES + m..rest].to_vec();
    let mut constants = s[rest..].to_vec();
    match rng.below(8) {
        0 => mutate_bytes(&mut constants, rng),
        _ => {
            for _ in 0..1 + rng.below(3) {
                mutate_text(&mut manifest, corpus, rng);
            }
        }
    }
    // Fix the lengths and the checksum: the reader then judges the manifest itself.
    let mut out = s[..16].to_vec();
    for len in [manifest.len(), code.len(), constants.len()] {
        out.extend_from_slice(&(len as u64).to_le_bytes());
    }
    out.extend_from_slice(&f16c_core::artifact::checksum(&[&manifest, &code, &constants]).to_le_bytes());
    out.extend_from_slice(&manifest);
    out.extend_from_slice(&code);
    out.extend_from_slice(&constants);
    *s = out;
}

/// A mutation of a corpus entry: one to four stacked mutations of the target's kinds.
pub fn mutate(target: FuzzTarget, corpus: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut s = rng.pick(corpus).clone();
    for _ in 0..1 + rng.below(4) {
        match target {
            FuzzTarget::Importer | FuzzTarget::Policy => mutate_text(&mut s, corpus, rng),
            FuzzTarget::Npy => mutate_npy(&mut s, corpus, rng),
            FuzzTarget::Artifact => mutate_artifact(&mut s, corpus, rng),
        }
    }
    // Damage anywhere (the code included) without fixing the checksum: what a bad disk or a
    // truncated copy does. The checksum is fixed only around edits of the manifest and the
    // constants: an artifact's code is trusted as any shared library is, so code edited
    // behind a matching checksum is not a case the reader can refuse (README, "Reliability").
    if target == FuzzTarget::Artifact && rng.below(4) == 0 {
        mutate_bytes(&mut s, rng);
    }
    s
}

// ---------------------------------------------------------------- execution

/// What running one input gave: a class (`ok:...` or `error:<kind>`) when f16c behaved, or a
/// broken invariant.
pub type Outcome = Result<String, String>;

/// The kind of an error message: its first line's first words made only of letters (numbers,
/// quoted text, types and paths dropped), so that the same error on other values is one kind.
pub fn error_kind(message: &str) -> String {
    let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    // Drop the location prefix `file:line:col: error: `.
    let text = first.rsplit_once("error: ").map_or(first, |(_, t)| t);
    // Drop what is quoted: it is the input's own text.
    let mut unquoted = String::new();
    let mut quote = None;
    for ch in text.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if matches!(ch, '\'' | '"' | '`') => quote = Some(ch),
            None => unquoted.push(ch),
        }
    }
    let words: Vec<&str> = unquoted
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, ',' | '.' | ':' | ';' | '(' | ')')))
        // Long words are the input's own (an op name a mutation made up).
        .filter(|w| !w.is_empty() && w.len() <= 16 && w.chars().all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .take(5)
        .collect();
    words.join(" ")
}

/// Deterministic inputs of `g`'s argument types (any element type), if every argument is a
/// tensor.
fn inputs_of(g: &Graph) -> Option<Vec<Tensor>> {
    g.inputs()
        .iter()
        .map(|&i| {
            let ty = g.tensor_ty(i)?;
            let v: Vec<f32> = (0..ty.num_elements()).map(|k| ((k * 7 % 23) as f32 - 11.0) * 0.25).collect();
            let t = Tensor::from_f32(ty.shape.clone(), v).ok()?;
            Some(f16c_dialect::semantics::cast(&t, ty.dtype))
        })
        .collect()
}

/// Elements the graph computes (each node's result, a contraction counted per multiply): a
/// mutated model is run only when this is small, so that the run takes milliseconds.
fn work(g: &Graph) -> u128 {
    g.node_ids()
        .map(|id| {
            let out = g.tensor_ty(id).map_or(1, |t| t.num_elements() as u128);
            let per = if g.op(id).is_contraction() { g.operands(id).get(1).and_then(|&w| g.tensor_ty(w)).map_or(1, |t| t.num_elements() as u128) } else { 1 };
            out.saturating_mul(per)
        })
        .fold(0u128, |a, b| a.saturating_add(b))
}

/// Export, import and export again give the same text: the printer writes what the importer
/// reads, NaN payloads and signed zeros of constants included.
pub fn text_round_trip(module: &f16c_dialect::Module) -> Result<(), String> {
    let printed = print_module(module, PrintOptions::default()).map_err(|d| format!("export fails: {d}"))?;
    let again = parse_module(&printed, "exported.mlir").map_err(|d| format!("re-import of the exported module fails: {d}\n--- exported:\n{printed}"))?;
    let twice = print_module(&again, PrintOptions::default()).map_err(|d| format!("export of the re-imported module fails: {d}"))?;
    if twice != printed {
        return Err(format!("export(import(export(m))) differs from export(m)\n--- exported:\n{printed}\n--- again:\n{twice}"));
    }
    Ok(())
}

/// Imports MLIR text and puts the result through the compiler: export and re-import (which
/// must print the same text again), precision assignment, and, for one of the backends picked by
/// the input's hash (so that each input is cheap), code generation and a run.
fn run_importer(bytes: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(bytes);
    let module = match parse_module(&text, "fuzz.mlir") {
        Ok(m) => m,
        Err(d) => return Ok(format!("error:import:{}", error_kind(&d.to_string()))),
    };
    text_round_trip(&module)?;
    if module.functions.is_empty() {
        return Ok("ok:empty".into());
    }
    let lane = fnv1a64(&[bytes]) % 4;
    let (target, precision) = match lane {
        0 => (Target::X86_64, Precision::Fp16),
        1 => (Target::X86_64, Precision::Bf16),
        2 => (Target::X86_64, Precision::Fp32),
        _ => (Target::Sm(80), Precision::Fp16),
    };
    let mut prepared = module;
    if let Err(e) = driver::prepare(&mut prepared, &Options::new(target).with_precision(precision), &[]) {
        return Ok(format!("error:prepare:{}", error_kind(&e.to_string())));
    }
    let g = &prepared.functions[0];
    match lane {
        3 => Ok(match driver::emit(g, target, f16c_compiler::backend::Emit::Ptx) {
            Ok(_) => "ok:ptx".into(),
            Err(d) => format!("error:ptx:{}", error_kind(&d.to_string())),
        }),
        _ if work(g) > 1 << 22 => Ok("ok:too-big-to-run".into()),
        2 => {
            let b = driver::backend_named(Target::X86_64, Some(f16c_compiler::target::BackendName::Llvm), None).map_err(|d| d.to_string())?;
            Ok(match driver::artifact_with(g, b) {
                Ok(_) => "ok:llvm".into(),
                Err(d) => format!("error:llvm:{}", error_kind(&d.to_string())),
            })
        }
        _ => {
            let Some(inputs) = inputs_of(g) else { return Ok("ok:non-tensor-arguments".into()) };
            let want = reference::run(g, &inputs).map_err(|e| e.to_string());
            let got = f16c_jit::Model::compile_graph(g, 1).map_err(|e| e.to_string()).and_then(|m| m.run(&inputs).map_err(|e| e.to_string()));
            Ok(match (want, got) {
                (Ok(_), Ok(_)) => "ok:ran".into(),
                (Err(e), _) => format!("error:reference:{}", error_kind(&e)),
                (_, Err(e)) => format!("error:jit:{}", error_kind(&e)),
            })
        }
    }
}

/// Reads a `.npy` file; an accepted tensor must come back bit for bit from writing and reading.
fn run_npy(bytes: &[u8]) -> Outcome {
    let path = Path::new("fuzz.npy");
    let t = match f16c_runtime::npy::from_bytes(bytes, path) {
        Ok(t) => t,
        Err(e) => return Ok(format!("error:{}", error_kind(&e.to_string()))),
    };
    let dir = f16c_core::tempdir::TempDir::new("f16c-fuzz-npy").map_err(|e| format!("temp dir: {e}"))?;
    let file = dir.path().join("t.npy");
    f16c_runtime::npy::write(&file, &t).map_err(|e| format!("writing an accepted tensor fails: {e}"))?;
    let back = f16c_runtime::npy::read(&file).map_err(|e| format!("reading a written tensor fails: {e}"))?;
    if back.shape() != t.shape() || back.data().to_le_bytes() != t.data().to_le_bytes() {
        return Err(format!("write/read changes the tensor ({} → {})", t.ty(), back.ty()));
    }
    Ok(format!("ok:{}", t.dtype()))
}

/// Parses a policy file; an accepted policy, printed, must read back to the same lists.
fn run_policy(bytes: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(bytes) else { return Ok("error:not-utf8".into()) };
    let p = match Policy::from_toml(text, "fuzz.toml", Precision::Fp16, Target::X86_64) {
        Ok(p) => p,
        Err(e) => return Ok(format!("error:{}", error_kind(&e.to_string()))),
    };
    let printed = p.to_toml();
    let back = Policy::from_toml(&printed, "fuzz.toml", Precision::Fp16, Target::X86_64).map_err(|e| format!("--print-policy output does not read back: {e}\n{printed}"))?;
    if back.to_toml() != printed {
        return Err(format!("--print-policy output reads back to another policy:\n{printed}\n---\n{}", back.to_toml()));
    }
    Ok("ok".into())
}

/// Reads an artifact and loads it (a CPU artifact for this machine is mapped, not run).
fn run_artifact(bytes: &[u8]) -> Outcome {
    let a = match Artifact::from_bytes(bytes) {
        Ok(a) => a,
        Err(e) => return Ok(format!("error:read:{}", error_kind(&e.to_string()))),
    };
    if a.manifest.code_format == f16c_core::artifact::CodeFormat::Ptx {
        return Ok("ok:ptx".into());
    }
    Ok(match f16c_runtime::loader::load(a, 1) {
        Ok(_) => "ok:loaded".into(),
        Err(e) => format!("error:load:{}", error_kind(&e.to_string())),
    })
}

/// Runs one input of `target` in this process.
pub fn execute(target: FuzzTarget, bytes: &[u8]) -> Outcome {
    match target {
        FuzzTarget::Importer => run_importer(bytes),
        FuzzTarget::Npy => run_npy(bytes),
        FuzzTarget::Policy => run_policy(bytes),
        FuzzTarget::Artifact => run_artifact(bytes),
    }
}

// ---------------------------------------------------------------- worker protocol

/// The worker loop (`f16c-fuzz worker TARGET`): reads inputs framed as a little-endian u32
/// length and the bytes from stdin, answers one line per input on stdout: `ok CLASS`,
/// `broken MESSAGE` (an invariant) or `panic MESSAGE`. Exits at end of input. With
/// `F16C_FUZZ_SELFTEST` set, the inputs `#abort`, `#hang` and `#panic` do what they say (the
/// harness's own test).
pub fn worker(target: FuzzTarget) -> std::io::Result<()> {
    std::panic::set_hook(Box::new(|_| {}));
    let selftest = std::env::var_os("F16C_FUZZ_SELFTEST").is_some();
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    loop {
        let mut len = [0u8; 4];
        if stdin.read_exact(&mut len).is_err() {
            return Ok(());
        }
        let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
        stdin.read_exact(&mut bytes)?;
        let line = match std::panic::catch_unwind(|| {
            if selftest {
                // Inputs that misbehave on purpose, so that a test can check the harness sees it.
                match bytes.as_slice() {
                    b"#abort" => std::process::abort(),
                    b"#hang" => std::thread::sleep(Duration::from_secs(3600)),
                    b"#panic" => panic!("a panic on purpose"),
                    _ => {}
                }
            }
            execute(target, &bytes)
        }) {
            Ok(Ok(class)) => format!("ok {class}"),
            Ok(Err(broken)) => format!("broken {broken}"),
            // "panic: MESSAGE" made the protocol's "panic MESSAGE".
            Err(p) => crate::panic_message(p).replacen(": ", " ", 1),
        };
        writeln!(stdout, "{}", line.replace('\\', "\\\\").replace('\n', "\\n"))?;
        stdout.flush()?;
    }
}

/// A worker process and the lines it answers.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Worker {
    fn spawn(exe: &Path, target: FuzzTarget) -> std::io::Result<Worker> {
        Worker::spawn_with(exe, target, &[])
    }

    fn spawn_with(exe: &Path, target: FuzzTarget, env: &[(&str, &str)]) -> std::io::Result<Worker> {
        let mut cmd = Command::new(exe);
        cmd.envs(env.iter().copied());
        cmd.args(["worker", target.name()])
            .env("F16C_MAX_TENSOR_BYTES", WORKER_TENSOR_LIMIT.to_string())
            .env("F16C_MAX_LOOP_ITERATIONS", WORKER_LOOP_LIMIT.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        limit_memory(&mut cmd);
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Worker { child, stdin, lines })
    }

    /// Sends one input; the answer, or why there is none (the worker died or hung).
    fn ask(&mut self, bytes: &[u8]) -> Result<String, String> {
        self.ask_within(bytes, Duration::from_secs(HANG_SECONDS))
    }

    fn ask_within(&mut self, bytes: &[u8], limit: Duration) -> Result<String, String> {
        let sent = self.stdin.write_all(&(bytes.len() as u32).to_le_bytes()).and_then(|_| self.stdin.write_all(bytes)).and_then(|_| self.stdin.flush());
        if sent.is_err() {
            return Err(self.death());
        }
        match self.lines.recv_timeout(limit) {
            Ok(line) => Ok(line.replace("\\n", "\n").replace("\\\\", "\\")),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                Err(format!("hang: no answer in {} s", limit.as_secs_f64()))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(self.death()),
        }
    }

    fn death(&mut self) -> String {
        match self.child.wait() {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                match status.signal() {
                    Some(6) => "crash: aborted (SIGABRT: an abort, or a failed allocation)".into(),
                    Some(11) => "crash: segmentation fault (SIGSEGV: a stack overflow or a bad access)".into(),
                    Some(s) => format!("crash: killed by signal {s}"),
                    None => format!("crash: exited with {status}"),
                }
            }
            Err(e) => format!("crash: {e}"),
        }
    }
}

/// Runs `inputs` through workers of `exe` (a new one after each death), each within `limit`:
/// the worker's answer line, or why there is none.
pub fn run_inputs(exe: &Path, target: FuzzTarget, inputs: &[&[u8]], limit: Duration, env: &[(&str, &str)]) -> std::io::Result<Vec<Result<String, String>>> {
    let spawn = || Worker::spawn_with(exe, target, env);
    let mut worker = spawn()?;
    let mut out = Vec::new();
    for input in inputs {
        let r = worker.ask_within(input, limit);
        if r.is_err() {
            worker = spawn()?;
        }
        out.push(r);
    }
    Ok(out)
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn limit_memory(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: WORKER_MEMORY_LIMIT, rlim_max: WORKER_MEMORY_LIMIT };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
}

// ---------------------------------------------------------------- campaign

/// One finding: what went wrong and the input that did it (saved under the output folder).
#[derive(Debug)]
pub struct Finding {
    /// The target.
    pub target: FuzzTarget,
    /// What happened.
    pub message: String,
    /// Where the input was saved.
    pub input: PathBuf,
}

/// What a campaign did.
#[derive(Debug, Default)]
pub struct Report {
    /// Inputs run, per target.
    pub runs: Vec<(FuzzTarget, u64, usize, usize)>,
    /// Findings (one per kind of failure and target).
    pub findings: Vec<Finding>,
}

impl Report {
    /// A table: runs, distinct outcomes, corpus size, findings per target.
    pub fn table(&self) -> String {
        let mut s = String::from("| target | runs | distinct outcomes | corpus | findings |\n|---|---|---|---|---|\n");
        for (t, runs, outcomes, corpus) in &self.runs {
            let f = self.findings.iter().filter(|f| f.target == *t).count();
            s.push_str(&format!("| {} | {runs} | {outcomes} | {corpus} | {f} |\n", t.name()));
        }
        for f in &self.findings {
            s.push_str(&format!("\nFINDING ({}): {}\n  input: {}\n", f.target.name(), f.message.lines().next().unwrap_or(""), f.input.display()));
        }
        s
    }
}

/// Fuzzes `target` for `seconds` from `seed`, with the worker binary `exe`; findings are
/// saved in `out`.
pub fn campaign(exe: &Path, target: FuzzTarget, seconds: f64, seed: u64, out: &Path, report: &mut Report) -> std::io::Result<()> {
    let mut corpus = seeds(target);
    if corpus.is_empty() {
        return Err(std::io::Error::other(format!("no seeds for {}", target.name())));
    }
    let mut rng = Rng(seed ^ (target as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut seen = HashSet::new();
    let mut found = HashSet::new();
    let mut worker = Worker::spawn(exe, target)?;
    let verbose = std::env::var_os("F16C_FUZZ_VERBOSE").is_some();
    let start = Instant::now();
    let mut runs = 0u64;
    // The seeds themselves first, then mutations.
    let mut pending: Vec<Vec<u8>> = corpus.clone();
    while start.elapsed().as_secs_f64() < seconds {
        let input = pending.pop().unwrap_or_else(|| mutate(target, &corpus, &mut rng));
        runs += 1;
        let failure = match worker.ask(&input) {
            Ok(line) => match line.split_once(' ').unwrap_or((&line, "")) {
                ("ok", class) => {
                    if seen.insert(class.to_string()) {
                        if verbose {
                            eprintln!("{}: new outcome: {class}", target.name());
                        }
                        if input.len() <= MAX_ENTRY_BYTES {
                            corpus.push(input.clone());
                        }
                    }
                    None
                }
                (kind, message) => Some(format!("{kind}: {message}")),
            },
            Err(death) => {
                worker = Worker::spawn(exe, target)?;
                Some(death)
            }
        };
        if let Some(message) = failure {
            let kind = error_kind(&message);
            if found.insert(kind) {
                std::fs::create_dir_all(out)?;
                let name = format!("{}-{:016x}", target.name(), fnv1a64(&[&input]));
                let path = out.join(format!("{name}.{}", target.extension()));
                std::fs::write(&path, &input)?;
                std::fs::write(out.join(format!("{name}.txt")), &message)?;
                report.findings.push(Finding { target, message, input: path });
            }
        }
    }
    report.runs.push((target, runs, seen.len(), corpus.len()));
    Ok(())
}
