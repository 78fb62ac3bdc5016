//! The administration API's bodies: ATOM entries and feeds holding a `QueueDescription`,
//! `TopicDescription` or `SubscriptionDescription` (Azure's XML shapes, the fields the SDKs
//! read), Azure's `<Error>` body, and the few properties read back from a create's body.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use crate::emulator::store::EntityProps;

/// Azure's XML namespace of entity descriptions.
const SB_NS: &str = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect";
/// .NET's `TimeSpan.MaxValue`: what Azure writes for "forever".
const FOREVER: &str = "P10675199DT2H48M5.4775807S";

/// One entity to describe.
#[derive(Debug, Clone)]
pub enum Description<'a> {
    /// A queue with its settings and message count.
    Queue(&'a EntityProps, u64),
    /// A topic with its subscription count.
    Topic(usize),
    /// A subscription with its settings and message count.
    Subscription(&'a EntityProps, u64),
}

/// An ISO 8601 duration as Azure writes one (`PT60S`, `PT0.5S`).
pub fn iso_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("PT{}S", d.as_secs())
    } else {
        format!("PT{}.{:03}S", d.as_secs(), d.subsec_millis())
    }
}

/// Parse an ISO 8601 duration of days, hours, minutes and (fractional) seconds
/// (`P1D`, `PT1M`, `PT0.5S`, `P10675199DT2H48M5.4775807S`); `None` if malformed.
pub fn parse_iso_duration(s: &str) -> Option<Duration> {
    let rest = s.trim().strip_prefix('P')?;
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut secs = 0f64;
    let mut any = false;
    let mut add = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut num = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                num.push(c);
            } else {
                let &(_, mult) = units.iter().find(|(u, _)| *u == c)?;
                secs += num.parse::<f64>().ok()? * mult;
                num.clear();
                any = true;
            }
        }
        num.is_empty().then_some(())
    };
    add(date, &[('D', 86_400.0)])?;
    add(time, &[('H', 3_600.0), ('M', 60.0), ('S', 1.0)])?;
    (any && secs.is_finite()).then(|| Duration::from_secs_f64(secs.min(1e12)))
}

/// The text of the first element called `name` (any namespace prefix) in `xml`.
pub fn element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = xml[from..].find(name).map(|i| i + from) {
        from = i + name.len();
        let before = &xml[..i];
        let open = before.rfind('<')?;
        let prefix = &before[open + 1..];
        let prefixed = prefix.is_empty()
            || (prefix.ends_with(':')
                && prefix[..prefix.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        let after = &xml[from..];
        if !prefixed || !after.starts_with('>') {
            continue;
        }
        let text = &after[1..];
        return Some(&text[..text.find('<').unwrap_or(text.len())]);
    }
    None
}

/// The settings a create's body asks for, over `defaults`; an error names the field.
pub fn props_of(body: &str, defaults: &EntityProps) -> Result<EntityProps, String> {
    let mut p = defaults.clone();
    if let Some(v) = element(body, "LockDuration") {
        p.lock_duration = parse_iso_duration(v).ok_or("LockDuration is not a duration")?;
    }
    if let Some(v) = element(body, "MaxDeliveryCount") {
        p.max_delivery_count = v
            .trim()
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or("MaxDeliveryCount must be a whole number of at least 1")?;
    }
    if let Some(v) = element(body, "DefaultMessageTimeToLive") {
        let d = parse_iso_duration(v).ok_or("DefaultMessageTimeToLive is not a duration")?;
        // Ten thousand days or more is Azure's "forever".
        p.default_ttl = (d < Duration::from_secs(10_000 * 86_400)).then_some(d);
    }
    if let Some(v) = element(body, "DeadLetteringOnMessageExpiration") {
        p.dead_letter_on_expiration = v.trim() == "true";
    }
    Ok(p)
}

/// Which description a create's body holds.
pub fn kind_of(body: &str) -> Option<&'static str> {
    [
        "QueueDescription",
        "TopicDescription",
        "SubscriptionDescription",
    ]
    .into_iter()
    .find(|k| body.contains(&format!("{k} ")) || body.contains(&format!("{k}>")))
}

