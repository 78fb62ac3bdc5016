//! The emulator's namespace: which queues, topics and subscriptions exist, how a link
//! address names one of them, and Azure's per-entity limits. Pure state, no AMQP.
//!
//! Names are matched case-insensitively, as Azure does. Without `--strict`, an unknown send
//! target becomes a topic, an unknown `topic/Subscriptions/name` becomes that subscription,
//! and an unknown bare receive address becomes a queue.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use super::store::{EntityProps, Msg, Store};

pub mod admin;

/// Azure's limit of subscriptions per topic.
pub const MAX_SUBSCRIPTIONS_PER_TOPIC: usize = 2_000;
/// Azure's limit of concurrent receive requests per entity (a topic's subscriptions summed):
/// the default of [`Namespace::receive_limit`]. A receiver link holds one request while its
/// client has credit outstanding (outbound.rs; docs/servicebus-emulator.md says why).
pub const MAX_RECEIVERS_PER_ENTITY: usize = 5_000;

/// What went wrong resolving an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityError {
    /// `amqp:not-found`: no such entity (strict mode), or the wrong kind.
    NotFound(String),
    /// `amqp:resource-limit-exceeded`: one of Azure's quotas.
    LimitExceeded(String),
}

/// A topic and its subscriptions.
#[derive(Debug)]
pub struct Topic {
    /// Its name as declared (or first used).
    pub name: String,
    subscriptions: RwLock<BTreeMap<String, Arc<Store>>>,
    receivers: Arc<AtomicUsize>,
}

impl Topic {
    /// Copy a message to every subscription whose rules take it (no rules: Azure's
    /// `$Default`, true); returns how many took it.
    pub fn publish(&self, msg: &Msg, now_ms: i64) -> usize {
        let subs = self.subscriptions.read().expect("subscriptions lock");
        let mut n = 0;
        for s in subs.values() {
            if super::filter::takes(&s.props.rules, msg) {
                s.enqueue(msg.clone(), now_ms);
                n += 1;
            }
        }
        n
    }

    /// The subscriptions, in name order.
    pub fn subscriptions(&self) -> Vec<Arc<Store>> {
        let subs = self.subscriptions.read().expect("subscriptions lock");
        subs.values().cloned().collect()
    }

    fn add_subscription(&self, name: &str, props: EntityProps) -> Result<Arc<Store>, EntityError> {
        let mut subs = self.subscriptions.write().expect("subscriptions lock");
        if let Some(s) = subs.get(&name.to_lowercase()) {
            return Ok(s.clone());
        }
        if subs.len() >= MAX_SUBSCRIPTIONS_PER_TOPIC {
            return Err(EntityError::LimitExceeded(format!(
                "topic {} already has {MAX_SUBSCRIPTIONS_PER_TOPIC} subscriptions, Azure's limit",
                self.name
            )));
        }
        let store = Arc::new(Store::new(
            format!("{}/Subscriptions/{name}", self.name),
            props,
        ));
        subs.insert(name.to_lowercase(), store.clone());
        Ok(store)
    }
}

/// Where a sender's messages go.
#[derive(Debug, Clone)]
pub enum SendTarget {
    /// A queue.
    Queue(Arc<Store>),
    /// A topic: copied to each subscription.
    Topic(Arc<Topic>),
}

/// Where a receiver takes messages from.
#[derive(Debug, Clone)]
pub struct ReceiveSource {
    /// The queue or subscription.
    pub store: Arc<Store>,
    /// Its dead-letter sub-queue (`…/$deadletterqueue`) rather than the store itself.
    pub dead_letter: bool,
    /// The receive-request counter of the entity (the topic for a subscription).
    receivers: Arc<AtomicUsize>,
    /// The namespace's limit of that counter.
    limit: usize,
}

/// One attached receiver, counted against the entity's receive limit until dropped.
#[derive(Debug)]
pub struct ReceiverSlot(Arc<AtomicUsize>);

