//! The generator's own limits, said once and never blamed on the hub: the in-flight bound the
//! descriptors allow, and a loud warning for every level whose attempts the generator itself
//! failed (`client_error`: out of descriptors, ports or buffers).

use crate::config::RunConfig;
use crate::result::{Class, Reason};
use crate::stats::LevelStats;

/// One stderr line when the open model's default `--max-inflight` was lowered to fit the
/// open-files limit.
pub(crate) fn announce(cfg: &RunConfig) {
    if let Some(d) = cfg.descriptors.filter(|d| d.lowered) {
        crate::console::say!(
            "hubload: at most {} sends in flight (open-files limit {}, {} per connection); \
             sends beyond it are dropped and counted, not failed (--max-inflight to change)",
            d.max_inflight,
            d.open_files,
            d.per_connection
        );
    }
}

/// The warning for a level some of whose attempts failed in the generator, if any.
pub(crate) fn client_error_warning(label: &str, stats: &LevelStats) -> Option<String> {
    let n = stats.counts.get(Class::ClientError);
    if n == 0 {
        return None;
    }
    let why: Vec<String> = Reason::ALL
        .into_iter()
        .filter(|r| matches!(r, Reason::Client(_)))
        .filter_map(|r| {
            let k = stats.reasons.get(r);
            (k > 0).then(|| format!("{} {k}", r.name()))
        })
        .collect();
    Some(format!(
        "level {label}: {n} of {} attempts failed in the generator, not at the hub ({}); \
         lower the load or raise `ulimit -n`",
        stats.counts.total(),
        why.join(", ")
    ))
}

/// Say [`client_error_warning`] loudly, once, on stderr.
pub(crate) fn warn_client_errors(label: &str, stats: &LevelStats) -> Option<String> {
    let w = client_error_warning(label, stats)?;
    crate::console::say!("hubload: WARNING: {w}");
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ClientReason;

    #[test]
    fn a_level_with_client_errors_names_them_and_others_say_nothing() {
        let mut s = LevelStats::default();
        s.counts.bump(Class::Accepted);
        assert_eq!(client_error_warning("1", &s), None);
        for _ in 0..3 {
            s.counts.bump(Class::ClientError);
        }
        s.reasons
            .add(Reason::Client(ClientReason::TooManyOpenFiles), 3);
        assert_eq!(
            client_error_warning("80000/s", &s).unwrap(),
            "level 80000/s: 3 of 4 attempts failed in the generator, not at the hub \
             (client_error.too_many_open_files 3); lower the load or raise `ulimit -n`"
        );
    }
}
