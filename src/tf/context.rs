//! `TFE_Context`: one per N-API env, so each worker thread runs its own eager runtime.

use std::ffi::{CStr, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tensorflow_sys as sys;

use super::extern_decls::{
    TFE_ContextGetExecutorForThread, TFE_ContextSetServerDefWithTimeout, TFE_DeleteExecutor,
    TFE_EnableCollectiveOps, TFE_ExecutorClearError, TFE_ExecutorWaitForAllPendingNodes,
};
use super::function::Function;
use super::signals::AsyncSignalsBlocked;
use super::status::Status;
use crate::error::{Error, Result};

/// How long a worker keeps this client's remote context without hearing from it (TF's client
/// pings while it lives), so a client that dies frees its state on the workers; Python's default.
const REMOTE_KEEP_ALIVE_SECS: i32 = 600;

pub struct Context {
    raw: NonNull<sys::TFE_Context>,
    /// The device every eager op of this context is placed on while a device scope is active
    /// (`tf.node.withDevice`); `None`: TF places ops itself.
    device_scope: Option<CString>,
    /// The tasks this context has been (`/job:localhost/replica:0/task:0`, then its task in each
    /// cluster it was a client of): tensors on their devices are this process's own.
    local_tasks: Vec<String>,
    /// What the context is in a cluster, once it is in one.
    cluster_role: Option<ClusterRole>,
    /// How many times the context joined a cluster (see `AddedFunction`).
    cluster_changes: Arc<AtomicU64>,
}

/// The context as ops take it, from any thread: TF's eager context is thread-safe. Only the
/// runtime's executor thread holds one apart from the `Context`, and the runtime joins that
/// thread before it drops the context.
#[derive(Clone, Copy)]
pub struct SharedContext(NonNull<sys::TFE_Context>);

// SAFETY: TFE_Context is thread-safe (TF locks its own state); the pointer stays valid while the
// `Context` lives, which outlives every job that holds a copy (see above).
unsafe impl Send for SharedContext {}
// SAFETY: as above.
unsafe impl Sync for SharedContext {}

impl SharedContext {
    pub(super) fn raw(self) -> *mut sys::TFE_Context {
        self.0.as_ptr()
    }

    /// The context `op` was made in.
    pub(super) fn of_op(op: *mut sys::TFE_Op) -> Option<SharedContext> {
        let status = Status::new();
        // SAFETY: `op` is live (the caller's); TF only reads it.
        let raw = unsafe { sys::TFE_OpGetContext(op, status.raw()) };
        NonNull::new(raw).map(SharedContext)
    }

    /// Lets a failed op finish failing, after it or a wait for its output (its shape, its
    /// device, a read) reported the error. TF sends an op for a remote device without waiting,
    /// and marks its output failed when the worker answers with an error before it marks the
    /// op done. Marking it done fails the ops still waiting for an answer, with this op's
    /// error, and keeps the error on the executor for the next ops; the worker also ends the
    /// request stream, failing the requests sent on it meanwhile. So an op sent in that gap, a
    /// different one, failed with this error (the op after a remote gather of a bad index: 2
    /// to 15 in 100 here). The executor's nodes are waited for (their errors are this one,
    /// already reported), then its error is cleared.
    pub fn clear_executor_error(self) {
        let status = Status::new();
        // SAFETY: the context is live (see the type); the wrapper TF returns does not own the
        // executor and is deleted here, once.
        unsafe {
            let executor = TFE_ContextGetExecutorForThread(self.raw());
            if !executor.is_null() {
                TFE_ExecutorWaitForAllPendingNodes(executor, status.raw());
                TFE_ExecutorClearError(executor);
                TFE_DeleteExecutor(executor);
            }
        }
    }

    /// `result` of a call that ran an op or waited for one (its shape, its device, its value),
    /// the executor's error cleared first when it failed (`clear_executor_error`).
    pub fn cleared_on_error<T>(self, result: Result<T>) -> Result<T> {
        if result.is_err() {
            self.clear_executor_error();
        }
        result
    }
}

/// A function in the context's library (`Context::add_function`), removed from it when dropped:
/// each call graph compiled in a device scope adds one, and a server that compiles graphs as it
/// goes (models loaded and disposed) would grow the library for good. Not when the context
/// joined a cluster since it was added: TF started the library anew then, and removing a
/// function it no longer has fails, leaving that error on the executor for the next ops (a
/// reconnect failed so on Node.js 26).
pub struct AddedFunction {
    name: CString,
    context: SharedContext,
    cluster_changes: Arc<AtomicU64>,
    added_at: u64,
}

impl AddedFunction {
    pub fn name(&self) -> &CStr {
        &self.name
    }
}

impl Drop for AddedFunction {
    fn drop(&mut self) {
        if self.cluster_changes.load(Ordering::Acquire) != self.added_at {
            return;
        }
        let status = Status::new();
        // SAFETY: the context is live (see `SharedContext`: the function's holders, call graphs
        // and the jobs running them, go before it); the name outlives the call.
        unsafe {
            sys::TFE_ContextRemoveFunction(self.context.raw(), self.name.as_ptr(), status.raw())
        };
        if status.check().is_err() {
            self.context.clear_executor_error();
        }
    }
}

/// TF gives a context either clusters to be the client of (`set_server_def`, again and again) or
/// one collective group to be a worker of (`enable_collective_ops`, once: TF CHECK-fails on some
/// later calls), never both.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ClusterRole {
    Client,
    CollectiveWorker,
}

