//! The one dtype table: TF enum, the name JS uses, element size, and the typed array that holds it.

use tensorflow_sys as sys;

/// Which JS typed array holds a dtype's elements (N-API's `napi_typedarray_type` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayKind {
    Int8 = 0,
    Uint8 = 1,
    Int16 = 3,
    Uint16 = 4,
    Int32 = 5,
    Uint32 = 6,
    Float32 = 7,
    Float64 = 8,
    BigInt64 = 9,
    BigUint64 = 10,
}

impl ArrayKind {
    pub fn from_napi(kind: i32) -> Option<ArrayKind> {
        use ArrayKind::*;
        Some(match kind {
            0 => Int8,
            1 => Uint8,
            3 => Int16,
            4 => Uint16,
            5 => Int32,
            6 => Uint32,
            7 => Float32,
            8 => Float64,
            9 => BigInt64,
            10 => BigUint64,
            _ => return None,
        })
    }

    pub fn js_name(self) -> &'static str {
        use ArrayKind::*;
        match self {
            Int8 => "Int8Array",
            Uint8 => "Uint8Array",
            Int16 => "Int16Array",
            Uint16 => "Uint16Array",
            Int32 => "Int32Array",
            Uint32 => "Uint32Array",
            Float32 => "Float32Array",
            Float64 => "Float64Array",
            BigInt64 => "BigInt64Array",
            BigUint64 => "BigUint64Array",
        }
    }

    pub fn element_bytes(self) -> usize {
        use ArrayKind::*;
        match self {
            Int8 | Uint8 => 1,
            Int16 | Uint16 => 2,
            Int32 | Uint32 | Float32 => 4,
            Float64 | BigInt64 | BigUint64 => 8,
        }
    }
}

/// How a dtype's data crosses into JS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `lanes` typed-array elements per tensor element (2 for complex: interleaved re, im).
    Numeric { array: ArrayKind, lanes: usize },
    /// One `Uint8Array` per element, stored by TF as `TF_TString`.
    Strings,
    /// Handles that only ops consume (resources, variants): never read or made from JS.
    Opaque,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DType {
    pub tf: sys::TF_DataType,
    pub name: &'static str,
    pub layout: Layout,
}

const fn numeric(
    tf: sys::TF_DataType,
    name: &'static str,
    array: ArrayKind,
    lanes: usize,
) -> DType {
    DType {
        tf,
        name,
        layout: Layout::Numeric { array, lanes },
    }
}

const fn other(tf: sys::TF_DataType, name: &'static str, layout: Layout) -> DType {
    DType { tf, name, layout }
}

/// Every dtype the binding knows; `bool` and the 16-bit floats are carried as raw bytes/bits.
pub const DTYPES: &[DType] = &[
    numeric(sys::TF_FLOAT, "float32", ArrayKind::Float32, 1),
    numeric(sys::TF_INT32, "int32", ArrayKind::Int32, 1),
    numeric(sys::TF_BOOL, "bool", ArrayKind::Uint8, 1),
    numeric(sys::TF_COMPLEX64, "complex64", ArrayKind::Float32, 2),
    other(sys::TF_STRING, "string", Layout::Strings),
    numeric(sys::TF_UINT8, "uint8", ArrayKind::Uint8, 1),
    numeric(sys::TF_INT64, "int64", ArrayKind::BigInt64, 1),
    numeric(sys::TF_DOUBLE, "float64", ArrayKind::Float64, 1),
    numeric(sys::TF_INT8, "int8", ArrayKind::Int8, 1),
    numeric(sys::TF_INT16, "int16", ArrayKind::Int16, 1),
    numeric(sys::TF_UINT16, "uint16", ArrayKind::Uint16, 1),
    numeric(sys::TF_UINT32, "uint32", ArrayKind::Uint32, 1),
    numeric(sys::TF_UINT64, "uint64", ArrayKind::BigUint64, 1),
    numeric(sys::TF_HALF, "float16", ArrayKind::Uint16, 1),
    numeric(sys::TF_BFLOAT16, "bfloat16", ArrayKind::Uint16, 1),
    numeric(sys::TF_COMPLEX128, "complex128", ArrayKind::Float64, 2),
    other(sys::TF_RESOURCE, "resource", Layout::Opaque),
    other(sys::TF_VARIANT, "variant", Layout::Opaque),
];

/// The row of `DTYPES` for a raw TF dtype value (the index JS's `dtypeNames()` uses).
pub fn index_of_tf_code(code: i32) -> Option<usize> {
    DTYPES.iter().position(|d| d.tf as i32 == code)
}

impl DType {
    pub fn from_name(name: &str) -> Option<DType> {
        DTYPES.iter().copied().find(|d| d.name == name)
    }

    /// The raw enum value as TF returns it; values this table lacks (quantized, float8, int4) give `None`.
    pub fn from_tf_code(code: i32) -> Option<DType> {
        index_of_tf_code(code).map(|i| DTYPES[i])
    }

    /// Whether the elements are integers (signed or unsigned, any width).
    pub fn is_integer(self) -> bool {
        matches!(
            self.tf,
            sys::TF_INT8
                | sys::TF_INT16
                | sys::TF_INT32
                | sys::TF_INT64
                | sys::TF_UINT8
                | sys::TF_UINT16
                | sys::TF_UINT32
                | sys::TF_UINT64
        )
    }

    /// Bytes per tensor element, `None` where TF does not store elements inline (strings, handles).
    pub fn element_bytes(self) -> Option<usize> {
        match self.layout {
            Layout::Numeric { array, lanes } => Some(array.element_bytes() * lanes),
            Layout::Strings | Layout::Opaque => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_are_unique() {
        for (i, a) in DTYPES.iter().enumerate() {
            for b in &DTYPES[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!(a.tf as i32, b.tf as i32);
            }
        }
    }

    #[test]
    fn element_sizes_match_tf() {
        for d in DTYPES {
            if let Some(bytes) = d.element_bytes() {
                // SAFETY: TF_DataTypeSize only reads a static table.
                let tf_bytes = unsafe { sys::TF_DataTypeSize(d.tf) };
                assert_eq!(bytes, tf_bytes, "{}", d.name);
            }
        }
    }

    #[test]
    fn lookups_round_trip() {
        assert_eq!(DType::from_name("int64").map(|d| d.tf as i32), Some(9));
        assert_eq!(DType::from_tf_code(1).map(|d| d.name), Some("float32"));
        assert!(DType::from_name("float8").is_none());
        assert!(DType::from_tf_code(11).is_none());
    }
}
