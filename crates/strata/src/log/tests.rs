//! Tests of the record log: round trips, every truncation and bit flip of
//! written logs, zero tails, fault injection.
//!
//! `expect` and `unwrap` here are assertions of the tests, on what the tests
//! themselves write and read back. The reader's code under test never
//! panics on damaged input: it returns `Error::Corruption` (or reports the
//! damage through `dropped()`), which is what `check_cut`, `check_flip` and
//! the zero-tail tests assert.

use std::path::Path;

use super::*;
use crate::coding::put_fixed32;
use crate::error::{Error, Result};
use crate::vfs::StdVfs;
use crate::vfs::{Vfs, WritableFile};
use crate::vfs_mem::{FaultKind, FaultRule, MemVfs, VfsOp};
use parking_lot::Mutex;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// A `WritableFile` appending into a shared vector.
#[derive(Clone, Default)]
struct VecFile(Arc<Mutex<Vec<u8>>>);

impl WritableFile for VecFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

/// Deterministic, record-specific payload so mixed-up records differ.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed ^ (len as u64).rotate_left(32));
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..]);
    v
}

struct Written {
    bytes: Vec<u8>,
    records: Vec<Vec<u8>>,
    /// Per record: (end of previous record = start of its span incl.
    /// padding, offset of its first header, end of its last fragment).
    spans: Vec<(usize, usize, usize)>,
}

fn write_log(records: Vec<Vec<u8>>) -> Written {
    let file = VecFile::default();
    let mut w = LogWriter::new(Box::new(file.clone()));
    let mut spans = Vec::new();
    let mut prev_end = 0usize;
    for r in &records {
        w.add_record(r).expect("add_record");
        let end = w.len() as usize;
        // The first header follows any padding needed in prev's block.
        let left = BLOCK_SIZE - prev_end % BLOCK_SIZE;
        let header = if left < HEADER_SIZE {
            prev_end + left
        } else {
            prev_end
        };
        spans.push((prev_end, header, end));
        prev_end = end;
    }
    w.flush().expect("flush");
    let bytes = file.0.lock().clone();
    assert_eq!(bytes.len() as u64, w.len());
    Written {
        bytes,
        records,
        spans,
    }
}

fn read_all(bytes: &[u8], policy: TailPolicy) -> (Vec<Vec<u8>>, Result<()>, LogReader) {
    let mut r = LogReader::from_bytes("test.log", bytes.to_vec(), policy);
    let mut out = Vec::new();
    loop {
        match r.next_record() {
            Ok(Some(rec)) => out.push(rec),
            Ok(None) => return (out, Ok(()), r),
            Err(e) => return (out, Err(e), r),
        }
    }
}

fn sizes_log(sizes: &[usize]) -> Written {
    write_log(
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(n, i as u64))
            .collect(),
    )
}

#[test]
fn mask_round_trips_and_changes_value() {
    for crc in [0u32, 1, 0xdead_beef, u32::MAX] {
        assert_eq!(unmask_crc(mask_crc(crc)), crc);
        assert_ne!(mask_crc(crc), crc);
    }
}

#[test]
fn round_trip_edge_sizes() {
    let room = BLOCK_SIZE - HEADER_SIZE;
    let sizes = [
        0,
        1,
        room - 1,
        room,
        room + 1,
        BLOCK_SIZE - 7,
        BLOCK_SIZE,
        2 * room,
        2 * room + 1,
        0,
        100_000,
        3_000_000,
        1,
    ];
    let w = sizes_log(&sizes);
    let mut r = LogReader::from_bytes("x", w.bytes.clone(), TailPolicy::Strict);
    for (i, rec) in w.records.iter().enumerate() {
        let got = r.next_record().expect("read").expect("record present");
        assert_eq!(got.len(), rec.len(), "record {i}");
        assert!(got == *rec, "record {i} differs");
        assert_eq!(r.last_record_offset(), w.spans[i].1 as u64, "offset {i}");
    }
    assert!(r.next_record().expect("eof").is_none());
    assert!(r.next_record().expect("eof again").is_none());
    assert_eq!(r.dropped(), None);
}

