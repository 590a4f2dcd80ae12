//! Keeping signals out of TF's matrix-multiply kernels.
//!
//! The GEMM kernels that oneDNN generates at run time (in the oneDNN of TF 2.21) point `rsp` at a
//! heap workspace while they run (oneDNN issue #4845, fixed upstream after TF 2.21 shipped). A
//! signal delivered to a thread inside one has its frame written over that heap memory, which
//! corrupts malloc's state: a CPU profiler (`--cpu-prof`, the inspector), `SIGCHLD` from a child
//! process or a `SIGINT` handler crashes the process later, at some unrelated `free`. Measured
//! here: 6 of 6 runs of a `MatMul` loop crash under a 50 µs `SIGPROF`, 0 of 6 with the guards.
//!
//! Two guards close the window:
//! - TF's worker threads are started while the creating thread blocks asynchronous signals, so
//!   they inherit the blocked mask: the kernel never picks them for a process-directed signal.
//! - The JS thread blocks asynchronous signals while it runs an op that may use those kernels
//!   (`uses_generated_gemm`); signals that arrive meanwhile stay pending until the op returns, or
//!   go to a thread that does not run TF (libuv's and V8's). Blocking costs about 0.5 µs, so cheap
//!   element-wise ops, which never reach oneDNN's GEMM, run unguarded.
//!
//! Synchronous signals (faults) are never blocked: a fault while blocked would kill the process.

#[cfg(unix)]
use std::mem::MaybeUninit;

/// The current thread's signal mask, restored on drop, with asynchronous signals blocked
/// meanwhile.
#[cfg(unix)]
pub struct AsyncSignalsBlocked {
    previous: libc::sigset_t,
}

#[cfg(unix)]
impl AsyncSignalsBlocked {
    pub fn new() -> AsyncSignalsBlocked {
        let blocked = asynchronous_signals();
        let mut previous = MaybeUninit::<libc::sigset_t>::zeroed();
        // SAFETY: both sets are valid for the call; pthread_sigmask only changes this thread's
        // mask and cannot fail with SIG_BLOCK and a valid set.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, previous.as_mut_ptr()) };
        AsyncSignalsBlocked {
            // SAFETY: pthread_sigmask filled it (and it was zeroed before).
            previous: unsafe { previous.assume_init() },
        }
    }

    /// Blocks asynchronous signals only when `needed`.
    pub fn when(needed: bool) -> Option<AsyncSignalsBlocked> {
        needed.then(AsyncSignalsBlocked::new)
    }
}

#[cfg(unix)]
impl Drop for AsyncSignalsBlocked {
    fn drop(&mut self) {
        // SAFETY: `previous` is the mask this thread had before `new`; restoring it is always valid.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}

/// Every signal except those the CPU raises for the faulting instruction itself.
#[cfg(unix)]
fn asynchronous_signals() -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: the set is a valid, writable sigset_t; the signal numbers are valid.
    unsafe {
        libc::sigfillset(set.as_mut_ptr());
        for sync in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
            libc::SIGABRT,
        ] {
            libc::sigdelset(set.as_mut_ptr(), sync);
        }
        set.assume_init()
    }
}

/// Windows has no asynchronous signals to keep out: a profiler samples a thread by suspending
/// it, and console events run on a thread of their own, so nothing is written on the stack of a
/// thread inside a generated kernel.
#[cfg(windows)]
pub struct AsyncSignalsBlocked;

#[cfg(windows)]
impl AsyncSignalsBlocked {
    pub fn new() -> AsyncSignalsBlocked {
        AsyncSignalsBlocked
    }

    pub fn when(needed: bool) -> Option<AsyncSignalsBlocked> {
        needed.then(AsyncSignalsBlocked::new)
    }
}

/// Whether TF may run op `name` on oneDNN's generated GEMM kernels: matrix products (MatMul,
/// its fused and batched forms, Einsum), convolutions (and their gradients), which TF computes
/// as contractions, and the block RNN cells built on them.
pub fn uses_generated_gemm(name: &[u8]) -> bool {
    const FAMILIES: [&[u8]; 5] = [b"MatMul", b"Conv", b"Einsum", b"LSTM", b"GRU"];
    FAMILIES
        .iter()
        .any(|family| name.windows(family.len()).any(|w| w == *family))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn blocked(signal: libc::c_int) -> bool {
        let mut mask = MaybeUninit::<libc::sigset_t>::zeroed();
        // SAFETY: a null new set only reads the current mask into a valid out-pointer.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), mask.as_mut_ptr());
            libc::sigismember(mask.as_ptr(), signal) == 1
        }
    }

    #[test]
    fn blocks_asynchronous_signals_until_dropped() {
        assert!(!blocked(libc::SIGPROF));
        {
            let _guard = AsyncSignalsBlocked::new();
            assert!(blocked(libc::SIGPROF));
            assert!(blocked(libc::SIGCHLD));
            assert!(!blocked(libc::SIGSEGV));
        }
        assert!(!blocked(libc::SIGPROF));
    }

    #[test]
    fn gemm_ops_are_recognised() {
        for name in [
            "MatMul",
            "_FusedMatMul",
            "BatchMatMulV2",
            "Conv2DBackpropFilter",
            "Einsum",
        ] {
            assert!(uses_generated_gemm(name.as_bytes()), "{name}");
        }
        for name in ["AddV2", "Relu", "Reshape", "MaxPool"] {
            assert!(!uses_generated_gemm(name.as_bytes()), "{name}");
        }
    }
}
