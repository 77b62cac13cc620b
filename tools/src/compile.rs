//! `f16c compile`: the whole pipeline for a target, writing a loadable artifact or a chosen form.

use crate::{input_arg, precision, read_input, switch};
use anyhow::{bail, Context};
use clap::{Arg, ArgMatches, Command};
use f16c_compiler::backend::Emit;
use f16c_compiler::driver;
use f16c_compiler::report::{to_dot_with, Report};
use f16c_dialect::export::{print_module, PrintOptions};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// What `--emit` can produce: target-independent forms, then the backends' code forms.
const EMITS: &[&str] = &["mlir", "report", "dot", "kernels", "clif", "asm", "obj", "llvm", "ptx", "lib", "header"];

pub fn command() -> Command {
    let c = Command::new("compile")
        .about("Compile a model: canonicalize, assign precision, insert casts, lower, generate code")
        .after_help(
            "Without --emit, writes a loadable artifact to -o FILE: one file with the code (a shared\n\
             object for x86_64 and aarch64, PTX for sm_XX), the converted weights and a manifest\n\
             (target, argument and result types, buffer layout, kernel schedule or GPU launches).\n\
             f16c-run runs it without the compiler (GPU artifacts through the CUDA driver, aarch64\n\
             artifacts on an AArch64 machine).\n\n\
             Emit forms:\n  mlir     the mixed-precision TOSA MLIR (valid for mlir-opt)\n  \
             report   per op: precision, accumulator, deciding rule, casts, weight bytes (--report-format=table|json)\n  \
             dot      the graph coloured by precision, casts marked (Graphviz: dot -Tsvg)\n  \
             kernels  the lowered program as the target's backend gets it: every kernel (family, shapes,\n           \
             types, fused ops, buffers) and the buffer plan\n  \
             clif     the Cranelift IR of every kernel (--target=x86_64), after a header with the kernels,\n           \
             the buffer plan's peak and its liveness lower bound, and the weight bytes\n  \
             asm      the machine code of every kernel (x86_64, aarch64)\n  \
             obj      the relocatable object file of the kernels (x86_64, aarch64; binary, needs -o)\n  \
             lib      a standalone shared library: the kernels, the weights and a plain C entry point\n           \
             (f32 in, f32 out, casts inside) that C programs call without f16c (aarch64, or\n           \
             x86_64 with --backend=llvm; binary, needs -o)\n  \
             header   the C header of --emit=lib: NAME_run(in0.., out0..), NAME_run_v, element counts\n  \
             ptx      the PTX of every kernel (--target=sm_XX), after a header with each launch\n  \
             llvm     the optimised LLVM IR (sm_XX, aarch64, or x86_64 with --backend=llvm)\n\n\
             Targets: x86_64 (Cranelift; --backend=llvm for the LLVM x86-64 backend, --cpu for its\n\
             level), sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 (LLVM NVPTX, matmul/conv on tensor cores),\n\
             aarch64 (LLVM, ARMv8.2-A fp16 NEON; aarch64+bf16 adds ARMv8.6 bf16); reference (the\n\
             default) is the interpreter and generates no code. --accumulate=f16 lets fp16\n\
             contractions sum in fp16 (fast on aarch64, less accurate; the report says so).\n\n\
             Examples:\n  f16c compile net.mlir --target=x86_64 --precision=fp16 -o net.f16c && f16c-run net.f16c --input x.npy\n  \
             f16c compile net.mlir --target=sm_80 --precision=fp16 -o net.f16c   # run with f16c-run on a GPU\n  \
             f16c compile net.mlir --target=sm_70 --precision=fp16 --emit=ptx\n  \
             f16c compile net.mlir --target=aarch64 --precision=fp16 --emit=lib -o libnet.so\n  \
             f16c compile net.mlir --target=aarch64 --precision=fp16 --emit=header -o net.h\n  \
             f16c compile net.mlir --target=sm_70 --precision=fp16 --emit=report\n  \
             f16c compile net.mlir --target=x86_64 --precision=fp16 --emit=kernels\n  \
             f16c compile net.mlir --policy=my-policy.toml --print-policy\n  \
             f16c compile net.mlir --calibrate x.npy --emit=mlir -o net.f16.mlir",
        )
        .arg(input_arg())
        .arg(Arg::new("output").short('o').value_name("FILE").help("Write the output here (required for the artifact and for --emit=obj)"))
        .arg(
            Arg::new("emit")
                .long("emit")
                .value_name("FORM")
                .value_parser(clap::builder::PossibleValuesParser::new(EMITS))
                .help("What to produce instead of the artifact (see below)"),
        )
        .arg(
            Arg::new("report-format")
                .long("report-format")
                .value_name("F")
                .default_value("table")
                .value_parser(["table", "json"])
                .help("Format of --emit=report"),
        )
        .arg(crate::backend_arg("Code generator for --target=x86_64: cranelift (default) or llvm"))
        .arg(crate::cpu_arg())
        .arg(Arg::new("function").long("function").value_name("NAME").help("The function to compile to an artifact (default: the only one, or 'forward'); with --emit=kernels, the one function shown (default: every function)"))
        .arg(switch("print-policy", "Print the effective precision policy (a valid policy file) and stop"))
        .arg(
            Arg::new("inputs")
                .long("input")
                .value_name("X.npy")
                .action(clap::ArgAction::Append)
                .help("With --emit=report or dot: a sample (one file per argument); each op the policy runs low gets its sensitivity, what check --fix measures (a report column; a heat colour in the picture)"),
        )
        .arg(
            Arg::new("jobs")
                .long("jobs")
                .short('j')
                .value_name("N")
                .value_parser(clap::value_parser!(u64).range(1..=256))
                .help("LLVM backends (x86_64 --backend=llvm, aarch64): optimise and generate the kernels in N parts, one thread each; the code computes the same bits for any N (default: this machine's cores, for a program big enough to gain)"),
        )
        .arg(switch("time", "Print each phase's wall time and memory (peak and resident RSS) to stderr: read, import, each pass, lowering, code generation, linking, writing"));
    precision::args(c, "fp16", true)
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    if let Some(&jobs) = m.get_one::<u64>("jobs") {
        f16c_compiler::backend::llvm::parts::set_jobs(jobs as usize);
    }
    if !m.get_flag("time") {
        return compile(m);
    }
    use f16c_compiler::timing;
    let t = std::time::Instant::now();
    timing::start();
    let result = compile(m);
    let phases = timing::finish();
    eprint!("{}", timing::report(&phases, t.elapsed()));
    result
}

