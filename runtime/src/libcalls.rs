//! The libcall table generated CPU code calls through (`rt`, [`f16c_core::abi::Libcall`]): the
//! same Rust functions the reference interpreter uses, so results are bit-identical.

use f16c_core::abi::Libcall;
use half::{bf16, f16};

extern "C" fn exp_f32(x: f32) -> f32 {
    x.exp()
}
extern "C" fn log_f32(x: f32) -> f32 {
    x.ln()
}
extern "C" fn tanh_f32(x: f32) -> f32 {
    x.tanh()
}
extern "C" fn erf_f32(x: f32) -> f32 {
    libm::erff(x)
}
extern "C" fn pow_f32(x: f32, y: f32) -> f32 {
    x.powf(y)
}
extern "C" fn exp_f64(x: f64) -> f64 {
    x.exp()
}
extern "C" fn log_f64(x: f64) -> f64 {
    x.ln()
}
extern "C" fn tanh_f64(x: f64) -> f64 {
    x.tanh()
}
extern "C" fn erf_f64(x: f64) -> f64 {
    libm::erf(x)
}
extern "C" fn pow_f64(x: f64, y: f64) -> f64 {
    x.powf(y)
}
extern "C" fn f64_to_f16(x: f64) -> f32 {
    f16::from_f64(x).to_f32()
}
extern "C" fn f64_to_bf16(x: f64) -> f32 {
    bf16::from_f64(x).to_f32()
}

/// The table, in [`Libcall::ALL`] order.
pub fn table() -> Vec<usize> {
    type F1 = extern "C" fn(f32) -> f32;
    type F2 = extern "C" fn(f32, f32) -> f32;
    type D1 = extern "C" fn(f64) -> f64;
    type D2 = extern "C" fn(f64, f64) -> f64;
    type N = extern "C" fn(f64) -> f32;
    Libcall::ALL
        .iter()
        .map(|lc| match lc {
            Libcall::ExpF32 => exp_f32 as F1 as usize,
            Libcall::LogF32 => log_f32 as F1 as usize,
            Libcall::TanhF32 => tanh_f32 as F1 as usize,
            Libcall::ErfF32 => erf_f32 as F1 as usize,
            Libcall::PowF32 => pow_f32 as F2 as usize,
            Libcall::ExpF64 => exp_f64 as D1 as usize,
            Libcall::LogF64 => log_f64 as D1 as usize,
            Libcall::TanhF64 => tanh_f64 as D1 as usize,
            Libcall::ErfF64 => erf_f64 as D1 as usize,
            Libcall::PowF64 => pow_f64 as D2 as usize,
            Libcall::F64ToF16 => f64_to_f16 as N as usize,
            Libcall::F64ToBf16 => f64_to_bf16 as N as usize,
        })
        .collect()
}
