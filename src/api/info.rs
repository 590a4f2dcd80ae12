//! `tfVersion`, `startRuntime`, `isUsingGpuDevice`, `stats`.

use napi::bindgen_prelude::Env;

use super::{js_call, state_call};
use napi::bindgen_prelude::Uint8Array;

use crate::allocator;
use crate::env_state::EnvState;
use crate::js::external;
use crate::tf::config::{self, RuntimeConfig};
use crate::tf::context::{library_path, tf_version as linked_tf_version};

/// The version of the TensorFlow C library the addon runs on.
#[napi_derive::napi(js_name = "tfVersion")]
pub fn tf_version() -> String {
    linked_tf_version()
}

/// Sets the `ConfigProto` (built by js/configure.js) and thread counts every context and
/// SavedModel session of the process is made with, before the first context; afterwards only
/// the configuration in force is accepted.
#[napi_derive::napi(js_name = "configureRuntime")]
pub fn configure_runtime(
    config_proto: Uint8Array,
    intra_op_threads: u32,
    inter_op_threads: u32,
) -> napi::Result<()> {
    config::configure(RuntimeConfig {
        proto: config_proto.to_vec(),
        intra_op_threads,
        inter_op_threads,
    })
    .map_err(|err| napi::Error::from_reason(err.to_string()))
}

/// What the runtime runs with (`tf.node.runtimeInfo()` adds the devices and what JS knows).
#[napi_derive::napi(object)]
pub struct NativeRuntimeInfo {
    /// The file libtensorflow's C API was loaded from.
    pub library_path: Option<String>,
    /// Threads of TF's intra-op pool and of TF's inter-op pools, as configured (0: one per
    /// core).
    pub intra_op_threads: u32,
    pub inter_op_threads: u32,
    /// Cores the process may use.
    pub cores: u32,
}

#[napi_derive::napi(js_name = "runtimeInfo")]
pub fn runtime_info() -> NativeRuntimeInfo {
    let fixed = config::fixed();
    NativeRuntimeInfo {
        library_path: library_path(),
        intra_op_threads: fixed.intra_op_threads,
        inter_op_threads: fixed.inter_op_threads,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
    }
}

/// Creates this env's runtime now rather than at its first call: its TF context, and the
/// kernel set-up that `tf::warm_up` does on the executor thread meanwhile. js/index.js calls it
/// once the addon is loaded, before tfjs's JS or, where a native thread loads the addon
/// (js/native_loader_core.js's `startLoading`), after it.
#[napi_derive::napi(js_name = "startRuntime")]
pub fn start_runtime(env: Env) -> napi::Result<()> {
    state_call(&env, |_, _| Ok(()))
}

#[napi_derive::napi(js_name = "isUsingGpuDevice")]
pub fn is_using_gpu_device(env: Env) -> napi::Result<bool> {
    state_call(&env, |_, state| state.runtime.uses_gpu())
}

/// Whether this env defers runs of ops (`TFJS_NODE_RS_DEFER` unset or not `0`; see `trace`).
#[napi_derive::napi(js_name = "isDeferring")]
pub fn is_deferring(env: Env) -> napi::Result<bool> {
    state_call(&env, |_, state| Ok(state.runtime.is_deferring()))
}

/// Pauses deferring (or resumes it): ops run at once while paused (see `ops::deferred`).
#[napi_derive::napi(js_name = "pauseDeferring")]
pub fn pause_deferring(env: Env, paused: bool) -> napi::Result<()> {
    state_call(&env, |_, state| {
        state.runtime.pause_deferring(paused);
        Ok(())
    })
}

/// Starts queueing the ops of a call whose first run is recorded as executor jobs while its JS
/// goes on (`crate::ops::pipeline`); false when ops run at once instead (no executor, a device
/// scope).
#[napi_derive::napi(js_name = "beginPipelinedCall")]
pub fn begin_pipelined_call(env: Env) -> napi::Result<bool> {
    state_call(&env, |_, state| Ok(state.runtime.begin_pipelined_call()))
}

/// Stops queueing the call's ops and waits for them; returns whether one failed (the call then
/// runs again eagerly, js/graphs/call_graphs.js).
#[napi_derive::napi(js_name = "endPipelinedCall")]
pub fn end_pipelined_call(env: Env) -> napi::Result<bool> {
    state_call(&env, |_, state| Ok(state.runtime.end_pipelined_call()))
}