fn compile(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let target_name = m.get_one::<String>("target").expect("has default").clone();
    if m.get_flag("print-policy") {
        let text = precision::policy(m, &target_name)?.to_toml();
        return crate::write_output(m, &text).map(|_| ExitCode::SUCCESS);
    }
    let target = precision::options(m, &target_name)?.target;
    let emit = m.get_one::<String>("emit").map(String::as_str);
    let code_form = emit.and_then(Emit::parse);
    // Fail before any work when the target has no code generator.
    let backend_name = m.get_one::<f16c_compiler::target::BackendName>("backend").copied();
    let cpu = m.get_one::<f16c_compiler::target::Cpu>("cpu").copied();
    let backend = if emit.is_none() || code_form.is_some() {
        match driver::backend_named(target, backend_name, cpu) {
            Ok(b) => Some(b),
            Err(d) => return Ok(crate::report(&d, "")),
        }
    } else {
        None
    };
    let binary_out = emit.is_none() || code_form.is_some_and(|f| !f.is_text());
    let to_file = m.get_one::<String>("output").is_some_and(|p| p != "-");
    if binary_out && !to_file {
        bail!("{} is binary: write it to a file with -o FILE", emit.map_or("the artifact".to_string(), |e| format!("--emit={e}")));
    }
    use f16c_compiler::timing::phase;
    let (mut source, file) = phase("read", || read_input(m.get_one::<String>("input").expect("has default")))?;
    let Some(mut module) = phase("import", || crate::parse_or_report(&mut source, &file)) else { return Ok(ExitCode::FAILURE) };
    // The module before precision assignment (a copy of every weight) only where the report
    // or the picture compares with it.
    let kept = if matches!(emit, Some("dot" | "report")) {
        let Some(c) = precision::compile(&mut module, m, &target_name, &source)? else { return Ok(ExitCode::FAILURE) };
        Some(c)
    } else {
        if !precision::prepare(&mut module, m, &target_name, &source)? {
            return Ok(ExitCode::FAILURE);
        }
        None
    };
    let text = match emit {
        None => {
            let backend = backend.expect("looked up above");
            let g = &module.functions[crate::choose_function(&module, m, &file)?];
            let program = match driver::lower_for(g, backend) {
                Ok(p) => p,
                Err(d) => return Ok(crate::report(&d, &source)),
            };
            // The program holds its own copy of every weight: the module's goes before the
            // backend adds its packed ones.
            drop(module);
            let artifact = match driver::artifact_of_owned(program, backend) {
                Ok(a) => a,
                Err(d) => return Ok(crate::report(&d, &source)),
            };
            let path = m.get_one::<String>("output").expect("checked above");
            phase("write artifact", || artifact.write_file(std::path::Path::new(path))).with_context(|| format!("cannot write '{path}'"))?;
            return Ok(ExitCode::SUCCESS);
        }
        Some("mlir") => print_module(&module, PrintOptions::default()).map_err(|d| anyhow::anyhow!(d.render(Some(&source))))?,
        Some("dot") => {
            let before = &kept.as_ref().expect("kept for dot").before;
            let heat = sensitivity(m, &target_name, &module, before, &file)?;
            before.functions.iter().zip(&module.functions).enumerate().map(|(i, (b, a))| to_dot_with(b, a, heat.as_ref().filter(|h| h.0 == i).map(|h| &h.1))).collect()
        }
        Some("kernels") => {
            // The kernels the target's backend gets, where it has one.
            let backend = driver::backend_named(target, backend_name, cpu).ok();
            let options = backend.map(|b| b.lowering()).unwrap_or_default();
            let mut text = String::new();
            // The function --function names, else every function of the module.
            let chosen: Vec<&f16c_dialect::Graph> = if m.get_one::<String>("function").is_some() {
                vec![&module.functions[crate::choose_function(&module, m, &file)?]]
            } else {
                module.functions.iter().collect()
            };
            for g in chosen {
                match driver::lower_with(g, options) {
                    // Each kernel's strategy on the target's backend, where it states one.
                    Ok(p) => {
                        let plans: Vec<Option<String>> = backend
                            .map(|b| b.configure_all(&p).into_iter().map(|c| Some(match c {
                                Ok(config) => config.plan?,
                                Err(u) => format!("not supported by {}: {u}", b.name()),
                            })).collect())
                            .unwrap_or_default();
                        let at = |k: &f16c_compiler::lower::Kernel| p.kernels.iter().position(|x| std::ptr::eq(x, k)).and_then(|i| plans.get(i).cloned().flatten());
                        text.push_str(&p.to_string_with(&at))
                    }
                    Err(d) => return Ok(crate::report(&d, &source)),
                }
            }
            text
        }
        Some("report") => {
            let mut settings = BTreeMap::new();
            for k in ["target", "precision", "policy", "io-types"] {
                settings.insert(k.to_string(), m.get_one::<String>(k).cloned().unwrap_or_else(|| target_name.clone()));
            }
            let precision::Compiled { before, stats } = kept.as_ref().expect("kept for the report");
            let mut reports: Vec<Report> =
                before.functions.iter().zip(&module.functions).map(|(b, a)| Report::build(&file, settings.clone(), b, a, stats)).collect();
            if let Some((i, heat)) = sensitivity(m, &target_name, &module, before, &file)? {
                reports[i].set_sensitivity(&heat);
            }
            if m.get_one::<String>("report-format").map(String::as_str) == Some("json") {
                let items: Vec<String> = reports.iter().map(Report::to_json).collect();
                if items.len() == 1 { items[0].clone() + "\n" } else { format!("[\n{}\n]\n", items.join(",\n")) }
            } else {
                reports.iter().map(Report::to_table).collect::<Vec<_>>().join("\n")
            }
        }
        Some(form) => {
            let form = Emit::parse(form).expect("clap checked the spelling");
            let mut bytes = Vec::new();
            // Text forms show every function; a binary (an object, a library) and the library's
            // header hold one, chosen as for the artifact.
            let functions: Vec<&f16c_dialect::Graph> = if form.is_text() && form != Emit::Header {
                module.functions.iter().collect()
            } else {
                vec![&module.functions[crate::choose_function(&module, m, &file)?]]
            };
            for g in functions {
                match driver::emit_with(g, backend.expect("looked up above"), form) {
                    Ok(b) => bytes.extend(b),
                    Err(d) => return Ok(crate::report(&d, &source)),
                }
            }
            if !form.is_text() {
                let path = m.get_one::<String>("output").expect("checked above");
                std::fs::write(path, bytes).with_context(|| format!("cannot write '{path}'"))?;
                return Ok(ExitCode::SUCCESS);
            }
            String::from_utf8(bytes).context("the backend printed invalid UTF-8")?
        }
    };
    crate::write_output(m, &text)?;
    Ok(ExitCode::SUCCESS)
}


/// With `--input`: the chosen function's index and each low op's sensitivity on that sample
/// (`f16c_compiler::fix::sensitivity`, the numbers `check --fix` orders its search by).
fn sensitivity(m: &ArgMatches, target: &str, module: &f16c_dialect::Module, before: &f16c_dialect::Module, file: &str) -> anyhow::Result<Option<(usize, std::collections::HashMap<f16c_dialect::NodeId, f64>)>> {
    let inputs = crate::read_npys(m, "inputs")?;
    if inputs.is_empty() {
        return Ok(None);
    }
    let index = crate::choose_function(module, m, file)?;
    let options = precision::options(m, target)?;
    let (candidates, _) = f16c_compiler::fix::sensitivity(&before.functions[index], &options, &[inputs]).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Some((index, candidates.iter().map(|c| (c.id, c.sensitivity())).collect())))
}