/// One device the context can place ops on.
pub struct DeviceInfo {
    /// The full name, e.g. `/job:worker/replica:0/task:1/device:CPU:0`.
    pub name: String,
    /// `CPU`, `GPU`, ...
    pub device_type: String,
}

impl Context {
    pub fn new(status: &Status) -> Result<Context> {
        // TF starts its worker threads here; they inherit this mask and so never take a signal.
        let _blocked = AsyncSignalsBlocked::new();
        let config = &super::config::fixed().proto;
        // SAFETY: options are created, configured, used once and deleted here (TFE_NewContext
        // copies them); the config bytes outlive the calls.
        let raw = unsafe {
            let options = sys::TFE_NewContextOptions();
            sys::TFE_ContextOptionsSetConfig(
                options,
                config.as_ptr().cast(),
                config.len(),
                status.raw(),
            );
            let configured = status.check();
            let raw = match configured {
                Ok(()) => sys::TFE_NewContext(options, status.raw()),
                Err(_) => std::ptr::null_mut(),
            };
            sys::TFE_DeleteContextOptions(options);
            configured?;
            raw
        };
        status.check()?;
        NonNull::new(raw)
            .map(|raw| Context {
                raw,
                device_scope: None,
                local_tasks: vec!["/job:localhost/replica:0/task:0".into()],
                cluster_role: None,
                cluster_changes: Arc::default(),
            })
            .ok_or_else(|| Error::Invalid("TFE_NewContext returned no context".into()))
    }

    pub(super) fn raw(&self) -> *mut sys::TFE_Context {
        self.raw.as_ptr()
    }

    /// The context for ops made on other threads (an executor job's).
    pub fn shared(&self) -> SharedContext {
        SharedContext(self.raw)
    }

    pub fn device_scope(&self) -> Option<&CStr> {
        self.device_scope.as_deref()
    }

    pub fn set_device_scope(&mut self, device: Option<CString>) {
        self.device_scope = device;
    }

