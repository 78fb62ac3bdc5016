//! The Azure Service Bus target (docs/protocol.md §6): each event as one AMQP message to a Service
//! Bus topic through a shared [`SbSender`], its settlement mapped onto hubload's outcomes.
//!
//! The sender (pool of connections and links) is made once per run and shared by every level:
//! `--sb-connections` fixes the pool, so unlike the WebSub pool it does not follow the level.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hubload_servicebus::{OutgoingMessage, SbSender, SendOutcome};

use tokio_util::sync::CancellationToken;

use super::lanes::run_lanes;
use super::{PhaseResult, Target};
use crate::kind::SbTopics;
use crate::result::{Attempt, Class, ClosedReason, ConnErrorKind, Outcome, TimeoutKind};
use crate::workload::{Event, Topic, Workload};

/// The Service Bus target. Cheap to clone: everything is shared.
#[derive(Debug, Clone)]
pub struct ServiceBusTarget {
    sender: Arc<SbSender>,
    workload: Arc<Workload>,
    mapping: SbTopics,
    /// Topic links attached at once during [`Target::prepare`].
    prepare_concurrency: usize,
    /// Rejected sends per AMQP condition, over the whole run.
    conditions: Arc<Mutex<BTreeMap<String, u64>>>,
    /// The Service Bus topics [`Target::prepare`] found missing (`amqp:not-found`), sorted.
    missing: Arc<Mutex<Vec<String>>>,
}

/// The hubload outcome of a Service Bus send (README: "Outcome classes").
pub fn outcome_of(o: &SendOutcome) -> Outcome {
    match o {
        SendOutcome::Accepted => Outcome::Accepted,
        SendOutcome::Throttled => Outcome::Throttled,
        SendOutcome::Rejected { .. } => Outcome::Rejected,
        SendOutcome::Unauthorized => Outcome::Unauthorized,
        SendOutcome::NotFound => Outcome::NotFound,
        SendOutcome::TooLarge => Outcome::TooLarge,
        SendOutcome::Timeout => Outcome::Timeout(TimeoutKind::Response),
        SendOutcome::Connect => Outcome::ConnError(ConnErrorKind::Refused),
        // Refused too, by the proxy in front: its own reason, the status in the JTL row.
        SendOutcome::ProxyRefused { status } => Outcome::ProxyRefused(*status),
        SendOutcome::ConnectTimeout => Outcome::Timeout(TimeoutKind::Connect),
        SendOutcome::ConnectionError => Outcome::ConnError(ConnErrorKind::Closed),
        // The session or link the send was on ended under it: closed, as a connection is,
        // with a reason that says which.
        SendOutcome::SessionEnded { .. } => Outcome::AmqpClosed(ClosedReason::SessionEnded),
        SendOutcome::LinkDetached { .. } => Outcome::AmqpClosed(ClosedReason::LinkDetached),
    }
}

/// The application properties of an event's message.
fn properties<'a>(
    tenant: &'a str,
    application: &'a str,
    channel: &'a str,
) -> [(&'a str, &'a str); 3] {
    [
        ("tenant", tenant),
        ("application", application),
        ("channel", channel),
    ]
}

/// An event's message: its body, its `jti` as `message-id`, and its properties.
fn message<'a>(
    body: &'a [u8],
    jti: &'a str,
    properties: &'a [(&'a str, &'a str)],
) -> OutgoingMessage<'a> {
    OutgoingMessage {
        body,
        message_id: jti,
        content_type: "application/json",
        properties,
    }
}

/// The size the broker measures (the encoded AMQP message) of the largest message the run
/// sends with bodies of `body_len` bytes: the longest tenant and channel names, and a
/// `jti` and application id as hyphenated UUIDs.
pub fn largest_message_len(workload: &Workload, body_len: usize) -> u64 {
    let tenants = workload.config().tenants;
    let longest = |names: &mut dyn Iterator<Item = &str>| {
        names
            .max_by_key(|n| n.len())
            .unwrap_or_default()
            .to_string()
    };
    let tenant = longest(&mut (0..tenants).map(|t| &**workload.tenant_name(t)));
    let channel = longest(&mut workload.config().channels.iter().map(String::as_str));
    let uuid = uuid::Uuid::nil().hyphenated().to_string();
    let body = vec![b' '; body_len];
    message(&body, &uuid, &properties(&tenant, &uuid, &channel)).encoded_len()
}