impl Drop for ReceiverSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ReceiveSource {
    /// Count one more receive request on the entity, or refuse it over the limit (Azure's
    /// 5,000 unless configured).
    pub fn claim(&self) -> Result<ReceiverSlot, EntityError> {
        let n = self.receivers.fetch_add(1, Ordering::Relaxed);
        let slot = ReceiverSlot(self.receivers.clone());
        if n >= self.limit {
            return Err(EntityError::LimitExceeded(format!(
                "The number of concurrent receive requests on {} has reached its limit of {}.",
                self.store.path, self.limit
            )));
        }
        Ok(slot)
    }
}

#[derive(Debug, Default)]
struct Entities {
    queues: BTreeMap<String, (Arc<Store>, Arc<AtomicUsize>)>,
    topics: BTreeMap<String, Arc<Topic>>,
}

/// The namespace: every entity, and whether unknown ones are refused.
#[derive(Debug)]
pub struct Namespace {
    /// Refuse undeclared entities with `amqp:not-found`.
    pub strict: bool,
    /// Settings of entities created on first use.
    pub defaults: EntityProps,
    /// Concurrent receive requests allowed per entity (a topic's subscriptions summed).
    pub receive_limit: usize,
    entities: RwLock<Entities>,
}

/// An address split into its entity parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityPath {
    /// The queue or topic name.
    pub entity: String,
    /// The subscription, when the address is `topic/Subscriptions/name`.
    pub subscription: Option<String>,
    /// The address ends in `/$deadletterqueue`.
    pub dead_letter: bool,
    /// The address ends in `/$management`.
    pub management: bool,
}

/// The path of a link address: what follows `scheme://host[:port]/`, or the address itself
/// (JS attaches to a bare `entity`, Python to `amqps://host/entity`).
pub fn path_of(address: &str) -> &str {
    let path = match address.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, p)| p),
        None => address,
    };
    path.trim_matches('/')
}

/// Split an address into entity, subscription and sub-queue.
pub fn parse_address(address: &str) -> EntityPath {
    let mut path = path_of(address).to_string();
    let mut strip = |suffix: &str| {
        let hit = path.len() > suffix.len()
            && path[path.len() - suffix.len()..].eq_ignore_ascii_case(suffix);
        if hit {
            path.truncate(path.len() - suffix.len());
        }
        hit
    };
    let management = strip("/$management");
    let dead_letter = strip("/$deadletterqueue");
    let lower = path.to_lowercase();
    let (entity, subscription) = match lower.find("/subscriptions/") {
        Some(i) => (
            path[..i].to_string(),
            Some(path[i + "/subscriptions/".len()..].to_string()),
        ),
        None => (path, None),
    };
    EntityPath {
        entity,
        subscription,
        dead_letter,
        management,
    }
}

impl Namespace {
    /// An empty namespace.
    pub fn new(strict: bool, defaults: EntityProps) -> Self {
        Namespace {
            strict,
            defaults,
            receive_limit: MAX_RECEIVERS_PER_ENTITY,
            entities: RwLock::new(Entities::default()),
        }
    }

    /// Declare a queue (from `Config.json`).
    pub fn declare_queue(&self, name: &str, props: EntityProps) {
        let mut e = self.entities.write().expect("entities lock");
        e.queues.entry(name.to_lowercase()).or_insert_with(|| {
            (
                Arc::new(Store::new(name.to_string(), props)),
                Arc::default(),
            )
        });
    }

    /// Declare a topic (from `Config.json`).
    pub fn declare_topic(&self, name: &str) -> Arc<Topic> {
        let mut e = self.entities.write().expect("entities lock");
        e.topics
            .entry(name.to_lowercase())
            .or_insert_with(|| {
                Arc::new(Topic {
                    name: name.to_string(),
                    subscriptions: RwLock::default(),
                    receivers: Arc::default(),
                })
            })
            .clone()
    }

    /// Declare a subscription of a declared topic (from `Config.json`).
    pub fn declare_subscription(
        &self,
        topic: &Arc<Topic>,
        name: &str,
        props: EntityProps,
    ) -> Result<(), EntityError> {
        topic.add_subscription(name, props).map(|_| ())
    }

