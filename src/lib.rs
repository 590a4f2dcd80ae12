//! tfjs-node-rs: TensorFlow for Node.js, an N-API addon over the TensorFlow C API.
//!
//! - `tf/`: safe wrappers over the TF C API (all TF FFI).
//! - `js/`: raw N-API for the hot paths (all N-API FFI).
//! - `env_state`: per-env state, in parts borrowed apart; `tensor_table`, `op_cache`: what the
//!   op runtime (`ops::Runtime`) holds.
//! - `kernels`: CPU kernels this package adds to TF (ops TF runs slowly at tfjs sizes).
//! - `graphs/`: graphs of prepared ops run as one session call: deferred runs' and whole calls'.
//! - `ops/`: running op calls, the one path from `api/` to TF: checked prepared ops, each run
//!   eagerly, deferred into a graph run (`ops::deferred`), or queued on the executor.
//! - `executor`: graph runs on a native thread while JS goes on, as pending tensors.
//! - `allocator`: glibc gives large blocks back when freed (bounded RSS on every machine).
//! - `sharing`: JS memory ↔ TF memory without copies; `release`: returning JS memory from TF threads.
//! - `api/`: the exported functions.
#![deny(clippy::all)]
// Unit tests do not register the N-API entry points, so what only they reach looks unused.
#![cfg_attr(test, allow(dead_code))]

mod allocator;
mod api;
mod env_state;
mod error;
mod executor;
mod graphs;
mod js;
mod kernels;
mod op_cache;
mod ops;
mod release;
mod saved_model;
mod sharing;
mod tensor_table;
mod tf;
