//! Splitting a kernel's work across the cores, in TF's float mode. The C API gives kernels no
//! access to TF's intra-op thread pool, so a kernel that would run on one core where TF's own
//! kernels use them all starts threads of its own for the call (a scoped thread costs 20-40
//! µs, so only for work that takes far longer). TF's kernels compute with denormals flushed
//! to zero (its pool's threads flush them), but a graph run on the calling thread does not
//! flush: each part of the work flushes them itself, so that a kernel's values are TF's.

use std::ops::Range;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Elements each part must have, at least, for the work to be split.
const MIN_PART: usize = 1 << 16;

/// Cores the process may use (1 when unknown).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// How many parts `len` elements are split into: one per core, each at least `MIN_PART`.
pub fn parts(len: usize) -> usize {
    cores().min(len / MIN_PART).max(1)
}

/// Runs `work(part)` for each of `parts` parts, part 0 on the calling thread and the others on
/// threads of their own, each with denormals flushed (`DenormalsFlushed`); the first error wins.
pub fn run_parts<W>(parts: Vec<W>, work: impl Fn(W) -> Result<()> + Sync) -> Result<()>
where
    W: Send,
{
    let flushed = |part: W| {
        let _flushed = DenormalsFlushed::new();
        work(part)
    };
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Ok(());
    };
    if parts.len() == 0 {
        return flushed(first);
    }
    std::thread::scope(|scope| {
        let flushed = &flushed;
        let others: Vec<_> = parts
            .map(|part| scope.spawn(move || flushed(part)))
            .collect();
        let mut result = flushed(first);
        for other in others {
            let joined = other
                .join()
                .unwrap_or_else(|_| Err(Error::Invalid("a kernel thread panicked".into())));
            result = result.and(joined);
        }
        result
    })
}

/// The ranges of `parts` parts of `0..len`, each starting at a multiple of `align`.
pub fn ranges(len: usize, parts: usize, align: usize) -> Vec<Range<usize>> {
    let size = len.div_ceil(parts.max(1)).div_ceil(align) * align;
    (0..len)
        .step_by(size.max(1))
        .map(|start| start..(start + size).min(len))
        .collect()
}

/// Denormals flushed to zero (inputs and results) on this thread until dropped, as TF's
/// kernels compute; the thread's float mode is then restored.
pub struct DenormalsFlushed {
    before: Option<FloatMode>,
}

impl DenormalsFlushed {
    pub fn new() -> DenormalsFlushed {
        let before = FloatMode::current();
        if let Some(mode) = before {
            mode.flushing().apply();
        }
        DenormalsFlushed { before }
    }
}

impl Drop for DenormalsFlushed {
    fn drop(&mut self) {
        if let Some(mode) = self.before {
            mode.apply();
        }
    }
}

/// A thread's floating-point control register: rounding, and whether denormals are flushed.
#[derive(Clone, Copy)]
struct FloatMode(u64);

impl FloatMode {
    /// MXCSR's flush-to-zero (FZ, results) and denormals-are-zero (DAZ, inputs) bits.
    #[cfg(target_arch = "x86_64")]
    const FLUSH: u64 = 1 << 15 | 1 << 6;
    /// FPCR's flush-to-zero bit (FZ, inputs and results).
    #[cfg(target_arch = "aarch64")]
    const FLUSH: u64 = 1 << 24;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const FLUSH: u64 = 0;

    fn flushing(self) -> FloatMode {
        FloatMode(self.0 | Self::FLUSH)
    }

    #[cfg(target_arch = "x86_64")]
    fn current() -> Option<FloatMode> {
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr stores the 4-byte MXCSR register into `csr`, which outlives it.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags))
        };
        Some(FloatMode(u64::from(csr)))
    }

    #[cfg(target_arch = "x86_64")]
    fn apply(self) {
        let csr = self.0 as u32;
        // SAFETY: ldmxcsr loads MXCSR as read from this thread, at most with its flush bits
        // set: a valid value.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags, readonly))
        };
    }

    #[cfg(target_arch = "aarch64")]
    fn current() -> Option<FloatMode> {
        let fpcr: u64;
        // SAFETY: reading FPCR has no side effects.
        unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack)) };
        Some(FloatMode(fpcr))
    }

    #[cfg(target_arch = "aarch64")]
    fn apply(self) {
        // SAFETY: the value is FPCR as read from this thread, at most with its flush bit set.
        unsafe { std::arch::asm!("msr fpcr, {}", in(reg) self.0, options(nomem, nostack)) };
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn current() -> Option<FloatMode> {
        None
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn apply(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_everything_once_on_aligned_starts() {
        for (len, parts, align) in [(10, 3, 4), (1 << 20, 2, 512), (5, 8, 1), (0, 2, 8)] {
            let got = ranges(len, parts, align);
            let mut next = 0;
            for r in &got {
                assert_eq!(r.start, next);
                assert_eq!(r.start % align, 0);
                next = r.end;
            }
            assert_eq!(next, len);
            assert!(got.len() <= parts.max(1));
        }
    }

    #[test]
    fn every_part_flushes_denormals_and_the_caller_s_mode_comes_back() {
        // The smallest float32 denormal times one: 0 where denormals are flushed.
        let tiny = f32::from_bits(1);
        let product = || (std::hint::black_box(tiny) * std::hint::black_box(1.0f32)).to_bits();
        let before = product();
        let seen = std::sync::Mutex::new(Vec::new());
        run_parts(vec![(); 3], |()| {
            seen.lock()
                .map_err(|_| Error::Invalid("poisoned".into()))?
                .push(product());
            Ok(())
        })
        .unwrap();
        let flushes = FloatMode::FLUSH != 0;
        let want = if flushes { 0 } else { 1 };
        assert_eq!(*seen.lock().unwrap(), vec![want; 3]);
        assert_eq!(product(), before, "the caller's mode is restored");
    }
}
