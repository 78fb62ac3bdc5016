//! Tests: a template filled with an event's fields against the body the renderer writes for
//! them piece by piece (itself checked against a `format!` reference, `body/reference.rs`),
//! byte for byte, on random and edge-case fields and workloads; and that a template is used
//! exactly when its holes fit the event.

use super::*;
use crate::workload::body::reference_tests::{Rng, KNOWN_CHANNELS};
use crate::workload::body::render_into;
use crate::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};

/// The body tests' generator, with the draws only these tests need.
impl Rng {
    /// A number of exactly `digits` digits (1 to 10), the edges often.
    fn of_digits(&mut self, digits: u32) -> u32 {
        let lo = if digits == 1 {
            0
        } else {
            10u64.pow(digits - 1)
        };
        let hi = (10u64.pow(digits) - 1).min(u64::from(u32::MAX));
        match self.below(4) {
            0 => lo as u32,
            1 => hi as u32,
            _ => (lo + self.below(hi - lo + 1)) as u32,
        }
    }
    /// A send time with exactly 16 digits, the edges often.
    fn sent_us(&mut self) -> u64 {
        match self.below(4) {
            0 => self.pick(&[TEN16 / 10, TEN16 / 10 + 1, TEN16 - 1, 1_764_460_800_000_123]),
            _ => TEN16 / 10 + self.below(TEN16 - TEN16 / 10),
        }
    }
}

/// The hyphenated form as the `uuid` crate writes it.
fn hex(u: uuid::Uuid) -> [u8; 36] {
    u.hyphenated().to_string().into_bytes().try_into().unwrap()
}

fn digit_count_of(x: u64) -> u32 {
    x.to_string().len() as u32
}

#[test]
fn a_filled_template_is_the_body_rendered_in_pieces() {
    let mut r = Rng(0x5eed_7e37);
    let (mut made, mut filled) = (0, 0);
    for case in 0..3_000 {
        let tenant = match r.below(3) {
            0 => format!("tenant{:04}", r.next() as u32),
            _ => r.name(),
        };
        let channel = match r.below(3) {
            0 => r.name(),
            _ => r.pick(&KNOWN_CHANNELS).to_string(),
        };
        let digits = 1 + (case % 10) as u32;
        let f = BodyFields {
            tenant_name: &tenant,
            tenant_id: r.pick(&[0, 1, 9, 99_999, u32::MAX - 12_400, u32::MAX]),
            channel: &channel,
            jti: &[b'x'; 36],
            sent_us: r.next(),
            user_id: r.uuid(),
            application_id: r.uuid(),
            application: r.next() as u32,
            user: r.of_digits(digits),
            failed: r.below(2) == 0,
            pad_to: match r.below(4) {
                0 => Some(r.below(3_000) as usize),
                _ => None,
            },
        };
        let t = Template::new(&f);
        // Every body whose user number has at most 8 digits has a template; other numbers
        // are left to the renderer.
        assert_eq!(t.is_some(), digits <= 8, "{f:?}");
        let Some(t) = t else { continue };
        made += 1;
        for _ in 0..6 {
            let jti = hex(r.uuid());
            let g = BodyFields {
                jti: &jti,
                sent_us: r.sent_us(),
                user_id: r.uuid(),
                application_id: r.uuid(),
                application: {
                    let digits = 1 + r.below(3) as u32;
                    r.of_digits(digits)
                },
                user: r.of_digits(digits),
                ..f
            };
            let mut want = Vec::new();
            render_into(&g, &mut want);
            // Appended after whatever the buffer holds, as after a request's head.
            let prefix: Vec<u8> = (0..r.below(300)).map(|i| i as u8).collect();
            let mut got = prefix.clone();
            let (user_id, application_id) = (hex(g.user_id), hex(g.application_id));
            let fill = Fill {
                jti: &jti,
                sent_us: g.sent_us,
                user_id: &user_id,
                application_id: &application_id,
                application: Fill::digits(g.application),
                user: Fill::digits(g.user),
            };
            t.append(&fill, &mut got);
            assert_eq!(&got[..prefix.len()], &prefix[..]);
            assert_eq!(
                String::from_utf8_lossy(&got[prefix.len()..]),
                String::from_utf8_lossy(&want),
                "{g:?}"
            );
            assert_eq!(t.len(), want.len());
            filled += 1;
        }
    }
    assert!(made > 2_000 && filled > 12_000, "{made} {filled}");
}

