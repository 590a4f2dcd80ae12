//! Every op call is checked against the op's definition before TF sees it: TF trusts its callers
//! here and, given too many inputs, a required attr left out or a list attr of the wrong length,
//! crashes or aborts the process instead of failing. The checks are done once per prepared op
//! (and once per `executeOp` call, which reads its attrs anyway); what is left per call is one
//! input count and, for a few ops, input ranks.

use std::ffi::CString;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::tf::handle::TensorHandle;
use crate::tf::op_def::{ArgDef, AttrDef, AttrDefault, OpDef};
use crate::tf::status::Status;

use super::attrs::{given, AttrValue, OwnedAttr};

const STAGED: &str = "blocks until another op stages data";
const WORD2VEC: &str = "was taken out of TF's ops (GraphDef version 19) and crashes on some inputs";
const SCOPED: &str = "belongs to Grappler's scoped allocator, which eager calls lack, and crashes";
const RECEIVED: &str = "blocks until a matching send, which eager calls never make";

/// Ops that end the process, crash it, or block it for good: a call returns only when another
/// op, which cannot run while this call waits, supplies data.
const REFUSED: &[(&str, &str)] = &[
    ("Abort", "ends the process"),
    (
        "DumpTensor",
        "belongs to TF's debugger and crashes when it cannot write its dump",
    ),
    ("Skipgram", WORD2VEC),
    ("NegTrain", WORD2VEC),
    (
        "RecordInput",
        "blocks until files matching its pattern yield records",
    ),
    ("Unstage", STAGED),
    ("StagePeek", STAGED),
    ("MapPeek", STAGED),
    ("MapUnstage", STAGED),
    ("MapUnstageNoKey", STAGED),
    ("OrderedMapPeek", STAGED),
    ("OrderedMapUnstage", STAGED),
    ("OrderedMapUnstageNoKey", STAGED),
    ("_ScopedAllocator", SCOPED),
    ("_ScopedAllocatorConcat", SCOPED),
    ("_ScopedAllocatorSplit", SCOPED),
    ("_Recv", RECEIVED),
    ("_HostRecv", RECEIVED),
];

