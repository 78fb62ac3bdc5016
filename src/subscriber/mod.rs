//! The subscriber side of hubload: a fleet of callback endpoints that subscribes to the hub and checks every delivery.
//!
//! The publisher tells the [`DeliveryTracker`] what it sent and what was accepted; the
//! [`Fleet`] serves the callbacks, runs the subscription phase, matches every delivery to
//! its event, and closes each level into [`DeliveryLevelStats`]. The model (what each
//! counter means, the grace rule, the clocks) is in docs/delivery.md.

mod behaviour;
mod bitmap;
mod broker;
mod broker_dlq;
mod churn;
mod churn_stats;
mod churned_topics;
pub mod client;
mod delivery_hists;
mod fleet;
mod fleet_shared;
mod h2c;
mod live_levels;
mod live_view;
mod receive;
mod second_series;
mod server;
pub mod stages;
mod stats;
mod subscribe;
mod tracker;

pub use behaviour::{Answer, Behaviour};
pub use bitmap::{AtomicBitmap, SeqBitmap, MAX_SPAN};
pub use broker::{subscription_name, BrokerReceivers, BrokerSettings};
pub use churn::ChurnRunner;
pub use churn_stats::{ChurnSeconds, ChurnStats};
pub use churned_topics::TopicSubscribers;
pub use fleet::{Fleet, FleetConfig};
pub use fleet_shared::Intent;
pub use live_levels::{DeliveryNow, DeliveryRead};
pub use live_view::{DeliveryPart, DeliveryView};
pub use receive::{check, signature_ok, Check, SignatureKey};
pub use stats::{DeliveryCounts, DeliveryLevelStats, DeliverySeconds};
pub use subscribe::{PhaseSettings, SubscriptionPhase};
pub use tracker::{DeliveryTracker, SentEvent};
