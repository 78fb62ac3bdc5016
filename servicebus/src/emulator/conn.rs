//! One emulator connection: its sessions, the CBS node (`$cbs` put-token → 202/401 on the
//! reply link) and the topic receivers that settle, throttle and count transfers.
//!
//! Authorisation is per connection, as in Azure: a transfer is accepted only if this
//! connection holds an unexpired token whose audience is a prefix of the link's address.
//! Without one, the emulator *rejects the delivery* with `amqp:unauthorized-access` (Azure
//! detaches the link instead; the sender classifies both as unauthorized), which keeps the
//! per-send accounting exact.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use fe2o3_amqp::acceptor::{
    ConnectionAcceptor, LinkAcceptor, LinkEndpoint, ListenerSessionHandle, SaslAnonymousMechanism,
    SessionAcceptor,
};
use fe2o3_amqp::link::delivery::DeliveryInfo;
use fe2o3_amqp::types::definitions::{self, AmqpError, ConnectionError, ErrorCondition, LinkError};
use fe2o3_amqp::types::messaging::{
    AmqpValue, ApplicationProperties, Body, Message, Properties, TargetArchetype,
};
use fe2o3_amqp::types::performatives::Attach;
use fe2o3_amqp::types::primitives::{SimpleValue, Symbol, Value};
use fe2o3_amqp::{Receiver, Sendable, Sender};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{sleep_until, Instant};

use super::{Shared, MAX_MESSAGE_SIZE};
use crate::outcome::SERVER_BUSY;
use crate::sas::SasToken;

/// Per-connection state: the tokens put on it and the CBS reply routes.
#[derive(Debug, Default)]
struct ConnState {
    /// Token audience → expiry (unix s).
    tokens: Mutex<HashMap<String, u64>>,
    /// Reply address (the client's CBS receiver target) → its link task.
    replies: Mutex<HashMap<String, mpsc::Sender<Message<AmqpValue<Value>>>>>,
}

