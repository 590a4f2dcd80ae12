//! Splitting a kernel's work across the cores, in TF's float mode. The C API gives kernels no
//! access to TF's intra-op thread pool, so a kernel that would run on one core where TF's own
//! kernels use them all hands parts to a pool of its own (`Pool`). TF's kernels compute with
//! denormals flushed to zero (its pool's threads flush them), but a graph run on the calling
//! thread does not flush: each part of the work flushes them itself, so that a kernel's values
//! are TF's.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Elements each part must have, at least, for the work to be split.
const MIN_PART: usize = 1 << 16;

/// Cores the process may use (1 when unknown), or fewer when the program set TF's intra-op
/// threads (`tf::config`): the kernels' work then takes as many threads as TF's own.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        match crate::tf::config::fixed().intra_op_threads {
            0 => available,
            threads => available.min(threads as usize),
        }
    })
}

/// How many parts `len` elements are split into: one per core, each at least `MIN_PART`.
pub fn parts(len: usize) -> usize {
    cores().min(len / MIN_PART).max(1)
}

/// Runs `work(part)` for each of `parts` parts, on the calling thread and on the pool's
/// threads (`Pool`), each part with denormals flushed (`DenormalsFlushed`); the first error
/// wins. The calling thread takes parts too, so the work is done even when every pool thread
/// is busy with another kernel's.
pub fn run_parts<W>(parts: Vec<W>, work: impl Fn(W) -> Result<()> + Sync) -> Result<()>
where
    W: Send,
{
    let count = parts.len();
    let slots: Vec<Mutex<Option<W>>> = parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
    let next = AtomicUsize::new(0);
    let outcome: Mutex<Result<()>> = Mutex::new(Ok(()));
    // Takes parts until none is left; a panicking part is an error, never an unwind past the
    // wait below.
    let take_parts = || loop {
        let at = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = slots.get(at) else { return };
        let part = locked(slot).take();
        let done = part.map_or(Ok(()), |part| {
            catch_unwind(AssertUnwindSafe(|| {
                let _flushed = DenormalsFlushed::new();
                work(part)
            }))
            .unwrap_or_else(|_| Err(Error::Invalid("a kernel's part panicked".into())))
        });
        if let Err(err) = done {
            let mut first = locked(&outcome);
            if first.is_ok() {
                *first = Err(err);
            }
        }
    };
    if count > 1 {
        Pool::get().run_with_helpers(count - 1, &take_parts);
    } else {
        take_parts();
    }
    outcome.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// `mutex`'s guard, poisoned or not: nothing here panics while holding one, and a call must
/// never return (or hang) on a poisoned lock while pool threads may still run its job.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Threads that live as long as the process, one per core but the caller's, taking parts of
/// kernels' work: starting a thread per call cost 40-80 µs here, a pass over 2 MB. No library:
/// the pool is `Condvar`s and a queue, and one lifetime to erase (`Helper::job`).
struct Pool {
    queue: Mutex<Vec<Helper>>,
    /// Helpers in `queue`, read without its lock by spinning threads.
    waiting: AtomicUsize,
    ready: Condvar,
}

/// How long a pool thread looks for work before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// A call's request for a pool thread to help: run `job` (which takes parts until none is
/// left), then count down `latch`.
struct Helper {
    job: *const (dyn Fn() + Sync),
    latch: Arc<Latch>,
}

// SAFETY: `job` is Sync, and `run_with_helpers` keeps it alive until the helper is done with it.
unsafe impl Send for Helper {}

/// Helpers of a call not yet done; the call waits for none.
struct Latch {
    outstanding: Mutex<usize>,
    done: Condvar,
}

impl Latch {
    fn count_down(&self) {
        let mut n = locked(&self.outstanding);
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.done.notify_all();
        }
    }
}

impl Pool {
    fn get() -> &'static Pool {
        static POOL: OnceLock<Pool> = OnceLock::new();
        POOL.get_or_init(|| {
            for _ in 1..cores() {
                // A pool short of threads still finishes every call (the caller takes parts).
                let _ = std::thread::Builder::new()
                    .name("tfjs-node-rs-kernels".into())
                    .spawn(|| Pool::get().serve());
            }
            Pool {
                queue: Mutex::new(Vec::new()),
                waiting: AtomicUsize::new(0),
                ready: Condvar::new(),
            }
        })
    }

    fn serve(&self) {
        loop {
            // A graph's kernels come one after another: a thread that looks for work a while
            // before it sleeps takes the next one at once, where waking it took 50 µs.
            let idle = Instant::now();
            while self.waiting.load(Ordering::Relaxed) == 0 && idle.elapsed() < SPIN {
                std::hint::spin_loop();
            }
            let mut queue = locked(&self.queue);
            let helper = loop {
                match queue.pop() {
                    Some(helper) => {
                        self.waiting.store(queue.len(), Ordering::Relaxed);
                        break helper;
                    }
                    None => {
                        queue = self
                            .ready
                            .wait(queue)
                            .unwrap_or_else(PoisonError::into_inner)
                    }
                }
            };
            drop(queue);
            // SAFETY: the job stays alive until this helper counts down (run_with_helpers).
            unsafe { (*helper.job)() };
            helper.latch.count_down();
        }
    }

    /// Runs `job` on this thread and on up to `helpers` pool threads at once, and returns when
    /// every pool thread that took it is done with it.
    fn run_with_helpers(&self, helpers: usize, job: &(dyn Fn() + Sync)) {
        let latch = Arc::new(Latch {
            outstanding: Mutex::new(helpers),
            done: Condvar::new(),
        });
        // SAFETY: only the lifetime is erased: the pointer is used by helpers only, each of
        // which is either withdrawn below or counted down before this function returns.
        let erased: *const (dyn Fn() + Sync) = unsafe { std::mem::transmute(job) };
        let mut queue = locked(&self.queue);
        queue.extend((0..helpers).map(|_| Helper {
            job: erased,
            latch: latch.clone(),
        }));
        self.waiting.store(queue.len(), Ordering::Relaxed);
        drop(queue);
        self.ready.notify_all();
        job();
        // Helpers no pool thread took are not needed any more: the job is done.
        let mut queue = locked(&self.queue);
        queue.retain(|h| {
            let ours = Arc::ptr_eq(&h.latch, &latch);
            if ours {
                latch.count_down();
            }
            !ours
        });
        self.waiting.store(queue.len(), Ordering::Relaxed);
        drop(queue);
        let mut outstanding = locked(&latch.outstanding);
        while *outstanding > 0 {
            outstanding = latch
                .done
                .wait(outstanding)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
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
