//! The AMQP errors the emulator answers with, shaped as Azure's: a condition, a
//! description and the `info` map Python's SDK indexes; and the refusal of an entity
//! that is missing or over its quota, counted.

use fe2o3_amqp::types::definitions::{self, AmqpError, ErrorCondition, Fields};
use fe2o3_amqp::types::primitives::{Symbol, Value};
use serde_amqp::primitives::OrderedMap;

use super::clock::unix_ms;
use super::namespace::EntityError;
use super::shared::Shared;

/// An AMQP error with condition, description and `info` (Python's SDK indexes all three).
pub fn amqp_error(condition: ErrorCondition, description: String) -> definitions::Error {
    let mut info: Fields = OrderedMap::new();
    info.insert(
        Symbol::from("com.microsoft:tracking-id"),
        Value::String(format!("hubload-emulator-{}", unix_ms())),
    );
    definitions::Error::new(condition, Some(description), Some(info))
}

/// The error a refused attach, or a receive request over the quota, detaches its link
/// with; counted as the emulator's `not_found` or `limit_exceeded`.
pub fn refusal(e: EntityError, shared: &Shared) -> definitions::Error {
    match e {
        EntityError::NotFound(d) => {
            shared.count(|c| c.not_found += 1);
            amqp_error(AmqpError::NotFound.into(), d)
        }
        EntityError::LimitExceeded(d) => {
            shared.count(|c| c.limit_exceeded += 1);
            amqp_error(AmqpError::ResourceLimitExceeded.into(), d)
        }
    }
}