/// Counters of the binding's memory traffic in this env.
#[napi_derive::napi(object)]
pub struct Stats {
    /// Tensors JS holds ids for.
    pub live_tensors: u32,
    /// Bytes of element data in those tensors (strings not counted).
    pub live_bytes: f64,
    /// `createTensor` calls whose memory TF shares with JS.
    pub shared_creates: f64,
    /// `createTensor` calls that copied (misaligned or empty data, strings).
    pub copied_creates: f64,
    /// `tensorDataSync` calls that returned a view of TF's own buffer.
    pub shared_reads: f64,
    /// `tensorDataSync` calls that copied (strings, small reads, shared buffers, past the
    /// views' budget).
    pub copied_reads: f64,
    /// JS-memory releases queued by TF threads, not yet done on the JS thread.
    pub pending_releases: u32,
    /// ArrayBuffers over native memory (from `alloc` and reads) not yet collected, process-wide.
    pub external_buffers: u32,
    /// Bytes of TF buffers that read views hold now, process-wide: never more than
    /// `viewBudgetBytes` (a read that would pass it is a copy).
    pub view_bytes: f64,
    /// The most bytes read views may hold (`sharing::ReadViews`).
    pub view_budget_bytes: f64,
    /// Blocks of this many bytes or more get a mapping of their own from glibc and go back to
    /// the system when freed (`crate::allocator`); 0 where this package left the allocator as
    /// it was (another libc, or the user's own `MALLOC_MMAP_THRESHOLD_`).
    pub mmap_threshold_bytes: f64,
    /// Op calls whose running was deferred to the end of their run (see `ops::deferred`).
    pub deferred_ops: f64,
    /// Runs of deferred ops turned into graph nodes.
    pub compiled_runs: f64,
    /// Runs of deferred ops executed as one session run of those nodes.
    pub graph_runs: f64,
    /// Whole calls compiled into graphs (`compileCall`) and alive.
    pub call_graphs: u32,
    /// Nodes of the call graphs compiled so far that run several recorded ops as one
    /// (`graphs::fusions`).
    pub fused_nodes: f64,
    /// Graph runs queued on the executor thread (`crate::executor`).
    pub background_runs: f64,
    /// Ops of models' first calls queued on the executor thread while the call's JS went on
    /// (`crate::ops::pipeline`).
    pub pipelined_ops: f64,
    /// One-time set-ups of TF queued on the executor thread as the runtime started
    /// (`crate::tf::warm_up`); each is run while the program has called no op, or dropped.
    pub start_set_ups_queued: u32,
    pub start_set_ups_run: u32,
    pub start_set_ups_dropped: u32,
}

#[napi_derive::napi]
pub fn stats(env: Env) -> napi::Result<Stats> {
    js_call(&env, |js| {
        EnvState::with_undrained(js, |state| {
            let c = &state.sharing.counters;
            let runtime = state.runtime.counts();
            Ok(Stats {
                live_tensors: runtime.live_tensors as u32,
                live_bytes: runtime.live_bytes as f64,
                shared_creates: c.shared_creates as f64,
                copied_creates: c.copied_creates as f64,
                shared_reads: c.shared_reads as f64,
                copied_reads: c.copied_reads as f64,
                pending_releases: state.sharing.releases.pending() as u32,
                external_buffers: external::live_count() as u32,
                view_bytes: external::view_bytes() as f64,
                view_budget_bytes: state.sharing.view_budget() as f64,
                mmap_threshold_bytes: if allocator::return_large_blocks_to_system() {
                    allocator::MMAP_THRESHOLD_BYTES as f64
                } else {
                    0.0
                },
                deferred_ops: runtime.deferred_ops as f64,
                compiled_runs: runtime.compiled_runs as f64,
                graph_runs: runtime.graph_runs as f64,
                call_graphs: runtime.call_graphs as u32,
                fused_nodes: runtime.fused_nodes as f64,
                background_runs: runtime.background_runs as f64,
                pipelined_ops: runtime.pipelined_ops as f64,
                start_set_ups_queued: runtime.set_ups.queued,
                start_set_ups_run: runtime.set_ups.run,
                start_set_ups_dropped: runtime.set_ups.dropped,
            })
        })
    })
}
