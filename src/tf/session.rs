//! `TF_Session`: over a SavedModel's graph (loading with `TF_LoadSessionFromSavedModel`, looking
//! up graph tensors by name), or over a graph built here (`crate::ops::deferred`); and `TF_SessionRun`.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr::{self, NonNull};

use tensorflow_sys as sys;

use super::graph::{output_type_code, Graph, NodeOutput};
use super::proto::Buffer;
use super::signals::AsyncSignalsBlocked;
use super::status::Status;
use super::tensor::Tensor;
use super::trace::{self, SpanKind, Timing, FULL_TRACE_RUN_OPTIONS};
use crate::error::{Error, Result};

/// A session over a graph. Fields drop in order: the session before the graph it runs.
pub struct Session {
    raw: NonNull<sys::TF_Session>,
    graph: Graph,
}

// SAFETY: TF_SessionRun may be called from any thread, several at once; the graph is only read
// after the session is made (SavedModels are loaded whole, built graphs are finished before
// they are shared); session and graph are deleted once, by whoever drops the Session.
unsafe impl Send for Session {}
// SAFETY: as above: shared use is `run` and lookups, which TF allows concurrently.
unsafe impl Sync for Session {}

/// One output of a graph operation (`op:index`), borrowed from its session's graph.
#[derive(Clone, Copy)]
pub struct Port<'a> {
    output: sys::TF_Output,
    _session: std::marker::PhantomData<&'a Session>,
}