/// Escape text for XML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn counts(active: u64) -> String {
    format!(
        "<CountDetails xmlns:d2p1=\"http://schemas.microsoft.com/netservices/2011/06/servicebus\">\
         <d2p1:ActiveMessageCount>{active}</d2p1:ActiveMessageCount>\
         <d2p1:DeadLetterMessageCount>0</d2p1:DeadLetterMessageCount>\
         <d2p1:ScheduledMessageCount>0</d2p1:ScheduledMessageCount>\
         <d2p1:TransferMessageCount>0</d2p1:TransferMessageCount>\
         <d2p1:TransferDeadLetterMessageCount>0</d2p1:TransferDeadLetterMessageCount>\
         </CountDetails>"
    )
}

fn ttl(p: &EntityProps) -> String {
    p.default_ttl.map_or(FOREVER.to_string(), iso_duration)
}

/// The `<XDescription>` element of an entity.
fn description(d: &Description<'_>) -> String {
    let t = now();
    let stamps =
        format!("<CreatedAt>{t}</CreatedAt><UpdatedAt>{t}</UpdatedAt><AccessedAt>{t}</AccessedAt>");
    let open = |k: &str| {
        format!("<{k} xmlns=\"{SB_NS}\" xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">")
    };
    match d {
        Description::Queue(p, n) => format!(
            "{}<LockDuration>{}</LockDuration><MaxSizeInMegabytes>1024</MaxSizeInMegabytes>\
             <RequiresDuplicateDetection>false</RequiresDuplicateDetection>\
             <RequiresSession>false</RequiresSession>\
             <DefaultMessageTimeToLive>{}</DefaultMessageTimeToLive>\
             <DeadLetteringOnMessageExpiration>{}</DeadLetteringOnMessageExpiration>\
             <DuplicateDetectionHistoryTimeWindow>PT10M</DuplicateDetectionHistoryTimeWindow>\
             <MaxDeliveryCount>{}</MaxDeliveryCount><EnableBatchedOperations>true</EnableBatchedOperations>\
             <SizeInBytes>0</SizeInBytes><MessageCount>{n}</MessageCount>\
             <Status>Active</Status>{stamps}{}<AutoDeleteOnIdle>{FOREVER}</AutoDeleteOnIdle>\
             <EnablePartitioning>false</EnablePartitioning><EnableExpress>false</EnableExpress>\
             </QueueDescription>",
            open("QueueDescription"),
            iso_duration(p.lock_duration),
            ttl(p),
            p.dead_letter_on_expiration,
            p.max_delivery_count,
            counts(*n),
        ),
        Description::Topic(subs) => format!(
            "{}<DefaultMessageTimeToLive>{FOREVER}</DefaultMessageTimeToLive>\
             <MaxSizeInMegabytes>1024</MaxSizeInMegabytes>\
             <RequiresDuplicateDetection>false</RequiresDuplicateDetection>\
             <DuplicateDetectionHistoryTimeWindow>PT10M</DuplicateDetectionHistoryTimeWindow>\
             <EnableBatchedOperations>true</EnableBatchedOperations><SizeInBytes>0</SizeInBytes>\
             <Status>Active</Status>{stamps}<SupportOrdering>true</SupportOrdering>{}\
             <SubscriptionCount>{subs}</SubscriptionCount><AutoDeleteOnIdle>{FOREVER}</AutoDeleteOnIdle>\
             <EnablePartitioning>false</EnablePartitioning><EnableExpress>false</EnableExpress>\
             </TopicDescription>",
            open("TopicDescription"),
            counts(0),
        ),
        Description::Subscription(p, n) => format!(
            "{}<LockDuration>{}</LockDuration><RequiresSession>false</RequiresSession>\
             <DefaultMessageTimeToLive>{}</DefaultMessageTimeToLive>\
             <DeadLetteringOnMessageExpiration>{}</DeadLetteringOnMessageExpiration>\
             <DeadLetteringOnFilterEvaluationExceptions>true</DeadLetteringOnFilterEvaluationExceptions>\
             <MessageCount>{n}</MessageCount><MaxDeliveryCount>{}</MaxDeliveryCount>\
             <EnableBatchedOperations>true</EnableBatchedOperations><Status>Active</Status>\
             {stamps}{}<AutoDeleteOnIdle>{FOREVER}</AutoDeleteOnIdle>\
             </SubscriptionDescription>",
            open("SubscriptionDescription"),
            iso_duration(p.lock_duration),
            ttl(p),
            p.dead_letter_on_expiration,
            p.max_delivery_count,
            counts(*n),
        ),
    }
}

fn entry_body(base: &str, path: &str, title: &str, d: &Description<'_>) -> String {
    let href = format!("{base}/{}", esc(path));
    format!(
        "<entry xmlns=\"http://www.w3.org/2005/Atom\"><id>{href}</id>\
         <title type=\"text\">{}</title><published>{t}</published><updated>{t}</updated>\
         <link rel=\"self\" href=\"{href}\"/>\
         <content type=\"application/xml\">{}</content></entry>",
        esc(title),
        description(d),
        t = now(),
    )
}

/// One entity as an ATOM entry; `base` is `http://host:port`, `path` the entity's.
pub fn entry(base: &str, path: &str, title: &str, d: &Description<'_>) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>{}",
        entry_body(base, path, title, d)
    )
}