impl ConnState {
    fn authorised(&self, address: &str) -> bool {
        let now = unix_now();
        self.tokens
            .lock()
            .expect("tokens lock")
            .iter()
            .any(|(aud, &exp)| exp > now && address.starts_with(aud.as_str()))
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Serve one TCP connection until the peer closes it, or the handle drops every connection.
pub(super) async fn serve(
    stream: TcpStream,
    acceptor: Arc<ConnectionAcceptor<(), SaslAnonymousMechanism>>,
    shared: Arc<Shared>,
    mut drop_rx: watch::Receiver<u64>,
) {
    let Ok(mut connection) = acceptor.accept(stream).await else {
        return;
    };
    shared.count(|c| c.connections += 1);
    let state = Arc::new(ConnState::default());
    let session_acceptor = SessionAcceptor::new();
    let mut tasks = JoinSet::new();
    drop_rx.borrow_and_update();
    loop {
        tokio::select! {
            incoming = connection.next_incoming_session() => {
                let Some(incoming) = incoming else { break };
                match session_acceptor.accept_incoming_session(incoming, &mut connection).await {
                    Ok(session) => {
                        tasks.spawn(serve_session(session, shared.clone(), state.clone()));
                    }
                    Err(_) => break,
                }
            }
            changed = drop_rx.changed() => {
                if changed.is_ok() {
                    let err = definitions::Error::new(
                        ConnectionError::ConnectionForced,
                        Some("the emulator dropped the connection".to_string()),
                        None,
                    );
                    let _ = connection.close_with_error(err).await;
                }
                break;
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    tasks.abort_all();
    let _ = connection.close().await;
}

fn target_address(attach: &Attach) -> Option<String> {
    let target = attach.target.as_deref()?;
    #[allow(irrefutable_let_patterns)]
    if let TargetArchetype::Target(t) = target {
        t.address.clone()
    } else {
        None
    }
}

async fn serve_session(
    mut session: ListenerSessionHandle,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    let acceptor = LinkAcceptor::builder()
        .max_message_size(MAX_MESSAGE_SIZE)
        .build();
    let mut links = JoinSet::new();
    while let Some(attach) = session.next_incoming_attach().await {
        let target = target_address(&attach).unwrap_or_default();
        let source = attach
            .source
            .as_ref()
            .and_then(|s| s.address.clone())
            .unwrap_or_default();
        match acceptor.accept_incoming_attach(attach, &mut session).await {
            Ok(LinkEndpoint::Receiver(r)) if target == "$cbs" => {
                links.spawn(cbs_node(r, shared.clone(), state.clone()));
            }
            Ok(LinkEndpoint::Receiver(r)) => {
                links.spawn(topic_receiver(r, target, shared.clone(), state.clone()));
            }
            Ok(LinkEndpoint::Sender(s)) if source == "$cbs" => {
                let (tx, rx) = mpsc::channel(16);
                state
                    .replies
                    .lock()
                    .expect("replies lock")
                    .insert(target, tx);
                links.spawn(cbs_replies(s, rx));
            }
            Ok(LinkEndpoint::Sender(s)) => {
                // Receiving is not emulated: close the link at once.
                let _ = s.close().await;
            }
            Err(_) => break,
        }
    }
    links.abort_all();
}

/// The topic name of an address: the path after `scheme://host[:port]/`, or the address.
fn topic_of(address: &str) -> String {
    match address.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, p)| p).to_string(),
        None => address.to_string(),
    }
}

enum Decision {
    Accept,
    Throttle,
    Unauthorised,
}

async fn topic_receiver(
    mut receiver: Receiver,
    address: String,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    let topic = topic_of(&address);
    let latency = shared.cfg.latency;
    // Constant latency keeps settlements in arrival order, so a queue is enough.
    let mut pending: VecDeque<(Instant, DeliveryInfo, Decision)> = VecDeque::new();
    let mut link_drops = shared.link_drops.subscribe();
    loop {
        let next_due = pending.front().map(|p| p.0);
        tokio::select! {
            biased;
            _ = sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {
                let (_, info, d) = pending.pop_front().expect("front checked");
                if settle(&receiver, info, d, &topic, &shared).await.is_err() {
                    break;
                }
            }
            _ = link_drops.changed() => {
                let err = definitions::Error::new(
                    LinkError::DetachForced,
                    Some("the emulator detached the link".to_string()),
                    None,
                );
                let _ = receiver.close_with_error(err).await;
                return;
            }
            got = receiver.recv::<Body<Value>>() => {
                let Ok(delivery) = got else { break };
                let decision = if !state.authorised(&address) {
                    Decision::Unauthorised
                } else if shared.throttle(shared.next_seq()) {
                    Decision::Throttle
                } else {
                    Decision::Accept
                };
                let info = DeliveryInfo::from(delivery);
                if latency.is_zero() {
                    if settle(&receiver, info, decision, &topic, &shared).await.is_err() {
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

async fn settle(
    receiver: &Receiver,
    info: DeliveryInfo,
    decision: Decision,
    topic: &str,
    shared: &Shared,
) -> Result<(), fe2o3_amqp::link::DispositionError> {
    // Counted before the disposition goes out, so a client that has its settlement never
    // reads a count that lags behind it.
    match decision {
        Decision::Accept => {
            shared.count(|c| {
                c.accepted += 1;
                *c.accepted_per_topic.entry(topic.to_string()).or_default() += 1;
            });
            receiver.accept(info).await
        }
        Decision::Throttle => {
            shared.count(|c| c.throttled += 1);
            let err = definitions::Error::new(
                ErrorCondition::Custom(Symbol::from(SERVER_BUSY)),
                Some(format!(
                    "The request was terminated because the entity is being throttled. Error code : 50009. (emulated on {topic})"
                )),
                None,
            );
            receiver.reject(info, err).await
        }
        Decision::Unauthorised => {
            shared.count(|c| c.unauthorized += 1);
            let err = definitions::Error::new(
                AmqpError::UnauthorizedAccess,
                Some("no valid token for this address on this connection".to_string()),
                None,
            );
            receiver.reject(info, err).await
        }
    }
}

fn app_str<'a>(app: Option<&'a ApplicationProperties>, key: &str) -> Option<&'a str> {
    match app?.get(key)? {
        SimpleValue::String(s) => Some(s.as_str()),
        SimpleValue::Symbol(s) => Some(s.as_str()),
        _ => None,
    }
}

/// The `$cbs` node: check each put-token and answer on the request's `reply-to` link.
async fn cbs_node(mut receiver: Receiver, shared: Arc<Shared>, state: Arc<ConnState>) {
    while let Ok(delivery) = receiver.recv::<Body<Value>>().await {
        if receiver.accept(&delivery).await.is_err() {
            break;
        }
        let msg = delivery.into_message();
        let app = msg.application_properties.as_ref();
        let props = msg.properties.as_ref();
        let reply_to = props.and_then(|p| p.reply_to.clone()).unwrap_or_default();
        let message_id = props.and_then(|p| p.message_id.clone());
        let (status, description) = if app_str(app, "operation") != Some("put-token") {
            (400, "operation must be put-token")
        } else {
            let token = match &msg.body {
                Body::Value(AmqpValue(Value::String(t))) => Some(t.as_str()),
                _ => None,
            };
            let name = app_str(app, "name").unwrap_or_default();
            check_token(token, name, &shared, &state)
        };
        shared.count(|c| {
            if status == 202 {
                c.cbs_ok += 1
            } else {
                c.cbs_denied += 1
            }
        });
        let properties = Properties {
            correlation_id: message_id,
            ..Properties::default()
        };
        let reply = Message::builder()
            .properties(properties)
            .application_properties(
                ApplicationProperties::builder()
                    .insert("status-code", SimpleValue::Int(status))
                    .insert("status-description", description.to_string())
                    .build(),
            )
            .value(Value::Null)
            .build();
        let route = state
            .replies
            .lock()
            .expect("replies lock")
            .get(&reply_to)
            .cloned();
        if let Some(route) = route {
            let _ = route.send(reply).await;
        }
    }
    let _ = receiver.close().await;
}

fn check_token(
    token: Option<&str>,
    name: &str,
    shared: &Shared,
    state: &ConnState,
) -> (i32, &'static str) {
    let Some(t) = token.and_then(SasToken::parse) else {
        return (401, "malformed SAS token");
    };
    if t.key_name != shared.cfg.key_name || !t.signed_by(&shared.cfg.key) {
        return (401, "InvalidSignature: the token has an invalid signature");
    }
    if t.expired_at(unix_now()) {
        return (401, "ExpiredToken: the token is expired");
    }
    if !name.starts_with(t.audience.as_str()) {
        return (
            401,
            "InvalidAudience: the token audience does not cover the name",
        );
    }
    state
        .tokens
        .lock()
        .expect("tokens lock")
        .insert(t.audience, t.expiry);
    (202, "Accepted")
}

/// The client's CBS receiver: send each reply pre-settled.
async fn cbs_replies(mut sender: Sender, mut rx: mpsc::Receiver<Message<AmqpValue<Value>>>) {
    while let Some(m) = rx.recv().await {
        let sendable = Sendable::builder().message(m).settled(true).build();
        if sender.send(sendable).await.is_err() {
            break;
        }
    }
    let _ = sender.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_of_addresses() {
        assert_eq!(topic_of("amqp://127.0.0.1:5672/orders"), "orders");
        assert_eq!(topic_of("amqps://ns.servicebus.windows.net/a/b"), "a/b");
        assert_eq!(topic_of("orders"), "orders");
        assert_eq!(topic_of("amqp://host"), "");
    }
}
