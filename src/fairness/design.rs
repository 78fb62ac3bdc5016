//! The designed share of each tenant: what the workload sets out to offer it (uniform, Zipf,
//! and a surge on top), shown beside the offered share so a reader can tell a skew the design
//! asked for from one the run produced.

use super::Fairness;

/// The workload's design: each tenant's share of the level's own events, and the surge.
#[derive(Debug, Clone)]
pub struct Design {
    /// By tenant index: its share of the level's own schedule (1/tenants, or its Zipf weight).
    pub base: Vec<f64>,
    /// `--surge`: the surging tenants (sorted), K, and the surge's start in seconds.
    pub surge: Option<(Vec<u32>, f64, u64)>,
}

impl Design {
    /// Each tenant's designed share of a level of `secs` seconds: its share of the level's own
    /// events, plus for a surging tenant (K − 1) × its share × the surge's part of the level,
    /// all divided by their sum. Without a surge (or a level without a duration), the base.
    pub fn shares(&self, secs: Option<f64>) -> Vec<f64> {
        let Some(((surging, k, from), d)) = self.surge.as_ref().zip(secs) else {
            return self.base.clone();
        };
        let part = ((d - *from as f64) / d).clamp(0.0, 1.0);
        let w: Vec<f64> = self
            .base
            .iter()
            .enumerate()
            .map(|(t, s)| match surging.binary_search(&(t as u32)) {
                Ok(_) => s * (1.0 + (k - 1.0) * part),
                Err(_) => *s,
            })
            .collect();
        let sum: f64 = w.iter().sum();
        w.iter().map(|x| x / sum).collect()
    }

    /// This design in a level whose surge starts `from` seconds into it (`None`: a level
    /// without a surge, before `@levelN`'s level).
    pub fn with_surge_from(&self, from: Option<u64>) -> Design {
        let surge = (self.surge.as_ref()).and_then(|(t, k, _)| Some((t.clone(), *k, from?)));
        Design {
            base: self.base.clone(),
            surge,
        }
    }

    /// Set every tenant's designed share in `f`; `index` turns a tenant's name into its index.
    pub fn apply(&self, f: &mut Fairness, secs: Option<f64>, index: impl Fn(&str) -> Option<u32>) {
        let shares = self.shares(secs);
        for t in &mut f.by_tenant {
            t.designed_share = index(&t.tenant).and_then(|i| shares.get(i as usize).copied());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn a_surge_for_half_the_level_adds_its_extra_to_the_surging_tenant() {
        // 10 tenants of 0.1; tenant 7 at 10× for the second half of a 20 s level: per event of
        // the level's own schedule, 9 × 0.1 × ½ = 0.45 extra, all tenant 7's. Of 1.45: tenant 7
        // has 0.55, every other 0.1.
        let d = Design {
            base: vec![0.1; 10],
            surge: Some((vec![7], 10.0, 10)),
        };
        let s = d.shares(Some(20.0));
        assert!(close(s[7], 0.55 / 1.45), "{s:?}");
        assert!(close(s[0], 0.1 / 1.45), "{s:?}");
        assert!(close(s.iter().sum::<f64>(), 1.0));
        // No duration (or no surge): the base shares.
        assert_eq!(d.shares(None), vec![0.1; 10]);
        let plain = Design {
            base: vec![0.75, 0.25],
            surge: None,
        };
        assert_eq!(plain.shares(Some(20.0)), [0.75, 0.25]);
        // A level without the surge (`@levelN`, before level N): the base.
        assert_eq!(d.with_surge_from(None).shares(Some(20.0)), vec![0.1; 10]);
        assert_eq!(d.with_surge_from(Some(10)).shares(Some(20.0)), s);
    }
}
