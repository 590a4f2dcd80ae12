//! Op definitions (TF's `OpDef`): which inputs an op takes and which attrs it needs, read from
//! TF's op registry, so a call can be checked before TF sees it.
//!
//! TF hands definitions out only as serialized `OpDef` / `OpList` protobufs. The few fields the
//! checks need are decoded here by hand (a wire-format reader of ~40 lines) instead of adding
//! protobuf code generation and TF's `.proto` files to the build for them.

use std::ffi::CStr;

use tensorflow_sys as sys;

use super::graph::Graph;
use super::proto::{text, Buffer, Reader, Value};
use super::status::Status;
use crate::error::{Error, Result};

/// One input or output of an op: a single tensor or a list, whose dtype is fixed or an attr.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ArgDef {
    pub name: String,
    /// A fixed dtype (TF's enum value), or 0 when `type_attr` / `type_list_attr` decides it.
    pub dtype: i32,
    pub type_attr: String,
    /// The int attr holding the length of a list of one dtype.
    pub number_attr: String,
    /// The list(type) attr holding one dtype per list element.
    pub type_list_attr: String,
}

impl ArgDef {
    pub fn is_list(&self) -> bool {
        !self.number_attr.is_empty() || !self.type_list_attr.is_empty()
    }
}

/// What an attr's default tells the checks.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrDefault {
    Int(i64),
    /// A list default, by its length.
    List(usize),
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AttrDef {
    pub name: String,
    /// TF's spelling: `int`, `list(type)`, `string`, ...
    pub kind: String,
    pub default: Option<AttrDefault>,
    /// For ints the least value, for lists the least length.
    pub minimum: Option<i64>,
    /// The allowed values of a string attr (`padding`) or a type attr (TF's enum values).
    pub allowed_strings: Vec<Vec<u8>>,
    pub allowed_types: Vec<i32>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct OpDef {
    pub name: String,
    pub inputs: Vec<ArgDef>,
    pub outputs: Vec<ArgDef>,
    pub attrs: Vec<AttrDef>,
    pub is_stateful: bool,
}

impl OpDef {
    /// The registered definition of op `name` (TF's own ops and those this package adds).
    pub fn lookup(name: &CStr, status: &Status) -> Result<OpDef> {
        let graph = Graph::new()?;
        let buffer = Buffer::new()?;
        // SAFETY: graph, name, buffer and status are live; TF fills the buffer it is given.
        unsafe { sys::TF_GraphGetOpDef(graph.raw(), name.as_ptr(), buffer.0, status.raw()) };
        status.check()?;
        decode_op_def(buffer.bytes())
    }

    pub fn attr(&self, name: &[u8]) -> Option<&AttrDef> {
        self.attrs.iter().find(|a| a.name.as_bytes() == name)
    }
}

/// The names of every registered op.
pub fn op_names() -> Result<Vec<String>> {
    // SAFETY: no preconditions; the buffer is TF's and freed by `Buffer`'s drop.
    let buffer = Buffer(unsafe { sys::TF_GetAllOpList() });
    if buffer.0.is_null() {
        return Err(Error::Invalid("TF_GetAllOpList returned no list".into()));
    }
    names_in_op_list(buffer.bytes())
}

/// Loads the op library at `path` (`TF_LoadLibrary`: its ops and kernels join TF's registries,
/// for every context and graph of the process) and returns the names of the ops it defines.
/// The library stays loaded for the life of the process.
pub fn load_op_library(path: &CStr, status: &Status) -> Result<Vec<String>> {
    // SAFETY: `path` is a NUL-terminated string read during the call.
    let library = unsafe { sys::TF_LoadLibrary(path.as_ptr(), status.raw()) };
    status.check()?;
    if library.is_null() {
        return Err(Error::Invalid("TF_LoadLibrary returned no library".into()));
    }
    // SAFETY: the handle is live until deleted below; the op list's bytes belong to it and are
    // parsed before then. Deleting the handle leaves the library loaded.
    unsafe {
        let list = sys::TF_GetOpList(library);
        let bytes = if list.data.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(list.data.cast::<u8>(), list.length)
        };
        let names = names_in_op_list(bytes);
        sys::TF_DeleteLibraryHandle(library);
        names
    }
}

/// The op names of a serialized `OpList`.
fn names_in_op_list(bytes: &[u8]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let mut list = Reader(bytes);
    while let Some((field, value)) = list.next()? {
        if let (1, Value::Bytes(op)) = (field, value) {
            let mut op = Reader(op);
            while let Some((field, value)) = op.next()? {
                if let (1, Value::Bytes(name)) = (field, value) {
                    names.push(String::from_utf8_lossy(name).into_owned());
                }
            }
        }
    }
    Ok(names)
}

// Field numbers below are those of tensorflow/core/framework/op_def.proto and attr_value.proto.

fn decode_op_def(bytes: &[u8]) -> Result<OpDef> {
    let mut def = OpDef::default();
    let mut r = Reader(bytes);
    while let Some((field, value)) = r.next()? {
        match (field, value) {
            (1, Value::Bytes(b)) => def.name = text(b),
            (2, Value::Bytes(b)) => def.inputs.push(decode_arg(b)?),
            (3, Value::Bytes(b)) => def.outputs.push(decode_arg(b)?),
            (4, Value::Bytes(b)) => def.attrs.push(decode_attr(b)?),
            (17, Value::Varint(v)) => def.is_stateful = v != 0,
            _ => {}
        }
    }
    Ok(def)
}

