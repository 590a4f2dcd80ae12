//! The env's loaded SavedModel sessions, shared by (directory, tags) and counted by reference.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::tf::session::Session;
use crate::tf::status::Status;

struct Entry {
    key: (PathBuf, Vec<String>),
    /// Shared with executor jobs running it.
    session: Arc<Session>,
    /// Models (JS `TFSavedModel`s) using the session; it closes when the last one is deleted.
    refs: u32,
}

/// Session ids count up from 1 and are never reused.
#[derive(Default)]
pub struct SavedModels {
    entries: HashMap<u64, Entry>,
    next_id: u64,
}

impl SavedModels {
    /// The id of the session for `dir` and `tags`: an existing one (one more reference) or a
    /// newly loaded one.
    pub fn load(&mut self, dir: &str, tags: &[String], status: &Status) -> Result<u64> {
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
        let key = (path, sorted);
        if let Some((&id, entry)) = self.entries.iter_mut().find(|(_, e)| e.key == key) {
            entry.refs += 1;
            return Ok(id);
        }
        let dir_c = CString::new(key.0.to_string_lossy().as_bytes())
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
        let session = Session::load_saved_model(&dir_c, &tags_c, status)
            .map_err(|e| e.context(&format!("loading SavedModel '{dir}' with tags {tags:?}")))?;
        self.next_id += 1;
        self.entries.insert(
            self.next_id,
            Entry {
                key,
                session: Arc::new(session),
                refs: 1,
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
