//! Typed entries that middlewares of other crates attach to a call's metadata, so that the core
//! carries their flags without knowing them (for example alembic-context's `IsNew`).
//!
//! An entry type names the JSON key it is serialised under; [`Extensions`] serialises as a map
//! of those keys, flattened into `ToolMetadata`. Empty (the common case) it is an empty `Vec`:
//! creating, cloning and serialising it allocates nothing.
//!
//! ```
//! use alembic_tools::{Extensions, MetadataExtension};
//!
//! #[derive(Debug, Clone, PartialEq, serde::Serialize)]
//! #[serde(transparent)]
//! struct Flagged(bool);
//! impl MetadataExtension for Flagged {
//!     const KEY: &'static str = "flagged";
//! }
//!
//! let mut ext = Extensions::new();
//! ext.insert(Flagged(true));
//! assert_eq!(ext.get::<Flagged>(), Some(&Flagged(true)));
//! assert_eq!(serde_json::to_string(&ext).unwrap(), r#"{"flagged":true}"#);
//! ```

use std::any::Any;
use std::fmt;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// A typed metadata entry. At most one entry per type (and per key) is kept.
pub trait MetadataExtension:
    Any + Clone + PartialEq + fmt::Debug + Send + Sync + Serialize
{
    /// The JSON key of the entry in serialised metadata.
    const KEY: &'static str;

    /// Text the model should see instead of the call's own result or error (a refusal that
    /// explains itself better than the error does).
    fn text_for_model(&self) -> Option<&str> {
        None
    }
}

/// The object-safe face of an entry.
trait Entry: Any + Send + Sync + fmt::Debug {
    fn key(&self) -> &str;
    fn clone_entry(&self) -> Box<dyn Entry>;
    fn to_json(&self) -> Value;
    fn text_for_model(&self) -> Option<&str>;
    fn as_any(&self) -> &dyn Any;
}

impl<T: MetadataExtension> Entry for T {
    fn key(&self) -> &str {
        T::KEY
    }
    fn clone_entry(&self) -> Box<dyn Entry> {
        Box::new(self.clone())
    }
    fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
    fn text_for_model(&self) -> Option<&str> {
        MetadataExtension::text_for_model(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An entry read back from JSON: its type is not known here, so it keeps the value as is.
#[derive(Debug, Clone, PartialEq)]
struct RawEntry {
    key: String,
    value: Value,
}

impl Entry for RawEntry {
    fn key(&self) -> &str {
        &self.key
    }
    fn clone_entry(&self) -> Box<dyn Entry> {
        Box::new(self.clone())
    }
    fn to_json(&self) -> Value {
        self.value.clone()
    }
    fn text_for_model(&self) -> Option<&str> {
        None
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The typed entries of one call's metadata, in insertion order.
#[derive(Default)]
pub struct Extensions {
    entries: Vec<Box<dyn Entry>>,
}

impl Extensions {
    pub fn new() -> Self {
        Extensions::default()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Sets the entry of type `T` (replacing one of the same type or key); returns the old one.
    pub fn insert<T: MetadataExtension>(&mut self, value: T) -> Option<T> {
        let old = self.remove::<T>();
        self.entries.retain(|e| e.key() != T::KEY);
        self.entries.push(Box::new(value));
        old
    }

    pub fn get<T: MetadataExtension>(&self) -> Option<&T> {
        self.entries
            .iter()
            .find_map(|e| e.as_any().downcast_ref::<T>())
    }

    pub fn remove<T: MetadataExtension>(&mut self) -> Option<T> {
        let pos = self.entries.iter().position(|e| e.as_any().is::<T>())?;
        let entry = self.entries.remove(pos);
        entry.as_any().downcast_ref::<T>().cloned()
    }

    /// The JSON of the entry under `key`, typed or read back from JSON.
    pub fn json(&self, key: &str) -> Option<Value> {
        self.entries
            .iter()
            .find(|e| e.key() == key)
            .map(|e| e.to_json())
    }

    /// The first entry's replacement for the text the model sees, if any entry has one.
    pub fn text_for_model(&self) -> Option<&str> {
        self.entries.iter().find_map(|e| e.text_for_model())
    }
}

impl Clone for Extensions {
    fn clone(&self) -> Self {
        Extensions {
            entries: self.entries.iter().map(|e| e.clone_entry()).collect(),
        }
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.entries).finish()
    }
}

/// Equal when they hold the same keys with the same JSON values, in the same order.
impl PartialEq for Extensions {
    fn eq(&self, other: &Self) -> bool {
        self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .zip(&other.entries)
                .all(|(a, b)| a.key() == b.key() && a.to_json() == b.to_json())
    }
}

impl Serialize for Extensions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for e in &self.entries {
            map.serialize_entry(e.key(), &e.to_json())?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Extensions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let entries = map
            .into_iter()
            .map(|(key, value)| Box::new(RawEntry { key, value }) as Box<dyn Entry>)
            .collect();
        Ok(Extensions { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    #[serde(transparent)]
    struct Note(String);
    impl MetadataExtension for Note {
        const KEY: &'static str = "note";
        fn text_for_model(&self) -> Option<&str> {
            Some(&self.0)
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
    #[serde(transparent)]
    struct Flag(bool);
    impl MetadataExtension for Flag {
        const KEY: &'static str = "flag";
    }

    #[test]
    fn entries_are_typed_replaced_by_type_and_serialised_under_their_keys() {
        let mut ext = Extensions::new();
        assert!(ext.is_empty() && ext.text_for_model().is_none());
        assert_eq!(ext.insert(Flag(false)), None);
        ext.insert(Note("seen before".into()));
        assert_eq!(ext.insert(Flag(true)), Some(Flag(false)));
        assert_eq!(ext.get::<Flag>(), Some(&Flag(true)));
        assert_eq!(ext.text_for_model(), Some("seen before"));
        assert_eq!(
            serde_json::to_value(&ext).unwrap(),
            json!({"note": "seen before", "flag": true})
        );
        assert_eq!(ext.remove::<Note>(), Some(Note("seen before".into())));
        assert_eq!((ext.len(), ext.json("flag")), (1, Some(json!(true))));
    }

    #[test]
    fn read_back_entries_keep_their_json_and_compare_equal() {
        let mut ext = Extensions::new();
        ext.insert(Flag(true));
        let back: Extensions = serde_json::from_value(json!({"flag": true})).unwrap();
        assert_eq!(back, ext);
        assert_eq!(
            back.get::<Flag>(),
            None,
            "the type is not known when reading JSON"
        );
        let mut back = back;
        back.insert(Flag(false));
        assert_eq!(serde_json::to_value(&back).unwrap(), json!({"flag": false}));
    }
}
