//! Topic naming and fan-in: which topic each (tenant, channel) publishes to.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// One topic as registered with the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    /// Index into the run's topic list (stats count per index).
    pub index: usize,
    /// The full topic name sent as `hub.topic`.
    pub name: Arc<str>,
    /// The tenant that owns the topic, when the layout gives topics an owner.
    pub tenant: Option<u32>,
}

/// How events fan into topics (`--topics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicLayout {
    /// One topic per (tenant, channel), as the identity publisher does.
    PerTenantChannel,
    /// One topic per tenant.
    PerTenant,
    /// One topic for everything.
    Shared,
    /// N topics; each (tenant, channel) pair maps to one of them, round-robin.
    Count(usize),
}

impl FromStr for TopicLayout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "per-tenant-channel" => Ok(TopicLayout::PerTenantChannel),
            "per-tenant" => Ok(TopicLayout::PerTenant),
            "shared" => Ok(TopicLayout::Shared),
            n => match n.parse::<usize>() {
                Ok(0) => Err("the topic count must be at least 1".into()),
                Ok(n) => Ok(TopicLayout::Count(n)),
                Err(_) => Err(format!(
                    "`{s}` is not per-tenant-channel, per-tenant, shared or a number"
                )),
            },
        }
    }
}

impl fmt::Display for TopicLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopicLayout::PerTenantChannel => f.write_str("per-tenant-channel"),
            TopicLayout::PerTenant => f.write_str("per-tenant"),
            TopicLayout::Shared => f.write_str("shared"),
            TopicLayout::Count(n) => write!(f, "{n}"),
        }
    }
}

impl TopicLayout {
    /// Number of topics for `tenants` tenants and `channels` channels.
    pub fn topic_count(self, tenants: u32, channels: usize) -> usize {
        match self {
            TopicLayout::PerTenantChannel => tenants as usize * channels,
            TopicLayout::PerTenant => tenants as usize,
            TopicLayout::Shared => 1,
            TopicLayout::Count(n) => n,
        }
    }

    /// The topic index an event of (tenant, channel index) goes to.
    pub fn topic_of(self, tenant: u32, channel: usize, channels: usize) -> usize {
        let pair = tenant as usize * channels + channel;
        match self {
            TopicLayout::PerTenantChannel => pair,
            TopicLayout::PerTenant => tenant as usize,
            TopicLayout::Shared => 0,
            TopicLayout::Count(n) => pair % n,
        }
    }
}

/// Tenant domain name for tenant index `t`.
pub fn tenant_name(t: u32) -> String {
    format!("tenant{t:04}")
}

/// Build the topic list. Names follow the identity publisher's scheme
/// `{tenant}.{org-uuid}.schema.WSO2.v1.event.{channel}` (docs/delivery.md, "Events").
pub fn build_topics(
    layout: TopicLayout,
    tenants: u32,
    channels: &[String],
    org_id: impl Fn(u32) -> String,
) -> Vec<Topic> {
    let mk = |index: usize, name: String, tenant: Option<u32>| Topic {
        index,
        name: name.into(),
        tenant,
    };
    match layout {
        TopicLayout::PerTenantChannel => (0..tenants)
            .flat_map(|t| channels.iter().map(move |c| (t, c)))
            .enumerate()
            .map(|(i, (t, c))| {
                mk(
                    i,
                    format!("{}.{}.schema.WSO2.v1.event.{c}", tenant_name(t), org_id(t)),
                    Some(t),
                )
            })
            .collect(),
        TopicLayout::PerTenant => (0..tenants)
            .map(|t| {
                mk(
                    t as usize,
                    format!("{}.{}.schema.WSO2.v1.event", tenant_name(t), org_id(t)),
                    Some(t),
                )
            })
            .collect(),
        TopicLayout::Shared => vec![mk(0, "hubload.shared.schema.WSO2.v1.event".into(), None)],
        TopicLayout::Count(n) => (0..n)
            .map(|i| mk(i, format!("hubload.topic{i:05}.schema.WSO2.v1.event"), None))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chans() -> Vec<String> {
        ["login", "registration"].map(String::from).to_vec()
    }

    #[test]
    fn parse_layouts() {
        assert_eq!("shared".parse(), Ok(TopicLayout::Shared));
        assert_eq!("per-tenant".parse(), Ok(TopicLayout::PerTenant));
        assert_eq!(
            "per-tenant-channel".parse(),
            Ok(TopicLayout::PerTenantChannel)
        );
        assert_eq!("100".parse(), Ok(TopicLayout::Count(100)));
        assert!("0".parse::<TopicLayout>().is_err());
        assert!("many".parse::<TopicLayout>().is_err());
    }

    #[test]
    fn every_event_maps_to_an_existing_topic() {
        for layout in [
            TopicLayout::PerTenantChannel,
            TopicLayout::PerTenant,
            TopicLayout::Shared,
            TopicLayout::Count(3),
        ] {
            let topics = build_topics(layout, 5, &chans(), |t| format!("org{t}"));
            assert_eq!(topics.len(), layout.topic_count(5, 2));
            let mut used = vec![false; topics.len()];
            for t in 0..5 {
                for c in 0..2 {
                    used[layout.topic_of(t, c, 2)] = true;
                }
            }
            assert!(used.iter().all(|u| *u), "{layout}: some topic unused");
        }
    }

    #[test]
    fn per_tenant_channel_names_follow_the_publisher() {
        let topics = build_topics(TopicLayout::PerTenantChannel, 2, &chans(), |_| "ORG".into());
        assert_eq!(
            &*topics[3].name,
            "tenant0001.ORG.schema.WSO2.v1.event.registration"
        );
        assert_eq!(topics[3].index, 3);
        assert_eq!(TopicLayout::PerTenantChannel.topic_of(1, 1, 2), 3);
    }
}
