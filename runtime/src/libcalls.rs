//! The libcall table generated CPU code calls through (`rt`, [`f16c_core::abi::Libcall`]): the
//! same Rust functions the reference interpreter uses, so results are bit-identical.

use f16c_core::abi::Libcall;
use half::{bf16, f16};

/// Defines each libcall as an `extern "C"` function and the table of their addresses, in one
/// list so that a libcall and its table entry cannot drift apart.
macro_rules! libcalls {
    ($($lc:ident => |$($x:ident: $t:ty),+| -> $r:ty $body:block),+ $(,)?) => {
        /// The table, in [`Libcall::ALL`] order.
        pub fn table() -> Vec<usize> {
            Libcall::ALL
                .iter()
                .map(|lc| match lc {
                    $(Libcall::$lc => {
                        extern "C" fn f($($x: $t),+) -> $r $body
                        f as extern "C" fn($($t),+) -> $r as usize
                    })+
                })
                .collect()
        }
    };
}

libcalls! {
    ExpF32 => |x: f32| -> f32 { x.exp() },
    LogF32 => |x: f32| -> f32 { x.ln() },
    TanhF32 => |x: f32| -> f32 { x.tanh() },
    ErfF32 => |x: f32| -> f32 { libm::erff(x) },
    PowF32 => |x: f32, y: f32| -> f32 { x.powf(y) },
    ExpF64 => |x: f64| -> f64 { x.exp() },
    LogF64 => |x: f64| -> f64 { x.ln() },
    TanhF64 => |x: f64| -> f64 { x.tanh() },
    ErfF64 => |x: f64| -> f64 { libm::erf(x) },
    PowF64 => |x: f64, y: f64| -> f64 { x.powf(y) },
    F64ToF16 => |x: f64| -> f32 { f16::from_f64(x).to_f32() },
    F64ToBf16 => |x: f64| -> f32 { bf16::from_f64(x).to_f32() },
    SinF32 => |x: f32| -> f32 { x.sin() },
    CosF32 => |x: f32| -> f32 { x.cos() },
    SinF64 => |x: f64| -> f64 { x.sin() },
    CosF64 => |x: f64| -> f64 { x.cos() },
}
