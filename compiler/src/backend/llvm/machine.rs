//! Target machines, the optimisation pipeline and output (assembly or PTX text, objects).

use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use std::sync::Once;

/// What a target machine is made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSpec {
    /// The LLVM triple (`nvptx64-nvidia-cuda`).
    pub triple: &'static str,
    /// The CPU (`sm_80`).
    pub cpu: String,
    /// Target features (`+ptx70`).
    pub features: String,
}

fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let config = InitializationConfig::default();
        Target::initialize_nvptx(&config);
        Target::initialize_x86(&config);
        Target::initialize_aarch64(&config);
    });
}

/// The target machine of `spec`.
pub fn machine(spec: &MachineSpec) -> Result<TargetMachine, String> {
    init();
    let triple = TargetTriple::create(spec.triple);
    let target = Target::from_triple(&triple).map_err(|e| format!("LLVM has no target {}: {e}", spec.triple))?;
    target
        .create_target_machine(&triple, &spec.cpu, &spec.features, OptimizationLevel::Aggressive, RelocMode::PIC, CodeModel::Default)
        .ok_or_else(|| format!("LLVM cannot create a target machine for {} {} {}", spec.triple, spec.cpu, spec.features))
}

/// Sets the module's triple and data layout, verifies it and runs LLVM's `default<O3>`
/// pipeline (which promotes the emitter's allocas to registers, unrolls and vectorises where
/// the target gains from it), then puts back what was kept from it ([`super::deferred`]).
pub fn optimize(module: &Module, tm: &TargetMachine) -> Result<(), String> {
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    module.verify().map_err(|e| format!("invalid LLVM IR: {e}"))?;
    crate::timing::phase("llvm optimise (default<O3>)", || module.run_passes("default<O3>", tm, PassBuilderOptions::create())).map_err(|e| format!("LLVM optimisation failed: {e}"))?;
    super::deferred::define(module, tm)
}

/// The module as target assembly (PTX text for NVPTX).
pub fn assembly(module: &Module, tm: &TargetMachine) -> Result<String, String> {
    let buf = crate::timing::phase("llvm codegen (assembly)", || tm.write_to_memory_buffer(module, FileType::Assembly)).map_err(|e| format!("LLVM code generation failed: {e}"))?;
    String::from_utf8(buf.as_slice().to_vec()).map_err(|_| "LLVM wrote assembly that is not UTF-8".to_string())
}

/// The module as a relocatable object file.
pub fn object(module: &Module, tm: &TargetMachine) -> Result<Vec<u8>, String> {
    let buf = crate::timing::phase("llvm codegen (object)", || tm.write_to_memory_buffer(module, FileType::Object)).map_err(|e| format!("LLVM code generation failed: {e}"))?;
    Ok(buf.as_slice().to_vec())
}
