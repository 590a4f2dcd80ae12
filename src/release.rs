//! Routing releases of JS memory back to its JS thread.
//!
//! TF runs a tensor's deallocator wherever the last reference drops: on the JS thread inside an
//! op or a delete, or on one of its own threads. `napi_delete_reference` is only legal on the
//! env's JS thread, so releases from elsewhere are queued and the JS thread is woken to do them.
//! Once the env shuts down, N-API frees every reference itself; late releases are then dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use crate::error::Result;
use crate::js::reference::{EnvToken, JsRef};
use crate::js::wakeup::{OnWake, Wakeup};
use crate::js::Js;

pub struct ReleaseQueue {
    js_thread: ThreadId,
    env: EnvToken,
    pending: AtomicUsize,
    state: Mutex<QueueState>,
}

struct QueueState {
    queued: Vec<JsRef>,
    /// False once the env has shut down: its references are gone.
    env_alive: bool,
    wakeup: Option<Wakeup>,
}

impl ReleaseQueue {
    pub fn new(js: Js) -> Result<Arc<ReleaseQueue>> {
        let queue = Arc::new(ReleaseQueue {
            js_thread: thread::current().id(),
            env: EnvToken::of(js),
            pending: AtomicUsize::new(0),
            state: Mutex::new(QueueState {
                queued: Vec::new(),
                env_alive: true,
                wakeup: None,
            }),
        });
        let wakeup = Wakeup::new(js, queue.clone())?;
        queue.lock().wakeup = Some(wakeup);
        Ok(queue)
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // A panic while holding the lock leaves only plain data behind; keep using it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Releases `reference` now when on the JS thread, else queues it and wakes that thread.
    pub fn release(&self, reference: JsRef) {
        let mut state = self.lock();
        if !state.env_alive {
            // N-API already freed the reference with the env.
            return;
        }
        if thread::current().id() == self.js_thread {
            drop(state);
            reference.delete(self.env);
            return;
        }
        state.queued.push(reference);
        if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {
            if let Some(wakeup) = &state.wakeup {
                wakeup.wake();
            }
        }
    }

    /// Releases queued from other threads and not yet done.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Does the queued releases; cheap when there are none. JS thread only.
    pub fn drain(&self) {
        if self.pending() == 0 {
            return;
        }
        let queued = {
            let mut state = self.lock();
            self.pending.store(0, Ordering::Release);
            std::mem::take(&mut state.queued)
        };
        for reference in queued {
            reference.delete(self.env);
        }
    }

    /// Called from the env's cleanup hook, after the env's tensors are gone: finishes queued
    /// releases while N-API still can, then turns later ones into no-ops.
    pub fn shut_down(&self) {
        self.drain();
        let wakeup = {
            let mut state = self.lock();
            state.env_alive = false;
            state.wakeup.take()
        };
        if let Some(wakeup) = wakeup {
            wakeup.close();
        }
    }
}

impl OnWake for ReleaseQueue {
    fn on_wake(&self, _js: Js) {
        self.drain();
    }
}