/// What TF's kernels CHECK (and abort on) but the op definitions cannot say. Rules that read
/// inputs cost per call, so hot ops get the cheap ones (ranks) and only ops rarely called run
/// TF's shape function.
enum KernelRule {
    /// List attr `attr`, when given, has `len` items.
    ListLength { attr: &'static str, len: usize },
    /// Int attr `attr`, when given, is at least `min`.
    AtLeast { attr: &'static str, min: i64 },
    /// Int attr `attr`, when given, is at most `max`; `why` says what a larger one does.
    AtMost {
        attr: &'static str,
        max: i64,
        why: &'static str,
    },
    /// The ranks of the first inputs, in order (`ANY_RANK` for an input left unchecked).
    Ranks(&'static [i32]),
    /// The last inputs are scalars (after lists whose lengths the attrs decide).
    TrailingScalars(usize),
    /// The values of integer input `index` are all above 0.
    PositiveValues { index: usize },
    /// Float input `index` holds no NaN.
    NoNaN { index: usize },
    /// The op's shape function (TF's own rank and dim checks) accepts the inputs' shapes.
    ShapeFunction,
}

use KernelRule::*;

const ANY_RANK: i32 = -1;

/// 2-D convolutions and their backprops: the list attrs, and the ranks of the inputs.
macro_rules! conv2d {
    ($($rank:expr),*) => {
        &[
            ListLength { attr: "strides", len: 4 },
            ListLength { attr: "dilations", len: 4 },
            Ranks(&[$($rank),*]),
        ]
    };
}
/// The unigram candidate samplers build a distribution of `range_max` entries when the kernel
/// is made: 2^31 - 1 of them ran for minutes (found by the fuzzer), and past memory TF aborts
/// on the allocation. 2^27 entries take about a second and a few GB at most.
const UNIGRAM_SAMPLER: &[KernelRule] = &[AtMost {
    attr: "range_max",
    max: 1 << 27,
    why: "the sampler builds a distribution of range_max entries when it is made",
}];
const STRIDES_5: &[KernelRule] = &[
    ListLength {
        attr: "strides",
        len: 5,
    },
    ListLength {
        attr: "dilations",
        len: 5,
    },
];
/// `axis` is -1 (the whole tensor) or a dimension (TF checks only its upper bound), and the
/// kernels CHECK the sizes of the range inputs that the shape function checks.
const QUANTIZE_AXIS: &[KernelRule] = &[
    AtLeast {
        attr: "axis",
        min: -1,
    },
    ShapeFunction,
];
/// Block LSTM cells read dims of x, cs_prev, h_prev, w (matrices) before checking them; the
/// peephole weights and the bias are vectors, and the gradient's other inputs matrices.
const LSTM_CELL: &[KernelRule] = &[Ranks(&[2, 2, 2, 2, 1, 1, 1, 1])];
const LSTM_CELL_GRAD: &[KernelRule] = &[Ranks(&[2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2])];
/// The FFT length of real FFTs (input 1): a zero length fails an assertion in the FFT library.
const FFT_LENGTH: &[KernelRule] = &[PositiveValues { index: 1 }];
/// Sampling a Poisson distribution of rate NaN never ends.
const POISSON_RATE: &[KernelRule] = &[NoNaN { index: 1 }];
const SHAPE_FUNCTION: &[KernelRule] = &[ShapeFunction];
const FUSED_CONV2D: &[KernelRule] = &[
    ListLength {
        attr: "strides",
        len: 4,
    },
    ShapeFunction,
];

const KERNEL_RULES: &[(&str, &[KernelRule])] = &[
    ("Conv2D", conv2d!(4, 4)),
    ("Conv2DBackpropFilter", conv2d!(4, ANY_RANK, 4)),
    ("Conv2DBackpropFilterV2", conv2d!(4, 4, 4)),
    ("Conv2DBackpropInput", conv2d!(ANY_RANK, 4, 4)),
    ("Conv2DBackpropInputV2", conv2d!(4, 4, 4)),
    (
        "DepthwiseConv2dNativeBackpropFilter",
        conv2d!(4, ANY_RANK, 4),
    ),
    (
        "DepthwiseConv2dNativeBackpropInput",
        conv2d!(ANY_RANK, 4, 4),
    ),
    (
        "Conv3D",
        &[
            ListLength {
                attr: "strides",
                len: 5,
            },
            Ranks(&[5, 5]),
        ],
    ),
    ("ScatterNd", SHAPE_FUNCTION),
    ("Conv3DBackpropFilterV2", STRIDES_5),
    ("Conv3DBackpropInputV2", STRIDES_5),
    ("QuantizeAndDequantizeV2", QUANTIZE_AXIS),
    ("QuantizeAndDequantizeV3", QUANTIZE_AXIS),
    ("QuantizeAndDequantizeV4", QUANTIZE_AXIS),
    ("QuantizeAndDequantizeV4Grad", QUANTIZE_AXIS),
    (
        "CustomAggregator",
        &[AtLeast {
            attr: "num_bins",
            min: 0,
        }],
    ),
    (
        "AudioSpectrogram",
        &[
            AtLeast {
                attr: "window_size",
                min: 2,
            },
            AtLeast {
                attr: "stride",
                min: 1,
            },
        ],
    ),
    ("FixedUnigramCandidateSampler", UNIGRAM_SAMPLER),
    ("LearnedUnigramCandidateSampler", UNIGRAM_SAMPLER),
    ("ThreadUnsafeUnigramCandidateSampler", UNIGRAM_SAMPLER),
    ("LSTMBlockCell", LSTM_CELL),
    ("LSTMBlockCellGrad", LSTM_CELL_GRAD),
    ("RFFT", FFT_LENGTH),
    ("RFFT2D", FFT_LENGTH),
    ("RFFT3D", FFT_LENGTH),
    ("IRFFT", FFT_LENGTH),
    ("IRFFT2D", FFT_LENGTH),
    ("IRFFT3D", FFT_LENGTH),
    ("Conv", SHAPE_FUNCTION),
    ("FusedPadConv2D", FUSED_CONV2D),
    ("FusedResizeAndPadConv2D", FUSED_CONV2D),
    ("BlockLSTM", SHAPE_FUNCTION),
    ("BlockLSTMV2", SHAPE_FUNCTION),
    ("BlockLSTMGrad", SHAPE_FUNCTION),
    ("BlockLSTMGradV2", SHAPE_FUNCTION),
    ("GRUBlockCell", SHAPE_FUNCTION),
    ("GRUBlockCellGrad", SHAPE_FUNCTION),
    ("FakeQuantWithMinMaxVarsPerChannel", SHAPE_FUNCTION),
    ("FakeQuantWithMinMaxVarsPerChannelGradient", SHAPE_FUNCTION),
    ("RandomPoisson", POISSON_RATE),
    ("RandomPoissonV2", POISSON_RATE),
    ("StatelessRandomPoisson", &[NoNaN { index: 2 }]),
    ("SparseCrossV2", &[TrailingScalars(1)]),
    ("SparseCrossHashed", &[TrailingScalars(3)]),
    ("TensorScatterUpdate", SHAPE_FUNCTION),
    ("TensorScatterAdd", SHAPE_FUNCTION),
    ("TensorScatterSub", SHAPE_FUNCTION),
    ("TensorScatterMax", SHAPE_FUNCTION),
    ("TensorScatterMin", SHAPE_FUNCTION),
];

/// An op's definition with what the checks derive from it, made once per op name (the op
/// cache keeps it), so a call does no lookups by name.
pub struct OpChecks {
    pub def: OpDef,
    refused: Option<&'static str>,
    rules: &'static [KernelRule],
    /// Attrs without a default that TF does not infer from the inputs.
    required: Vec<usize>,
    /// The type attrs eager TF infers when they are not given, each with the input it takes
    /// the dtype of: a single-tensor input before the first list (TF stops inferring at a list
    /// input, as it cannot tell where a list added tensor by tensor ends). Before that list
    /// every input argument is one tensor, so an argument's index is its input's.
    inferred_types: Vec<(CString, usize)>,
}

impl OpChecks {
    pub fn new(def: OpDef) -> OpChecks {
        let refused = REFUSED
            .iter()
            .find(|(op, _)| *op == def.name)
            .map(|(_, why)| *why);
        let rules = KERNEL_RULES
            .iter()
            .find(|(op, _)| *op == def.name)
            .map_or(&[][..], |(_, rules)| rules);
        let inferred_types: Vec<(CString, usize)> = def
            .attrs
            .iter()
            .filter(|attr| attr.kind == "type")
            .filter_map(|attr| {
                let input = def
                    .inputs
                    .iter()
                    .take_while(|arg| !arg.is_list())
                    .position(|arg| arg.type_attr == attr.name)?;
                Some((CString::new(attr.name.as_str()).ok()?, input))
            })
            .collect();
        let required = (0..def.attrs.len())
            .filter(|&i| {
                def.attrs[i].default.is_none()
                    && !inferred_types
                        .iter()
                        .any(|(name, _)| name.to_bytes() == def.attrs[i].name.as_bytes())
            })
            .collect();
        OpChecks {
            def,
            refused,
            rules,
            required,
            inferred_types,
        }
    }
}

/// What a call of an op with given attrs must bring: checked once, kept by prepared ops.
pub struct Signature {
    checks: Rc<OpChecks>,
    inputs: usize,
    outputs: usize,
    /// Per input argument of the definition: how many flat inputs it takes, and whether it is
    /// a list (as a graph node adds it: one input, or one list of them).
    input_args: Vec<(usize, bool)>,
}

fn invalid(message: String) -> Error {
    Error::Tf {
        code: "INVALID_ARGUMENT",
        message,
    }
}

/// Checks `attrs` against `def` (refused ops, ranges, allowed values, required attrs, the
/// kernel's own rules) and works out how many inputs a call takes and outputs it makes.
pub fn signature(checks: Rc<OpChecks>, attrs: &[OwnedAttr]) -> Result<Signature> {
    if let Some(why) = checks.refused {
        return Err(Error::Invalid(format!(
            "the op {why}, so the binding does not run it"
        )));
    }
    let def = &checks.def;
    let given = |name: &str| given(attrs, name);
    for attr in attrs {
        if let Some(declared) = def.attr(attr.name.to_bytes()) {
            check_value(declared, &attr.value)?;
        }
    }
    let rules = checks.rules;
    for rule in rules {
        check_rule(rule, &given)?;
    }
    let missing: Vec<&str> = checks
        .required
        .iter()
        .map(|&i| def.attrs[i].name.as_str())
        .filter(|name| given(name).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "missing attrs that have no default: {}",
            quoted(&missing)
        )));
    }
    let count = |args: &[ArgDef]| {
        args.iter().try_fold(0usize, |sum, arg| {
            Ok::<_, Error>(sum.saturating_add(arg_length(def, &given, arg)?))
        })
    };
    let input_args = def
        .inputs
        .iter()
        .map(|arg| Ok((arg_length(def, &given, arg)?, arg.is_list())))
        .collect::<Result<Vec<_>>>()?;
    let inputs = input_args
        .iter()
        .fold(0usize, |sum, &(length, _)| sum.saturating_add(length));
    let outputs = count(&def.outputs)?;
    Ok(Signature {
        checks,
        inputs,
        outputs,
        input_args,
    })
}

