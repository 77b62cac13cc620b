//! Printing to standard output as command-line tools do: quiet when the reader has gone, an
//! error (not a panic) when the output cannot be written.
//!
//! Rust ignores `SIGPIPE`, so a write to a pipe whose reader has closed (`f16c-run --info |
//! head -1`) returns `EPIPE`, and `println!` turns that into a panic with a backtrace. The
//! binaries call [`die_quietly_on_closed_pipe`] first, which restores the default action: the
//! process ends at once, silently, as `cat` or `grep` do. Every other failure to write (a full
//! disk, `> /dev/full`) comes back from [`print`] as an error the binary reports and exits on.

use crate::{Result, RuntimeError};
use std::io::Write;

/// Restores the default `SIGPIPE` action, so that writing to a closed pipe ends the process
/// quietly (the shell sees it killed by `SIGPIPE`, as it would `cat`). Call it first in `main`.
pub fn die_quietly_on_closed_pipe() {
    // SAFETY: setting a signal's disposition to its default is async-signal-safe and happens
    // before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Writes `text` to standard output and flushes it; a failure is an error naming standard
/// output.
pub fn print(text: &str) -> Result<()> {
    write(&[text.as_bytes()])
}

/// [`print`] with a newline after `text`.
pub fn println(text: &str) -> Result<()> {
    write(&[text.as_bytes(), b"\n"])
}

fn write(parts: &[&[u8]]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    parts.iter().try_for_each(|p| out.write_all(p)).and_then(|_| out.flush()).map_err(|e| RuntimeError::Output(format!("cannot write to standard output: {e}")))
}

/// `println!` that returns the runtime's error instead of panicking: `outln!("{x}")?`.
#[macro_export]
macro_rules! outln {
    () => { $crate::stdout::println("") };
    ($($arg:tt)*) => { $crate::stdout::println(&format!($($arg)*)) };
}
