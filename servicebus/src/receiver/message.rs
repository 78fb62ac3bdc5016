//! [`Received`]: one peek-locked message as the receive client hands it out, read from the
//! AMQP message Service Bus delivers (body, properties, header and `x-opt-*` annotations).

use fe2o3_amqp::link::delivery::DeliveryInfo;
use fe2o3_amqp::types::messaging::{AmqpValue, Body, Message, MessageId};
use fe2o3_amqp::types::primitives::{SimpleValue, Value};

/// One message received in peek-lock mode. Settle it with
/// [`crate::SbReceiver::complete`], [`crate::SbReceiver::abandon`] or
/// [`crate::SbReceiver::dead_letter`] on the receiver that returned it; until then the
/// broker holds its lock.
pub struct Received {
    /// The body: every data section concatenated (hubload's sender writes one), or a
    /// binary or string `amqp-value`; empty for any other body.
    pub body: Vec<u8>,
    /// `message-id`, when it is a string (hubload's sender uses the event's `jti`).
    pub message_id: Option<String>,
    /// `content-type`.
    pub content_type: Option<String>,
    /// Application properties whose values are strings, in the order received.
    pub properties: Vec<(String, String)>,
    /// Deliveries of this message before this one (the header's `delivery-count`): 0 on
    /// the first delivery, more after an abandon or an expired lock.
    pub delivery_count: u32,
    /// `x-opt-sequence-number`: the broker's sequence number in this entity.
    pub sequence_number: Option<i64>,
    /// `x-opt-enqueued-time`, milliseconds since the Unix epoch.
    pub enqueued_time_ms: Option<i64>,
    /// `x-opt-locked-until`, milliseconds since the Unix epoch: when the broker's lock on
    /// this delivery runs out (a settlement after it is refused and the message comes again).
    pub locked_until_ms: Option<i64>,
    /// The link generation it came on: a settlement on a later link cannot name it.
    pub(crate) generation: u64,
    pub(crate) info: DeliveryInfo,
}

impl std::fmt::Debug for Received {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Received")
            .field("body_len", &self.body.len())
            .field("message_id", &self.message_id)
            .field("delivery_count", &self.delivery_count)
            .field("sequence_number", &self.sequence_number)
            .field("generation", &self.generation)
            .finish()
    }
}

impl Received {
    /// The application property `name`, when it is a string.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn from_amqp(
        info: DeliveryInfo,
        msg: Message<Body<Value>>,
        generation: u64,
    ) -> Received {
        let body = match msg.body {
            Body::Data(batch) => {
                let mut out = Vec::new();
                for d in batch.iter() {
                    out.extend_from_slice(&d.0);
                }
                out
            }
            Body::Value(AmqpValue(Value::Binary(b))) => b.into_vec(),
            Body::Value(AmqpValue(Value::String(s))) => s.into_bytes(),
            _ => Vec::new(),
        };
        let (message_id, content_type) = match msg.properties {
            Some(p) => (
                match p.message_id {
                    Some(MessageId::String(s)) => Some(s),
                    _ => None,
                },
                p.content_type.map(|c| c.0),
            ),
            None => (None, None),
        };
        let properties = msg
            .application_properties
            .map(|app| {
                app.0
                    .into_iter()
                    .filter_map(|(k, v)| match v {
                        SimpleValue::String(s) => Some((k, s)),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let annotation = |name: &str| {
            msg.message_annotations.as_ref().and_then(|a| {
                a.0.iter().find_map(|(k, v)| {
                    let key = match k {
                        fe2o3_amqp::types::messaging::annotations::OwnedKey::Symbol(s) => {
                            s.0.as_str()
                        }
                        _ => return None,
                    };
                    (key == name).then(|| v.clone())
                })
            })
        };
        let sequence_number = match annotation("x-opt-sequence-number") {
            Some(Value::Long(n)) => Some(n),
            _ => None,
        };
        let enqueued_time_ms = match annotation("x-opt-enqueued-time") {
            Some(Value::Timestamp(t)) => Some(t.milliseconds()),
            _ => None,
        };
        let locked_until_ms = match annotation("x-opt-locked-until") {
            Some(Value::Timestamp(t)) => Some(t.milliseconds()),
            _ => None,
        };
        Received {
            body,
            message_id,
            content_type,
            properties,
            delivery_count: msg.header.map_or(0, |h| h.delivery_count),
            sequence_number,
            enqueued_time_ms,
            locked_until_ms,
            generation,
            info,
        }
    }
}