    /// Registers `function`, named `name`, so that eager ops of its name call it, on the
    /// cluster's tasks too, until the returned value is dropped. A name registered before is
    /// not sent again, not even to the tasks of a cluster connected since (measured: their
    /// calls failed with NOT_FOUND), so each function needs a new name.
    pub fn add_function(
        &self,
        function: &Function,
        name: CString,
        status: &Status,
    ) -> Result<AddedFunction> {
        // SAFETY: context and function are live; TF copies the function's definition.
        unsafe { sys::TFE_ContextAddFunction(self.raw(), function.raw(), status.raw()) };
        status.check()?;
        Ok(AddedFunction {
            name,
            context: self.shared(),
            added_at: self.cluster_changes.load(Ordering::Acquire),
            cluster_changes: self.cluster_changes.clone(),
        })
    }

    /// Called before the context joins a cluster: TF starts its function library anew.
    fn count_cluster_change(&self) {
        self.cluster_changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether `device` (a full device name) belongs to one of the tasks this process has been.
    pub fn is_local(&self, device: &str) -> bool {
        self.local_tasks.iter().any(|task| {
            device
                .strip_prefix(task.as_str())
                .is_some_and(|rest| rest.starts_with("/device:"))
        })
    }

    /// Makes the context a client of the cluster in `server_def` (a serialized
    /// `tensorflow.ServerDef` naming this task, `local_task`, too): ops can then be placed on the
    /// remote tasks' devices. Fails when a task does not answer within `timeout_ms`.
    pub fn set_server_def(
        &mut self,
        server_def: &[u8],
        local_task: &str,
        timeout_ms: i64,
        status: &Status,
    ) -> Result<()> {
        if self.cluster_role == Some(ClusterRole::CollectiveWorker) {
            return Err(Error::Invalid(
                "this process is a worker of a collective group, which cannot also be a \
                 cluster's client"
                    .into(),
            ));
        }
        self.count_cluster_change();
        // Servers the context starts get their threads here, as in `new`.
        let _blocked = AsyncSignalsBlocked::new();
        // SAFETY: the context is live and the bytes outlive the call (TF parses them). Existing
        // remote contexts are cleared.
        unsafe {
            TFE_ContextSetServerDefWithTimeout(
                self.raw(),
                REMOTE_KEEP_ALIVE_SECS,
                server_def.as_ptr().cast(),
                server_def.len(),
                timeout_ms,
                status.raw(),
                true,
            )
        };
        status.check()?;
        self.cluster_role = Some(ClusterRole::Client);
        if !self.local_tasks.iter().any(|task| task == local_task) {
            self.local_tasks.push(local_task.into());
        }
        Ok(())
    }

    /// Starts this task's server for `server_def` in the context, so collective ops can reach
    /// the other tasks of the cluster (which do the same).
    pub fn enable_collective_ops(&mut self, server_def: &[u8], status: &Status) -> Result<()> {
        match self.cluster_role {
            Some(ClusterRole::Client) => {
                return Err(Error::Invalid(
                    "this process is a cluster's client, which cannot also be a worker of a \
                     collective group"
                        .into(),
                ))
            }
            Some(ClusterRole::CollectiveWorker) => {
                return Err(Error::Invalid(
                    "this process already is a worker of a collective group (TF takes one per \
                     process)"
                        .into(),
                ))
            }
            None => {}
        }
        self.count_cluster_change();
        let _blocked = AsyncSignalsBlocked::new();
        // SAFETY: the context is live and the bytes outlive the call (TF parses them).
        unsafe {
            TFE_EnableCollectiveOps(
                self.raw(),
                server_def.as_ptr().cast(),
                server_def.len(),
                status.raw(),
            )
        };
        status.check()?;
        self.cluster_role = Some(ClusterRole::CollectiveWorker);
        Ok(())
    }

    /// The devices the context can place ops on: local ones, and remote ones once it is a
    /// cluster's client.
    pub fn devices(&self, status: &Status) -> Result<Vec<DeviceInfo>> {
        // SAFETY: the context is live; the list is read, then deleted once; TF's strings are
        // copied while the list lives.
        unsafe {
            let list = sys::TFE_ContextListDevices(self.raw(), status.raw());
            status.check()?;
            let count = sys::TF_DeviceListCount(list);
            let mut devices = Vec::with_capacity(count.max(0) as usize);
            for i in 0..count {
                let name = sys::TF_DeviceListName(list, i, status.raw());
                let device_type = sys::TF_DeviceListType(list, i, status.raw());
                if status.check().is_ok() && !name.is_null() && !device_type.is_null() {
                    devices.push(DeviceInfo {
                        name: CStr::from_ptr(name).to_string_lossy().into_owned(),
                        device_type: CStr::from_ptr(device_type).to_string_lossy().into_owned(),
                    });
                }
            }
            sys::TF_DeleteDeviceList(list);
            Ok(devices)
        }
    }

    /// The device types the context can place ops on (`CPU`, `GPU`, ...).
    pub fn device_types(&self, status: &Status) -> Result<Vec<String>> {
        Ok(self
            .devices(status)?
            .into_iter()
            .map(|d| d.device_type)
            .collect())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is deleted once, after every op and handle made in it (the env state
        // drops those first).
        unsafe { sys::TFE_DeleteContext(self.raw()) }
    }
}

pub fn tf_version() -> String {
    // SAFETY: TF_Version returns a static C string.
    unsafe { CStr::from_ptr(sys::TF_Version()) }
        .to_string_lossy()
        .into_owned()
}

/// The file libtensorflow's C API was loaded from, as the loader resolved it.
#[cfg(windows)]
pub fn library_path() -> Option<String> {
    // `sys::TF_Version` is the addon's own jump to the DLL; its import slot holds the address
    // the loader bound, inside the DLL.
    extern "C" {
        #[link_name = "__imp_TF_Version"]
        static TF_VERSION_IMPORT: *const std::ffi::c_void;
    }
    // SAFETY: the import slot is filled by the loader before any of the addon's code runs.
    crate::win32::module_path(unsafe { TF_VERSION_IMPORT })
}

/// The file libtensorflow's C API was loaded from, as the dynamic linker resolved it.
#[cfg(unix)]
pub fn library_path() -> Option<String> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the address (a function of the loaded library) and fills
    // `info`; dli_fname, when set, is a NUL-terminated string owned by the linker, copied out
    // at once.
    unsafe {
        let found = libc::dladdr(sys::TF_Version as *const libc::c_void, info.as_mut_ptr());
        let info = info.assume_init();
        if found == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(
            CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tf::dtype::DType;
    use crate::tf::graph::Graph;

    fn in_library(context: &Context, name: &CStr) -> bool {
        // SAFETY: the context is live and the name outlives the call.
        unsafe { sys::TFE_ContextHasFunction(context.raw(), name.as_ptr()) != 0 }
    }

    #[test]
    fn an_added_function_leaves_the_library_when_dropped_but_not_after_a_cluster_change() {
        let status = Status::new();
        let context = Context::new(&status).expect("a context");
        let graph = Graph::new().expect("a graph");
        let float32 = DType::from_name("float32").expect("float32");
        let x = graph
            .placeholder(c"x", float32, &[-1], &status)
            .expect("a placeholder");
        let mut neg = graph.node(c"Neg", c"neg").expect("a node");
        neg.add_input(x);
        let y = neg.finish(&status).expect("Neg");
        let add = |name: &CStr| {
            let function =
                Function::from_graph(&graph, name, &[x], &[y], &status).expect("a function");
            context
                .add_function(&function, name.into(), &status)
                .expect("added")
        };

        let added = add(c"negate_dropped");
        assert!(in_library(&context, c"negate_dropped"));
        drop(added);
        assert!(!in_library(&context, c"negate_dropped"));

        // TF drops the library when the context joins a cluster; what is dropped after is not
        // removed again (TF would fail that, and keep the error on the executor).
        let added = add(c"negate_before_a_cluster");
        context.count_cluster_change();
        drop(added);
        assert!(in_library(&context, c"negate_before_a_cluster"));
    }
}
