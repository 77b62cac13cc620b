//! Phase timing for `f16c compile --time`: the wall time and the memory of each phase of a
//! compilation (import, each pass, lowering, each backend's code generation, linking, writing).
//!
//! Off by default and then free: [`phase`] only runs its closure. [`start`] turns recording on
//! for the calling thread (the compilation's: work a phase hands to other threads counts in
//! that phase's wall time); every [`phase`] on it then records its name, nesting depth, wall time, the
//! process's peak resident memory when it ended (`getrusage`'s `ru_maxrss`: the high-water mark
//! so far, so a phase whose peak is above its predecessor's raised it) and the resident memory
//! after it (`/proc/self/statm`). [`finish`] hands the phases back and turns recording off.
//! Phases nest (the backend's total holds its optimisation and code generation); the report
//! indents them.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// One timed phase.
#[derive(Clone, Debug)]
pub struct Phase {
    /// What ran (`import`, `pass canonicalize`, `llvm optimise`, ...).
    pub name: String,
    /// How deep it sits inside other phases (0: top level).
    pub depth: usize,
    /// Wall time.
    pub wall: Duration,
    /// The process's peak resident bytes when the phase ended.
    pub peak_rss: u64,
    /// Resident bytes right after the phase.
    pub rss_after: u64,
}

struct Recorder {
    phases: Vec<Phase>,
    depth: usize,
}

thread_local! {
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// Starts recording phases (clearing earlier ones).
pub fn start() {
    RECORDER.with(|r| *r.borrow_mut() = Some(Recorder { phases: Vec::new(), depth: 0 }));
}

/// Stops recording and returns the phases, in the order they started.
pub fn finish() -> Vec<Phase> {
    RECORDER.with(|r| r.borrow_mut().take().map(|r| r.phases).unwrap_or_default())
}

/// Runs `work` as the phase `name` (recorded when recording is on).
pub fn phase<T>(name: impl Into<String>, work: impl FnOnce() -> T) -> T {
    let slot = RECORDER.with(|r| {
        r.borrow_mut().as_mut().map(|r| {
            r.phases.push(Phase { name: name.into(), depth: r.depth, wall: Duration::ZERO, peak_rss: 0, rss_after: 0 });
            r.depth += 1;
            r.phases.len() - 1
        })
    });
    let Some(slot) = slot else { return work() };
    let t = Instant::now();
    let out = work();
    let wall = t.elapsed();
    let (peak_rss, rss_after) = (peak_rss(), rss());
    RECORDER.with(|r| {
        if let Some(r) = r.borrow_mut().as_mut() {
            r.depth = r.depth.saturating_sub(1);
            if let Some(p) = r.phases.get_mut(slot) {
                p.wall = wall;
                p.peak_rss = peak_rss;
                p.rss_after = rss_after;
            }
        }
    });
    out
}

/// Records a phase that ran elsewhere (on another thread) and took `wall`, `depth` levels
/// below the phase running now (when recording is on).
pub fn record(name: impl Into<String>, depth: usize, wall: Duration) {
    RECORDER.with(|r| {
        if let Some(r) = r.borrow_mut().as_mut() {
            r.phases.push(Phase { name: name.into(), depth: r.depth + depth, wall, peak_rss: peak_rss(), rss_after: rss() });
        }
    });
}

/// The process's peak resident bytes so far.
pub fn peak_rss() -> u64 {
    // SAFETY: getrusage writes the struct it is given; a zeroed rusage is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage; RUSAGE_SELF is always a valid `who`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    // Linux reports kilobytes.
    usage.ru_maxrss.max(0) as u64 * 1024
}

/// The process's resident bytes now (0 where `/proc/self/statm` cannot be read).
pub fn rss() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm").ok().and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()));
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages.unwrap_or(0) * page
}

/// The phases as a table: wall seconds, share of the total, peak and resident MB after.
pub fn report(phases: &[Phase], total: Duration) -> String {
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    let t = total.as_secs_f64().max(1e-9);
    let mut s = format!("{:<40} {:>9} {:>7} {:>12} {:>12}\n", "phase", "wall s", "%", "peak RSS MB", "RSS MB after");
    for p in phases {
        let name = format!("{}{}", "  ".repeat(p.depth), p.name);
        s.push_str(&format!("{name:<40} {:>9.3} {:>6.1}% {:>12.1} {:>12.1}\n", p.wall.as_secs_f64(), 100.0 * p.wall.as_secs_f64() / t, mb(p.peak_rss), mb(p.rss_after)));
    }
    s.push_str(&format!("{:<40} {:>9.3} {:>6.1}% {:>12.1} {:>12.1}\n", "total", t, 100.0, mb(peak_rss()), mb(rss())));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_nest_and_are_free_when_off() {
        assert_eq!(phase("off", || 3), 3);
        start();
        let v = phase("outer", || phase("inner", || 7));
        phase("second", || ());
        let phases = finish();
        assert_eq!(v, 7);
        let names: Vec<(&str, usize)> = phases.iter().map(|p| (p.name.as_str(), p.depth)).collect();
        assert_eq!(names, [("outer", 0), ("inner", 1), ("second", 0)]);
        assert!(phases.iter().all(|p| p.peak_rss > 0 && p.rss_after > 0));
        assert!(phases[0].wall >= phases[1].wall);
        assert!(finish().is_empty());
        let text = report(&phases, Duration::from_millis(1));
        assert!(text.contains("  inner") && text.contains("total"), "{text}");
    }
}
