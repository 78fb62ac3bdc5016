//! [`OutgoingMessage`]: one event as the sender gets it, and its AMQP encoding.
//!
//! Body as one data section, `content-type`, `message-id` (the event's `jti`) and the
//! application properties (tenant, application, channel).

use fe2o3_amqp::types::messaging::message::__private::Serializable;
use fe2o3_amqp::types::messaging::{ApplicationProperties, Data, Message, Properties};
use fe2o3_amqp::types::primitives::{Binary, SimpleValue, Symbol};

/// One message to send, borrowed from the caller (no copies until encoding).
#[derive(Debug, Clone, Copy)]
pub struct OutgoingMessage<'a> {
    /// The body bytes (the event JSON).
    pub body: &'a [u8],
    /// `message-id`: the event's `jti`.
    pub message_id: &'a str,
    /// `content-type`, e.g. `application/json`.
    pub content_type: &'a str,
    /// Application properties, as strings.
    pub properties: &'a [(&'a str, &'a str)],
}

impl OutgoingMessage<'_> {
    /// The AMQP message: one data section plus properties.
    pub fn to_amqp(&self) -> Message<Data> {
        let mut app = ApplicationProperties::default();
        for (k, v) in self.properties {
            app.0
                .insert((*k).to_string(), SimpleValue::String((*v).to_string()));
        }
        Message::builder()
            .properties(
                Properties::builder()
                    .message_id(self.message_id.to_string())
                    .content_type(Symbol::from(self.content_type))
                    .build(),
            )
            .application_properties(if app.0.is_empty() { None } else { Some(app) })
            .data(Binary::from(self.body.to_vec()))
            .build()
    }

    /// The message's size as the broker measures it against a link's `max-message-size`: the
    /// encoded AMQP message (properties, application properties and the data section around
    /// the body), as it goes in a transfer.
    pub fn encoded_len(&self) -> u64 {
        serde_amqp::serialized_size(&Serializable(self.to_amqp())).map_or(u64::MAX, |n| n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fe2o3_amqp::types::messaging::MessageId;

    #[test]
    fn encodes_every_field() {
        let m = OutgoingMessage {
            body: b"{\"a\":1}",
            message_id: "jti-1",
            content_type: "application/json",
            properties: &[("tenant", "t1"), ("channel", "email")],
        }
        .to_amqp();
        let p = m.properties.as_ref().unwrap();
        assert_eq!(p.message_id, Some(MessageId::String("jti-1".into())));
        assert_eq!(p.content_type, Some(Symbol::from("application/json")));
        let app = m.application_properties.as_ref().unwrap();
        assert_eq!(app.get("tenant"), Some(&SimpleValue::String("t1".into())));
        assert_eq!(
            app.get("channel"),
            Some(&SimpleValue::String("email".into()))
        );
        assert_eq!(m.body.0.as_slice(), b"{\"a\":1}");
    }

    #[test]
    fn the_encoded_length_is_the_transfers_payload() {
        let msg = OutgoingMessage {
            body: &[b'x'; 1000],
            message_id: "jti-1",
            content_type: "application/json",
            properties: &[("tenant", "t1")],
        };
        let bytes = serde_amqp::to_vec(&Serializable(msg.to_amqp())).unwrap();
        assert_eq!(msg.encoded_len(), bytes.len() as u64);
    }
}