/// The Service Bus topic a hubload topic is sent to.
pub fn sb_topic<'a>(mapping: &'a SbTopics, topic: &'a Topic) -> &'a str {
    match mapping {
        SbTopics::PerTopic => &topic.name,
        SbTopics::Single(name) => name,
    }
}

impl ServiceBusTarget {
    /// A target sending `workload`'s events through `sender`, mapped by `mapping`.
    pub fn new(
        sender: Arc<SbSender>,
        workload: Arc<Workload>,
        mapping: SbTopics,
        prepare_concurrency: usize,
    ) -> Self {
        ServiceBusTarget {
            sender,
            workload,
            mapping,
            prepare_concurrency: prepare_concurrency.max(1),
            conditions: Arc::default(),
            missing: Arc::default(),
        }
    }

    /// The Service Bus topics the prepare phase found missing, sorted.
    pub fn missing(&self) -> Vec<String> {
        self.missing.lock().expect("missing lock").clone()
    }

    /// The shared sender (for its reconnect and token counters).
    pub fn sender(&self) -> &SbSender {
        &self.sender
    }

    /// Rejected sends so far, per AMQP error condition.
    pub fn conditions(&self) -> BTreeMap<String, u64> {
        self.conditions.lock().expect("conditions lock").clone()
    }

    /// Map a send outcome, counting a rejection's condition.
    fn record(&self, o: &SendOutcome) -> Outcome {
        count_condition(&self.conditions, o);
        outcome_of(o)
    }
}

/// Count a rejection under its condition; other outcomes are not counted here.
fn count_condition(conditions: &Mutex<BTreeMap<String, u64>>, o: &SendOutcome) {
    if let SendOutcome::Rejected { condition } = o {
        *conditions
            .lock()
            .expect("conditions lock")
            .entry(condition.clone())
            .or_default() += 1;
    }
}

/// A one-line description of a failed link set-up, for the phase's first error: the class
/// where it says it all, else the sender's sentence (what failed and why).
fn describe(o: &SendOutcome, why: &str) -> String {
    match o {
        SendOutcome::Rejected { condition } => format!("rejected ({condition})"),
        SendOutcome::Unauthorized => "unauthorized (check the key and its Send right)".into(),
        SendOutcome::NotFound => "entity not found".into(),
        _ => why.to_string(),
    }
}

impl Target for ServiceBusTarget {
    type Scratch = ();

    /// Attach every Service Bus topic's link on every pooled connection (token put first), so
    /// the first level does not pay for it. One attempt per distinct Service Bus topic.
    async fn prepare(&self, topics: &[Topic], cancel: &CancellationToken) -> PhaseResult {
        let started = std::time::Instant::now();
        let mut names: Vec<&str> = topics.iter().map(|t| sb_topic(&self.mapping, t)).collect();
        names.sort_unstable();
        names.dedup();
        let results = run_lanes(&names, self.prepare_concurrency, cancel, |&name| {
            self.sender.prepare_why(name)
        })
        .await;
        let mut p = PhaseResult {
            topics: names.len() as u64,
            ..PhaseResult::default()
        };
        for (name, r) in results {
            let Some(r) = r else {
                p.counts.bump(Class::Cancelled);
                continue;
            };
            let (o, why) = r.err().unwrap_or((SendOutcome::Accepted, String::new()));
            if o == SendOutcome::NotFound {
                self.missing
                    .lock()
                    .expect("missing lock")
                    .push(name.to_string());
            }
            let class = outcome_of(&o).class();
            p.counts.bump(class);
            if class != Class::Accepted && p.first_error.is_none() {
                p.first_error = Some(format!("attach `{name}`: {}", describe(&o, &why)));
            }
        }
        p.duration_s = started.elapsed().as_secs_f64();
        p
    }