#[test]
fn record_filling_a_block_exactly_leaves_no_padding() {
    let w = sizes_log(&[BLOCK_SIZE - HEADER_SIZE, 5]);
    assert_eq!(w.spans[1].1, BLOCK_SIZE);
    assert_eq!(w.bytes.len(), BLOCK_SIZE + HEADER_SIZE + 5);
    // Leaving 8 bytes forces 8 bytes of zero padding.
    let w = sizes_log(&[BLOCK_SIZE - HEADER_SIZE - 8, 5]);
    assert_eq!(w.spans[1].1, BLOCK_SIZE);
    assert_eq!(&w.bytes[BLOCK_SIZE - 8..BLOCK_SIZE], &[0u8; 8]);
    let (recs, res, _) = read_all(&w.bytes, TailPolicy::Strict);
    res.expect("clean");
    assert_eq!(recs, w.records);
}

#[test]
fn header_layout_matches_the_documented_format() {
    let w = write_log(vec![b"abc".to_vec()]);
    let b = &w.bytes;
    assert_eq!(b.len(), HEADER_SIZE + 3);
    let masked = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(unmask_crc(masked), crc32c::crc32c(&[1, b'a', b'b', b'c']));
    assert_eq!(&b[4..8], &3u32.to_le_bytes());
    assert_eq!(b[8], TYPE_FULL);
    assert_eq!(&b[9..], b"abc");
}

#[test]
fn open_reads_through_the_vfs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("000001.log");
    let mut w = LogWriter::new(StdVfs.create(&path).expect("create"));
    let recs: Vec<Vec<u8>> = (0..50).map(|i| payload(i * 997, i as u64)).collect();
    for r in &recs {
        w.add_record(r).expect("add");
    }
    w.sync().expect("sync");
    assert_eq!(StdVfs.file_size(&path).expect("size"), w.len());
    let mut r = LogReader::open(&StdVfs, &path, TailPolicy::Strict).expect("open");
    for rec in &recs {
        assert!(r.next_record().expect("read").expect("some") == *rec);
    }
    assert!(r.next_record().expect("eof").is_none());
    assert_eq!(r.file_len(), w.len());
}

#[test]
fn writer_is_poisoned_after_a_failed_append() {
    let vfs = MemVfs::new();
    let dir = Path::new("/db");
    vfs.create_dir_all(dir).expect("mkdir");
    let path = dir.join("000001.log");
    let mut w = LogWriter::new(vfs.create(&path).expect("create"));
    w.add_record(b"first").expect("first");
    vfs.set_fault(FaultRule::new(FaultKind::ShortWrite).op(VfsOp::Append));
    assert!(w.add_record(&payload(100, 1)).is_err());
    vfs.clear_faults();
    assert!(
        w.add_record(b"later").is_err(),
        "poisoned writer accepted a record"
    );
    assert!(w.sync().is_err());
    // The torn record is dropped; the first record survives.
    let mut r = LogReader::open(&vfs, &path, TailPolicy::StopAtDamage).expect("open");
    assert_eq!(r.next_record().expect("read"), Some(b"first".to_vec()));
    assert_eq!(r.next_record().expect("read"), None);
    let d = r.dropped().expect("torn record reported");
    assert_eq!(d.offset, (HEADER_SIZE + 5) as u64);
    assert_eq!(d.bytes, ((HEADER_SIZE + 100) / 2) as u64);
    assert!(d.is_tail());
}

#[test]
fn oversized_record_is_refused() {
    let mut w = LogWriter::new(Box::new(VecFile::default()));
    let big = vec![0u8; MAX_RECORD_LEN + 1];
    assert!(matches!(w.add_record(&big), Err(Error::InvalidArgument(_))));
    assert_eq!(w.len(), 0);
}