fn decode_arg(bytes: &[u8]) -> Result<ArgDef> {
    let mut arg = ArgDef::default();
    let mut r = Reader(bytes);
    while let Some((field, value)) = r.next()? {
        match (field, value) {
            (1, Value::Bytes(b)) => arg.name = text(b),
            (3, Value::Varint(v)) => arg.dtype = v as i32,
            (4, Value::Bytes(b)) => arg.type_attr = text(b),
            (5, Value::Bytes(b)) => arg.number_attr = text(b),
            (6, Value::Bytes(b)) => arg.type_list_attr = text(b),
            _ => {}
        }
    }
    Ok(arg)
}

fn decode_attr(bytes: &[u8]) -> Result<AttrDef> {
    let mut attr = AttrDef {
        name: String::new(),
        kind: String::new(),
        default: None,
        minimum: None,
        allowed_strings: Vec::new(),
        allowed_types: Vec::new(),
    };
    let mut has_minimum = false;
    let mut minimum = 0;
    let mut r = Reader(bytes);
    while let Some((field, value)) = r.next()? {
        match (field, value) {
            (1, Value::Bytes(b)) => attr.name = text(b),
            (2, Value::Bytes(b)) => attr.kind = text(b),
            (3, Value::Bytes(b)) => attr.default = Some(decode_default(b)?),
            (5, Value::Varint(v)) => has_minimum = v != 0,
            (6, Value::Varint(v)) => minimum = v as i64,
            (7, Value::Bytes(b)) => decode_allowed(b, &mut attr)?,
            _ => {}
        }
    }
    attr.minimum = has_minimum.then_some(minimum);
    Ok(attr)
}

/// An `AttrValue` default: its int, or its list's length.
fn decode_default(bytes: &[u8]) -> Result<AttrDefault> {
    let mut r = Reader(bytes);
    let mut default = AttrDefault::Other;
    while let Some((field, value)) = r.next()? {
        match (field, value) {
            (1, Value::Bytes(list)) => default = AttrDefault::List(list_length(list)?),
            (3, Value::Varint(v)) => default = AttrDefault::Int(v as i64),
            _ => {}
        }
    }
    Ok(default)
}

/// The number of items in a `ListValue` (only one of its repeated fields is ever set).
fn list_length(bytes: &[u8]) -> Result<usize> {
    let mut r = Reader(bytes);
    let mut count = 0;
    while let Some((field, value)) = r.next()? {
        count += match (field, value) {
            // Packed ints, bools and dtypes: one varint each.
            (3 | 5 | 6, Value::Bytes(packed)) => {
                let mut items = Reader(packed);
                let mut n = 0;
                while !items.0.is_empty() {
                    items.varint()?;
                    n += 1;
                }
                n
            }
            // Packed floats: four bytes each.
            (4, Value::Bytes(packed)) => packed.len() / 4,
            _ => 1,
        };
    }
    Ok(count)
}

/// `allowed_values`: an `AttrValue` whose list holds the allowed strings or dtypes.
fn decode_allowed(bytes: &[u8], attr: &mut AttrDef) -> Result<()> {
    let mut r = Reader(bytes);
    while let Some((field, value)) = r.next()? {
        let (1, Value::Bytes(list)) = (field, value) else {
            continue;
        };
        let mut list = Reader(list);
        while let Some((field, value)) = list.next()? {
            match (field, value) {
                (2, Value::Bytes(s)) => attr.allowed_strings.push(s.to_vec()),
                (6, Value::Varint(v)) => attr.allowed_types.push(v as i32),
                (6, Value::Bytes(packed)) => {
                    let mut items = Reader(packed);
                    while !items.0.is_empty() {
                        attr.allowed_types.push(items.varint()? as i32);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_definition_of_add_n() {
        let def = OpDef::lookup(c"AddN", &Status::new()).expect("AddN is registered");
        assert_eq!(def.name, "AddN");
        assert_eq!(def.inputs.len(), 1);
        assert_eq!(def.inputs[0].number_attr, "N");
        assert_eq!(def.inputs[0].type_attr, "T");
        let n = def.attr(b"N").expect("N");
        assert_eq!(n.kind, "int");
        assert_eq!(n.minimum, Some(1));
        assert_eq!(n.default, None);
        assert!(!def.is_stateful);
    }

    #[test]
    fn reads_defaults_and_allowed_values() {
        let def = OpDef::lookup(c"Conv2D", &Status::new()).expect("Conv2D is registered");
        let padding = def.attr(b"padding").expect("padding");
        assert_eq!(padding.default, None);
        assert!(padding.allowed_strings.contains(&b"SAME".to_vec()));
        let dilations = def.attr(b"dilations").expect("dilations");
        assert_eq!(dilations.default, Some(AttrDefault::List(4)));
        let t = def.attr(b"T").expect("T");
        assert!(t.allowed_types.contains(&(sys::TF_FLOAT as i32)));
        let identity_n = OpDef::lookup(c"IdentityN", &Status::new()).expect("IdentityN");
        assert_eq!(identity_n.inputs[0].type_list_attr, "T");
        assert_eq!(identity_n.attr(b"T").and_then(|a| a.minimum), Some(1));
    }

    #[test]
    fn an_unknown_op_is_not_found() {
        match OpDef::lookup(c"NoSuchOp", &Status::new()) {
            Err(Error::Tf { code, .. }) => assert_eq!(code, "NOT_FOUND"),
            other => panic!("expected NOT_FOUND, got {other:?}"),
        }
    }

    #[test]
    fn lists_every_op() {
        let names = op_names().expect("op list");
        assert!(names.len() > 1000);
        assert!(names.iter().any(|n| n == "AddV2"));
    }
}
