//! Safe wrappers over the TensorFlow C API. All FFI into TF lives in this module.

pub mod aligned;
pub mod config;
pub mod context;
pub mod custom_op;
pub mod dtype;
mod extern_decls;
pub mod function;
pub mod graph;
pub mod handle;
pub mod op;
pub mod op_def;
mod proto;
pub mod server;
pub mod session;
pub mod signals;
pub mod status;
pub mod tensor;
pub mod trace;
pub mod warm_up;
