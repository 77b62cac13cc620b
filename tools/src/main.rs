//! The `f16c` command line.

mod bench;
mod bench_real;
mod cache;
mod check;
mod compile;
mod diagnostics;
mod iree;
mod networks;
mod opt;
mod precision;
mod run;
mod source;

use clap::{Arg, ArgAction, Command};
use std::process::ExitCode;

const ABOUT: &str = "f16c: a mixed-precision compiler for neural-network inference (TOSA MLIR in)";

fn cli() -> Command {
    Command::new("f16c")
        .about(ABOUT)
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true)
        .arg_required_else_help(true)
        .arg(
            Arg::new("max-tensor-bytes")
                .long("max-tensor-bytes")
                .value_name("N")
                .global(true)
                .value_parser(clap::value_parser!(u64).range(1..))
                .help("Largest tensor f16c accepts, in bytes (default 8 GiB, or $F16C_MAX_TENSOR_BYTES): a larger static shape is a located error before anything is allocated"),
        )
        .subcommand(compile::command())
        .subcommand(check::command())
        .subcommand(opt::command())
        .subcommand(run::command())
        .subcommand(bench::command())
}

/// MLIR tools spell long options with one dash (`-split-input-file`); accept that too.
fn normalise_args() -> Vec<String> {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            let single_dash_long = a.starts_with('-') && !a.starts_with("--") && a.len() > 2 && a.as_bytes()[1].is_ascii_alphabetic();
            if i > 0 && single_dash_long && !a.starts_with("-o") { format!("-{a}") } else { a }
        })
        .collect()
}

