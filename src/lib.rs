//! tfjs-node-rs: TensorFlow for Node.js, an N-API addon over the TensorFlow C API.
//!
//! Layers, each using only those below it:
//! - `api/`: the exported functions: they convert arguments and results, and call the layers
//!   below through `env_state` (the per-env state, in parts borrowed apart).
//! - `ops/`: the op runtime (`ops::Runtime`, its parts private), the one path from `api/` to
//!   TF: checked prepared ops, each run eagerly, deferred into a graph run, or queued on the
//!   executor; call graphs, SavedModel runs, tensors, jobs and the context's changes.
//! - `op_cache`: eager op objects and op definitions' checks, reused; `sharing`: JS memory ↔ TF
//!   memory without copies, and the counts of both.
//! - `tensor_table`: the tensors JS holds ids for; `graphs/`: graphs of prepared ops run as one
//!   session call (deferred runs' and whole calls'), built from `graphs::nodes`.
//! - `executor`: jobs on a native thread while JS goes on, their outputs pending tensors;
//!   `release`: returning JS memory from TF threads.
//! - `op_plan/`: op calls before they run (`PreparedOp`: name, attrs, checked signature; the
//!   table of op properties); `tensor_spec`: a tensor's dtype and dims and what they count;
//!   `kernels/`: CPU kernels this package adds to TF; `js/`: raw N-API for the hot paths (all
//!   N-API FFI); `saved_model`: loaded SavedModel sessions.
//! - `tf/`: safe wrappers over the TF C API (all TF FFI); `allocator`: glibc gives large
//!   blocks back when freed (bounded RSS on every machine); `error`.
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
mod library_pages;
mod op_cache;
mod op_plan;
mod ops;
mod release;
mod saved_model;
mod sharing;
mod tensor_spec;
mod tensor_table;
mod tf;
#[cfg(windows)]
mod win32;
