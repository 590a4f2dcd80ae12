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

#[cfg(test)]
mod tests {
    use super::*;

    fn tf_error(result: Result<Server>) -> (&'static str, String) {
        match result {
            Err(Error::Tf { code, message }) => (code, message),
            Err(other) => panic!("expected a TF error, got {other:?}"),
            Ok(_) => panic!("expected a TF error, got a server"),
        }
    }

    #[test]
    fn bytes_that_are_no_server_def_are_tfs_error() {
        let status = Status::new();
        let (code, message) = tf_error(Server::new(&[1, 2, 3, 255, 255], &status));
        assert_eq!(code, "INVALID_ARGUMENT");
        assert!(message.contains("ServerDef"), "{message}");
    }

    #[test]
    fn a_taken_port_is_tfs_error() {
        let taken = std::net::TcpListener::bind("0.0.0.0:0").expect("a free port");
        let port = taken.local_addr().expect("its address").port();
        // ServerDef { cluster { job { name: "worker" tasks { 0: "127.0.0.1:<port>" } } }
        //             job_name: "worker" task_index: 0 protocol: "grpc" }
        let address = format!("127.0.0.1:{port}");
        let entry = [
            &[0x08, 0x00, 0x12, address.len() as u8][..],
            address.as_bytes(),
        ]
        .concat();
        let job = [
            &[0x0a, 6][..],
            b"worker",
            &[0x12, entry.len() as u8],
            &entry,
        ]
        .concat();
        let cluster = [&[0x0a, job.len() as u8][..], &job].concat();
        let def = [
            &[0x0a, cluster.len() as u8][..],
            &cluster,
            &[0x12, 6],
            b"worker",
            &[0x18, 0x00, 0x2a, 4],
            b"grpc",
        ]
        .concat();
        let status = Status::new();
        let (code, message) = tf_error(Server::new(&def, &status));
        assert_eq!(code, "UNKNOWN");
        assert!(message.contains("Could not start gRPC server"), "{message}");
    }
}