fn main() -> ExitCode {
    // `f16c ... | head` ends f16c quietly, as it would `cat`; other write failures are errors.
    f16c_runtime::stdout::die_quietly_on_closed_pipe();
    large_allocations_mapped();
    let matches = match cli().try_get_matches_from(normalise_args()) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    // The settings the libraries take from this binary: its environment, then its flags.
    f16c_core::settings::set(f16c_core::settings::Settings::from_variables(|name| std::env::var(name).ok()));
    if let Some(&n) = matches.get_one::<u64>("max-tensor-bytes") {
        f16c_core::set_max_tensor_bytes(n);
    }
    // Every executor this process makes prints its kernel profile (`run --profile` too).
    f16c_runtime::exec::set_profiling(std::env::var_os("F16C_PROFILE").is_some_and(|v| !v.is_empty() && v != "0"));
    let result = match matches.subcommand() {
        Some(("compile", m)) => compile::main(m),
        Some(("check", m)) => check::main(m),
        Some(("opt", m)) => opt::main(m),
        Some(("run", m)) => run::main(m),
        Some(("bench", m)) => bench::main(m),
        _ => unreachable!("clap requires a subcommand"),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The `<input>` positional argument shared by subcommands.
fn input_arg() -> Arg {
    Arg::new("input").help("Input .mlir file ('-' for standard input)").default_value("-")
}

/// Reads the input file or standard input.
fn read_input(path: &str) -> anyhow::Result<(source::Source, String)> {
    use anyhow::Context;
    if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("cannot read standard input")?;
        Ok((source::Source::Text(s), "<stdin>".to_string()))
    } else {
        Ok((source::Source::open(path)?, path.to_string()))
    }
}

/// Every allocation of 1 MiB or more gets its own mapping, handed back when freed. glibc's
/// default threshold rises to the size of any mapped block freed (up to 32 MiB), after which a
/// model's weights (a few MiB each) come from the heap, and freeing them (as a compile moves
/// each weight from the program into the artifact) kept the memory: GPT-2's compile held its
/// weights twice at the end.
fn large_allocations_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// The opposite of [`large_allocations_mapped`] for `f16c check --fix`: its probes build,
/// compile and drop one model a few dozen times, and fresh mappings for every weight, packed
/// copy and buffer each time cost more in page faults than the work; blocks up to 32 MiB then
/// come from the heap, which keeps what is freed for the next probe.
pub(crate) fn freed_blocks_kept() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters (under the allocator's own lock).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// `--backend`: the code generator of `--target=x86_64`, described by `help`.
fn backend_arg(help: &'static str) -> Arg {
    use clap::builder::TypedValueParser;
    let parser = clap::builder::PossibleValuesParser::new(f16c_compiler::target::BackendName::NAMES).map(|s| f16c_compiler::target::BackendName::parse(&s).expect("a possible value"));
    Arg::new("backend").long("backend").value_name("NAME").value_parser(parser).help(help)
}

/// `--cpu`: the x86-64 level of either backend.
pub(crate) fn cpu_arg() -> Arg {
    Arg::new("cpu")
        .long("cpu")
        .value_name("LEVEL")
        .value_parser({
            use clap::builder::TypedValueParser;
            clap::builder::PossibleValuesParser::new(f16c_compiler::target::Cpu::names()).map(|s| f16c_compiler::target::Cpu::parse(&s).expect("a possible value"))
        })
        .help(
            "x86-64 level the code may use: native (this machine's), x86-64-v2 (the JIT's own loops, no FMA; not --backend=llvm), \
             x86-64-v3 (AVX2, FMA, F16C: the runtime's AVX2 loops), x86-64-v4 (AVX-512: its AVX-512 loops) or x86-64-v4+bf16 \
             (and AVX512-BF16: bf16 matmul/conv on VDPBF16PS). The plans --emit=kernels prints depend on it. Default: native \
             for the code run and written, x86-64-v3 for what the JIT's --emit prints",
        )
}

/// `--flag` switch.
fn switch(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name).long(name).action(ArgAction::SetTrue).help(help)
}

/// Parses a module, printing its diagnostics against `source` when it fails. Once parsed, the
/// source keeps only what later diagnostics can point at: its resource blobs (most of a
/// torch-mlir export, 1.3 GB for GPT-2) are dropped, as the weights now live in the module.
fn parse_or_report(source: &mut source::Source, file: &str) -> Option<f16c_dialect::Module> {
    let text: &source::Source = source;
    match f16c_dialect::import::parse_module_releasing(text, file, &|part| text.release(part)) {
        Ok(m) => {
            source.drop_resource_section();
            Some(m)
        }
        Err(d) => {
            eprint!("{}", d.render(Some(source)));
            None
        }
    }
}

/// The index of the function a command works on: `--function NAME`, else the only one, else
/// `forward` (the driver's rule).
fn choose_function(module: &f16c_dialect::Module, m: &clap::ArgMatches, file: &str) -> anyhow::Result<usize> {
    let wanted = m.get_one::<String>("function").map(String::as_str);
    f16c_compiler::driver::choose_function(module, wanted).map_err(|e| anyhow::anyhow!("{file}: {e}"))
}

/// Prints located diagnostics against the source, exactly as import errors are printed, and
/// returns the failure exit code.
fn report(d: &f16c_dialect::Diagnostics, source: &str) -> ExitCode {
    eprint!("{}", d.render(Some(source)));
    ExitCode::FAILURE
}

/// A `file:line:col` location as the runtime reports it, back into a [`f16c_dialect::Location`]
/// (so that a run-time error is rendered with its source line).
fn parse_location(text: &str) -> f16c_dialect::Location {
    let mut parts = text.rsplitn(3, ':');
    let (col, line, file) = (parts.next(), parts.next(), parts.next());
    match (file, line.and_then(|l| l.parse().ok()), col.and_then(|c| c.parse().ok())) {
        (Some(f), Some(l), Some(c)) => f16c_dialect::Location::file(f, l, c),
        _ => f16c_dialect::Location::unknown(),
    }
}

/// The `.npy` files given to a repeatable flag, read in order.
fn read_npys(m: &clap::ArgMatches, flag: &str) -> anyhow::Result<Vec<f16c_runtime::Tensor>> {
    let files = m.get_many::<String>(flag).into_iter().flatten();
    Ok(files.map(|p| f16c_runtime::npy::read(std::path::Path::new(p))).collect::<Result<Vec<_>, _>>()?)
}

/// Writes a command's text to `-o FILE`, or to standard output.
pub(crate) fn write_output(m: &clap::ArgMatches, text: &str) -> anyhow::Result<()> {
    match m.get_one::<String>("output") {
        Some(path) if path != "-" => anyhow::Context::with_context(std::fs::write(path, text), || format!("cannot write '{path}'")),
        _ => Ok(f16c_runtime::stdout::print(text)?),
    }
}
