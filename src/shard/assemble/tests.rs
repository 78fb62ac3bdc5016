//! Tests of reassembly: interleaved shards among noise, repeats, truncation, version 1 lines,
//! record files and whole artifacts.
use super::*;
use crate::shard::fixtures::assert_level_eq;
use crate::shard::logs::tests::artifact;
use crate::shard::logs::{pack, to_log_lines, CHUNK_CHARS};

#[test]
fn reassembles_among_noise_and_prefixes() {
    let shards: Vec<ShardArtifact> = (0..3).map(|i| artifact("run-1", i, 3, 6)).collect();
    let lines: Vec<Vec<String>> = shards.iter().map(to_log_lines).collect();
    // Interleave the shards' lines the way `kubectl logs -l … --prefix` might, with noise.
    let mut dump = String::from("Defaulted container \"hubload\"\n");
    let longest = lines.iter().map(Vec::len).max().unwrap();
    for k in 0..longest {
        for (i, ls) in lines.iter().enumerate().rev() {
            if let Some(l) = ls.get(k) {
                let prefix = match i {
                    0 => format!("[pod/hubload-{i}-x7k2q/hubload] "),
                    1 => "2026-11-30T05:00:01.123456789Z ".to_string(),
                    _ => String::new(),
                };
                dump.push_str(&format!("{prefix}{l}\r\n"));
                dump.push_str(&format!(
                    "[pod/hubload-{i}-x7k2q/hubload] level 50: 1234 accepted\n"
                ));
            }
        }
        dump.push_str("Concurrency  # Samples  Average  HUBLOAD-SHARD is mentioned here\n");
    }
    // A shard printed twice (e.g. logs collected twice) is the same artifact, once.
    dump.push_str(&lines[1].join("\n"));
    let back = from_log_dump(&dump).unwrap();
    assert_eq!(back.len(), 3);
    for (b, a) in back.iter().zip(&shards) {
        assert_eq!(b.to_json(), a.to_json());
        for (lb, la) in b.levels.iter().zip(&a.levels) {
            assert_level_eq(&lb.stats, &la.stats);
        }
    }
    assert!(from_log_dump("just\nnoise\n").unwrap().is_empty());
}

#[test]
fn records_come_as_soon_as_their_section_is_whole() {
    let a = artifact("run-3", 0, 1, 3);
    let lines = to_log_lines(&a);
    let mut input = Input::default();
    let mut got = Vec::new();
    for l in &lines {
        for k in input.line(l).unwrap() {
            got.push((k.level, k.record.section(k.level)));
        }
        // Once a line completes a section, its record is out: nothing waits for the end.
        let t = crate::shard::logs::parse_line(1, l).unwrap().unwrap();
        if t.part == t.parts {
            assert_eq!(got.last().unwrap().1, t.section);
        }
    }
    assert_eq!(got.len(), 5);
    assert!(input.unended().is_empty());
    assert!(input.end().unwrap().is_empty());
}

#[test]
fn truncated_conflicting_and_foreign_lines_are_named() {
    let a = artifact("run-2", 1, 2, 8);
    let lines = to_log_lines(&a);

    // Killed before its end record.
    let cut = lines[..lines.len() - 1].join("\n");
    let e = from_log_dump(&cut).unwrap_err().to_string();
    assert_eq!(
        e,
        "run run-2 shard 1/2: the stream ends after 8 level(s) without its end record; was the shard killed, or the log cut? (kubectl logs needs --tail=-1)"
    );
    // A section cut in the middle.
    let multi = lines
        .iter()
        .position(|l| l.contains(" 1/") && !l.contains(" 1/1 "))
        .expect("a section of several parts");
    let mut holed = lines.clone();
    holed.remove(multi);
    let e = from_log_dump(&holed.join("\n")).unwrap_err().to_string();
    assert!(
        e.contains("run run-2 shard 1/2 level-") && e.contains(": missing part(s) 1 of"),
        "{e}"
    );

    // The same part again with other content.
    let mut forged = lines.clone();
    forged.insert(1, format!("{}AAAA", lines[0]));
    let e = from_log_dump(&forged.join("\n")).unwrap_err().to_string();
    assert!(e.contains("part 1 appears twice"), "{e}");

    // A level before the head.
    let e = from_log_dump(&lines[1..].join("\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("out of order"), "{e}");

    let e = from_log_dump("\nHUBLOAD-SHARD v2 r 0/1 head 1/1 AAAA")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("run r shard 0/1: head: corrupt compressed payload"),
        "{e}"
    );
}

/// Version 1 lines: one whole artifact in unnamed parts, as the build before streams printed.
fn v1_lines(a: &ShardArtifact) -> Vec<String> {
    let packed = pack(&serde_json::to_vec(a).unwrap());
    let chunks: Vec<&[u8]> = packed.as_bytes().chunks(CHUNK_CHARS).collect();
    let m = &a.meta;
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "HUBLOAD-SHARD v1 {} {}/{} {}/{} {}",
                m.run_id,
                m.shard_index,
                m.shard_count,
                i + 1,
                chunks.len(),
                std::str::from_utf8(c).unwrap()
            )
        })
        .collect()
}

#[test]
fn version_1_lines_record_files_and_whole_artifacts_read_alike() {
    let a = artifact("run-4", 0, 2, 4);
    let want = a.to_json();
    let v1 = format!("noise\n{}\n", v1_lines(&a).join("\n"));
    let jsonl: String = a
        .clone()
        .into_records()
        .iter()
        .map(|r| r.to_json_line() + "\n")
        .collect();
    for (what, text) in [("v1 lines", v1), ("jsonl", jsonl), ("whole", want.clone())] {
        let back = from_log_dump(&text).unwrap();
        assert_eq!(back.len(), 1, "{what}");
        assert_eq!(back[0].to_json(), want, "{what}");
    }
    // A record file cut before its end is named as such.
    let cut: String = a
        .clone()
        .into_records()
        .iter()
        .take(3)
        .map(|r| r.to_json_line() + "\n")
        .collect();
    let e = from_log_dump(&cut).unwrap_err().to_string();
    assert!(
        e.contains("ends after 2 level(s) without its end record"),
        "{e}"
    );
}
