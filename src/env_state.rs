//! Context lifecycle: everything the binding keeps per N-API env, in parts that calls borrow
//! apart: the op runtime (`ops::Runtime`: tensors, deferred runs, jobs, the context), the
//! prepared ops that op calls read while the runtime is borrowed, and the memory lent between
//! JS and TF (`sharing::Sharing`: releases, read views, counters).

use crate::error::Result;
use crate::js::{self, EnvData, Js, Teardown};
use crate::op_plan::PreparedOp;
use crate::ops::Runtime;
use crate::saved_model::SavedModels;
use crate::sharing::Sharing;

/// Fields drop in declaration order: the runtime's tensors before the JS memory they borrow
/// is released, its context after everything holding its handles.
pub struct EnvState {
    pub saved_models: SavedModels,
    pub runtime: Runtime,
    pub prepared_ops: Vec<PreparedOp>,
    pub sharing: Sharing,
    /// Strings read from JS (dtype names), into one buffer so that reading one allocates
    /// nothing.
    pub text: Vec<u8>,
}

impl EnvState {
    /// Runs `body` with this env's state (created on first use), borrowed for `body` alone,
    /// after the releases TF threads queued.
    pub fn with<R>(js: Js, body: impl FnOnce(&mut EnvState) -> Result<R>) -> Result<R> {
        js.with_env_data(EnvState::new, |state| {
            state.sharing.releases.drain();
            body(state)
        })
    }

    /// `with`, leaving queued releases for the wakeup to do (so they can be observed).
    pub fn with_undrained<R>(js: Js, body: impl FnOnce(&mut EnvState) -> Result<R>) -> Result<R> {
        js.with_env_data(EnvState::new, body)
    }

    fn new(js: Js) -> Result<EnvState> {
        #[cfg(windows)]
        crate::win32::pin_addon();
        crate::kernels::register();
        crate::allocator::return_large_blocks_to_system();
        Ok(EnvState {
            saved_models: SavedModels::default(),
            runtime: Runtime::new(js)?,
            prepared_ops: Vec::new(),
            sharing: Sharing::new(js)?,
            text: Vec::new(),
        })
    }
}

impl EnvData for EnvState {
    fn shut_down(&mut self) -> Teardown {
        if js::is_process_main_thread() {
            // The process is ending: TF's context, tensors and op objects are left to its end,
            // as `process.exit()` leaves them (it runs no cleanup hooks). Taking them apart
            // took 1.7-5.6 ms of every exit here. The executor stops first, as there: no job
            // may run under TF's own destructors.
            self.runtime.stop_background_work();
            return Teardown::Leave;
        }
        // Tensors borrowing JS memory release it now, on this thread, while N-API still can.
        self.runtime.shut_down();
        self.sharing.releases.shut_down();
        Teardown::Drop
    }
}