    // The Service Bus sender bounds each send itself (the servicebus crate), so `started` is
    // not needed here.
    async fn send(
        &self,
        topic: &Topic,
        event: &Event,
        _started: std::time::Instant,
        _scratch: &mut (),
    ) -> Attempt {
        let mut jti_buf = uuid::Uuid::encode_buffer();
        let jti = event.jti.as_hyphenated().encode_lower(&mut jti_buf);
        let mut app_buf = uuid::Uuid::encode_buffer();
        let app = event
            .application_id
            .as_hyphenated()
            .encode_lower(&mut app_buf);
        let properties = properties(
            self.workload.tenant_name(event.tenant),
            app,
            self.workload.channel_name(event.channel),
        );
        let msg = message(&event.body, jti, &properties);
        let r = self.sender.send(sb_topic(&self.mapping, topic), msg).await;
        Attempt {
            server_timing: crate::result::ServerTimings::NONE,
            retry_after: crate::result::RetryAfter::NONE,
            outcome: self.record(&r.outcome),
            status: 0,
            bytes_sent: r.bytes_sent,
            bytes_received: 0,
        }
    }

    /// Service Bus topics are not deleted after a run: nothing to do.
    async fn teardown(&self, _topics: &[Topic], _cancel: &CancellationToken) -> PhaseResult {
        PhaseResult::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_send_outcome_has_its_class_and_reason() {
        let rejected = SendOutcome::Rejected {
            condition: "com.microsoft:entity-disabled".into(),
        };
        let table = [
            (SendOutcome::Accepted, Class::Accepted, None),
            (SendOutcome::Throttled, Class::Throttled, None),
            (rejected, Class::Rejected, None),
            (SendOutcome::Unauthorized, Class::Unauthorized, None),
            (SendOutcome::NotFound, Class::NotFound, None),
            (SendOutcome::TooLarge, Class::TooLarge, None),
            (SendOutcome::Timeout, Class::TimeoutResponse, None),
            (SendOutcome::Connect, Class::ConnRefused, None),
            (
                SendOutcome::ProxyRefused { status: 407 },
                Class::ConnRefused,
                Some("conn_refused.proxy"),
            ),
            (SendOutcome::ConnectTimeout, Class::TimeoutConnect, None),
            (SendOutcome::ConnectionError, Class::ConnClosed, None),
            (
                SendOutcome::SessionEnded {
                    condition: "amqp:internal-error".into(),
                },
                Class::ConnClosed,
                Some("conn_closed.session_ended"),
            ),
            (
                SendOutcome::LinkDetached {
                    condition: "amqp:link:detach-forced".into(),
                },
                Class::ConnClosed,
                Some("conn_closed.link_detached"),
            ),
        ];
        for (o, class, reason) in table {
            let outcome = outcome_of(&o);
            assert_eq!(outcome.class(), class, "{o:?}");
            assert_eq!(outcome.reason().map(|r| r.name()), reason, "{o:?}");
        }
    }

    #[test]
    fn rejections_are_counted_per_condition() {
        let m = Mutex::default();
        let rejected = |c: &str| SendOutcome::Rejected {
            condition: c.into(),
        };
        for o in [
            rejected("com.microsoft:entity-disabled"),
            SendOutcome::Throttled,
            rejected("released"),
            rejected("com.microsoft:entity-disabled"),
            SendOutcome::Accepted,
        ] {
            count_condition(&m, &o);
        }
        assert_eq!(
            m.into_inner().unwrap(),
            BTreeMap::from([
                ("com.microsoft:entity-disabled".to_string(), 2),
                ("released".to_string(), 1)
            ])
        );
    }

    #[test]
    fn topic_mapping() {
        let t = Topic {
            index: 3,
            name: "acme.login".into(),
            tenant: Some(0),
        };
        assert_eq!(sb_topic(&SbTopics::PerTopic, &t), "acme.login");
        assert_eq!(sb_topic(&SbTopics::Single("events".into()), &t), "events");
    }
}
