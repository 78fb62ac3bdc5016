//! One event, and the `Workload` that produces event `seq` deterministically from the seed.

use std::str::FromStr;
use std::sync::Arc;

use super::body;
use super::body::ids::{Ids, CACHED_IDS};
use super::body::template::{Templates, TEMPLATE_BYTES};
use super::identity;
use super::rng::SplitMix64;
use super::surge::{is_surge_seq, Surge, SurgePicks};
use super::topics::{build_topics, tenant_name, Topic, TopicLayout};

/// One event to publish. Everything but the send time (`iat`, `sent_us`) is a pure function
/// of (seed, seq), and the body names (seq, send time): see [`Workload::parse_identity`].
#[derive(Debug, Clone)]
pub struct Event {
    /// Sequence number within the run (0-based), unique across workers and shards.
    pub seq: u64,
    /// Tenant index.
    pub tenant: u32,
    /// Service provider (application) index within the tenant.
    pub application: u32,
    /// User index within the tenant.
    pub user: u32,
    /// Channel index into the workload's channel list.
    pub channel: usize,
    /// Index of the topic it is published to.
    pub topic: usize,
    /// The event's unique `jti`: (run tag, seq), see `identity`.
    pub jti: uuid::Uuid,
    /// The application's id (a UUID, stable per tenant and SP).
    pub application_id: uuid::Uuid,
    /// The send time the body names (wall clock, µs since the Unix epoch): with `seq`, what
    /// [`Workload::event_at`] needs to render the same body again (the topic server does).
    pub sent_us: u64,
    /// Whether the body describes a failed login/registration.
    pub failed: bool,
    /// The JSON body; empty for an event made by [`Workload::event_unrendered`].
    pub body: Vec<u8>,
}

/// How the next (tenant, SP, user, channel) is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Every tenant, SP, user and channel equally likely.
    Uniform,
    /// Tenants by Zipf (s = 1): a few tenants produce most events, as in real multi-tenant systems.
    Zipf,
}

impl FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "uniform" => Ok(Distribution::Uniform),
            "zipf" => Ok(Distribution::Zipf),
            _ => Err(format!("`{s}` is not uniform or zipf")),
        }
    }
}

/// The workload's shape, validated by the config layer.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// Tenants (≥ 1).
    pub tenants: u32,
    /// Service providers (applications) per tenant (≥ 1).
    pub sps: u32,
    /// Users per tenant (≥ 1).
    pub users: u32,
    /// Channel names (≥ 1), each `[A-Za-z0-9_-]+`.
    pub channels: Vec<String>,
    /// Topic fan-in.
    pub layout: TopicLayout,
    /// Pad bodies to at least this many bytes.
    pub payload_bytes: Option<usize>,
    /// Seed of the whole stream.
    pub seed: u64,
    /// How publishers are picked.
    pub distribution: Distribution,
}

/// Topics plus the deterministic event generator. Cheap to share (`&self` only).
#[derive(Debug)]
pub struct Workload {
    cfg: WorkloadConfig,
    topics: Vec<Topic>,
    tenant_names: Vec<Arc<str>>,
    channels: Vec<Arc<str>>,
    /// Cumulative Zipf weights over tenants (empty for uniform).
    zipf_cdf: Vec<f64>,
    /// `--surge`: who publishes the extra events (`None` without).
    surge: Option<SurgePicks>,
    /// The run tag every `jti` carries.
    tag: u64,
    /// The first 8 bytes of every `jti` of this run (the tag, with the UUID's version), and
    /// their 19 characters of its hyphenated form: each event's is hex-encoded from byte 8 on.
    jti_head: ([u8; 8], [u8; 19]),
    /// `SplitMix64::stream` of the seed (the events' draws) and of the stable ids' seed: one
    /// hash per event and id fewer.
    draws: u64,
    ids: u64,
    /// Body templates of the first tenants (`body/template.rs`).
    templates: Templates,
    /// Users' ids (only their hex forms are used) and applications' ids, of the first tenants.
    user_ids: Ids,
    app_ids: Ids,
}

/// The random picks of one event, before its body is rendered.
struct Draw {
    tenant: u32,
    application: u32,
    user: u32,
    channel: usize,
    failed: bool,
}

/// The seed stable ids are drawn from, as events are from the workload's.
fn id_seed(seed: u64) -> u64 {
    seed ^ 0x5eed_0000_0000_0000
}

