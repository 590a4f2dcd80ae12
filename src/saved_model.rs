//! The env's loaded SavedModel sessions, shared by (directory, tags) and counted by reference,
//! and what a run of one names: graph tensors fed and fetched.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::tf::dtype::DType;
use crate::tf::handle::TensorHandle;
use crate::tf::session::{Port, Session};
use crate::tf::status::Status;
use crate::tf::tensor::Tensor;

struct Entry {
    /// The directory, the sorted tags and the session's own options.
    key: (PathBuf, Vec<String>, Vec<u8>),
    /// Shared with executor jobs running it.
    session: Arc<Session>,
    /// Models (JS `TFSavedModel`s) using the session; it closes when the last one is deleted.
    refs: u32,
    /// Whether later loads of the same key share it (`load`'s `share`).
    shared: bool,
}

/// Session ids count up from 1 and are never reused.
#[derive(Default)]
pub struct SavedModels {
    entries: HashMap<u64, Entry>,
    next_id: u64,
}

/// `path` as TF's file system takes it. On Windows, `canonicalize` gives a verbatim path
/// (`\\?\C:\...`, `\\?\UNC\server\share\...`) and TF appends `/saved_model.pb` to it,
/// which a verbatim path does not allow (its `/` is no separator): the prefix is dropped.
fn tf_path(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    if cfg!(windows) {
        if let Some(unc) = text.strip_prefix(r"\\?\UNC\") {
            return format!(r"\\{unc}");
        }
        if let Some(local) = text.strip_prefix(r"\\?\") {
            return local.to_string();
        }
    }
    text.into_owned()
}

impl SavedModels {
    /// The id of the session for `dir`, `tags` and `config` (the session's own `ConfigProto`
    /// fields, see `Session::load_saved_model`): with `share`, an existing shared one (one more
    /// reference) or a newly loaded one that later loads share; without, a newly loaded one of
    /// its own (what the files hold now, whatever sessions of them are open).
    pub fn load(
        &mut self,
        dir: &str,
        tags: &[String],
        config: &[u8],
        share: bool,
        status: &Status,
    ) -> Result<u64> {
        let path = std::fs::canonicalize(dir).map_err(|e| {
            Error::Invalid(format!(
                "SavedModel directory '{dir}' cannot be opened: {e}"
            ))
        })?;
        if !path.is_dir() {
            return Err(Error::Invalid(format!(
                "SavedModel path '{dir}' is not a directory"
            )));
        }
        let mut sorted = tags.to_vec();
        sorted.sort();
        sorted.dedup();
        let key = (path, sorted, config.to_vec());
        let existing = self
            .entries
            .iter_mut()
            .find(|(_, e)| e.shared && e.key == key);
        if let (true, Some((&id, entry))) = (share, existing) {
            entry.refs += 1;
            return Ok(id);
        }
        let dir_c = CString::new(tf_path(&key.0).as_bytes())
            .map_err(|_| Error::Type("SavedModel path must not contain NUL characters".into()))?;
        let tags_c = key
            .1
            .iter()
            .map(|t| {
                CString::new(t.as_bytes()).map_err(|_| {
                    Error::Type("SavedModel tags must not contain NUL characters".into())
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let session = Session::load_saved_model(&dir_c, &tags_c, config, status)
            .map_err(|e| e.context(&format!("loading SavedModel '{dir}' with tags {tags:?}")))?;
        self.next_id += 1;
        self.entries.insert(
            self.next_id,
            Entry {
                key,
                session: Arc::new(session),
                refs: 1,
                shared: share,
            },
        );
        Ok(self.next_id)
    }

    pub fn get(&self, id: u64) -> Result<&Arc<Session>> {
        self.entries
            .get(&id)
            .map(|e| &e.session)
            .ok_or_else(|| missing(id))
    }

    /// Drops one reference; the session closes with the last.
    pub fn release(&mut self, id: u64) -> Result<()> {
        let entry = self.entries.get_mut(&id).ok_or_else(|| missing(id))?;
        entry.refs -= 1;
        if entry.refs == 0 {
            self.entries.remove(&id);
        }
        Ok(())
    }

    /// Distinct sessions loaded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

fn missing(id: u64) -> Error {
    Error::Invalid(format!("SavedModel session {id} is unknown or was deleted"))
}

/// The graph tensors a run of a session feeds and fetches, by name (`op:index`, or `op` for
/// index 0). Shapes are TF's to check: a session feeds a placeholder any shape (the static
/// shape is a hint the Python client enforces, not the runtime), and tfjs-node programs rely
/// on that; dtypes are checked here, before TF sees them.
pub struct SessionRun {
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

impl SessionRun {
    /// Input `name`'s port.
    pub fn input<'s>(session: &'s Session, name: &str) -> Result<Port<'s>> {
        port(session, name, "input")
    }

    /// Input `name`'s port, refusing a tensor of another dtype (TF code `got`) than the graph's.
    pub fn checked_input<'s>(session: &'s Session, name: &str, got: i32) -> Result<Port<'s>> {
        let port = Self::input(session, name)?;
        let want = session.port_dtype(port);
        if want != got {
            return Err(Error::Type(format!(
                "input '{name}' must be a {} tensor, got {}",
                dtype_label(want),
                dtype_label(got)
            )));
        }
        Ok(port)
    }

    /// Refuses output names the graph does not have.
    pub fn check_outputs(&self, session: &Session) -> Result<()> {
        self.outputs
            .iter()
            .try_for_each(|name| port(session, name, "output").map(drop))
    }

    /// Runs `session` on `feeds`, fetching the outputs.
    pub fn run(
        &self,
        session: &Session,
        feeds: &[(Port<'_>, Tensor)],
        status: &Status,
    ) -> Result<Vec<TensorHandle>> {
        let fetches = self
            .outputs
            .iter()
            .map(|name| port(session, name, "output"))
            .collect::<Result<Vec<_>>>()?;
        let inputs: Vec<(Port, &Tensor)> = feeds.iter().map(|(p, t)| (*p, t)).collect();
        let results = session
            .run(&inputs, &fetches, status)
            .map_err(|e| e.context("runSavedModel"))?;
        results
            .iter()
            .map(|t| TensorHandle::from_tensor(t, status))
            .collect()
    }
}

/// Splits `op:index` (index 0 when absent or not a number).
fn split_name(name: &str) -> (&str, i32) {
    match name.rsplit_once(':') {
        Some((op, index)) => match index.parse::<i32>() {
            Ok(i) => (op, i),
            Err(_) => (name, 0),
        },
        None => (name, 0),
    }
}

fn port<'s>(session: &'s Session, name: &str, role: &str) -> Result<Port<'s>> {
    let (op, index) = split_name(name);
    let op_c = CString::new(op)
        .map_err(|_| Error::Type(format!("{role} name '{name}' contains a NUL character")))?;
    session.port(&op_c, index).ok_or_else(|| {
        Error::Invalid(format!(
            "the SavedModel graph has no {role} tensor '{name}'"
        ))
    })
}

fn dtype_label(code: i32) -> String {
    DType::from_tf_code(code).map_or_else(|| format!("TF dtype {code}"), |d| d.name.to_string())
}

#[cfg(test)]
mod tests {
    use super::split_name;

    #[test]
    fn names_split_at_the_last_colon() {
        assert_eq!(split_name("serving_default_x:0"), ("serving_default_x", 0));
        assert_eq!(
            split_name("StatefulPartitionedCall:2"),
            ("StatefulPartitionedCall", 2)
        );
        assert_eq!(split_name("plain"), ("plain", 0));
        assert_eq!(split_name("a:b"), ("a:b", 0));
    }
}