/// Checks reading `bytes[..cut]` under StopAtDamage returns exactly the
/// records complete before the cut and reports the rest as dropped.
fn check_cut(w: &Written, cut: usize) {
    let complete = w.spans.iter().take_while(|s| s.2 <= cut).count();
    let good_end = if complete == 0 {
        0
    } else {
        w.spans[complete - 1].2
    };
    let (recs, res, r) = read_all(&w.bytes[..cut], TailPolicy::StopAtDamage);
    res.expect("StopAtDamage never errors on damage");
    assert_eq!(recs.len(), complete, "cut at {cut}");
    for (i, rec) in recs.iter().enumerate() {
        assert!(*rec == w.records[i], "cut at {cut}: record {i} wrong");
    }
    // A cut inside a block's zero padding leaves only zeros after the last
    // record: the unwritten rest of a log, not damage.
    let clean = w.bytes[good_end..cut].iter().all(|&b| b == 0);
    if clean {
        assert_eq!(r.dropped(), None, "cut at {cut}");
    } else {
        let d = r.dropped().expect("dropped reported");
        assert!(d.is_tail(), "cut at {cut}: nothing valid follows a cut");
        let (off, bytes, reason) = (d.offset, d.bytes, d.reason.clone());
        assert_eq!(
            (off, bytes),
            (good_end as u64, (cut - good_end) as u64),
            "cut at {cut}: {reason}"
        );
    }
    // Strict: a cut inside a record is an error at that record.
    let (recs, res, _) = read_all(&w.bytes[..cut], TailPolicy::Strict);
    assert_eq!(recs.len(), complete, "strict cut at {cut}");
    if clean {
        res.expect("clean cut is not an error");
    } else {
        match res {
            Err(Error::Corruption { offset, .. }) => {
                let next = w.spans[complete];
                assert!(
                    offset as usize >= next.0 && offset as usize <= next.1,
                    "strict cut at {cut}: offset {offset} not at record {complete} {next:?}"
                );
            }
            other => panic!("strict cut at {cut}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn truncation_at_every_offset_of_a_small_log_yields_a_prefix() {
    let w = sizes_log(&[0, 1, 10, 0, 200, 3, 1000, 50]);
    for cut in 0..=w.bytes.len() {
        check_cut(&w, cut);
    }
}

#[test]
fn truncation_across_blocks_yields_a_prefix() {
    // r1 ends 5 bytes before the block end (padding), r2 spans three
    // blocks (FIRST, MIDDLE, LAST), r3 is small.
    let r0 = 100;
    let r1 = BLOCK_SIZE - 5 - 2 * HEADER_SIZE - r0;
    let w = sizes_log(&[r0, r1, 2 * BLOCK_SIZE, 7, 0]);
    assert_eq!(w.spans[1].2, BLOCK_SIZE - 5);
    assert_eq!(w.spans[2].1, BLOCK_SIZE);
    let mut cuts: Vec<usize> = Vec::new();
    for s in &w.spans {
        for p in [s.0, s.1, s.2] {
            cuts.extend(p.saturating_sub(12)..(p + 12).min(w.bytes.len() + 1));
        }
    }
    for b in 1..=3 {
        let p = b * BLOCK_SIZE;
        cuts.extend(p.saturating_sub(12)..(p + 12).min(w.bytes.len() + 1));
    }
    let mut rng = StdRng::seed_from_u64(7);
    cuts.extend((0..300).map(|_| rng.random_range(0..=w.bytes.len())));
    cuts.push(w.bytes.len());
    for cut in cuts {
        check_cut(&w, cut);
    }
}

/// Flips one bit and checks no wrong record is ever returned.
fn check_flip(w: &Written, byte: usize, bit: u8) {
    let mut bytes = w.bytes.clone();
    bytes[byte] ^= 1 << bit;
    // The damaged record: the one whose span (incl. padding before its
    // header) holds the byte.
    let idx = w
        .spans
        .iter()
        .position(|s| byte >= s.0 && byte < s.2)
        .expect("byte inside some record span");
    let (recs, res, r) = read_all(&bytes, TailPolicy::StopAtDamage);
    res.expect("no error under StopAtDamage");
    assert_eq!(recs.len(), idx, "flip {byte}:{bit}");
    for (i, rec) in recs.iter().enumerate() {
        assert!(*rec == w.records[i], "flip {byte}:{bit} record {i} wrong");
    }
    let d = r.dropped().expect("damage reported");
    let (off, dropped) = (d.offset, d.bytes);
    // A flip in a record that a later record follows is damage with
    // valid records after it, never a tail.
    let later_records = w.records.len() - idx - 1;
    if later_records > 0 {
        assert!(
            !d.is_tail(),
            "flip {byte}:{bit}: {later_records} records follow, none found"
        );
    }
    assert_eq!(off as usize, w.spans[idx].0, "flip {byte}:{bit}");
    assert_eq!(dropped as usize, bytes.len() - w.spans[idx].0);

    let (recs, res, _) = read_all(&bytes, TailPolicy::Strict);
    assert_eq!(recs.len(), idx, "strict flip {byte}:{bit}");
    match res {
        Err(Error::Corruption { offset, .. }) => {
            let s = w.spans[idx];
            assert!(
                offset as usize >= s.0 && offset as usize <= s.1,
                "strict flip {byte}:{bit}: offset {offset} not at record {idx} {s:?}"
            );
        }
        other => panic!("strict flip {byte}:{bit}: expected corruption, got {other:?}"),
    }
}

#[test]
fn every_single_bit_flip_in_a_small_log_is_detected() {
    let w = sizes_log(&[0, 1, 10, 0, 200, 3, 50]);
    for byte in 0..w.bytes.len() {
        for bit in 0..8 {
            check_flip(&w, byte, bit);
        }
    }
}

#[test]
fn bit_flips_in_headers_padding_and_fragments_across_blocks_are_detected() {
    let r0 = 100;
    let r1 = BLOCK_SIZE - 5 - 2 * HEADER_SIZE - r0;
    let w = sizes_log(&[r0, r1, 2 * BLOCK_SIZE, 7, 0]);
    let mut bytes_to_flip: Vec<usize> = Vec::new();
    // Every header (fragment headers sit at block starts too) and the
    // padding, plus the first/last bytes of each payload.
    for s in &w.spans {
        bytes_to_flip.extend(s.0..(s.1 + HEADER_SIZE + 2).min(s.2));
        bytes_to_flip.extend(s.2.saturating_sub(2).max(s.0)..s.2);
    }
    for b in 1..=3 {
        let p = b * BLOCK_SIZE;
        bytes_to_flip.extend(p.saturating_sub(3)..(p + HEADER_SIZE + 2).min(w.bytes.len()));
    }
    let mut rng = StdRng::seed_from_u64(11);
    bytes_to_flip.extend((0..200).map(|_| rng.random_range(0..w.bytes.len())));
    for byte in bytes_to_flip {
        for bit in 0..8 {
            check_flip(&w, byte, bit);
        }
    }
}

/// A log whose size was set ahead of its appends (or whose last appended
/// page a crash left unwritten) ends in zeros: they are where the writer
/// had not written, so the log ends there under either policy, wherever
/// the zeros start (mid-block, in a block's padding, across blocks).
#[test]
fn zeros_after_the_last_record_end_the_log_cleanly() {
    let w = sizes_log(&[10, 20, 32 * 1024 - 40, 5000]);
    for zeros in [3, 4096, 100_000] {
        let mut bytes = w.bytes.clone();
        bytes.resize(bytes.len() + zeros, 0);
        for policy in [TailPolicy::StopAtDamage, TailPolicy::Strict] {
            let (recs, res, r) = read_all(&bytes, policy);
            res.expect("zeros after the last record are no damage");
            assert_eq!(recs, w.records, "{zeros} zeros");
            assert_eq!(r.dropped(), None, "{zeros} zeros");
        }
    }
}

/// Zeros followed by anything that is not zero are damage, not the end.
#[test]
fn zeros_before_more_data_are_damage() {
    let w = sizes_log(&[10, 20]);
    let mut bytes = w.bytes.clone();
    bytes.resize(bytes.len() + 100, 0);
    bytes.push(1);
    let (recs, res, r) = read_all(&bytes, TailPolicy::StopAtDamage);
    res.expect("StopAtDamage reports damage through dropped()");
    assert_eq!(recs, w.records);
    let d = r.dropped().expect("dropped");
    assert_eq!(d.offset, w.bytes.len() as u64);
    let (_, res, _) = read_all(&bytes, TailPolicy::Strict);
    assert!(matches!(res, Err(Error::Corruption { offset, .. }) if offset == w.bytes.len() as u64));
}

/// Builds one physical record by hand.
fn physical(ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    put_fixed32(&mut v, mask_crc(record_crc(ty, payload)));
    put_fixed32(&mut v, payload.len() as u32);
    v.push(ty);
    v.extend_from_slice(payload);
    v
}

fn strict_error(bytes: Vec<u8>) -> (usize, u64, String) {
    let (recs, res, _) = read_all(&bytes, TailPolicy::Strict);
    match res {
        Err(Error::Corruption { offset, reason, .. }) => (recs.len(), offset, reason),
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn unknown_type_and_out_of_order_fragments_are_corruption() {
    let ok = physical(TYPE_FULL, b"ok");
    let n = ok.len() as u64;

    let (good, off, reason) = strict_error([ok.clone(), physical(9, b"x")].concat());
    assert_eq!((good, off), (1, n));
    assert!(reason.contains("unknown record type 9"), "{reason}");

    let (good, off, reason) = strict_error([ok.clone(), physical(TYPE_MIDDLE, b"x")].concat());
    assert_eq!((good, off), (1, n));
    assert!(reason.contains("without a FIRST"), "{reason}");

    let (good, off, reason) = strict_error([ok.clone(), physical(TYPE_LAST, b"x")].concat());
    assert_eq!((good, off), (1, n));
    assert!(reason.contains("without a FIRST"), "{reason}");

    let bytes = [
        ok.clone(),
        physical(TYPE_FIRST, b"a"),
        physical(TYPE_FULL, b"b"),
    ]
    .concat();
    let (good, off, reason) = strict_error(bytes.clone());
    assert_eq!((good, off), (1, n));
    assert!(reason.contains("FULL fragment"), "{reason}");
    let (recs, res, r) = read_all(&bytes, TailPolicy::StopAtDamage);
    res.expect("no error");
    assert_eq!(recs, vec![b"ok".to_vec()]);
    assert_eq!(
        r.dropped().map(|d| (d.offset, d.bytes)),
        Some((n, bytes.len() as u64 - n))
    );

    let (good, off, _) = strict_error(
        [
            ok.clone(),
            physical(TYPE_FIRST, b"a"),
            physical(TYPE_FIRST, b"b"),
        ]
        .concat(),
    );
    assert_eq!((good, off), (1, n));

    // A well-formed hand-built fragmented record is accepted, an empty
    // FIRST included (the writer leaves one when a block has just a
    // header's room).
    let bytes = [
        physical(TYPE_FIRST, b""),
        physical(TYPE_MIDDLE, b"ab"),
        physical(TYPE_MIDDLE, b"c"),
        physical(TYPE_LAST, b"d"),
    ]
    .concat();
    let (recs, res, _) = read_all(&bytes, TailPolicy::Strict);
    res.expect("valid");
    assert_eq!(recs, vec![b"abcd".to_vec()]);

    // An empty MIDDLE is never written; a run of them is damage, not
    // memory spent on nothing.
    let (good, off, reason) = strict_error(
        [
            ok.clone(),
            physical(TYPE_FIRST, b"a"),
            physical(TYPE_MIDDLE, b""),
            physical(TYPE_MIDDLE, b""),
            physical(TYPE_LAST, b"b"),
        ]
        .concat(),
    );
    assert_eq!((good, off), (1, n));
    assert!(reason.contains("empty MIDDLE"), "{reason}");
}

#[test]
fn length_past_the_block_end_is_corruption() {
    let mut v = Vec::new();
    put_fixed32(&mut v, 0x1234_5678);
    put_fixed32(&mut v, u32::MAX);
    v.push(TYPE_FULL);
    v.extend_from_slice(&[1, 2, 3]);
    let (good, off, reason) = strict_error(v);
    assert_eq!((good, off), (0, 0));
    assert!(reason.contains("bad record length"), "{reason}");
}

#[test]
fn strict_error_repeats_on_later_calls() {
    let mut bytes = physical(TYPE_FULL, b"ok");
    bytes.extend_from_slice(&[1, 2, 3]);
    let mut r = LogReader::from_bytes("f", bytes, TailPolicy::Strict);
    assert!(r.next_record().expect("first").is_some());
    assert!(r.next_record().is_err());
    assert!(r.next_record().is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_sizes_round_trip(
        sizes in prop::collection::vec(
            prop_oneof![0usize..64, 0usize..40_000, 30_000usize..100_000], 0..16),
        seed in any::<u64>(),
    ) {
        let w = write_log(
            sizes.iter().enumerate().map(|(i, &n)| payload(n, seed.wrapping_add(i as u64))).collect(),
        );
        let (recs, res, r) = read_all(&w.bytes, TailPolicy::Strict);
        prop_assert!(res.is_ok(), "{:?}", res);
        prop_assert_eq!(recs.len(), w.records.len());
        for (a, b) in recs.iter().zip(&w.records) {
            prop_assert!(a == b);
        }
        prop_assert_eq!(r.dropped(), None);
    }

    #[test]
    fn random_garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..70_000)) {
        for policy in [TailPolicy::Strict, TailPolicy::StopAtDamage] {
            let mut r = LogReader::from_bytes("g", data.clone(), policy);
            let mut total = 0usize;
            for _ in 0..data.len() + 2 {
                match r.next_record() {
                    Ok(Some(rec)) => total += rec.len(),
                    Ok(None) | Err(_) => break,
                }
            }
            prop_assert!(total <= data.len());
        }
    }

    #[test]
    fn damaged_valid_logs_yield_a_prefix(
        sizes in prop::collection::vec(0usize..20_000, 1..10),
        hits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let w = sizes_log(&sizes);
        let mut bytes = w.bytes.clone();
        for (i, b) in &hits {
            let i = i.index(bytes.len());
            bytes[i] = *b;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        for policy in [TailPolicy::Strict, TailPolicy::StopAtDamage] {
            let (recs, res, _) = read_all(&bytes, policy);
            if policy == TailPolicy::StopAtDamage {
                prop_assert!(res.is_ok());
            }
            prop_assert!(recs.len() <= w.records.len());
            for (a, b) in recs.iter().zip(&w.records) {
                prop_assert!(a == b, "a wrong record was returned");
            }
        }
    }
}

#[test]
fn damage_followed_by_records_is_not_a_tail_and_can_be_skipped() {
    let w = sizes_log(&[10, 20, 30, 40]);
    let mut bytes = w.bytes.clone();
    // Corrupt the length field of the second record: where it ends is
    // no longer known, yet the records after it must still be found.
    bytes[w.spans[1].0 + 5] ^= 0x40;
    let (recs, res, mut r) = read_all(&bytes, TailPolicy::StopAtDamage);
    res.expect("no error under StopAtDamage");
    assert_eq!(recs, w.records[..1].to_vec());
    let d = r.dropped().expect("damage").clone();
    assert_eq!(d.valid_records_after, 2);
    assert!(!d.is_tail());
    assert_eq!(d.next_valid_offset, Some(w.spans[2].0 as u64));
    let skipped = r.skip_damage().expect("resumes");
    assert_eq!(
        skipped,
        (w.spans[1].0 as u64, (w.spans[2].0 - w.spans[1].0) as u64)
    );
    let mut rest = Vec::new();
    while let Some(rec) = r.next_record().expect("read") {
        rest.push(rec);
    }
    assert_eq!(rest, w.records[2..].to_vec());
    assert_eq!(r.dropped(), None);
}

#[test]
fn a_damaged_last_record_is_a_tail_and_nothing_is_skipped_to() {
    let w = sizes_log(&[10, 20, 30]);
    let mut bytes = w.bytes.clone();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    let (recs, _, mut r) = read_all(&bytes, TailPolicy::StopAtDamage);
    assert_eq!(recs.len(), 2);
    assert!(r.dropped().expect("damage").is_tail());
    assert_eq!(r.skip_damage(), None);
}

#[test]
fn first_record_bytes_are_what_a_writer_writes_first() {
    let mut w = LogWriter::new(Box::new(VecFile::default()));
    w.add_record(b"a header").expect("add");
    let written = read_all(&first_record_bytes(b"a header"), TailPolicy::Strict);
    assert_eq!(written.0, vec![b"a header".to_vec()]);
    assert_eq!(w.len() as usize, first_record_bytes(b"a header").len());
}
