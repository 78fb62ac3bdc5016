//! An entity's `$management` node: AMQP request/response for peek, lock renewal, receive of
//! deferred messages by sequence number and settlement by lock token, answered with
//! `statusCode` as Azure does.

use std::sync::Arc;

// fe2o3 encodes a whole message only through this (hidden) wrapper.
use fe2o3_amqp::types::messaging::message::__private::Serializable;
use fe2o3_amqp::types::messaging::{AmqpValue, ApplicationProperties, Body, Message, Properties};
use fe2o3_amqp::types::primitives::{Array, OrderedMap, SimpleValue, Timestamp, Uuid, Value};
use fe2o3_amqp::Receiver;

use super::cbs::{app_str, ConnState, Reply};
use super::clock::unix_ms;
use super::namespace::{path_of, ReceiveSource};
use super::outbound::annotated;
use super::shared::Shared;
use super::store::{LockToken, Settle, Stored};
use super::tier::Cost;

/// A management answer: status, description, body.
struct Answer(i32, String, Value);

impl Answer {
    fn ok(body: Value) -> Self {
        Answer(200, "OK".into(), body)
    }
    fn bad(desc: &str) -> Self {
        Answer(400, desc.to_string(), Value::Null)
    }
}

/// Serve the requests of one client link into `<entity>/$management`.
pub async fn management_node(
    mut receiver: Receiver,
    address: String,
    source: ReceiveSource,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    let node = path_of(&address).to_lowercase();
    loop {
        let delivery = match receiver.recv::<Body<Value>>().await {
            Ok(d) => d,
            Err(_) => break,
        };
        if receiver.accept(&delivery).await.is_err() {
            break;
        }
        let msg = delivery.into_message();
        let props = msg.properties.as_ref();
        let reply_to = props.and_then(|p| p.reply_to.clone());
        let message_id = props.and_then(|p| p.message_id.clone());
        let op = app_str(msg.application_properties.as_ref(), "operation")
            .unwrap_or_default()
            .to_string();
        shared.count(|c| c.management += 1);
        let body = match &msg.body {
            Body::Value(AmqpValue(v)) => v.clone(),
            _ => Value::Null,
        };
        let answer = if shared.budget.take(Cost::Management).is_err() {
            shared.count(|c| c.throttled += 1);
            Answer(
                503,
                super::tier::SERVER_BUSY_DESCRIPTION.into(),
                Value::Null,
            )
        } else {
            answer(&op, &body, &source)
        };
        let mut app = ApplicationProperties::builder()
            .insert("statusCode", SimpleValue::Int(answer.0))
            .insert("statusDescription", answer.1);
        if answer.0 == 503 {
            app = app.insert(
                "errorCondition",
                SimpleValue::Symbol(crate::outcome::SERVER_BUSY.into()),
            );
        } else if answer.0 == 410 {
            app = app.insert(
                "errorCondition",
                SimpleValue::Symbol("com.microsoft:message-lock-lost".into()),
            );
        }
        let reply: Reply = Message::builder()
            .properties(Properties {
                correlation_id: message_id,
                ..Properties::default()
            })
            .application_properties(app.build())
            .value(answer.2)
            .build();
        if let Some(route) = state.reply_route(&node, reply_to.as_deref()) {
            let _ = route.send(reply).await;
        }
    }
    let _ = receiver.close().await;
}

fn get<'a>(body: &'a Value, key: &str) -> Option<&'a Value> {
    let Value::Map(m) = body else { return None };
    m.iter()
        .find(|(k, _)| {
            matches!(k, Value::String(s) if s == key)
                || matches!(k, Value::Symbol(s) if s.as_str() == key)
        })
        .map(|(_, v)| v)
}

fn items(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(a)) => a.0.clone(),
        Some(Value::List(l)) => l.clone(),
        Some(other) => vec![other.clone()],
        None => Vec::new(),
    }
}

/// The stored token (the bytes of the delivery tag) a UUID names.
fn token_of(v: &Value) -> Option<LockToken> {
    match v {
        Value::Uuid(u) => Some(guid_order(*u.as_inner())),
        _ => None,
    }
}

/// Azure's lock token is the delivery tag read as a .NET Guid, whose first three fields are
/// little-endian. The SDKs read it so (Python `UUID(bytes_le=tag)`, JS `reorderLockToken`) and
/// send the UUID's big-endian bytes here; those fields swapped back give the tag. The swap is
/// its own inverse, so it also turns a stored token into the UUID to answer with.
fn guid_order(b: LockToken) -> LockToken {
    let mut o = b;
    o[0..4].reverse();
    o[4..6].reverse();
    o[6..8].reverse();
    o
}

