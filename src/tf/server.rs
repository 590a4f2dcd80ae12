//! `TF_Server`: TensorFlow's in-process gRPC server, which makes this process a task of a
//! cluster (remote clients place ops on its devices).

use std::ffi::CStr;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::status::Status;
use crate::error::{Error, Result};

pub struct Server {
    raw: NonNull<sys::TF_Server>,
    /// A started gRPC server cannot be deleted: TF's destructor stops it and aborts the process
    /// when that fails, and TF 2.21 cannot stop a started gRPC server (UNIMPLEMENTED). Such a
    /// server lives as long as the process.
    started: bool,
}

impl Server {
    /// A server for `server_def` (a serialized `tensorflow.ServerDef`), not yet serving. TF binds
    /// the port here, so a taken port fails here.
    pub fn new(server_def: &[u8], status: &Status) -> Result<Server> {
        // SAFETY: the bytes outlive the call; TF parses them into its own message.
        let raw = unsafe {
            sys::TF_NewServer(server_def.as_ptr().cast(), server_def.len(), status.raw())
        };
        status.check()?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::Invalid("TF_NewServer returned no server".into()))?;
        Ok(Server {
            raw,
            started: false,
        })
    }

    pub fn start(&mut self, status: &Status) -> Result<()> {
        // SAFETY: the server is live.
        unsafe { sys::TF_ServerStart(self.raw.as_ptr(), status.raw()) };
        status.check()?;
        self.started = true;
        Ok(())
    }

    /// TF's stop: for a started gRPC server, TF answers UNIMPLEMENTED and it keeps serving.
    pub fn stop(&mut self, status: &Status) -> Result<()> {
        // SAFETY: the server is live.
        unsafe { sys::TF_ServerStop(self.raw.as_ptr(), status.raw()) };
        status.check()?;
        self.started = false;
        Ok(())
    }

    /// The server's `grpc://host:port` address.
    pub fn target(&self) -> String {
        // SAFETY: the server is live; TF returns a string it owns, copied at once.
        unsafe { CStr::from_ptr(sys::TF_ServerTarget(self.raw.as_ptr())) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.started {
            // SAFETY: the server is not serving, so TF's destructor has nothing to stop; it is
            // deleted once.
            unsafe { sys::TF_DeleteServer(self.raw.as_ptr()) }
        }
    }
}
