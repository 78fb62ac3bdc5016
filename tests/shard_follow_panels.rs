//! `merge --follow`'s page draws what a run's page draws: two shard processes with
//! subscribers, shard 0 scraping the hub's `/metrics` and serving its own page, paused through
//! it for a while. The merge page's seconds carry the shards' deliveries, adding up to the
//! merged summary's (and the hub's), each second's CPU and paused mark as the shards' own
//! records have them (the pause inside the window the test made it), and shard 0's scrape
//! rounds, once each.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::delivery::sum;
use crate::shard_follow::{
    merge_page, parts, seconds_of, spawn_lines, start_shard_with, wait_exit,
};
use crate::util::{free_port, hub_with, hubload_command, read_summary, settled};
use hubload_hub::FaultConfig;

/// Unix seconds now, with the fraction.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merge_page_shows_the_shards_deliveries_cpu_pauses_and_one_scrape() {
    let hub = hub_with(FaultConfig::default()).await;
    let _turn = crate::util::SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let start_at =
        humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(3)).to_string();
    let port = free_port();
    let web = format!("127.0.0.1:{port}");
    let metrics = format!("http://{}/metrics", hub.addr);
    let load = [
        "--rate",
        "40,60",
        "--duration",
        "3s",
        "--subscribers",
        "1",
        "--server-metrics",
        &metrics,
        "--server-metrics-match",
        "^hub_distribution_total$",
    ];
    let mut first = load.to_vec();
    first.extend(["--web", &web]);
    let mut shards = vec![
        start_shard_with(&d, 0, &hub.url, &start_at, &first),
        start_shard_with(&d, 1, &hub.url, &start_at, &load),
    ];
    let (mut merge, _rows, errs, readers) = spawn_lines(
        hubload_command()
            .args(["merge", "--follow"])
            .args([d.join("s0.log"), d.join("s1.log")])
            .args(["--web", "127.0.0.1:0", "--out"])
            .arg(d.join("followed")),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let (_, stream) = merge_page(&errs, deadline).await;

    // Shard 0 paused through its own page for 3 s of its second level.
    let api = crate::live_control::Api::new(port, None);
    api.wait_level(1, 1).await;
    let p0 = unix_now();
    assert_eq!(api.post("pause", None).await, 200);
    let p1 = unix_now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let r0 = unix_now();
    assert_eq!(api.post("resume", None).await, 200);
    let r1 = unix_now();
    for s in &mut shards {
        assert_eq!(wait_exit(s, Duration::from_secs(60)), 0);
    }
    assert_eq!(wait_exit(&mut merge, Duration::from_secs(30)), 0);
    for r in readers {
        r.join().unwrap();
    }
    let events = tokio::time::timeout(Duration::from_secs(30), stream)
        .await
        .expect("the page's stream ends with the merge")
        .unwrap();
    let seconds: Vec<&Value> = events
        .iter()
        .filter(|(k, _)| k == "second")
        .map(|(_, v)| v)
        .collect();
    let f = read_summary(&d.join("followed"));
    assert!(!f.partial);

    // Deliveries: the page's seconds add up to the merged levels', which are the hub's.
    let (delivered, expected) = (sum(&f, |c| c.delivered), sum(&f, |c| c.expected));
    assert!(delivered > 0);
    assert_eq!(delivered, settled(&hub).await.distribution.delivered);
    let per_second = |k: &str| -> u64 {
        seconds
            .iter()
            .filter_map(|s| s["delivery"][k].as_u64())
            .sum()
    };
    assert_eq!(
        (per_second("delivered"), per_second("owed")),
        (delivered, expected)
    );
    let last = seconds
        .iter()
        .rev()
        .find(|s| !s["delivery"].is_null())
        .unwrap();
    assert_eq!(
        (
            last["delivery"]["delivered_total"].as_u64(),
            last["delivery"]["owed_total"].as_u64()
        ),
        (Some(delivered), Some(expected))
    );

    // CPU, paused marks and scrape rounds: each merged second's are the shards' own records'
    // of that wall-clock second (the busiest shard's CPU; paused if a shard was; shard 0's
    // round).
    let own: Vec<BTreeMap<u64, Value>> = (0..2)
        .map(|i| {
            seconds_of(&d.join(format!("shard{i}/shard-{i}-of-2.jsonl")))
                .into_iter()
                .map(|r| (r["at"].as_u64().unwrap(), r))
                .collect()
        })
        .collect();
    let mut paused = Vec::new();
    let mut rounds = 0;
    for s in &seconds {
        let at = s["at"].as_u64().unwrap();
        let recs: Vec<&Value> = own.iter().filter_map(|o| o.get(&at)).collect();
        let cpu = recs
            .iter()
            .filter_map(|r| r["cpu_pct"].as_f64())
            .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))));
        assert_eq!(s["cpu_pct"].as_f64(), cpu, "second {at}");
        let shard0_paused = own[0].get(&at).and_then(|r| r["paused"].as_bool());
        assert_eq!(s["paused"].as_bool(), shard0_paused, "second {at}");
        if shard0_paused == Some(true) {
            paused.push(at);
        }
        if !s["server"].is_null() {
            rounds += 1;
            assert_eq!(Some(&s["server"]), own[0].get(&at).map(|r| &r["server"]));
        }
    }
    assert!(seconds.iter().filter(|s| !s["cpu_pct"].is_null()).count() >= 4);
    // A second is marked by the state at its end (`at + 1`): inside the pause, paused; well
    // before it or after the resume, not (its record is written just after the second ends).
    for at in own[0].keys() {
        let end = (at + 1) as f64;
        let marked = paused.contains(at);
        if end >= p1 && end <= r0 - 0.5 {
            assert!(
                marked,
                "second {at} inside the pause [{p1}, {r0}]: {paused:?}"
            );
        }
        if end < p0 - 0.5 || end > r1 {
            assert!(
                !marked,
                "second {at} outside the pause [{p0}, {r1}]: {paused:?}"
            );
        }
    }
    assert!(paused.len() >= 2, "{paused:?}");
    // Shard 0's rounds only, each once: shard 1's records carry none.
    assert!(own[1]
        .values()
        .flat_map(parts)
        .all(|r| r["server"].is_null()));
    let shard0_rounds = own[0].values().filter(|r| !r["server"].is_null()).count();
    assert!(shard0_rounds >= 3, "{shard0_rounds}");
    assert_eq!(rounds, shard0_rounds);
}
