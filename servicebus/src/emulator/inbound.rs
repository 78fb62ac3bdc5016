//! A client's sender link into a queue or topic: each transfer is authorised, throttled,
//! unpacked (a batch, message format 0x80013700, is a sequence of data sections each holding
//! one encoded message), stored, counted per message and settled.

use std::collections::VecDeque;
use std::sync::Arc;

use fe2o3_amqp::link::delivery::DeliveryInfo;
use fe2o3_amqp::types::definitions::{AmqpError, ErrorCondition, LinkError};
use fe2o3_amqp::types::messaging::message::DecodeIntoMessage as _;
use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::primitives::{Symbol, Value};
use fe2o3_amqp::Receiver;
use tokio::time::{sleep_until, Instant};

use super::amqp_errors::amqp_error;
use super::cbs::ConnState;
use super::clock::unix_ms;
use super::namespace::{path_of, SendTarget};
use super::shared::Shared;
use super::store::Msg;
use super::tier::{Cost, SERVER_BUSY_DESCRIPTION};
use crate::outcome::SERVER_BUSY;

/// The message format of a batch transfer (Microsoft's, used by every Service Bus SDK).
pub const BATCH_FORMAT: u32 = 0x8001_3700;

enum Decision {
    Accept(Vec<Msg>),
    Throttle,
    Unauthorised,
    Malformed,
}

/// Serve one sender link of the client attached to `address`.
pub async fn entity_receiver(
    mut receiver: Receiver,
    address: String,
    target: SendTarget,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    let entity = path_of(&address).to_string();
    let latency = shared.cfg.latency;
    // Constant latency keeps settlements in arrival order, so a queue is enough.
    let mut pending: VecDeque<(Instant, DeliveryInfo, Decision)> = VecDeque::new();
    let mut link_drops = shared.link_drops.subscribe();
    let mut deletions = shared.deletions.subscribe();
    let still_there = || match &target {
        SendTarget::Topic(t) => shared.ns.holds_topic(t),
        SendTarget::Queue(q) => shared.ns.holds(q),
    };
    loop {
        let next_due = pending.front().map(|p| p.0);
        tokio::select! {
            biased;
            _ = sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {
                let (_, info, d) = pending.pop_front().expect("front checked");
                if settle(&receiver, info, d, &entity, &target, &shared).await.is_err() {
                    break;
                }
            }
            _ = link_drops.changed() => {
                let err = amqp_error(
                    LinkError::DetachForced.into(),
                    "the emulator detached the link".to_string(),
                );
                let _ = receiver.close_with_error(err).await;
                return;
            }
            () = super::deleted::entity_gone(&mut deletions, still_there) => {
                let _ = receiver.close_with_error(super::deleted::not_found(&entity)).await;
                return;
            }
            got = receiver.recv::<Body<Value>>() => {
                let Ok(delivery) = got else { break };
                let format = delivery.message_format().unwrap_or(0);
                let (info, message) = delivery.into_parts();
                let decision = decide(message, format, &address, &target, &shared, &state);
                if latency.is_zero() {
                    if settle(&receiver, info, decision, &entity, &target, &shared).await.is_err() {
                        break;
                    }
                } else {
                    pending.push_back((Instant::now() + latency, info, decision));
                }
            }
        }
    }
    let _ = receiver.close().await;
}

fn decide(
    message: Message<Body<Value>>,
    format: u32,
    address: &str,
    target: &SendTarget,
    shared: &Shared,
    state: &ConnState,
) -> Decision {
    if !state.authorised(address) {
        return Decision::Unauthorised;
    }
    let Some(messages) = unpack(message, format) else {
        return Decision::Malformed;
    };
    // Fault injection numbers transfers; the tier budget charges per message, and on a
    // topic each subscription's (default) filter evaluation is one more operation.
    if shared.throttle(shared.next_seq()) {
        return Decision::Throttle;
    }
    let n = messages.len() as u64;
    let filters = match target {
        SendTarget::Topic(t) => t.subscriptions().len() as u64,
        SendTarget::Queue(_) => 0,
    };
    let bytes = messages.iter().map(|m| body_len(m)).sum();
    let cost = Cost::Messages {
        n: n + n * filters,
        bytes,
    };
    if shared.budget.take(cost).is_err() {
        return Decision::Throttle;
    }
    Decision::Accept(messages)
}

