//! A recorded call as the graph of a TF1-style SavedModel (`tf.node.saveSavedModel`): the
//! call's inputs are placeholders, the variables it reads are resource variables (a
//! `VarHandleOp` read by a `ReadVariableOp`), its other outside tensors are constants, and its
//! ops are nodes as they ran, without the fusions (their ops exist in this process only). Beside
//! them, the nodes TF's `Saver` would add, which TF's loaders run to restore the variables from
//! the checkpoint (`SaveV2` / `RestoreV2` of every variable), and each variable's initializer,
//! which a `VariableDef` must name.

use std::ffi::{CStr, CString};

use super::nodes::{self, check_ref, Ref, Target};
use crate::error::{Error, Result};
use crate::op_plan::PreparedOp;
use crate::tensor_spec::TensorSpec;
use crate::tf::dtype::{DType, DTYPES};
use crate::tf::graph::{node_name, Graph, NodeOutput};
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;
use crate::tf::tensor::Tensor;

use super::calls::RecordedOp;

/// The saver's nodes that a `SaverDef` names: the checkpoint prefix fed, the tensor that
/// saving computes, and the op that restores every variable.
const SAVER_PREFIX: &CStr = c"save/Const";
const SAVER_SAVED: &CStr = c"save/Identity";
const SAVER_RESTORE_ALL: &CStr = c"save/restore_all";

/// The names a `SaverDef` gives the saver's nodes (`SAVER_*`).
pub struct SaverNames {
    pub filename_tensor: String,
    pub save_tensor: String,
    pub restore_op: String,
}

/// What the exported graph takes from outside, in the order `Ref::Feed` counts them.
pub enum ExportFeed {
    /// A signature input: a placeholder of this name, dtype and dims (-1: any size).
    Input { name: CString, spec: TensorSpec },
    /// A variable of this name (in the graph and in the checkpoint), dtype and dims.
    Variable { name: CString, spec: TensorSpec },
    /// A tensor the graph holds as a constant.
    Constant(TensorHandle),
}

/// The nodes of one variable, by the names a `VariableDef` gives them.
pub struct VariableNodes {
    pub variable: String,
    pub initializer: String,
    pub snapshot: String,
    pub initial_value: String,
}

pub struct ExportedGraph {
    pub graph_def: Vec<u8>,
    pub variables: Vec<VariableNodes>,
    /// None when the graph has no variables (and so nothing to restore).
    pub saver: Option<SaverNames>,
}

/// The suffix of a variable's read node, as TF names it.
const READ: &str = "/Read/ReadVariableOp";

/// A variable's handle and its read, which the call's ops and the saver take.
struct VariableOutputs<'a> {
    name: &'a CString,
    spec: &'a TensorSpec,
    handle: NodeOutput,
    read: NodeOutput,
}

/// Builds the graph of `ops` (in the order they ran, refs counting `feeds`), with an `Identity`
/// named as each of `outputs` of the ref it names, the variables' initializers and the saver.
pub fn export_graph(
    plans: &[PreparedOp],
    ops: &[RecordedOp],
    feeds: &[ExportFeed],
    outputs: &[(CString, Ref)],
    status: &Status,
) -> Result<ExportedGraph> {
    let graph = Graph::new()?;
    let mut feed_nodes = Vec::with_capacity(feeds.len());
    let mut variables = Vec::new();
    for (k, feed) in feeds.iter().enumerate() {
        let node = match feed {
            ExportFeed::Input { name, spec } => {
                graph.placeholder(name, DTYPES[spec.dtype], &spec.dims, status)?
            }
            ExportFeed::Variable { name, spec } => {
                let (handle, read) = add_variable(&graph, name, spec, status)?;
                variables.push(VariableOutputs {
                    name,
                    spec,
                    handle,
                    read,
                });
                read
            }
            ExportFeed::Constant(handle) => {
                let dtype = TensorSpec::of(handle, status)?.dtype;
                let tensor = handle.resolve(status)?;
                graph.constant(&node_name("const", k)?, DTYPES[dtype], &tensor, status)?
            }
        };
        feed_nodes.push(node);
    }
    let steps = ops
        .iter()
        .enumerate()
        .map(|(index, op)| op.step(plans, index, feeds.len()).map(Some))
        .collect::<Result<Vec<_>>>()?
        .into_iter();
    let (built, _) = nodes::add_steps(&graph, feed_nodes, steps, Target::TensorFlow, status)?;
    for (name, fetch) in outputs {
        check_ref(*fetch, ops.len(), feeds.len())?;
        let output = built.output_of(*fetch)?;
        identity(&graph, name, output, status)?;
    }
    let nodes = variables
        .iter()
        .map(|v| add_initializer(&graph, v, status))
        .collect::<Result<Vec<_>>>()?;
    let saver = if variables.is_empty() {
        None
    } else {
        add_saver(&graph, &variables, status)?;
        Some(SaverNames {
            filename_tensor: tensor_name(SAVER_PREFIX),
            save_tensor: tensor_name(SAVER_SAVED),
            restore_op: SAVER_RESTORE_ALL.to_string_lossy().into_owned(),
        })
    };
    Ok(ExportedGraph {
        graph_def: graph.to_graph_def(status)?,
        variables: nodes,
        saver,
    })
}

