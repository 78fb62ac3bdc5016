//! Entity management on the namespace, as the administration API (ATOM over HTTP) asks it:
//! create, look up, list and delete queues, topics and subscriptions. A delete removes the
//! entity at once; links on it are detached by their tasks, which ask [`Namespace::holds`]
//! and [`Namespace::holds_topic`] whenever the deletion signal moves.

use std::sync::Arc;

use super::{EntityError, Namespace, Topic};
use crate::emulator::store::{EntityProps, Store};

/// What a create found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The entity is new.
    New,
    /// An entity of that name was there already (Azure: 409 Conflict).
    Exists,
}

impl Namespace {
    /// Create a queue unless a queue or topic of that name exists.
    pub fn create_queue(&self, name: &str, props: EntityProps) -> Created {
        if self.queue(name).is_some() || self.topic(name).is_some() {
            return Created::Exists;
        }
        self.declare_queue(name, props);
        Created::New
    }

    /// Create a topic unless a queue or topic of that name exists.
    pub fn create_topic(&self, name: &str) -> Created {
        if self.queue(name).is_some() || self.topic(name).is_some() {
            return Created::Exists;
        }
        self.declare_topic(name);
        Created::New
    }

    /// Create a subscription of an existing topic (`None`: no such topic).
    pub fn create_subscription(
        &self,
        topic: &str,
        name: &str,
        props: EntityProps,
    ) -> Result<Option<Created>, EntityError> {
        let Some(t) = self.topic(topic) else {
            return Ok(None);
        };
        if t.subscription(name).is_some() {
            return Ok(Some(Created::Exists));
        }
        t.add_subscription(name, props)?;
        Ok(Some(Created::New))
    }

    /// The queue called `name`.
    pub fn get_queue(&self, name: &str) -> Option<Arc<Store>> {
        self.queue(name).map(|(s, _)| s)
    }

    /// The topic called `name`.
    pub fn get_topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topic(name)
    }

    /// Every queue, in name order.
    pub fn list_queues(&self) -> Vec<Arc<Store>> {
        let e = self.entities.read().expect("entities lock");
        e.queues.values().map(|(s, _)| s.clone()).collect()
    }

    /// Every topic, in name order.
    pub fn list_topics(&self) -> Vec<Arc<Topic>> {
        let e = self.entities.read().expect("entities lock");
        e.topics.values().cloned().collect()
    }

    /// Delete a queue; whether it existed.
    pub fn delete_queue(&self, name: &str) -> bool {
        let mut e = self.entities.write().expect("entities lock");
        e.queues.remove(&name.to_lowercase()).is_some()
    }

    /// Delete a topic and with it all its subscriptions; whether it existed.
    pub fn delete_topic(&self, name: &str) -> bool {
        let mut e = self.entities.write().expect("entities lock");
        e.topics.remove(&name.to_lowercase()).is_some()
    }

    /// Delete a subscription; whether it existed.
    pub fn delete_subscription(&self, topic: &str, name: &str) -> bool {
        let Some(t) = self.topic(topic) else {
            return false;
        };
        let mut subs = t.subscriptions.write().expect("subscriptions lock");
        subs.remove(&name.to_lowercase()).is_some()
    }

    /// Whether `store` (this very store, not one made since under its name) is still a queue
    /// or a subscription of a live topic.
    pub fn holds(&self, store: &Arc<Store>) -> bool {
        let e = self.entities.read().expect("entities lock");
        e.queues.values().any(|(q, _)| Arc::ptr_eq(q, store))
            || e.topics.values().any(|t| {
                t.subscriptions
                    .read()
                    .expect("subscriptions lock")
                    .values()
                    .any(|s| Arc::ptr_eq(s, store))
            })
    }

    /// Whether `topic` (this very topic) still exists.
    pub fn holds_topic(&self, topic: &Arc<Topic>) -> bool {
        let e = self.entities.read().expect("entities lock");
        e.topics.values().any(|t| Arc::ptr_eq(t, topic))
    }
}

impl Topic {
    /// The subscription called `name`.
    pub fn subscription(&self, name: &str) -> Option<Arc<Store>> {
        let subs = self.subscriptions.read().expect("subscriptions lock");
        subs.get(&name.to_lowercase()).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_get_list_delete() {
        let ns = Namespace::new(true, EntityProps::default());
        assert_eq!(ns.create_topic("Orders"), Created::New);
        assert_eq!(ns.create_topic("orders"), Created::Exists);
        assert_eq!(
            ns.create_queue("orders", EntityProps::default()),
            Created::Exists
        );
        assert_eq!(
            ns.create_subscription("orders", "s1", EntityProps::default()),
            Ok(Some(Created::New))
        );
        assert_eq!(
            ns.create_subscription("orders", "S1", EntityProps::default()),
            Ok(Some(Created::Exists))
        );
        assert_eq!(
            ns.create_subscription("nope", "s1", EntityProps::default()),
            Ok(None)
        );
        let store = ns.get_topic("ORDERS").unwrap().subscription("s1").unwrap();
        let topic = ns.get_topic("orders").unwrap();
        assert!(ns.holds(&store) && ns.holds_topic(&topic));
        assert_eq!(ns.list_topics().len(), 1);
        assert!(ns.exists("orders/Subscriptions/s1"));

        assert!(ns.delete_subscription("orders", "s1"));
        assert!(!ns.delete_subscription("orders", "s1"));
        assert!(!ns.holds(&store));
        assert!(!ns.exists("orders/Subscriptions/s1"));
        ns.create_subscription("orders", "s1", EntityProps::default())
            .unwrap();
        // A store made again under the old name is not the deleted one.
        assert!(!ns.holds(&store));

        assert!(ns.delete_topic("Orders"));
        assert!(!ns.delete_topic("Orders"));
        assert!(!ns.holds_topic(&topic));
        assert!(!ns.exists("orders"));
        assert!(ns.list_topics().is_empty());

        assert_eq!(ns.create_queue("q", EntityProps::default()), Created::New);
        let q = ns.get_queue("Q").unwrap();
        assert!(ns.holds(&q));
        assert!(ns.delete_queue("q"));
        assert!(!ns.holds(&q) && ns.list_queues().is_empty());
    }
}
