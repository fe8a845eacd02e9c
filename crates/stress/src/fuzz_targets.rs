//! The checks behind the fuzz targets of `fuzz/`, written once: each
//! `fuzz/fuzz_targets/<name>.rs` calls the function of the same name, and
//! `tests/fuzz_corpus.rs` replays the kept corpora through them.
//!
//! Every function must not panic, hang or allocate without bound on any
//! input; where the engine promises more (a table that passes `verify`
//! iterates the same both ways and finds its own keys; the two log-reading
//! policies agree up to the first damage; a decoded manifest edit
//! re-encodes to itself; shell tokens round-trip), the function asserts it.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use strata::cache::BlockCache;
use strata::key;
use strata::log::{LogReader, TailPolicy};
use strata::manifest::VersionEdit;
use strata::sst::{Block, TableReader};
use strata::stats::Statistics;
use strata::vfs::RandomAccessFile;
use strata_cli::shell::{Command, parse_line};
use strata_cli::{decode_token, encode_bytes};

/// The targets, by name.
pub const TARGETS: &[&str] = &[
    "sst_table",
    "sst_table_repaired",
    "sst_block",
    "wal_reader",
    "manifest",
    "shell_parser",
];

/// The check of target `name`.
pub fn by_name(name: &str) -> Option<fn(&[u8])> {
    Some(match name {
        "sst_table" => sst_table,
        "sst_table_repaired" => sst_table_repaired,
        "sst_block" => sst_block,
        "wal_reader" => wal_reader,
        "manifest" => manifest,
        "shell_parser" => shell_parser,
        _ => return None,
    })
}

/// Entries an iteration collects at most (a bound against hangs).
const MAX_ENTRIES: usize = 1 << 16;

/// A file held in memory.
struct BytesFile(Vec<u8>);

impl RandomAccessFile for BytesFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> strata::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|s| self.0.get(s..s.checked_add(buf.len())?));
        match src {
            Some(s) => {
                buf.copy_from_slice(s);
                Ok(())
            }
            None => Err(strata::Error::io(
                format!("read {} bytes at {offset}", buf.len()),
                io::Error::new(io::ErrorKind::UnexpectedEof, "past the end"),
            )),
        }
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn collect_table(reader: &Arc<TableReader>, backward: bool) -> (Entries, bool) {
    use strata::iter::InternalIterator;
    let mut it = reader.iter();
    if backward {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut out = Vec::new();
    while it.valid() && out.len() < MAX_ENTRIES {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if backward {
            it.prev();
        } else {
            it.next();
        }
    }
    let clean = !it.valid() && it.status().is_ok();
    if backward {
        out.reverse();
    }
    (out, clean)
}

/// Bytes as a table file: open, verify, iterate both ways, look keys up.
pub fn sst_table(data: &[u8]) {
    use strata::iter::InternalIterator;
    let file = Arc::new(BytesFile(data.to_vec()));
    let cache = Some(Arc::new(BlockCache::new(1 << 20)));
    let stats = Arc::new(Statistics::default());
    let Ok(reader) = TableReader::open(file, PathBuf::from("fuzz.sst"), 1, cache, stats) else {
        return;
    };
    let reader = Arc::new(reader);
    let verified = reader.verify().is_ok();
    let (fwd, fwd_clean) = collect_table(&reader, false);
    let (bwd, bwd_clean) = collect_table(&reader, true);
    // Seeks to arbitrary targets must not panic.
    for target in [
        &data[..data.len().min(9)],
        &data[data.len().saturating_sub(20)..],
        b"",
    ] {
        let mut it = reader.iter();
        it.seek(target);
        let mut it = reader.iter();
        it.seek_for_prev(target);
        let _ = reader.get(key::user_key(target), target, &mut |_, _| true);
    }
    if !verified || fwd.len() >= MAX_ENTRIES {
        return;
    }
    assert!(
        fwd_clean && bwd_clean,
        "a table that passes verify() fails to iterate"
    );
    assert_eq!(
        fwd, bwd,
        "forward and backward iteration of a verified table differ"
    );
    let step = (fwd.len() / 16).max(1);
    for (k, v) in fwd.iter().step_by(step) {
        let mut seen = false;
        let r = reader.get(key::user_key(k), k, &mut |ik, iv| {
            if ik == k.as_slice() {
                assert_eq!(
                    iv,
                    v.as_slice(),
                    "get returned another value than iteration"
                );
                seen = true;
                false
            } else {
                true
            }
        });
        assert!(r.is_ok(), "get on a verified table failed: {r:?}");
        assert!(seen, "get did not find an entry of a verified table");
        let mut it = reader.iter();
        it.seek(k);
        assert!(
            it.valid() && it.key() == k.as_slice(),
            "seek missed an entry of a verified table"
        );
    }
}

/// Rewrites the checksums of a table image so that mutated bytes get past
/// them: the footer gets the magic, version 1 and its CRC; every block the
/// footer and the index point at (when in bounds) gets its trailer CRC
/// recomputed for the compression byte found there.
pub fn repair_table_checksums(data: &mut [u8]) {
    use strata::sst::format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer, block_trailer};
    if data.len() < FOOTER_LEN {
        return;
    }
    let fo = data.len() - FOOTER_LEN;
    let field = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[fo + i * 8..fo + i * 8 + 8]);
        u64::from_le_bytes(b)
    };
    let h = |i: usize| BlockHandle {
        offset: field(i),
        size: field(i + 1),
    };
    let footer = Footer {
        index: h(0),
        filter: h(2),
        properties: h(4),
        version: 1,
    };
    data[fo..].copy_from_slice(&footer.encode());
    let fix = |data: &mut [u8], b: BlockHandle| -> Option<Vec<u8>> {
        let start = usize::try_from(b.offset).ok()?;
        let end = start.checked_add(usize::try_from(b.size).ok()?)?;
        if end.checked_add(BLOCK_TRAILER_LEN)? > fo {
            return None;
        }
        let t = block_trailer(&data[start..end], data[end]);
        data[end..end + BLOCK_TRAILER_LEN].copy_from_slice(&t);
        Some(data[start..end].to_vec())
    };
    fix(data, footer.filter);
    fix(data, footer.properties);
    let Some(index) = fix(data, footer.index) else {
        return;
    };
    // Uncompressed index blocks only (the writer never compresses them).
    let Ok(block) = Block::new(index) else {
        return;
    };
    let block = Arc::new(block);
    let mut it = block.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < MAX_ENTRIES {
        if let Some(b) = BlockHandle::decode_exact(it.value()) {
            fix(data, b);
        }
        it.next();
        n += 1;
    }
}