/// The messages of one transfer: itself, or the inner messages of a batch. `None` when a
/// batch's data section is not an encoded message.
pub fn unpack(message: Message<Body<Value>>, format: u32) -> Option<Vec<Msg>> {
    if format != BATCH_FORMAT {
        return Some(vec![Arc::new(message)]);
    }
    let Body::Data(sections) = message.body else {
        return None;
    };
    sections
        .into_iter()
        .map(|d| {
            let reader = serde_amqp::read::SliceReader::new(&d.0);
            Body::<Value>::decode_message_from_reader(reader)
                .ok()
                .map(Arc::new)
        })
        .collect()
}

fn body_len(m: &Message<Body<Value>>) -> u64 {
    match &m.body {
        Body::Data(b) => b.iter().map(|d| d.0.len() as u64).sum(),
        Body::Value(v) => match &v.0 {
            Value::String(s) => s.len() as u64,
            Value::Binary(b) => b.len() as u64,
            _ => 8,
        },
        _ => 8,
    }
}

async fn settle(
    receiver: &Receiver,
    info: DeliveryInfo,
    decision: Decision,
    entity: &str,
    target: &SendTarget,
    shared: &Shared,
) -> Result<(), fe2o3_amqp::link::DispositionError> {
    // Stored and counted before the disposition goes out, so a client that has its
    // settlement never reads a count (or receives from a store) that lags behind it.
    match decision {
        Decision::Accept(messages) => {
            let n = messages.len() as u64;
            let now = unix_ms();
            for m in &messages {
                match target {
                    SendTarget::Topic(t) => {
                        t.publish(m, now);
                    }
                    SendTarget::Queue(q) => q.enqueue(m.clone(), now),
                }
            }
            shared.count(|c| {
                c.accepted += n;
                *c.accepted_per_topic.entry(entity.to_string()).or_default() += n;
                if n != 1 {
                    c.batches += 1;
                }
            });
            receiver.accept(info).await
        }
        Decision::Throttle => {
            shared.count(|c| c.throttled += 1);
            let err = amqp_error(
                ErrorCondition::Custom(Symbol::from(SERVER_BUSY)),
                format!("{SERVER_BUSY_DESCRIPTION} (emulated on {entity})"),
            );
            receiver.reject(info, err).await
        }
        Decision::Unauthorised => {
            shared.count(|c| c.unauthorized += 1);
            let err = amqp_error(
                AmqpError::UnauthorizedAccess.into(),
                "no valid token for this address on this connection".to_string(),
            );
            receiver.reject(info, err).await
        }
        Decision::Malformed => {
            shared.count(|c| c.rejected += 1);
            let err = amqp_error(
                AmqpError::DecodeError.into(),
                "a batch section is not an encoded AMQP message".to_string(),
            );
            receiver.reject(info, err).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fe2o3_amqp::types::messaging::message::__private::Serializable;
    use fe2o3_amqp::types::messaging::{AmqpValue, Batch, Data};
    use serde_amqp::primitives::Binary;

    fn msg(s: &str) -> Message<Body<Value>> {
        Message::builder()
            .body(Body::Value(AmqpValue(Value::String(s.to_string()))))
            .build()
    }

    #[test]
    fn batches_unpack_into_their_messages() {
        let sections: Vec<Data> = ["a", "b", "c"]
            .iter()
            .map(|s| {
                Data(Binary::from(
                    serde_amqp::to_vec(&Serializable(msg(s))).unwrap(),
                ))
            })
            .collect();
        let batch = Message::builder()
            .body(Body::<Value>::Data(Batch::new(sections)))
            .build();
        let got = unpack(batch, BATCH_FORMAT).unwrap();
        let bodies: Vec<String> = got
            .iter()
            .map(|m| match &m.body {
                Body::Value(AmqpValue(Value::String(s))) => s.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(bodies, vec!["a", "b", "c"]);
        assert_eq!(unpack(msg("x"), 0).unwrap().len(), 1);
        let junk = Message::builder()
            .body(Body::<Value>::Data(Batch::new(vec![Data(Binary::from(
                vec![1, 2, 3],
            ))])))
            .build();
        assert!(unpack(junk, BATCH_FORMAT).is_none());
    }
}
