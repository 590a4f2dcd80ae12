//! The one-time set-up of a TF kernel the backend uses, done off the JS thread before a call
//! needs it. Small float products run as `SparseMatMul` (Eigen's contraction; see
//! `EIGEN_MATMUL_MAX_WORK` in js/kernels/families/linalg.js), whose first run in a process
//! generates its GEMM code: 30-40 ms on the first product of a program, where tfjs-node's
//! `BatchMatMulV2` (oneDNN's matmul primitive) takes 5-8. The code generation is process-wide
//! (TF guards it with a `pthread_once`), so one product on any thread sets it up for all.

use super::dtype::DType;
use super::session::Session;
use super::status::Status;
use super::tensor::Tensor;
use crate::error::{Error, Result};

/// Runs a 2x2 `SparseMatMul` in a graph of its own on the calling thread.
pub fn set_up_small_products(status: &Status) -> Result<()> {
    let session = Session::in_caller_thread(status)?;
    let graph = session.graph();
    let float =
        DType::from_name("float32").ok_or_else(|| Error::Invalid("no float32 dtype".into()))?;
    // 2x2: Eigen computes a 1x1 product itself, without the generated code.
    let ones: Vec<u8> = [1f32; 4].iter().flat_map(|x| x.to_ne_bytes()).collect();
    let ones = Tensor::copy_of(float, &[2, 2], &ones)?;
    let value = graph.constant(c"ones", float, &ones, status)?;
    let mut product = graph.node(c"SparseMatMul", c"product")?;
    product.add_input(value);
    product.add_input(value);
    product.set_type(c"Ta", float.tf);
    product.set_type(c"Tb", float.tf);
    let product = product.finish(status)?;
    session.run(&[], &[session.port_of(product)], status)?;
    Ok(())
}