/// [`sst_table`] after [`repair_table_checksums`]: reaches the block,
/// properties, filter and decompression code that checksums shield from
/// plain byte mutations.
pub fn sst_table_repaired(data: &[u8]) {
    let mut d = data.to_vec();
    repair_table_checksums(&mut d);
    sst_table(&d);
}

/// Bytes as a decoded data block: validate, iterate both ways, seek.
pub fn sst_block(data: &[u8]) {
    let Ok(block) = Block::new(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    let mut keys = Vec::new();
    let mut it = block.iter();
    it.seek_to_first();
    while it.valid() && keys.len() < MAX_ENTRIES {
        keys.push(it.key().to_vec());
        let _ = it.value();
        it.next();
    }
    let mut it = block.iter();
    it.seek_to_last();
    let mut n = 0;
    while it.valid() && n < MAX_ENTRIES {
        it.prev();
        n += 1;
    }
    for k in keys.iter().step_by((keys.len() / 8).max(1)) {
        let mut it = block.iter();
        it.seek(k);
        let mut it = block.iter();
        it.seek_for_prev(k);
    }
    let mut it = block.iter();
    it.seek(&data[..data.len().min(12)]);
    if it.valid() {
        it.prev();
    }
}

fn read_log(data: &[u8], policy: TailPolicy) -> (Vec<Vec<u8>>, strata::Result<()>, LogReader) {
    let mut r = LogReader::from_bytes("fuzz.log", data.to_vec(), policy);
    let mut recs = Vec::new();
    let res = loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                recs.push(rec);
                if recs.len() >= MAX_ENTRIES {
                    break Ok(());
                }
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    (recs, res, r)
}

/// Bytes as a write-ahead log, read under both tail policies.
///
/// (Records are not decoded as write batches: the batch decoder,
/// `strata::batch::DecodedBatch`, is not public.)
pub fn wal_reader(data: &[u8]) {
    let (strict, strict_res, mut sr) = read_log(data, TailPolicy::Strict);
    let (lenient, lenient_res, lr) = read_log(data, TailPolicy::StopAtDamage);
    if strict.len() >= MAX_ENTRIES {
        return;
    }
    assert!(
        lenient_res.is_ok(),
        "StopAtDamage returned an error: {lenient_res:?}"
    );
    assert_eq!(
        strict, lenient,
        "the two policies disagree before the first damage"
    );
    match (&strict_res, lr.dropped()) {
        (Ok(()), None) => {}
        (Err(_), Some(d)) => {
            assert_eq!(
                d.offset + d.bytes,
                lr.file_len(),
                "dropped range does not reach the end"
            );
            assert!(sr.next_record().is_err(), "Strict forgot its error");
        }
        (s, d) => panic!("Strict says {s:?} but StopAtDamage dropped {d:?}"),
    }
}

/// Bytes as a manifest (records decoded as version edits), and as one edit.
pub fn manifest(data: &[u8]) {
    let roundtrip = |rec: &[u8]| {
        if let Ok(edit) = VersionEdit::decode(rec) {
            let again = VersionEdit::decode(&edit.encode());
            assert_eq!(
                again.as_ref(),
                Ok(&edit),
                "a decoded edit does not re-encode to itself"
            );
        }
    };
    roundtrip(data);
    for policy in [TailPolicy::Strict, TailPolicy::StopAtDamage] {
        let (recs, _, _) = read_log(data, policy);
        for r in &recs {
            roundtrip(r);
        }
    }
}

/// Bytes as shell input lines; tokens must round-trip.
pub fn shell_parser(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in std::iter::once(text.as_ref()).chain(text.lines()) {
        let parsed = parse_line(line);
        let again = match &parsed {
            Ok(Command::Put { key, value }) => {
                Some(format!("put {} {}", encode_bytes(key), encode_bytes(value)))
            }
            Ok(Command::Get { key }) => Some(format!("GET {}", encode_bytes(key))),
            Ok(Command::Delete { key }) => Some(format!("delete {}", encode_bytes(key))),
            Ok(Command::Merge { key, operand }) => Some(format!(
                "merge {}\t{}",
                encode_bytes(key),
                encode_bytes(operand)
            )),
            _ => None,
        };
        if let Some(l) = again {
            assert_eq!(
                parse_line(&l),
                parsed,
                "re-encoded command {l:?} parses differently"
            );
        }
    }
    let token = encode_bytes(data);
    assert_eq!(
        decode_token(&token).as_deref(),
        Ok(data),
        "encode_bytes does not round-trip"
    );
}
