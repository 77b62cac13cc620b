//! Kernels that differ only in their buffers share one compiled body.
//!
//! A kernel function reads each buffer's address from the program's buffer table (`bufs`, its
//! first argument) at the buffer's slot, so the twelve layers of a BERT, or the same kernel in
//! two compiles whose casts moved the slots (`f16c check --fix`'s probes), are different
//! functions. [`share_bodies`] splits each kernel into a *body*, which reads the addresses from
//! a table of its own (the buffers numbered in the order the body first reads them), and a
//! small *wrapper* under the kernel's name, which copies the addresses from the program's table
//! into that table on its stack and calls the body. Bodies whose CLIF is the same are one
//! function, compiled once; the JIT's [`CodeCache`] also keeps their machine code from one
//! compile to the next, under the body's [`BodyKey`].
//!
//! The wrapper costs a call and a copy of a few addresses per call of the kernel (once per
//! thread's share of its items), nothing per item.

use super::emit::Fx;
use cranelift_codegen::ir::{self, types::I64, Function, InstBuilder, InstructionData, Opcode, StackSlotData, StackSlotKind, UserExternalName, UserFuncName};
use std::collections::HashMap;

/// What a body's machine code depends on, besides the ISA: a 128-bit hash of its CLIF (every
/// instruction, constant, stack slot and signature: the function's stencil) and of the
/// functions it calls (the micro-kernels, by their ids, the same in every compile).
///
/// (Printing each body's CLIF as its key took a tenth of a `check --fix` on ResNet-18.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BodyKey(u64, u64);

impl BodyKey {
    /// One pass over the function: SipHash's 256-bit state read out twice, before and after
    /// one more word (two functions whose first halves agree by chance differ in the state).
    fn of(f: &Function) -> BodyKey {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        f.stencil.hash(&mut h);
        for (_, name) in f.params.user_named_funcs().iter() {
            name.hash(&mut h);
        }
        let first = h.finish();
        h.write_u64(0x9e37_79b9_7f4a_7c15);
        BodyKey(first, h.finish())
    }
}

/// The functions, `first_kernel..` split into wrappers (in place, same names) and the shared
/// bodies (appended, each named after the first kernel that uses it with `_body`), with each
/// body's [`BodyKey`] ([`CodeCache`]'s key). A kernel that uses its buffer table other than by
/// loading addresses from it stays as it is.
pub fn share_bodies(mut functions: Vec<(String, Function)>, first_kernel: usize) -> (Vec<(String, Function)>, Vec<Option<BodyKey>>) {
    let kernels = functions.len();
    // Each kernel localised and hashed (most of the time: on every core), then sorted into
    // bodies in order.
    let local: Vec<Option<(Vec<i32>, BodyKey)>> = {
        let todo = &mut functions[first_kernel..];
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).clamp(1, todo.len().max(1));
        let per = todo.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = todo.chunks_mut(per).map(|chunk| scope.spawn(move || chunk.iter_mut().map(|(_, f)| localised_key(f)).collect::<Vec<_>>())).collect();
            workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        })
    };
    let mut bodies: HashMap<BodyKey, u32> = HashMap::new();
    let mut keys: Vec<Option<BodyKey>> = vec![None; kernels];
    for (i, local) in (first_kernel..kernels).zip(local) {
        let Some((slots, key)) = local else { continue };
        let name = functions[i].0.clone();
        // The same key and the same CLIF (a hash that agrees on different functions would
        // otherwise give a kernel another's code: such a body is not shared, nor cached).
        let same = bodies.get(&key).copied().filter(|&index| functions[index as usize].1.stencil == functions[i].1.stencil && functions[index as usize].1.params.user_named_funcs() == functions[i].1.params.user_named_funcs());
        let index = match same {
            Some(index) => index,
            None => {
                let index = functions.len() as u32;
                let body_name = format!("{name}_body");
                let mut body = std::mem::replace(&mut functions[i].1, Function::new());
                body.name = UserFuncName::testcase(&body_name);
                functions.push((body_name, body));
                let fresh = !bodies.contains_key(&key);
                keys.push(fresh.then_some(key));
                bodies.entry(key).or_insert(index);
                index
            }
        };
        functions[i].1 = wrapper(&name, &slots, index);
    }
    (functions, keys)
}

