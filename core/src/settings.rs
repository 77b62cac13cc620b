//! Process-wide settings that a binary sets once, from its flags and its environment: below the
//! binaries (`f16c`, `f16c-run`, `f16c-fuzz`, the Python module) nothing reads the environment,
//! so a library user states each of these in code, and a test cannot be changed by a variable
//! it did not set.

use std::sync::RwLock;

/// The settings, each `None` for its default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The largest tensor accepted, in bytes (`F16C_MAX_TENSOR_BYTES`; default
    /// [`crate::types::DEFAULT_MAX_TENSOR_BYTES`]); a binary's flag overrides it.
    pub max_tensor_bytes: Option<u64>,
    /// The most iterations a `tosa.while_loop` may run (`F16C_MAX_LOOP_ITERATIONS`; default:
    /// no limit). The fuzzer's workers set it, so that a mutated loop that never ends is an error
    /// rather than a hang.
    pub max_loop_iterations: Option<u64>,
    /// The linker of the CPU backends' shared objects (`F16C_LINKER`; default: the first of
    /// `ld.lld-22`, LLVM 22's `ld.lld`, `ld.lld`, `ld` found).
    pub linker: Option<String>,
    /// The emulator command line that runs AArch64 executables on another machine
    /// (`F16C_QEMU_AARCH64`, split at spaces).
    pub qemu_aarch64: Option<String>,
    /// The C compiler command line for AArch64 (`F16C_CC_AARCH64`).
    pub cc_aarch64: Option<String>,
    /// The C compiler command line for x86-64 (`F16C_CC_X86_64`).
    pub cc_x86_64: Option<String>,
}

impl Settings {
    /// The environment variables [`Settings::from_variables`] reads.
    pub const VARIABLES: [&'static str; 6] = ["F16C_MAX_TENSOR_BYTES", "F16C_MAX_LOOP_ITERATIONS", "F16C_LINKER", "F16C_QEMU_AARCH64", "F16C_CC_AARCH64", "F16C_CC_X86_64"];

    /// The settings that variables give, `var(name)` being a variable's value (a binary passes
    /// its environment's). An empty or unparsable value is its default.
    pub fn from_variables(var: impl Fn(&str) -> Option<String>) -> Settings {
        let text = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let number = |name: &str| text(name).and_then(|v| v.parse::<u64>().ok()).filter(|&n| n > 0);
        Settings {
            max_tensor_bytes: number("F16C_MAX_TENSOR_BYTES"),
            max_loop_iterations: number("F16C_MAX_LOOP_ITERATIONS"),
            linker: text("F16C_LINKER"),
            qemu_aarch64: text("F16C_QEMU_AARCH64"),
            cc_aarch64: text("F16C_CC_AARCH64"),
            cc_x86_64: text("F16C_CC_X86_64"),
        }
    }

    /// The C compiler command line set for `arch` (`x86_64`, `aarch64`).
    pub fn cc(&self, arch: &str) -> Option<&str> {
        match arch {
            "aarch64" => self.cc_aarch64.as_deref(),
            "x86_64" => self.cc_x86_64.as_deref(),
            _ => None,
        }
    }
}

static SETTINGS: RwLock<Option<Settings>> = RwLock::new(None);

/// Makes `settings` this process's (its tensor limit too: [`crate::set_max_tensor_bytes`]).
pub fn set(settings: Settings) {
    crate::set_max_tensor_bytes(settings.max_tensor_bytes.unwrap_or(0));
    *SETTINGS.write().unwrap_or_else(|e| e.into_inner()) = Some(settings);
}

/// This process's settings (the defaults until [`set`]).
pub fn get() -> Settings {
    SETTINGS.read().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_give_settings_and_bad_values_their_defaults() {
        let vars = |name: &str| match name {
            "F16C_MAX_TENSOR_BYTES" => Some(" 1000 ".to_string()),
            "F16C_MAX_LOOP_ITERATIONS" => Some("many".to_string()),
            "F16C_LINKER" => Some(String::new()),
            "F16C_CC_AARCH64" => Some("clang --target=aarch64-linux-gnu".to_string()),
            _ => None,
        };
        let s = Settings::from_variables(vars);
        assert_eq!(s.max_tensor_bytes, Some(1000));
        assert_eq!(s.max_loop_iterations, None);
        assert_eq!(s.linker, None);
        assert_eq!(s.cc("aarch64"), Some("clang --target=aarch64-linux-gnu"));
        assert_eq!(s.cc("x86_64"), None);
        assert_eq!(Settings::from_variables(|_| None), Settings::default());
    }
}