impl Signature {
    /// The op's definition.
    pub fn def(&self) -> &OpDef {
        &self.checks.def
    }

    /// The type attrs eager TF infers from an input when they are not given: name and input.
    pub fn inferred_types(&self) -> &[(CString, usize)] {
        &self.checks.inferred_types
    }

    /// The input arguments: `(flat inputs taken, is a list)` each, in the definition's order.
    pub fn input_args(&self) -> &[(usize, bool)] {
        &self.input_args
    }

    /// Output counts are checked before TF runs the op: TF makes room for all of an op's
    /// outputs before it compares their count with the caller's.
    pub fn check_room(&self, room: usize) -> Result<()> {
        if self.outputs > room {
            return Err(invalid(format!(
                "makes {} outputs with these attrs, more than numOutputs {room}",
                self.outputs
            )));
        }
        Ok(())
    }

    /// Input counts are checked before any input is added: TF reads past the op's definition
    /// when given more.
    pub fn check_count(&self, given: usize) -> Result<()> {
        if given != self.inputs {
            let names: Vec<&str> = self
                .checks
                .def
                .inputs
                .iter()
                .map(|a| a.name.as_str())
                .collect();
            return Err(invalid(format!(
                "takes {} inputs with these attrs (its inputs: {}), given {given}",
                self.inputs,
                names.join(", ")
            )));
        }
        Ok(())
    }