/// Entities as an ATOM feed (one page: no `next` link).
pub fn feed(base: &str, path: &str, items: &[(String, String, Description<'_>)]) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"http://www.w3.org/2005/Atom\">\
         <title type=\"text\">{}</title><id>{base}/{}</id><updated>{}</updated>",
        esc(path),
        esc(path),
        now()
    );
    for (p, title, d) in items {
        out.push_str(&entry_body(base, p, title, d));
    }
    let _ = write!(out, "</feed>");
    out
}

/// Azure's error body.
pub fn error(status: u16, detail: &str) -> String {
    format!(
        "<Error><Code>{status}</Code><Detail>{}</Detail></Error>",
        esc(detail)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_iso_duration("PT1M"), Some(Duration::from_secs(60)));
        assert_eq!(
            parse_iso_duration("PT0.5S"),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_iso_duration("P1DT1H"),
            Some(Duration::from_secs(90_000))
        );
        assert!(parse_iso_duration(FOREVER).unwrap() > Duration::from_secs(10_000 * 86_400));
        for bad in ["", "P", "PT", "1M", "PTxS", "PT5", "P1H"] {
            assert_eq!(parse_iso_duration(bad), None, "{bad}");
        }
        assert_eq!(iso_duration(Duration::from_millis(1500)), "PT1.500S");
        let d = Duration::from_millis(1500);
        assert_eq!(parse_iso_duration(&iso_duration(d)), Some(d));
    }

    #[test]
    fn elements_with_and_without_prefix() {
        let x = "<a><ns0:LockDuration>PT5S</ns0:LockDuration><MaxDeliveryCount>3</MaxDeliveryCount></a>";
        assert_eq!(element(x, "LockDuration"), Some("PT5S"));
        assert_eq!(element(x, "MaxDeliveryCount"), Some("3"));
        assert_eq!(element(x, "Status"), None);
        let p = props_of(x, &EntityProps::default()).unwrap();
        assert_eq!(p.lock_duration, Duration::from_secs(5));
        assert_eq!(p.max_delivery_count, 3);
        assert!(props_of(
            "<MaxDeliveryCount>0</MaxDeliveryCount>",
            &EntityProps::default()
        )
        .unwrap_err()
        .contains("MaxDeliveryCount"));
        assert_eq!(
            kind_of("<TopicDescription xmlns=\"x\"/>"),
            Some("TopicDescription")
        );
        assert_eq!(kind_of("<entry/>"), None);
    }
}