/// The template [`Templates::get`] picks, if any, for every kind of event: some exactly when
/// the event's numbers fit the holes, and then filled to the rendered body.
#[test]
fn templates_are_picked_exactly_for_the_events_that_fit() {
    let mut r = Rng(99);
    let (mut hit, mut miss) = (0, 0);
    for _ in 0..60 {
        let names: Vec<String> = (0..1 + r.below(4))
            .map(|t| match r.below(2) {
                0 => format!("tenant{t:04}"),
                _ => r.name(),
            })
            .collect();
        let channels: Vec<String> = (0..1 + r.below(5))
            .map(|_| match r.below(3) {
                0 => r.name(),
                _ => r.pick(&KNOWN_CHANNELS).to_string(),
            })
            .collect();
        let users = r.pick(&[
            1,
            2,
            9,
            10,
            11,
            100,
            99_999,
            100_000,
            100_001,
            123_456_789,
            u32::MAX,
        ]);
        let pad_to = r.pick(&[None, None, Some(0), Some(800), Some(1_500), Some(2_999)]);
        let t = Templates::new(&names, &channels, users, pad_to, usize::MAX);
        assert_eq!(t.tenants() as usize, names.len());
        // The digit counts of users 0..users that have templates: at most 8.
        let most_digits = digit_count_of(u64::from(users - 1)).min(8);
        for _ in 0..400 {
            let tenant = r.below(names.len() as u64 + 1) as u32;
            let channel = r.below(channels.len() as u64 + 1) as usize;
            let user = match r.below(3) {
                0 => {
                    let digits = 1 + r.below(10) as u32;
                    r.of_digits(digits)
                }
                _ => r.below(u64::from(users)) as u32,
            };
            let application = match r.below(3) {
                0 => r.pick(&[999, 1_000, 1_001, u32::MAX]),
                _ => r.below(1_000) as u32,
            };
            let sent_us = match r.below(3) {
                0 => r.pick(&[0, 1, TEN16 / 10 - 1, TEN16, TEN16 + 1, u64::MAX]),
                _ => r.sent_us(),
            };
            let failed = r.below(2) == 0;
            let known = tenant < names.len() as u32 && channel < channels.len();
            let fits = known
                && application < 1_000
                && (TEN16 / 10..TEN16).contains(&sent_us)
                && (channels[channel] != "registration"
                    || digit_count_of(user.into()) <= most_digits);
            let got = t.get(tenant, channel, failed, user, application, sent_us);
            assert_eq!(
                got.is_some(),
                fits,
                "{tenant} {channel} {user} {application} {sent_us}"
            );
            let Some(got) = got else {
                miss += 1;
                continue;
            };
            hit += 1;
            let (jti, user_id, application_id) = (hex(r.uuid()), r.uuid(), r.uuid());
            let f = BodyFields {
                tenant_name: &names[tenant as usize],
                tenant_id: tenant,
                channel: &channels[channel],
                jti: &jti,
                sent_us,
                user_id,
                application_id,
                application,
                user,
                failed,
                pad_to,
            };
            let mut want = Vec::new();
            render_into(&f, &mut want);
            let mut body = Vec::new();
            let fill = Fill {
                jti: &jti,
                sent_us,
                user_id: &hex(user_id),
                application_id: &hex(application_id),
                application: Fill::digits(application),
                user: Fill::digits(user),
            };
            got.append(&fill, &mut body);
            assert_eq!(body, want, "{f:?}");
        }
    }
    assert!(hit > 5_000 && miss > 5_000, "{hit} {miss}");
}

/// Templates are kept for the first tenants whose templates fit the cap, and none past it.
#[test]
fn templates_stop_at_the_cap() {
    let names: Vec<String> = (0..30).map(|t| format!("tenant{t:04}")).collect();
    let channels = ["login", "registration", "custom"];
    let all = |n: usize| Templates::new(&names[..n], &channels, 1_000, None, usize::MAX);
    for k in [1, 2, 13, 30] {
        // The bytes of the first k tenants' templates, kept whole by a cap of just that.
        let cap = all(k).bytes;
        // Each tenant's are at least its bodies: login and custom once (the failure variant
        // is the same), registration twice for each of 1, 2 and 3 digits, and login failed.
        assert!(cap >= k * (3 * 500 + 6 * 900), "{cap}");
        let t = Templates::new(&names, &channels, 1_000, None, cap);
        assert_eq!((t.tenants(), t.bytes), (k as u32, cap));
        let t = Templates::new(&names, &channels, 1_000, None, cap - 1);
        assert_eq!(t.tenants(), k as u32 - 1);
        assert!(t.bytes < cap);
        assert!(t.get(k as u32 - 1, 0, false, 1, 1, TEN16 - 1).is_none());
    }
    assert_eq!(Templates::new(&names, &channels, 10, None, 0).tenants(), 0);
    // Bodies padded past the cap: no templates at all.
    let t = Templates::new(&names, &channels, 10, Some(TEMPLATE_BYTES), TEMPLATE_BYTES);
    assert_eq!(t.tenants(), 0);
    assert!(t.get(0, 0, false, 1, 1, TEN16 - 1).is_none());
}

