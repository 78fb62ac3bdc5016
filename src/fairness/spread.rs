//! What the publish and delivery figures share: a figure's spread over tenants (its median and
//! largest value) and the list of the worst tenants.

/// How many tenants the worst lists name.
pub const WORST: usize = 3;

/// The median of `v` (sorted here): the middle value, or the mean of the two middle ones.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The spread of a per-tenant figure: its median, and the largest value.
pub struct Spread {
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// Over `values` (at least one).
    pub fn of(values: impl Iterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = values.collect();
        let max = v.iter().copied().fold(0.0, f64::max);
        Spread {
            median: median(&mut v),
            max,
        }
    }

    /// max ÷ median; `None` when the median is 0.
    pub fn ratio(&self) -> Option<f64> {
        (self.median > 0.0).then(|| self.max / self.median)
    }
}

/// Up to [`WORST`] of `items` that `keep` holds, by `key`, highest first, ties by `name`.
pub fn worst<T: Clone>(
    items: &[T],
    key: impl Fn(&T) -> f64,
    keep: impl Fn(&T) -> bool,
    name: impl Fn(&T) -> &str,
) -> Vec<T> {
    let mut w: Vec<T> = items.iter().filter(|t| keep(t)).cloned().collect();
    w.sort_by(|a, b| key(b).total_cmp(&key(a)).then(name(a).cmp(name(b))));
    w.truncate(WORST);
    w
}