    fn queue(&self, name: &str) -> Option<(Arc<Store>, Arc<AtomicUsize>)> {
        let e = self.entities.read().expect("entities lock");
        e.queues.get(&name.to_lowercase()).cloned()
    }

    fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        let e = self.entities.read().expect("entities lock");
        e.topics.get(&name.to_lowercase()).cloned()
    }

    fn not_found(what: &str, name: &str) -> EntityError {
        EntityError::NotFound(format!(
            "The messaging entity '{name}' could not be found ({what} not declared)."
        ))
    }

    /// The entity a sender attached to `address` sends to.
    pub fn send_target(&self, address: &str) -> Result<SendTarget, EntityError> {
        let p = parse_address(address);
        if p.subscription.is_some() || p.dead_letter || p.entity.is_empty() {
            return Err(Self::not_found(
                "sending needs a queue or topic:",
                &p.entity,
            ));
        }
        if let Some((q, _)) = self.queue(&p.entity) {
            return Ok(SendTarget::Queue(q));
        }
        if let Some(t) = self.topic(&p.entity) {
            return Ok(SendTarget::Topic(t));
        }
        if self.strict {
            return Err(Self::not_found("queue or topic", &p.entity));
        }
        Ok(SendTarget::Topic(self.declare_topic(&p.entity)))
    }

    /// The queue or subscription a receiver attached to `address` reads.
    pub fn receive_source(&self, address: &str) -> Result<ReceiveSource, EntityError> {
        let p = parse_address(address);
        if p.entity.is_empty() {
            return Err(Self::not_found("entity", ""));
        }
        let dead_letter = p.dead_letter;
        match p.subscription {
            Some(sub) => {
                let topic = match self.topic(&p.entity) {
                    Some(t) => t,
                    None if self.strict => return Err(Self::not_found("topic", &p.entity)),
                    None => self.declare_topic(&p.entity),
                };
                let existing = topic
                    .subscriptions
                    .read()
                    .expect("subscriptions lock")
                    .get(&sub.to_lowercase())
                    .cloned();
                let store = match existing {
                    Some(s) => s,
                    None if self.strict => {
                        return Err(Self::not_found(
                            "subscription",
                            &format!("{}/Subscriptions/{sub}", topic.name),
                        ))
                    }
                    None => topic.add_subscription(&sub, self.defaults.clone())?,
                };
                Ok(ReceiveSource {
                    store,
                    dead_letter,
                    receivers: topic.receivers.clone(),
                    limit: self.receive_limit,
                })
            }
            None => {
                if let Some((store, receivers)) = self.queue(&p.entity) {
                    return Ok(ReceiveSource {
                        store,
                        dead_letter,
                        receivers,
                        limit: self.receive_limit,
                    });
                }
                if self.strict || self.topic(&p.entity).is_some() {
                    return Err(Self::not_found("queue", &p.entity));
                }
                self.declare_queue(&p.entity, self.defaults.clone());
                self.receive_source(address)
            }
        }
    }

    /// Whether `address` names an entity that exists (a namespace-wide address does); what a
    /// strict CBS put-token checks before answering 404 as Azure does.
    pub fn exists(&self, address: &str) -> bool {
        let p = parse_address(address);
        if p.entity.is_empty() {
            return true;
        }
        match (&p.subscription, self.topic(&p.entity)) {
            (Some(sub), Some(t)) => t
                .subscriptions
                .read()
                .expect("subscriptions lock")
                .contains_key(&sub.to_lowercase()),
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (None, None) => self.queue(&p.entity).is_some(),
        }
    }

    /// Concurrent receive requests counted now on queue or topic `name`.
    pub fn receive_requests(&self, name: &str) -> Option<usize> {
        let n = match (self.queue(name), self.topic(name)) {
            (Some((_, q)), _) => q,
            (None, Some(t)) => t.receivers.clone(),
            (None, None) => return None,
        };
        Some(n.load(Ordering::Relaxed))
    }

    /// Every queue and subscription, by path.
    pub fn stores(&self) -> Vec<Arc<Store>> {
        let e = self.entities.read().expect("entities lock");
        let mut all: Vec<Arc<Store>> = e.queues.values().map(|(s, _)| s.clone()).collect();
        for t in e.topics.values() {
            all.extend(t.subscriptions());
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_the_same_entity_in_every_form() {
        for a in [
            "amqps://ns.servicebus.windows.net/orders",
            "amqp://127.0.0.1:5672/orders",
            "orders",
            "/orders/",
        ] {
            assert_eq!(parse_address(a).entity, "orders", "{a}");
        }
        let p = parse_address("amqp://h:1/T1/Subscriptions/S1/$DeadLetterQueue");
        assert_eq!(
            (
                p.entity.as_str(),
                p.subscription.as_deref(),
                p.dead_letter,
                p.management
            ),
            ("T1", Some("S1"), true, false)
        );
        let p = parse_address("t1/subscriptions/s1/$management");
        assert_eq!(
            (p.subscription.as_deref(), p.management),
            (Some("s1"), true)
        );
    }

    #[test]
    fn strict_refuses_and_lenient_creates() {
        let strict = Namespace::new(true, EntityProps::default());
        let t = strict.declare_topic("Orders");
        strict
            .declare_subscription(&t, "all", EntityProps::default())
            .unwrap();
        assert!(matches!(
            strict.send_target("orders"),
            Ok(SendTarget::Topic(_))
        ));
        assert!(strict.receive_source("ORDERS/Subscriptions/ALL").is_ok());
        assert!(matches!(
            strict.send_target("other"),
            Err(EntityError::NotFound(_))
        ));
        assert!(matches!(
            strict.receive_source("orders/Subscriptions/none"),
            Err(EntityError::NotFound(_))
        ));

        let lenient = Namespace::new(false, EntityProps::default());
        assert!(matches!(lenient.send_target("t"), Ok(SendTarget::Topic(_))));
        lenient.receive_source("t/Subscriptions/a").unwrap();
        lenient.receive_source("q").unwrap();
        assert!(matches!(lenient.send_target("q"), Ok(SendTarget::Queue(_))));
        assert_eq!(lenient.stores().len(), 2);
    }

    #[test]
    fn topic_send_is_copied_to_every_subscription() {
        let ns = Namespace::new(false, EntityProps::default());
        for s in ["a", "b", "c"] {
            ns.receive_source(&format!("t/Subscriptions/{s}")).unwrap();
        }
        let Ok(SendTarget::Topic(t)) = ns.send_target("t") else {
            panic!("a topic")
        };
        let msg: Msg = Arc::new(
            fe2o3_amqp::types::messaging::Message::builder()
                .body(fe2o3_amqp::types::messaging::Body::Value(
                    fe2o3_amqp::types::messaging::AmqpValue(
                        fe2o3_amqp::types::primitives::Value::Null,
                    ),
                ))
                .build(),
        );
        assert_eq!(t.publish(&msg, 0), 3);
        let enq: Vec<u64> = ns.stores().iter().map(|s| s.stats(0).enqueued).collect();
        assert_eq!(enq, vec![1, 1, 1]);
    }

    #[test]
    fn azure_limits() {
        let ns = Namespace::new(false, EntityProps::default());
        let t = ns.declare_topic("t");
        for i in 0..MAX_SUBSCRIPTIONS_PER_TOPIC {
            ns.declare_subscription(&t, &format!("s{i}"), EntityProps::default())
                .unwrap();
        }
        assert!(matches!(
            ns.declare_subscription(&t, "one-more", EntityProps::default()),
            Err(EntityError::LimitExceeded(_))
        ));
        let src = ns.receive_source("t/Subscriptions/s0").unwrap();
        let slots: Vec<_> = (0..MAX_RECEIVERS_PER_ENTITY)
            .map(|_| src.claim().unwrap())
            .collect();
        // Summed over the topic's subscriptions: another subscription is over the limit too.
        let other = ns.receive_source("t/Subscriptions/s1").unwrap();
        assert!(matches!(other.claim(), Err(EntityError::LimitExceeded(_))));
        drop(slots);
        assert!(other.claim().is_ok());
    }
}