/// A random workload's events: the body from its template, when it has one, is the body
/// rendered in pieces; and it has one exactly when it should.
#[test]
fn workload_bodies_from_templates_are_the_bodies_rendered_in_pieces() {
    let mut r = Rng(2026);
    let (mut templated, mut in_pieces) = (0, 0);
    for round in 0..40 {
        let mut channels: Vec<String> = KNOWN_CHANNELS.iter().map(|c| c.to_string()).collect();
        channels.push(r.name());
        let channels: Vec<String> = (0..1 + r.below(5))
            .map(|_| channels[r.below(channels.len() as u64) as usize].clone())
            .collect();
        let tenants = match round {
            0 => 20_000,
            _ => r.pick(&[1, 1, 2, 3, 17]),
        };
        let users = r.pick(&[1, 2, 9, 10, 11, 99_999, 100_000, 100_001, 123_456_789]);
        let payload_bytes = match round {
            1 => Some(TEMPLATE_BYTES + 1),
            _ => r.pick(&[
                None,
                None,
                None,
                Some(0),
                Some(700),
                Some(1_100),
                Some(2_500),
            ]),
        };
        let cfg = WorkloadConfig {
            tenants,
            sps: r.pick(&[1, 2, 10, 999, 1_000, 1_001, 5_000]),
            users,
            channels,
            layout: TopicLayout::PerTenantChannel,
            payload_bytes,
            seed: r.next(),
            distribution: r.pick(&[Distribution::Uniform, Distribution::Zipf]),
        };
        let w = Workload::new(cfg.clone());
        match (round, payload_bytes) {
            (0, _) => assert!((1..20_000).contains(&w.templated_tenants())),
            (_, Some(p)) if p > TEMPLATE_BYTES => assert_eq!(w.templated_tenants(), 0),
            _ => assert_eq!(w.templated_tenants(), tenants),
        }
        let most_digits = digit_count_of(u64::from(users - 1)).min(8);
        // Fewer events of 2 MiB.
        let events = if round == 1 { 10 } else { 150 };
        for seq in 0..events {
            let sent_us = match r.below(3) {
                0 => r.pick(&[0, 999, 1_000, TEN16 / 10 - 1, TEN16, TEN16 + 1, u64::MAX]),
                _ => r.sent_us(),
            };
            let seq = match r.below(2) {
                0 => seq,
                _ => r.next() >> 2,
            };
            let mut e = w.event_unrendered(seq, sent_us);
            // Fields no event of this workload has: numbers past its counts, an application
            // id that is not the application's.
            match r.below(8) {
                0 => e.user = r.pick(&[9, 10, 99_999, 100_000, users - 1]),
                1 => e.application = r.pick(&[999, 1_000, cfg.sps - 1]),
                _ => {}
            }
            let jti = hex(e.jti);
            let mut want = Vec::new();
            w.render_body_in_pieces(&e, &jti, &mut want);
            let mut got = vec![b'?'; 10];
            w.render_body_with_jti(&e, &jti, &mut got);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            );
            let fits = e.tenant < w.templated_tenants()
                && e.application < 1_000
                && (TEN16 / 10..TEN16).contains(&sent_us)
                && (cfg.channels[e.channel] != "registration"
                    || digit_count_of(e.user.into()) <= most_digits);
            let t = w.body_template(&e);
            assert_eq!(t.is_some(), fits, "{e:?}");
            match t {
                Some(t) => {
                    templated += 1;
                    assert_eq!(t.body_len(), want.len());
                    let mut after = b"head".to_vec();
                    t.append_to(&jti, &mut after);
                    assert_eq!((&after[..4], &after[4..]), (&b"head"[..], &want[..]));
                }
                None => in_pieces += 1,
            }
        }
    }
    assert!(
        templated > 2_000 && in_pieces > 1_000,
        "{templated} {in_pieces}"
    );
}