/// The name of a node's first output.
fn tensor_name(node: &CStr) -> String {
    format!("{}:0", node.to_string_lossy())
}

fn named(name: &CString, suffix: &str) -> Result<CString> {
    CString::new(format!("{}{suffix}", name.to_string_lossy()))
        .map_err(|e| Error::Invalid(e.to_string()))
}

fn dtype_of(output: NodeOutput) -> Result<DType> {
    output
        .dtype()
        .ok_or_else(|| Error::Invalid("an output of the call has a dtype TF.js lacks".into()))
}

fn identity(
    graph: &Graph,
    name: &CString,
    input: NodeOutput,
    status: &Status,
) -> Result<NodeOutput> {
    let mut node = graph.node(c"Identity", name)?;
    node.set_type(c"T", dtype_of(input)?.tf);
    node.add_input(input);
    node.finish(status)
}

/// A resource variable's handle (`name`, shared by that name) and its read.
fn add_variable(
    graph: &Graph,
    name: &CString,
    spec: &TensorSpec,
    status: &Status,
) -> Result<(NodeOutput, NodeOutput)> {
    let dtype = DTYPES[spec.dtype].tf;
    let mut node = graph.node(c"VarHandleOp", name)?;
    node.set_type(c"dtype", dtype);
    node.set_shape(c"shape", Some(&spec.dims));
    node.set_string(c"shared_name", name.as_bytes());
    node.set_string(c"container", b"");
    let handle = node.finish(status)?;
    let mut read = graph.node(c"ReadVariableOp", &named(name, READ)?)?;
    read.set_type(c"dtype", dtype);
    read.add_input(handle);
    Ok((handle, read.finish(status)?))
}

fn assign(
    graph: &Graph,
    name: &CString,
    handle: NodeOutput,
    value: NodeOutput,
    dtype: DType,
    status: &Status,
) -> Result<NodeOutput> {
    let mut node = graph.node(c"AssignVariableOp", name)?;
    node.set_type(c"dtype", dtype.tf);
    node.add_input(handle);
    node.add_input(value);
    node.finish(status)
}

/// The variable's initializer: an assignment of zeros (a `Fill`, so that the graph holds no
/// copy of the weights, which the checkpoint has). TF's loaders restore instead of
/// initializing; the `VariableDef` names it all the same.
fn add_initializer(graph: &Graph, v: &VariableOutputs, status: &Status) -> Result<VariableNodes> {
    let dtype = DTYPES[v.spec.dtype];
    let element = dtype.element_bytes().ok_or_else(|| {
        Error::Invalid(format!(
            "variable '{}' of dtype {} cannot be exported",
            v.name.to_string_lossy(),
            dtype.name
        ))
    })?;
    let dims = v.spec.dims.iter().map(|&d| d as i32).collect::<Vec<_>>();
    let dims_bytes: Vec<u8> = dims.iter().flat_map(|d| d.to_ne_bytes()).collect();
    let int32 = DType::from_name("int32").ok_or_else(|| Error::Invalid("no int32".into()))?;
    let shape = graph.constant(
        &named(v.name, "/Initializer/zeros/shape")?,
        int32,
        &Tensor::copy_of(int32, &[dims.len() as i64], &dims_bytes)?,
        status,
    )?;
    let zero = graph.constant(
        &named(v.name, "/Initializer/zeros/Const")?,
        dtype,
        &Tensor::copy_of(dtype, &[], &vec![0u8; element])?,
        status,
    )?;
    let zeros_name = named(v.name, "/Initializer/zeros")?;
    let mut fill = graph.node(c"Fill", &zeros_name)?;
    fill.set_type(c"T", dtype.tf);
    fill.set_type(c"index_type", int32.tf);
    fill.add_input(shape);
    fill.add_input(zero);
    let zeros = fill.finish(status)?;
    let initializer = named(v.name, "/Assign")?;
    assign(graph, &initializer, v.handle, zeros, dtype, status)?;
    Ok(VariableNodes {
        variable: tensor_name(v.name),
        initializer: initializer.to_string_lossy().into_owned(),
        snapshot: tensor_name(&named(v.name, READ)?),
        initial_value: tensor_name(&zeros_name),
    })
}