/// [`localise`]s `f` and gives its [`BodyKey`].
fn localised_key(f: &mut Function) -> Option<(Vec<i32>, BodyKey)> {
    let slots = localise(f)?;
    Some((slots, BodyKey::of(f)))
}

/// Makes `f` read its addresses from a table of its own; returns the program-table offsets
/// that table holds, in order. `None` (and `f` unchanged) where `f` uses `bufs` other than as
/// the base of an address load.
fn localise(f: &mut Function) -> Option<Vec<i32>> {
    let entry = f.layout.entry_block()?;
    let bufs = *f.dfg.block_params(entry).first()?;
    let mut loads = Vec::new();
    for block in f.layout.blocks() {
        for inst in f.layout.block_insts(block) {
            if !f.dfg.inst_values(inst).any(|v| f.dfg.resolve_aliases(v) == bufs) {
                continue;
            }
            match f.dfg.insts[inst] {
                InstructionData::Load { opcode: Opcode::Load, arg, .. } if f.dfg.resolve_aliases(arg) == bufs && f.dfg.ctrl_typevar(inst) == I64 => loads.push(inst),
                _ => return None,
            }
        }
    }
    let mut local: HashMap<i32, i32> = HashMap::new();
    let mut slots = Vec::new();
    for inst in loads {
        if let InstructionData::Load { ref mut offset, .. } = f.dfg.insts[inst] {
            let at = i32::from(*offset);
            let next = local.len() as i32 * 8;
            *offset = (*local.entry(at).or_insert_with(|| {
                slots.push(at);
                next
            }))
            .into();
        }
    }
    Some(slots)
}

/// Function `name`: copies the addresses at `slots` of the program's table into a table on
/// its stack and returns what function `body` (by index) returns on it.
fn wrapper(name: &str, slots: &[i32], body: u32) -> Function {
    let mut func = Function::with_name_signature(UserFuncName::testcase(name), Fx::signature());
    let sig = func.import_signature(Fx::signature());
    let name_ref = func.declare_imported_user_function(UserExternalName::new(0, body));
    let callee = func.import_function(ir::ExtFuncData { name: ir::ExternalName::user(name_ref), signature: sig, colocated: true, patchable: false });
    let mut ctx = cranelift_frontend::FunctionBuilderContext::new();
    let mut b = cranelift_frontend::FunctionBuilder::new(&mut func, &mut ctx);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    let params = b.block_params(block).to_vec();
    let table = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, (slots.len().max(1) * 8) as u32, 3));
    let flags = super::emit::mem().with_readonly();
    let local = b.ins().stack_addr(I64, table, 0);
    for (l, &at) in slots.iter().enumerate() {
        let address = b.ins().load(I64, flags, params[0], at);
        b.ins().store(super::emit::mem(), address, local, (l * 8) as i32);
    }
    let call = b.ins().call(callee, &[local, params[1], params[2], params[3], params[4]]);
    let code = b.inst_results(call)[0];
    b.ins().return_(&[code]);
    b.seal_all_blocks();
    b.finalize(super::frontend_config());
    func
}

/// Machine code of functions compiled before, by the ISA's flags (their text) and the body's
/// [`BodyKey`]: the JIT's compiles of one model in several precisions (`f16c check --fix`'s
/// probes) compile each body once.
#[derive(Default)]
pub struct CodeCache(std::sync::Mutex<HashMap<(String, BodyKey), super::MachineCode>>);

impl CodeCache {
    /// The machine code under `key`, if compiled before.
    pub(super) fn get(&self, key: &(String, BodyKey)) -> Option<super::MachineCode> {
        self.0.lock().ok()?.get(key).cloned()
    }

    /// Remembers `code` under `key`.
    pub(super) fn put(&self, key: (String, BodyKey), code: &super::MachineCode) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(key, code.clone());
        }
    }
}
