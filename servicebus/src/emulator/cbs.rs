//! Claims-based security as Azure does it: the `$cbs` node checks each put-token, keeps the
//! connection's tokens, and authorises link addresses by entity; request/response replies
//! (CBS and `$management`) are routed to the client's reply link even without `reply-to`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use fe2o3_amqp::types::messaging::{AmqpValue, ApplicationProperties, Body, Message, Properties};
use fe2o3_amqp::types::primitives::{SimpleValue, Value};
use fe2o3_amqp::{Receiver, Sendable, Sender};
use tokio::sync::mpsc;

use super::namespace::path_of;
use super::shared::Shared;
use crate::sas::SasToken;

/// A reply on its way to a client's reply link.
pub type Reply = Message<AmqpValue<Value>>;

/// A client's reply link: its target address and the channel to its task.
type ReplyLink = (String, mpsc::Sender<Reply>);

/// Per-connection state: the tokens put on it and the reply links of its nodes.
#[derive(Debug, Default)]
pub struct ConnState {
    /// Token audience (entity path, lower case; "" = the namespace) → expiry (unix s).
    tokens: Mutex<HashMap<String, u64>>,
    /// Node (`$cbs`, `entity/$management`, lower case) → reply links (target, channel),
    /// newest last.
    replies: Mutex<HashMap<String, Vec<ReplyLink>>>,
}

/// The entity path a token audience or link address names, for matching: lower case, no
/// scheme or host (Python's audience is `sb://host/e` with a target `amqps://host/e`; JS's
/// target is a bare `e`).
pub fn entity_key(address: &str) -> String {
    path_of(address).to_lowercase()
}

/// Whether a token for `audience` covers `address`: the same entity, or an entity under it.
pub fn covers(audience: &str, address: &str) -> bool {
    let (a, b) = (entity_key(audience), entity_key(address));
    a.is_empty() || b == a || b.starts_with(&format!("{a}/"))
}

impl ConnState {
    /// Whether the connection holds an unexpired token covering `address`.
    pub fn authorised(&self, address: &str) -> bool {
        let now = unix_now();
        let key = entity_key(address);
        self.tokens
            .lock()
            .expect("tokens lock")
            .iter()
            .any(|(aud, &exp)| {
                exp > now && (aud.is_empty() || key == *aud || key.starts_with(&format!("{aud}/")))
            })
    }

    /// Register a client's reply link attached from `node` with target `target`.
    pub fn add_reply_link(&self, node: &str, target: String, tx: mpsc::Sender<Reply>) {
        let mut r = self.replies.lock().expect("replies lock");
        let links = r.entry(node.to_lowercase()).or_default();
        links.retain(|(_, t)| !t.is_closed());
        links.push((target, tx));
    }

    /// The reply link for a request to `node`: the one whose target is `reply_to`, else the
    /// newest one from that node (Azure answers a request without `reply-to`, or to a reply
    /// link without a target, on the client's receiving link of the same node).
    pub fn reply_route(&self, node: &str, reply_to: Option<&str>) -> Option<mpsc::Sender<Reply>> {
        let r = self.replies.lock().expect("replies lock");
        let links = r.get(&node.to_lowercase())?;
        let mut live = links.iter().filter(|(_, t)| !t.is_closed());
        if let Some(rt) = reply_to.filter(|s| !s.is_empty()) {
            if let Some((_, tx)) = live.clone().find(|(t, _)| t == rt) {
                return Some(tx.clone());
            }
        }
        live.next_back().map(|(_, tx)| tx.clone())
    }
}

/// Seconds since the epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A string application property.
pub fn app_str<'a>(app: Option<&'a ApplicationProperties>, key: &str) -> Option<&'a str> {
    match app?.get(key)? {
        SimpleValue::String(s) => Some(s.as_str()),
        SimpleValue::Symbol(s) => Some(s.as_str()),
        _ => None,
    }
}