    pub fn check_input(&self, index: usize, input: &TensorHandle, status: &Status) -> Result<()> {
        for rule in self.checks.rules {
            match *rule {
                Ranks(ranks) if ranks.get(index).is_some_and(|&r| r != ANY_RANK) => {
                    let rank = ranks[index];
                    let actual = input.rank(status)?;
                    if actual != rank {
                        return Err(invalid(format!(
                            "input {index} must have rank {rank}, given rank {actual}"
                        )));
                    }
                }
                TrailingScalars(n) if index + n >= self.inputs => {
                    let actual = input.rank(status)?;
                    if actual != 0 {
                        return Err(invalid(format!(
                            "input {index} must be a scalar, given rank {actual}"
                        )));
                    }
                }
                NoNaN { index: i } if i == index => {
                    // Half-float rates are not read (`floats` is `None` for them).
                    let values = match input.dtype() {
                        Ok(dtype) => input.resolve(status)?.floats(dtype),
                        Err(_) => None,
                    };
                    if values.iter().flatten().any(|v| v.is_nan()) {
                        return Err(invalid(format!("input {index} must hold no NaN")));
                    }
                }
                PositiveValues { index: i } if i == index => {
                    // Other dtypes are TF's to refuse.
                    let values = match input.dtype() {
                        Ok(dtype) if dtype.is_integer() => input.resolve(status)?.integers(dtype),
                        _ => None,
                    };
                    if let Some(bad) = values.iter().flatten().find(|&&v| v <= 0) {
                        return Err(invalid(format!(
                            "input {index} must hold values above 0, holds {bad}"
                        )));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// How many outputs the op makes with these attrs.
    pub fn output_count(&self) -> usize {
        self.outputs
    }

    /// Whether building the op as a graph node checks all that a call is checked for here:
    /// no rule but the op's shape function, which graph construction runs.
    pub fn checked_as_node(&self) -> bool {
        self.checks.rules.iter().all(|r| matches!(r, ShapeFunction))
    }

    /// Whether the call must pass the op's shape function (`Op::check_shapes`).
    pub fn wants_shape_function(&self) -> bool {
        self.checks.rules.iter().any(|r| matches!(r, ShapeFunction))
    }
}

/// How many tensors input `arg` takes.
fn arg_length<'a>(
    def: &OpDef,
    given: &impl Fn(&str) -> Option<&'a AttrValue>,
    arg: &ArgDef,
) -> Result<usize> {
    let (attr, length) = if !arg.number_attr.is_empty() {
        let length = match given(&arg.number_attr) {
            Some(AttrValue::Int(n)) => Some(*n),
            _ => match def
                .attr(arg.number_attr.as_bytes())
                .and_then(|a| a.default.as_ref())
            {
                Some(AttrDefault::Int(n)) => Some(*n),
                _ => None,
            },
        };
        (&arg.number_attr, length)
    } else if !arg.type_list_attr.is_empty() {
        let length = match given(&arg.type_list_attr) {
            Some(AttrValue::TypeList(types)) => Some(types.len() as i64),
            _ => match def
                .attr(arg.type_list_attr.as_bytes())
                .and_then(|a| a.default.as_ref())
            {
                Some(AttrDefault::List(n)) => Some(*n as i64),
                _ => None,
            },
        };
        (&arg.type_list_attr, length)
    } else {
        return Ok(1);
    };
    let length = length.ok_or_else(|| invalid(format!("'{}' needs attr '{attr}'", arg.name)))?;
    usize::try_from(length).map_err(|_| {
        invalid(format!(
            "attr '{attr}' is {length}, below 0 (the length of '{}')",
            arg.name
        ))
    })
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A given attr against its definition's minimum and allowed values.
fn check_value(def: &AttrDef, value: &AttrValue) -> Result<()> {
    let name = &def.name;
    if let Some(min) = def.minimum {
        let (actual, what) = match value {
            AttrValue::Int(v) => (*v, "is"),
            _ => match list_length(value) {
                Some(len) => (len as i64, "has length"),
                None => (min, ""),
            },
        };
        if actual < min {
            return Err(invalid(format!(
                "attr '{name}' {what} {actual}, below its minimum {min}"
            )));
        }
    }
    if !def.allowed_strings.is_empty() {
        let strings: &[Vec<u8>] = match value {
            AttrValue::String(s) => std::slice::from_ref(s),
            AttrValue::StringList(list) => list,
            _ => &[],
        };
        if let Some(bad) = strings.iter().find(|s| !def.allowed_strings.contains(s)) {
            let allowed: Vec<String> = def
                .allowed_strings
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect();
            return Err(invalid(format!(
                "attr '{name}' is '{}', not one of {}",
                String::from_utf8_lossy(bad),
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

fn list_length(value: &AttrValue) -> Option<usize> {
    Some(match value {
        AttrValue::StringList(v) => v.len(),
        AttrValue::IntList(v) => v.len(),
        AttrValue::FloatList(v) => v.len(),
        AttrValue::BoolList(v) => v.len(),
        AttrValue::TypeList(v) => v.len(),
        AttrValue::ShapeList(v) => v.len(),
        _ => return None,
    })
}

fn check_rule<'a>(rule: &KernelRule, given: &impl Fn(&str) -> Option<&'a AttrValue>) -> Result<()> {
    match *rule {
        ListLength { attr, len } => match given(attr).and_then(list_length) {
            Some(actual) if actual != len => Err(invalid(format!(
                "attr '{attr}' must have {len} items, given {actual}"
            ))),
            _ => Ok(()),
        },
        AtLeast { attr, min } => match given(attr) {
            Some(AttrValue::Int(v)) if *v < min => Err(invalid(format!(
                "attr '{attr}' must be at least {min}, given {v}"
            ))),
            _ => Ok(()),
        },
        AtMost { attr, max, why } => match given(attr) {
            Some(AttrValue::Int(v)) if *v > max => Err(invalid(format!(
                "attr '{attr}' must be at most {max} ({why}), given {v}"
            ))),
            _ => Ok(()),
        },
        Ranks(_) | TrailingScalars(_) | PositiveValues { .. } | NoNaN { .. } | ShapeFunction => {
            Ok(())
        }
    }
}