impl Session {
    /// Loads the meta graph tagged with exactly `tags` from the SavedModel in `export_dir` and
    /// restores its variables. `own_config` (a serialized `ConfigProto`, possibly empty) is
    /// merged over the process's (`config`): protobuf merges concatenated messages, the later
    /// field winning.
    pub fn load_saved_model(
        export_dir: &CStr,
        tags: &[CString],
        own_config: &[u8],
        status: &Status,
    ) -> Result<Session> {
        let graph = Graph::new()?;
        let tag_ptrs: Vec<*const c_char> = tags.iter().map(|t| t.as_ptr()).collect();
        let ntags = c_int::try_from(tag_ptrs.len())
            .map_err(|_| Error::Range("too many SavedModel tags".into()))?;
        // The session's threads inherit this mask (see `signals`); restoring runs the graph's
        // initializers here too.
        let _blocked = AsyncSignalsBlocked::new();
        let config = [super::config::fixed().proto.as_slice(), own_config].concat();
        // SAFETY: the options are created, configured, used once and deleted here (the session
        // copies them); the config bytes, export_dir and the tag strings outlive the calls; the
        // graph is live and receives the model; null run options and meta graph buffer are
        // allowed by the C API.
        let raw = unsafe {
            let options = sys::TF_NewSessionOptions();
            sys::TF_SetConfig(options, config.as_ptr().cast(), config.len(), status.raw());
            let configured = status.check();
            let raw = match configured {
                Ok(()) => sys::TF_LoadSessionFromSavedModel(
                    options,
                    ptr::null(),
                    export_dir.as_ptr(),
                    tag_ptrs.as_ptr(),
                    ntags,
                    graph.raw(),
                    ptr::null_mut(),
                    status.raw(),
                ),
                Err(_) => ptr::null_mut(),
            };
            sys::TF_DeleteSessionOptions(options);
            configured?;
            raw
        };
        if let Err(err) = status.check() {
            if !raw.is_null() {
                // SAFETY: a session returned alongside an error is still owned by us; close and
                // delete it once.
                unsafe { close_and_delete(raw) };
            }
            return Err(err);
        }
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::Invalid("TF_LoadSessionFromSavedModel returned no session".into())
        })?;
        Ok(Session { raw, graph })
    }

    /// A session over a new, empty graph that runs the nodes callers add to it (`graph()`), all
    /// in the calling thread, exactly as built (no Grappler rewrites, no constant folding or
    /// common subexpressions, so results match the same ops run eagerly).
    pub fn in_caller_thread(status: &Status) -> Result<Session> {
        let graph = Graph::new()?;
        // ConfigProto { inter_op_parallelism_threads: -1 (5: varint),
        //   graph_options (10) { rewrite_options (10) { disable_meta_optimizer (19): true },
        //     optimizer_options (3) { opt_level (3): L0 = -1 } } }
        const CONFIG: &[u8] = &[
            0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x52, 0x12, 0x52,
            0x03, 0x98, 0x01, 0x01, 0x1a, 0x0b, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0x01,
        ];
        // The session's threads inherit this mask (see `signals`).
        let _blocked = AsyncSignalsBlocked::new();
        // SAFETY: the options are created, configured, used once and deleted here (the session
        // copies them); the config bytes outlive the call; the graph is live.
        let raw = unsafe {
            let options = sys::TF_NewSessionOptions();
            sys::TF_SetConfig(options, CONFIG.as_ptr().cast(), CONFIG.len(), status.raw());
            let configured = status.check();
            let raw = match configured {
                Ok(()) => sys::TF_NewSession(graph.raw(), options, status.raw()),
                Err(_) => ptr::null_mut(),
            };
            sys::TF_DeleteSessionOptions(options);
            configured?;
            raw
        };
        status.check()?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::Invalid("TF_NewSession returned no session".into()))?;
        Ok(Session { raw, graph })
    }

    /// The graph the session runs; nodes added to it are runnable from the next `run`.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// A node output of this session's graph as a port.
    pub fn port_of(&self, output: NodeOutput) -> Port<'_> {
        Port {
            output: output.raw(),
            _session: std::marker::PhantomData,
        }
    }

    /// The output `index` of the operation `op_name`, or `None` when the graph has no such
    /// operation or the operation has fewer outputs.
    pub fn port(&self, op_name: &CStr, index: i32) -> Option<Port<'_>> {
        // SAFETY: the graph is live; the name is a NUL-terminated string read during the call.
        let oper = unsafe { sys::TF_GraphOperationByName(self.graph.raw(), op_name.as_ptr()) };
        if oper.is_null() || index < 0 {
            return None;
        }
        // SAFETY: oper is an operation of this live graph.
        let outputs = unsafe { sys::TF_OperationNumOutputs(oper) };
        if index >= outputs {
            return None;
        }
        Some(Port {
            output: sys::TF_Output { oper, index },
            _session: std::marker::PhantomData,
        })
    }

    /// The dtype code TF declares for the port.
    pub fn port_dtype(&self, port: Port<'_>) -> i32 {
        output_type_code(port.output)
    }

    /// Feeds `inputs` and fetches `outputs`, returning one tensor per output.
    pub fn run(
        &self,
        inputs: &[(Port<'_>, &Tensor)],
        outputs: &[Port<'_>],
        status: &Status,
    ) -> Result<Vec<Tensor>> {
        self.run_with_targets(inputs, outputs, &[], status)
    }

    /// `run`, also running the nodes of `targets` (and those they depend on).
    pub fn run_with_targets(
        &self,
        inputs: &[(Port<'_>, &Tensor)],
        outputs: &[Port<'_>],
        targets: &[NodeOutput],
        status: &Status,
    ) -> Result<Vec<Tensor>> {
        let feeds: Vec<sys::TF_Output> = inputs.iter().map(|(p, _)| p.output).collect();
        let values: Vec<*mut sys::TF_Tensor> = inputs.iter().map(|(_, t)| t.raw()).collect();
        let fetches: Vec<sys::TF_Output> = outputs.iter().map(|p| p.output).collect();
        let targets: Vec<*const sys::TF_Operation> =
            targets.iter().map(|t| t.raw().oper.cast_const()).collect();
        let mut results: Vec<*mut sys::TF_Tensor> = vec![ptr::null_mut(); fetches.len()];
        let count = |n: usize| {
            c_int::try_from(n)
                .map_err(|_| Error::Range("too many session inputs or outputs".into()))
        };
        let (ninputs, noutputs, ntargets) = (
            count(feeds.len())?,
            count(fetches.len())?,
            count(targets.len())?,
        );
        // While a profile is taken, TF times each node (`trace`).
        let timing = Timing::begin(SpanKind::SessionRun, || {
            ("TF_SessionRun".into(), String::new())
        });
        let traced = match timing {
            Some(_) => Some((Buffer::from_bytes(FULL_TRACE_RUN_OPTIONS)?, Buffer::new()?)),
            None => None,
        };
        let (run_options, metadata) = traced
            .as_ref()
            .map_or((ptr::null(), ptr::null_mut()), |(options, metadata)| {
                (options.0.cast_const(), metadata.0)
            });
        let _turn = traced.is_some().then(trace::traced_run_turn);
        // A graph may hold any op, GEMM-based ones included (see `signals`).
        let _blocked = AsyncSignalsBlocked::new();
        // SAFETY: the session and every port's and target's graph are live; the feed, value,
        // fetch, result and target arrays have the lengths passed and outlive the call; TF only
        // reads the input tensors (it takes its own references) and writes one new tensor per
        // fetch on success; the run options and metadata buffers are null or live.
        unsafe {
            sys::TF_SessionRun(
                self.raw.as_ptr(),
                run_options,
                feeds.as_ptr(),
                values.as_ptr(),
                ninputs,
                fetches.as_ptr(),
                results.as_mut_ptr(),
                noutputs,
                targets.as_ptr(),
                ntargets,
                metadata,
                status.raw(),
            );
        }
        // Adopt whatever TF produced first, so nothing leaks when it also reported an error.
        let adopted: Vec<Option<Tensor>> = results.into_iter().map(Tensor::adopt).collect();
        status.check()?;
        if let Some((_, metadata)) = &traced {
            trace::record_run_metadata(metadata.bytes())?;
        }
        drop(timing);
        adopted
            .into_iter()
            .map(|t| t.ok_or_else(|| Error::Invalid("TF_SessionRun returned no tensor".into())))
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: this Session owns the TF_Session; it is closed and deleted once, before the
        // graph (the next field) is deleted.
        unsafe { close_and_delete(self.raw.as_ptr()) }
    }
}

/// # Safety
/// `raw` must be a live session owned by the caller; it is freed here.
unsafe fn close_and_delete(raw: *mut sys::TF_Session) {
    let status = Status::new();
    // SAFETY: per the contract, raw is live and freed once; errors on close are not actionable.
    unsafe {
        sys::TF_CloseSession(raw, status.raw());
        sys::TF_DeleteSession(raw, status.raw());
    }
}