/// The `$cbs` node: check each put-token and answer on the client's `$cbs` reply link.
pub async fn cbs_node(mut receiver: Receiver, shared: Arc<Shared>, state: Arc<ConnState>) {
    while let Ok(delivery) = receiver.recv::<Body<Value>>().await {
        if receiver.accept(&delivery).await.is_err() {
            break;
        }
        let msg = delivery.into_message();
        let app = msg.application_properties.as_ref();
        let props = msg.properties.as_ref();
        let reply_to = props.and_then(|p| p.reply_to.clone());
        let message_id = props.and_then(|p| p.message_id.clone());
        let (status, description) = if app_str(app, "operation") != Some("put-token") {
            (400, "operation must be put-token".to_string())
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
            c.not_found += u64::from(status == 404);
        });
        let reply = Message::builder()
            .properties(Properties {
                correlation_id: message_id,
                ..Properties::default()
            })
            .application_properties(
                ApplicationProperties::builder()
                    .insert("status-code", SimpleValue::Int(status))
                    .insert("status-description", description)
                    .build(),
            )
            .value(Value::Null)
            .build();
        if let Some(route) = state.reply_route("$cbs", reply_to.as_deref()) {
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
) -> (i32, String) {
    let Some(t) = token.and_then(SasToken::parse) else {
        return (401, "malformed SAS token".into());
    };
    if t.key_name != shared.cfg.key_name || !t.signed_by(&shared.cfg.key) {
        return (
            401,
            "InvalidSignature: the token has an invalid signature".into(),
        );
    }
    if t.expired_at(unix_now()) {
        return (401, "ExpiredToken: the token is expired".into());
    }
    if !covers(&t.audience, name) {
        return (
            401,
            "InvalidAudience: the token audience does not cover the name".into(),
        );
    }
    // Azure checks the token, then whether the entity exists: a put-token for an entity that
    // does not exist is answered 404 with this description (clients report "Put token failed.
    // status-code: 404"). The JS SDK's sender raises its not-found error only from that
    // answer (it matches the description's wording); Python raises its authentication error.
    // Without --strict every entity exists: it is made on first use.
    if shared.ns.strict && !shared.ns.exists(name) {
        return (
            404,
            format!(
                "The messaging entity '{name}' could not be found. To know more visit https://aka.ms/sbResourceMgrExceptions."
            ),
        );
    }

    state
        .tokens
        .lock()
        .expect("tokens lock")
        .insert(entity_key(&t.audience), t.expiry);
    (202, "Accepted".into())
}

/// A client's reply link (of `$cbs` or a `$management` node): send each reply pre-settled,
/// without waiting for an outcome. Python's management link attaches with snd-settle-mode
/// `unsettled` (so the reply goes unsettled whatever we ask) and never settles a reply:
/// waiting for that outcome would block every later reply on the link.
pub async fn reply_link(mut sender: Sender, mut rx: mpsc::Receiver<Reply>) {
    while let Some(m) = rx.recv().await {
        let sendable = Sendable::builder().message(m).settled(true).build();
        if sender.send_batchable(sendable).await.is_err() {
            break;
        }
    }
    let _ = sender.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audiences_match_by_entity() {
        assert!(covers(
            "sb://127.0.0.1:5672/orders",
            "amqps://127.0.0.1:5672/orders"
        ));
        assert!(covers("sb://127.0.0.1/orders", "orders"));
        assert!(covers("sb://h/Orders", "amqp://h/orders/Subscriptions/s1"));
        assert!(covers("sb://h/", "anything"));
        assert!(!covers("sb://h/orders", "orders2"));
        assert!(!covers("sb://h/orders", "other/orders"));
    }

    #[test]
    fn replies_route_without_reply_to() {
        let s = ConnState::default();
        assert!(s.reply_route("$cbs", None).is_none());
        let (a, _ra) = mpsc::channel(1);
        let (b, _rb) = mpsc::channel(1);
        s.add_reply_link("$cbs", "cbs-a".into(), a.clone());
        s.add_reply_link("$cbs", String::new(), b.clone());
        assert!(s
            .reply_route("$cbs", Some("cbs-a"))
            .unwrap()
            .same_channel(&a));
        assert!(s.reply_route("$cbs", None).unwrap().same_channel(&b));
        assert!(s
            .reply_route("$CBS", Some("unknown"))
            .unwrap()
            .same_channel(&b));
        assert!(s.reply_route("q/$management", None).is_none());
    }
}
