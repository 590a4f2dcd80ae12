//! Protobuf's wire format, read: TF hands op definitions, op lists and run metadata out only
//! as serialized protobufs, and the few fields the package needs take a reader of a page
//! (where a protobuf library would bring generated code for all of TF's protos). And `Buffer`,
//! the `TF_Buffer`s they come in.

use tensorflow_sys as sys;

use crate::error::{Error, Result};

/// A `TF_Buffer` of TF's or ours, deleted on drop.
pub struct Buffer(pub *mut sys::TF_Buffer);

impl Buffer {
    pub fn new() -> Result<Buffer> {
        // SAFETY: no preconditions.
        let raw = unsafe { sys::TF_NewBuffer() };
        if raw.is_null() {
            return Err(Error::Invalid("TF_NewBuffer returned no buffer".into()));
        }
        Ok(Buffer(raw))
    }

    /// A buffer holding a copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Buffer> {
        // SAFETY: TF copies the bytes, which are live for the call.
        let raw = unsafe { sys::TF_NewBufferFromString(bytes.as_ptr().cast(), bytes.len()) };
        if raw.is_null() {
            return Err(Error::Invalid(
                "TF_NewBufferFromString returned no buffer".into(),
            ));
        }
        Ok(Buffer(raw))
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the buffer is live; TF set data/length together (null/0 when empty).
        unsafe {
            let b = &*self.0;
            if b.data.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(b.data.cast(), b.length)
            }
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the buffer came from TF_NewBuffer or was handed over by TF (TF_GetAllOpList),
        // and is deleted once.
        unsafe { sys::TF_DeleteBuffer(self.0) }
    }
}

/// A field's value in protobuf's wire format.
pub enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed32,
    Fixed64,
}

/// Reads protobuf fields one by one.
pub struct Reader<'a>(pub &'a [u8]);

pub fn malformed() -> Error {
    Error::Invalid("malformed protobuf from TF".into())
}

impl<'a> Reader<'a> {
    pub fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.0.split_first().ok_or_else(malformed)?;
            self.0 = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(malformed());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// The next field number and value, or `None` at the end.
    pub fn next(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        if self.0.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed64
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| malformed())?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed32
            }
            _ => return Err(malformed()),
        };
        Ok(Some((key >> 3, value)))
    }
}

/// A string field's text (lossy for invalid UTF-8).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