/// The saver's nodes (`SAVER_*`): `SaveV2` of every variable's read under its name, into the
/// prefix fed (by default "model"), and `RestoreV2` of them all, each assigned its variable.
fn add_saver(graph: &Graph, variables: &[VariableOutputs], status: &Status) -> Result<()> {
    let string = DType::from_name("string").ok_or_else(|| Error::Invalid("no string".into()))?;
    let scalar = |name: &CStr, value: &[u8]| -> Result<NodeOutput> {
        graph.constant(name, string, &Tensor::strings(&[], &[value])?, status)
    };
    let default_prefix = scalar(c"save/filename", b"model")?;
    let mut prefix = graph.node(c"PlaceholderWithDefault", SAVER_PREFIX)?;
    prefix.set_type(c"dtype", string.tf);
    prefix.set_shape(c"shape", Some(&[]));
    prefix.add_input(default_prefix);
    let prefix = prefix.finish(status)?;

    let count = [variables.len() as i64];
    let names: Vec<&[u8]> = variables.iter().map(|v| v.name.as_bytes()).collect();
    let whole: Vec<&[u8]> = variables.iter().map(|_| &b""[..]).collect();
    let dtypes: Vec<_> = variables.iter().map(|v| DTYPES[v.spec.dtype].tf).collect();
    let list = |name: &CStr, items: &[&[u8]]| -> Result<NodeOutput> {
        graph.constant(name, string, &Tensor::strings(&count, items)?, status)
    };

    let mut save = graph.node(c"SaveV2", c"save/SaveV2")?;
    save.add_input(prefix);
    save.add_input(list(c"save/SaveV2/tensor_names", &names)?);
    save.add_input(list(c"save/SaveV2/shape_and_slices", &whole)?);
    save.add_input_list(&variables.iter().map(|v| v.read).collect::<Vec<_>>());
    save.set_type_list(c"dtypes", &dtypes);
    let save = save.finish(status)?;
    let mut saved = graph.node(c"Identity", SAVER_SAVED)?;
    saved.set_type(c"T", string.tf);
    saved.add_input(prefix);
    saved.add_control_input(save);
    saved.finish(status)?;

    let mut restore = graph.node(c"RestoreV2", c"save/RestoreV2")?;
    restore.add_input(prefix);
    restore.add_input(list(c"save/RestoreV2/tensor_names", &names)?);
    restore.add_input(list(c"save/RestoreV2/shape_and_slices", &whole)?);
    restore.set_type_list(c"dtypes", &dtypes);
    let restore = restore.finish(status)?;
    let mut assigns = Vec::with_capacity(variables.len());
    for (k, v) in variables.iter().enumerate() {
        let value = restore
            .at(k)
            .ok_or_else(|| Error::Invalid(format!("RestoreV2 has no output {k}")))?;
        let restored = identity(graph, &node_name("save/Identity_", k + 1)?, value, status)?;
        let name = node_name("save/AssignVariableOp_", k + 1)?;
        let dtype = DTYPES[v.spec.dtype];
        assigns.push(assign(graph, &name, v.handle, restored, dtype, status)?);
    }
    let mut all = graph.node(c"NoOp", SAVER_RESTORE_ALL)?;
    for node in assigns {
        all.add_control_input(node);
    }
    all.finish(status)?;
    Ok(())
}
