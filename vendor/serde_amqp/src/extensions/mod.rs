//! Serialization/deserialization of extension types that are not defined in the core protocol

mod transparent_vec;
pub use transparent_vec::*;