/// The key of (kind, a, b) in the stable ids' stream.
fn id_key(kind: u64, a: u32, b: u32) -> u64 {
    (kind << 56) ^ (u64::from(a) << 24) ^ u64::from(b)
}

/// A stable id for (seed, kind, a, b): org ids, application ids and user ids.
fn stable_uuid(seed: u64, kind: u64, a: u32, b: u32) -> uuid::Uuid {
    SplitMix64::for_event(id_seed(seed), id_key(kind, a, b)).uuid()
}

impl Workload {
    /// Build topics and the generator.
    pub fn new(cfg: WorkloadConfig) -> Self {
        let seed = cfg.seed;
        let topics = build_topics(cfg.layout, cfg.tenants, &cfg.channels, |t| {
            stable_uuid(seed, 1, t, 0).to_string()
        });
        let tenant_names: Vec<Arc<str>> = (0..cfg.tenants).map(|t| tenant_name(t).into()).collect();
        let channels: Vec<Arc<str>> = cfg.channels.iter().map(|c| c.as_str().into()).collect();
        let zipf_cdf = match cfg.distribution {
            Distribution::Uniform => Vec::new(),
            Distribution::Zipf => {
                let mut acc = 0.0;
                let mut cdf: Vec<f64> = (1..=cfg.tenants)
                    .map(|k| {
                        acc += 1.0 / f64::from(k);
                        acc
                    })
                    .collect();
                let total = acc;
                cdf.iter_mut().for_each(|c| *c /= total);
                cdf
            }
        };
        let tag = identity::run_tag(cfg.seed);
        let first = identity::jti(tag, 0);
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&first.as_bytes()[..8]);
        let mut chars = [0u8; 19];
        chars.copy_from_slice(&body::hyphenated(first)[..19]);
        let templates = Templates::new(
            &tenant_names,
            &channels,
            cfg.users,
            cfg.payload_bytes,
            TEMPLATE_BYTES,
        );
        let ids = SplitMix64::stream(id_seed(cfg.seed));
        let id = |kind| move |a, b| SplitMix64::at(ids, id_key(kind, a, b)).uuid();
        let user_ids = Ids::new(cfg.tenants, cfg.users, CACHED_IDS, id(3));
        let app_ids = Ids::new(cfg.tenants, cfg.sps, CACHED_IDS, id(2));
        Workload {
            tag,
            jti_head: (bytes, chars),
            draws: SplitMix64::stream(cfg.seed),
            ids,
            templates,
            user_ids,
            app_ids,
            cfg,
            topics,
            tenant_names,
            channels,
            zipf_cdf,
            surge: None,
        }
    }

    /// This workload with `surge`'s extra events (their own sequence space: see `surge`).
    pub fn with_surge(mut self, surge: Option<Surge>) -> Self {
        let picks = surge.map(|s| SurgePicks::new(s, |t| self.designed_share(t)));
        self.surge = picks;
        self
    }

    /// The surge, when there is one.
    pub fn surge(&self) -> Option<&SurgePicks> {
        self.surge.as_ref()
    }

    /// Tenant `t`'s designed share of the level's own events: 1/tenants (uniform), or its
    /// Zipf weight.
    pub fn designed_share(&self, t: u32) -> f64 {
        let t = t as usize;
        match self.zipf_cdf.get(t) {
            None if self.zipf_cdf.is_empty() => 1.0 / f64::from(self.cfg.tenants),
            None => 0.0,
            Some(c) => c - t.checked_sub(1).map_or(0.0, |p| self.zipf_cdf[p]),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &WorkloadConfig {
        &self.cfg
    }

    /// Every topic, in index order.
    pub fn topics(&self) -> &[Topic] {
        &self.topics
    }

    /// Tenant domain name.
    pub fn tenant_name(&self, tenant: u32) -> &Arc<str> {
        &self.tenant_names[tenant as usize]
    }

    /// Channel name.
    pub fn channel_name(&self, channel: usize) -> &Arc<str> {
        &self.channels[channel]
    }

    fn pick_tenant(&self, rng: &mut SplitMix64) -> u32 {
        if self.zipf_cdf.is_empty() {
            rng.below(u64::from(self.cfg.tenants)) as u32
        } else {
            let u = rng.unit();
            let i = self.zipf_cdf.partition_point(|c| *c <= u);
            i.min(self.zipf_cdf.len() - 1) as u32
        }
    }

    /// [`stable_uuid`] of this workload's seed.
    fn stable_uuid(&self, kind: u64, a: u32, b: u32) -> uuid::Uuid {
        SplitMix64::at(self.ids, id_key(kind, a, b)).uuid()
    }

    fn draw(&self, seq: u64) -> Draw {
        let mut rng = SplitMix64::at(self.draws, seq);
        let drawn = self.pick_tenant(&mut rng);
        // A surge's extra event goes to a surging tenant; the rest is drawn as for any.
        let tenant = match &self.surge {
            Some(s) if is_surge_seq(seq) => s.tenant(seq),
            _ => drawn,
        };
        Draw {
            tenant,
            application: rng.below(u64::from(self.cfg.sps)) as u32,
            user: rng.below(u64::from(self.cfg.users)) as u32,
            channel: rng.below(self.channels.len() as u64) as usize,
            failed: rng.below(10) == 0,
        }
    }

    /// The index of the topic event `seq` goes to, without rendering its body.
    pub fn topic_of_seq(&self, seq: u64) -> usize {
        let d = self.draw(seq);
        self.cfg
            .layout
            .topic_of(d.tenant, d.channel, self.channels.len())
    }

    /// Event number `seq`, stamped with `iat_ms` (wall clock, ms since the Unix epoch).
    /// The same as [`Workload::event_at`] with `sent_us = iat_ms · 1000`.
    pub fn event(&self, seq: u64, iat_ms: u64) -> Event {
        self.event_at(seq, iat_ms.saturating_mul(1000))
    }

    /// Event number `seq`, sent at `sent_us` (wall clock, µs since the Unix epoch).
    pub fn event_at(&self, seq: u64, sent_us: u64) -> Event {
        self.event_into(seq, sent_us, Vec::new())
    }

    /// [`event_at`](Self::event_at) with its body rendered into `buf` (its allocation reused:
    /// the hot path hands back the previous event's body).
    pub fn event_into(&self, seq: u64, sent_us: u64, mut buf: Vec<u8>) -> Event {
        let mut e = self.event_unrendered(seq, sent_us);
        self.render_body(&e, &mut buf);
        e.body = buf;
        e
    }

    /// [`event_at`](Self::event_at) without its body (left empty), for a target that renders
    /// it with [`render_body`](Self::render_body) straight into the request it writes: one
    /// buffer per thread instead of one per event in flight, each a cold cache miss at a
    /// thousand connections.
    pub fn event_unrendered(&self, seq: u64, sent_us: u64) -> Event {
        let Draw {
            tenant,
            application,
            user,
            channel,
            failed,
        } = self.draw(seq);
        Event {
            seq,
            tenant,
            application,
            user,
            channel,
            topic: self
                .cfg
                .layout
                .topic_of(tenant, channel, self.channels.len()),
            jti: identity::jti(self.tag, seq),
            application_id: match self.app_ids.get(tenant, application) {
                Some(x) => x.id,
                None => self.stable_uuid(2, tenant, application),
            },
            sent_us,
            failed,
            body: Vec::new(),
        }
    }
}

mod render;

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(distribution: Distribution) -> WorkloadConfig {
        WorkloadConfig {
            tenants: 100,
            sps: 10,
            users: 10,
            channels: ["login", "registration", "credential", "session"]
                .map(String::from)
                .to_vec(),
            layout: TopicLayout::PerTenantChannel,
            payload_bytes: None,
            seed: 42,
            distribution,
        }
    }

    #[test]
    fn the_stream_is_deterministic_for_a_seed() {
        let a = Workload::new(cfg(Distribution::Uniform));
        let b = Workload::new(cfg(Distribution::Uniform));
        assert_eq!(a.topics(), b.topics());
        for seq in 0..200 {
            let (x, y) = (a.event(seq, 1), b.event(seq, 1));
            assert_eq!(
                (x.tenant, x.application, x.user, x.channel, x.jti),
                (y.tenant, y.application, y.user, y.channel, y.jti)
            );
            assert_eq!(x.body, y.body);
        }
        let mut other = cfg(Distribution::Uniform);
        other.seed = 43;
        let c = Workload::new(other);
        assert_ne!(a.event(0, 1).jti, c.event(0, 1).jti);
    }

    #[test]
    fn uniform_covers_every_topic_and_jtis_are_unique() {
        let w = Workload::new(cfg(Distribution::Uniform));
        let mut hits = vec![0u32; w.topics().len()];
        let mut jtis = std::collections::HashSet::new();
        for seq in 0..40_000 {
            let e = w.event(seq, 0);
            hits[e.topic] += 1;
            assert!(jtis.insert(e.jti));
            assert!(e.tenant < 100 && e.application < 10 && e.user < 10);
        }
        // 100 per topic expected; every topic is hit and none wildly over.
        assert!(hits.iter().all(|h| (40..200).contains(h)), "{hits:?}");
    }

    #[test]
    fn a_body_names_its_event_and_regenerates_exactly() {
        let w = Workload::new(cfg(Distribution::Uniform));
        for seq in [0, 1, 999, 123_456_789] {
            let e = w.event_at(seq, 1_764_460_800_123_456 + seq);
            assert_eq!(
                w.parse_identity(&e.body),
                Some((seq, 1_764_460_800_123_456 + seq))
            );
            assert!(w.is_exact_body(&e.body));
            assert_eq!(w.topic_of_seq(seq), e.topic);
            // One byte changed anywhere is no longer the event's body.
            let mut b = e.body.to_vec();
            let last = b.len() - 2;
            b[last] ^= 1;
            assert!(!w.is_exact_body(&b));
        }
        let mut other = cfg(Distribution::Uniform);
        other.seed = 43;
        let e = Workload::new(other).event_at(5, 1_000_000);
        assert_eq!(w.parse_identity(&e.body), None, "another run's event");
        // `event` is `event_at` in ms.
        assert_eq!(w.event(3, 1_000).body, w.event_at(3, 1_000_000).body);
    }

    /// The per-workload streams give the ids and draws of the one-step form.
    #[test]
    fn stable_ids_and_draws_match_the_one_step_form() {
        let w = Workload::new(cfg(Distribution::Uniform));
        for (kind, a, b) in [
            (1, 0, 0),
            (2, 7, 3),
            (3, u32::MAX, u32::MAX),
            (3, 99, 12_345),
        ] {
            assert_eq!(w.stable_uuid(kind, a, b), stable_uuid(42, kind, a, b));
        }
        // The application ids events carry, kept or not (1,000 tenants of 10: the first 409
        // are kept).
        let many = Workload::new(WorkloadConfig {
            tenants: 1_000,
            ..cfg(Distribution::Uniform)
        });
        assert!(many.app_ids.get(0, 0).is_some() && many.app_ids.get(999, 0).is_none());
        for seq in 0..2_000 {
            let e = many.event(seq, 0);
            let id = stable_uuid(42, 2, e.tenant, e.application);
            assert_eq!(e.application_id, id, "{e:?}");
        }
        for seq in [0, 1, 77, u64::MAX] {
            let mut one = SplitMix64::for_event(42, seq);
            let mut two = SplitMix64::at(w.draws, seq);
            assert_eq!(one.next_u64(), two.next_u64());
        }
    }

    /// The run's `jti`s, whose first 19 characters are the workload's, and any other UUID,
    /// are hex-encoded exactly as the `uuid` crate writes them.
    #[test]
    fn jti_hex_is_the_uuid_crates_hyphenated_form() {
        let w = Workload::new(cfg(Distribution::Uniform));
        let other = Workload::new(WorkloadConfig {
            seed: 43,
            ..cfg(Distribution::Uniform)
        });
        let mut rng = hubload_rng::SplitMix64::for_event(5, 0);
        let mut seqs = vec![0, 1, 0xffff, identity::MAX_SEQ, u64::MAX];
        seqs.extend((0..2_000).map(|_| rng.next_u64()));
        for seq in seqs {
            for jti in [w.event(seq, 0).jti, other.event(seq, 0).jti, rng.uuid()] {
                let want = jti.hyphenated().to_string();
                assert_eq!(std::str::from_utf8(&w.jti_hex(&jti)).unwrap(), want);
            }
        }
    }

    #[test]
    fn zipf_skews_towards_the_first_tenants() {
        let w = Workload::new(cfg(Distribution::Zipf));
        let first = (0..10_000).filter(|s| w.event(*s, 0).tenant == 0).count();
        // P(tenant 0) = 1 / H(100) ≈ 0.193.
        assert!((1_700..2_200).contains(&first), "{first}");
    }
}
