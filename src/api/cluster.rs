//! `startServer`, `connectToCluster`, `enableCollectiveOps`, `listDevices`, `setDeviceScope`,
//! `tensorDevice`: TF's distributed runtime (js/node/distributed.js builds the `ServerDef`s).

use std::ffi::CString;

use napi::bindgen_prelude::{Env, Uint8Array};

use super::{js_call, state_call};
use crate::error::Error;
use crate::tf::server::Server;
use crate::tf::signals::AsyncSignalsBlocked;
use crate::tf::status::Status;

/// TF's gRPC server running in this process, as a task of a cluster.
#[napi_derive::napi(js_name = "TfServer")]
pub struct TfServer {
    server: Server,
    status: Status,
}

#[napi_derive::napi]
impl TfServer {
    /// The server's `grpc://host:port` address.
    #[napi_derive::napi(getter)]
    pub fn target(&self) -> String {
        self.server.target()
    }

    /// Asks TF to stop serving; throws TF's error where it cannot (a started gRPC server).
    #[napi_derive::napi]
    pub fn stop(&mut self, env: Env) -> napi::Result<()> {
        js_call(&env, |_| self.server.stop(&self.status))
    }
}

/// Starts a server for `serverDef` (a serialized `tensorflow.ServerDef`).
#[napi_derive::napi(js_name = "startServer")]
pub fn start_server(env: Env, server_def: Uint8Array) -> napi::Result<TfServer> {
    js_call(&env, |_| {
        let status = Status::new();
        let _blocked = AsyncSignalsBlocked::new();
        let mut server = Server::new(&server_def, &status)?;
        server.start(&status)?;
        Ok(TfServer { server, status })
    })
}

/// Makes this env's context a client of the cluster in `serverDef`, which names this client as
/// its own task, `localTask` (`/job:client/replica:0/task:0`). Work in flight is finished
/// first; tensors on other tasks' devices are dropped (their ids stay, as tensors not computed).
/// See `ops::Runtime::connect_to_cluster`.
#[napi_derive::napi(js_name = "connectToCluster")]
pub fn connect_to_cluster(
    env: Env,
    server_def: Uint8Array,
    local_task: String,
    timeout_ms: f64,
) -> napi::Result<()> {
    state_call(&env, |_, state| {
        if !(timeout_ms.is_finite() && timeout_ms >= 1.0) {
            return Err(Error::Range(format!(
                "timeoutMs must be a positive number of milliseconds, got {timeout_ms}"
            )));
        }
        state.runtime.connect_to_cluster(
            &state.prepared_ops,
            &server_def,
            &local_task,
            timeout_ms as i64,
        )
    })
}

/// Starts this task's server in the env's context for collective ops across the cluster in
/// `serverDef` (every task calls it with its own task index).
#[napi_derive::napi(js_name = "enableCollectiveOps")]
pub fn enable_collective_ops(env: Env, server_def: Uint8Array) -> napi::Result<()> {
    state_call(&env, |_, state| {
        state
            .runtime
            .enable_collective_ops(&state.prepared_ops, &server_def)
    })
}

/// A device the env's context can place ops on.
#[napi_derive::napi(object)]
pub struct DeviceInfo {
    /// The full name, e.g. `/job:worker/replica:0/task:1/device:CPU:0`.
    pub name: String,
    /// `CPU`, `GPU`, ...
    pub device_type: String,
}

#[napi_derive::napi(js_name = "listDevices")]
pub fn list_devices(env: Env) -> napi::Result<Vec<DeviceInfo>> {
    state_call(&env, |_, state| {
        Ok(state
            .runtime
            .devices()?
            .into_iter()
            .map(|d| DeviceInfo {
                name: d.name,
                device_type: d.device_type,
            })
            .collect())
    })
}

/// Places every eager op from now on on `device` (`null`: TF places them). The deferred run in
/// progress is finished first, so its ops run where they were issued.
#[napi_derive::napi(js_name = "setDeviceScope")]
pub fn set_device_scope(env: Env, device: Option<String>) -> napi::Result<()> {
    state_call(&env, |_, state| {
        let device = device
            .map(|name| {
                CString::new(name)
                    .map_err(|_| Error::Type("a device name must not hold a NUL byte".into()))
            })
            .transpose()?;
        state.runtime.set_device_scope(&state.prepared_ops, device)
    })
}

/// Copies each tensor of `ids` that lives on another task's device, other than the devices
/// `keepOn`, to this process, in place (the ids stay); returns how many were copied. A tensor
/// that cannot be copied is dropped, and the first such error thrown once the others are here.
#[napi_derive::napi(js_name = "bringTensorsHere")]
pub fn bring_tensors_here(env: Env, ids: Vec<f64>, keep_on: Vec<String>) -> napi::Result<u32> {
    state_call(&env, |_, state| {
        let ids = ids
            .iter()
            .map(|&id| super::args::tensor_id_of_number(id, "id"))
            .collect::<crate::error::Result<Vec<_>>>()?;
        state.runtime.bring_tensors_here(&ids, &keep_on)
    })
}

/// The device that ran the op producing tensor `id` (`backing`: the device holding its memory).
#[napi_derive::napi(js_name = "tensorDevice")]
pub fn tensor_device(env: Env, id: f64, backing: bool) -> napi::Result<String> {
    state_call(&env, |_, state| {
        let id = super::args::tensor_id_of_number(id, "id")?;
        state
            .runtime
            .tensor_device(&state.prepared_ops, id, backing)
    })
}