fn long(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Long(n) => Some(*n),
        Value::Int(n) => Some(i64::from(*n)),
        Value::Uint(n) => Some(i64::from(*n)),
        Value::Ulong(n) => i64::try_from(*n).ok(),
        _ => None,
    }
}

fn str_key(k: &str) -> Value {
    Value::String(k.to_string())
}

fn encoded(s: &Stored, locked_until: Option<i64>) -> Value {
    let bytes = serde_amqp::to_vec(&Serializable(annotated(s, locked_until))).unwrap_or_default();
    Value::Binary(bytes.into())
}

fn answer(op: &str, body: &Value, source: &ReceiveSource) -> Answer {
    let store = &source.store;
    let now = unix_ms();
    match op {
        "com.microsoft:peek-message" => {
            let from = long(get(body, "from-sequence-number")).unwrap_or(0);
            let n = long(get(body, "message-count"))
                .unwrap_or(1)
                .clamp(1, 1_000) as usize;
            let found = store.peek(from, n, source.dead_letter, now);
            if found.is_empty() {
                return Answer(204, "No Content".into(), Value::Null);
            }
            let messages = found
                .iter()
                .map(|s| {
                    let mut m = OrderedMap::new();
                    m.insert(str_key("message"), encoded(s, None));
                    Value::Map(m)
                })
                .collect();
            let mut out = OrderedMap::new();
            out.insert(str_key("messages"), Value::List(messages));
            Answer::ok(Value::Map(out))
        }
        "com.microsoft:renew-lock" => {
            let mut expirations = Vec::new();
            for t in items(get(body, "lock-tokens")) {
                let Some(token) = token_of(&t) else {
                    return Answer::bad("lock-tokens must be UUIDs");
                };
                match store.renew(&token, now) {
                    Ok(until) => expirations.push(Value::Timestamp(Timestamp::from_milliseconds(until))),
                    Err(_) => return Answer(410, "The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.".into(), Value::Null),
                }
            }
            let mut out = OrderedMap::new();
            out.insert(
                str_key("expirations"),
                Value::Array(Array::from(expirations)),
            );
            Answer::ok(Value::Map(out))
        }
        "com.microsoft:receive-by-sequence-number" => {
            let mut messages = Vec::new();
            for v in items(get(body, "sequence-numbers")) {
                let Some(seq) = long(Some(&v)) else {
                    return Answer::bad("sequence-numbers must be longs");
                };
                let mut token = [0u8; 16];
                rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut token);
                let Some(d) = store.take_deferred(seq, token, now) else {
                    return Answer(
                        404,
                        format!("no deferred message with sequence number {seq}"),
                        Value::Null,
                    );
                };
                let mut m = OrderedMap::new();
                m.insert(
                    str_key("lock-token"),
                    Value::Uuid(Uuid::from(guid_order(token))),
                );
                m.insert(str_key("message"), encoded(&d.stored, d.lock.map(|l| l.1)));
                messages.push(Value::Map(m));
            }
            let mut out = OrderedMap::new();
            out.insert(str_key("messages"), Value::List(messages));
            Answer::ok(Value::Map(out))
        }
        "com.microsoft:update-disposition" => {
            let how = match get(body, "disposition-status") {
                Some(Value::String(s)) => match s.as_str() {
                    "completed" => Settle::Complete,
                    "abandoned" => Settle::Abandon,
                    "suspended" => Settle::DeadLetter(match get(body, "deadletter-reason") {
                        Some(Value::String(r)) => r.clone(),
                        _ => "DeadLetteredByReceiver".into(),
                    }),
                    "defered" | "deferred" => Settle::Defer,
                    _ => return Answer::bad("unknown disposition-status"),
                },
                _ => return Answer::bad("disposition-status missing"),
            };
            for t in items(get(body, "lock-tokens")) {
                let Some(token) = token_of(&t) else {
                    return Answer::bad("lock-tokens must be UUIDs");
                };
                if store.settle(&token, how.clone(), now).is_err() {
                    return Answer(410, "The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.".into(), Value::Null);
                }
            }
            Answer::ok(Value::Null)
        }
        _ => Answer(501, format!("operation {op} is not emulated"), Value::Null),
    }
}
