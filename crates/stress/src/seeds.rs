//! Seed corpora for the fuzz targets: small, valid files of each format,
//! made by the engine itself (`strata-stress fuzz-seeds --out fuzz/seeds`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::FileNumber as Fnum;
use strata::KeyspaceId as Ks;
use strata::dict::Dictionary;
use strata::dictfile::DictFormat;
use strata::key::{ValueKind, make_internal_key};
use strata::log::LogWriter;
use strata::manifest::{NewFile, TableFile, VersionEdit};
use strata::sst::block::BlockBuilder;
use strata::sst::{Compression, TableBuilder, TableBuilderOptions};
use strata::stats::Statistics;
use strata::table_format::{GroupId, TableFormat, TableWriter, WriterContext};
use strata::vfs::Vfs;
use strata::vfs_mem::MemVfs;
use strata::{Db, KeyspaceOptions, Options, WriteBatch, WriteOptions};

fn err(e: strata::Error) -> io::Error {
    io::Error::other(e.to_string())
}

/// Internal keys `key000..` with a few versions and kinds, sorted.
fn entries(n: usize, versions: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    entries_valued(n, versions, &|i, s| {
        format!("value-{i}-{s}-{}", "x".repeat(i % 13)).into_bytes()
    })
}

/// [`entries`] with the value of key `i`, version `s` from `value`.
fn entries_valued(
    n: usize,
    versions: u64,
    value: &dyn Fn(usize, u64) -> Vec<u8>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..n {
        let uk = format!("key{i:05}");
        for s in (1..=versions).rev() {
            let kind = match (i as u64 + s) % 5 {
                0 => ValueKind::Delete,
                1 => ValueKind::Merge,
                _ => ValueKind::Put,
            };
            let value = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                value(i, s)
            };
            v.push((
                make_internal_key(uk.as_bytes(), 1000 + i as u64 * 10 + s, kind),
                value,
            ));
        }
    }
    v
}

fn table(
    vfs: &MemVfs,
    name: &str,
    opts: TableBuilderOptions,
    n: usize,
    versions: u64,
) -> io::Result<Vec<u8>> {
    let path = PathBuf::from(format!("/seeds/{name}.sst"));
    let file = vfs.create(&path).map_err(err)?;
    let mut b = TableBuilder::new(file, path.clone(), opts);
    for (k, v) in entries(n, versions) {
        b.add(&k, &v).map_err(err)?;
    }
    b.finish().map_err(err)?;
    vfs.read_all(&path).map_err(err)
}

/// A dictionary-encoded file (`strata.dict1`) of `entries`, written by
/// the format's own writer.
fn dict_file(
    vfs: &MemVfs,
    name: &str,
    opts: TableBuilderOptions,
    max_distinct_ratio: f64,
    entries: &[(Vec<u8>, Vec<u8>)],
) -> io::Result<Vec<u8>> {
    let path = PathBuf::from(format!("/seeds/{name}.sst"));
    let stats = Arc::new(Statistics::default());
    let ctx = WriterContext {
        options: &opts,
        level: strata::Level(1),
        group: GroupId::WHOLE,
        owner_db_id: b"seed-database-id",
        file_number: Fnum(7),
        stats: &stats,
    };
    let format = DictFormat { max_distinct_ratio };
    let mut w = format
        .writer(vfs.create(&path).map_err(err)?, path.clone(), &ctx)
        .map_err(err)?;
    for (k, v) in entries {
        w.add(k, v).map_err(err)?;
    }
    w.finish().map_err(err)?;
    vfs.read_all(&path).map_err(err)
}

/// Values from a small set (`distinct` of them), with shared prefixes,
/// a zero byte and a 0xff byte among them.
fn few_values(distinct: usize) -> impl Fn(usize, u64) -> Vec<u8> {
    move |i, s| {
        let c = (i * 7 + s as usize) % distinct;
        match c % 4 {
            0 => format!("colour-{c}").into_bytes(),
            1 => format!("colour-{c}-dark").into_bytes(),
            2 => vec![b'z', 0, c as u8],
            _ => vec![0xff, c as u8],
        }
    }
}

/// The largest table file of a small database whose default keyspace
/// stores values dictionary-encoded, after flushes and a full compaction
/// (so its dictionary was merged from its inputs' dictionaries).
fn compacted_dict_file(vfs: &MemVfs) -> io::Result<Vec<u8>> {
    let dir = Path::new("/seeds/dictdb");
    let ks_opts = KeyspaceOptions {
        write_buffer_size: 8 << 10,
        block_size: 512,
        ..KeyspaceOptions::default()
    }
    .with_value_dictionary();
    let opts = Options {
        vfs: Arc::new(vfs.clone()),
        default_keyspace: ks_opts,
        ..Options::default()
    };
    let db = Db::open(dir, opts).map_err(err)?;
    let value = few_values(11);
    for round in 0..3u64 {
        for i in 0..150usize {
            if (i + round as usize).is_multiple_of(9) {
                db.delete(format!("k{i:04}").as_bytes()).map_err(err)?;
            } else {
                db.put(format!("k{i:04}").as_bytes(), &value(i, round))
                    .map_err(err)?;
            }
        }
        db.flush().map_err(err)?;
    }
    db.compact().map_err(err)?;
    let mut best: Option<Vec<u8>> = None;
    for n in vfs.list(dir).map_err(err)? {
        if n.ends_with(".sst") {
            let data = vfs.read_all(&dir.join(&n)).map_err(err)?;
            if best.as_ref().is_none_or(|b| b.len() < data.len()) {
                best = Some(data);
            }
        }
    }
    drop(db);
    best.ok_or_else(|| io::Error::other("no table file in the seed database"))
}

/// A column-group file of the fuzz targets' table
/// ([`crate::fuzz_targets::cg_shape`]) holding value columns `columns`,
/// written by the format's own writer from [`entries`]' keys with rows of
/// every type (few distinct strings when `few` is set).
fn cg_file(
    vfs: &MemVfs,
    name: &str,
    opts: TableBuilderOptions,
    columns: &[usize],
    max_distinct_ratio: f64,
    n: usize,
    few: bool,
) -> io::Result<Vec<u8>> {
    use strata::table::cgfile::CgWriter;
    use strata::table::piece::{Cell, PieceEncoder};
    let shape = crate::fuzz_targets::cg_shape();
    let path = PathBuf::from(format!("/seeds/{name}.sst"));
    let stats = Arc::new(Statistics::default());
    let ctx = WriterContext {
        options: &opts,
        level: strata::Level(2),
        group: GroupId(3),
        owner_db_id: b"seed-database-id",
        file_number: Fnum(9),
        stats: &stats,
    };
    let file = vfs.create(&path).map_err(err)?;
    let mut w = CgWriter::new(
        file,
        path.clone(),
        Arc::clone(&shape),
        GroupId(3),
        columns,
        &ctx,
        max_distinct_ratio,
    );
    let strings = few_values(if few { 5 } else { 1000 });
    let mut enc = PieceEncoder::new(&shape.pieces);
    let mut piece = Vec::new();
    for (i, (k, _)) in entries(n, 2).into_iter().enumerate() {
        let kind = k[k.len() - 8];
        enc.clear();
        let text = strings(i, 1);
        let bin = strings(i + 1, 2);
        // A merge (kind 2) sets only some columns; every eleventh value of
        // a column is null.
        for v in 0..6 {
            if kind == 2 && v % 2 == 0 {
                continue;
            }
            let cell = match v {
                _ if (i + v) % 11 == 0 => Cell::Null,
                0 => Cell::Int32(i as i32 - 50),
                1 => Cell::Bytes(&text),
                2 => Cell::Bytes(&bin),
                3 => Cell::Int64(-(i as i64) << 20),
                4 => Cell::Float64(i as f64 / 3.0),
                _ => Cell::Bool(i % 3 == 0),
            };
            enc.push(&shape.pieces, v, cell);
        }
        piece.clear();
        enc.finish(&shape.pieces, &mut piece);
        let value: &[u8] = if kind == 0 { &[] } else { &piece };
        w.add(&k, value).map_err(err)?;
    }
    Box::new(w).finish().map_err(err)?;
    vfs.read_all(&path).map_err(err)
}

fn dictionary_encoding(values: &[&[u8]]) -> io::Result<Vec<u8>> {
    let d = Dictionary::from_sorted(values.iter().copied())
        .ok_or_else(|| io::Error::other("seed dictionary values are not ascending"))?;
    let mut out = Vec::new();
    d.encode_to(&mut out);
    Ok(out)
}

fn block(restart: usize, n: usize) -> Vec<u8> {
    let mut b = BlockBuilder::new(restart);
    for (k, v) in entries(n, 1) {
        b.add(&k, &v);
    }
    b.finish().to_vec()
}

fn log_of(vfs: &MemVfs, name: &str, records: &[Vec<u8>]) -> io::Result<Vec<u8>> {
    let path = PathBuf::from(format!("/seeds/{name}"));
    let mut w = LogWriter::new(vfs.create(&path).map_err(err)?);
    for r in records {
        w.add_record(r).map_err(err)?;
    }
    w.sync().map_err(err)?;
    vfs.read_all(&path).map_err(err)
}

/// The live write-ahead log and manifest of a small database with merges,
/// deletes and batches across two keyspaces, after some flushes.
fn db_files(vfs: &MemVfs) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let dir = Path::new("/seeds/db");
    let ks_opts = KeyspaceOptions {
        write_buffer_size: 8 << 10,
        merge_operator: Some(Arc::new(strata::merge::U64AddOperator)),
        ..KeyspaceOptions::default()
    };
    let opts = Options {
        vfs: Arc::new(vfs.clone()),
        default_keyspace: ks_opts.clone(),
        ..Options::default()
    };
    let db = Db::open(dir, opts).map_err(err)?;
    let other = db.keyspace("counters", ks_opts).map_err(err)?;
    for i in 0..300u32 {
        db.put(
            format!("k{i:04}").as_bytes(),
            &vec![b'a' + (i % 26) as u8; (i % 40) as usize],
        )
        .map_err(err)?;
        if i % 7 == 0 {
            db.delete(format!("k{:04}", i / 2).as_bytes())
                .map_err(err)?;
        }
        if i % 5 == 0 {
            other
                .merge(b"counter", &u64::from(i).to_le_bytes())
                .map_err(err)?;
        }
    }
    db.flush().map_err(err)?;
    let mut b = WriteBatch::new();
    b.put(b"batch-a", b"1");
    b.delete_in(other.id(), b"counter");
    b.merge_in(other.id(), b"c2", &7u64.to_le_bytes());
    db.write(
        WriteOptions {
            sync: true,
            disable_wal: false,
        },
        b,
    )
    .map_err(err)?;
    db.put(b"big", &vec![b'z'; 40_000]).map_err(err)?;
    let names = vfs.list(dir).map_err(err)?;
    let find = |f: &dyn Fn(&str) -> bool| -> io::Result<Vec<u8>> {
        let n = names
            .iter()
            .filter(|n| f(n))
            .max()
            .ok_or_else(|| io::Error::other("file missing from the seed database"))?;
        vfs.read_all(&dir.join(n)).map_err(err)
    };
    let wal = find(&|n| n.ends_with(".log"))?;
    let manifest = find(&|n| n.starts_with("MANIFEST-"))?;
    drop(db);
    Ok((wal, manifest))
}

/// Writes every target's seeds under `out/<target>/`; returns the file count.
pub fn write_all(out: &Path) -> io::Result<usize> {
    let vfs = MemVfs::new();
    vfs.create_dir_all(Path::new("/seeds")).map_err(err)?;
    let mut files: Vec<(&str, String, Vec<u8>)> = Vec::new();

    let o = |block_size, restart_interval, bloom_bits_per_key, compression| TableBuilderOptions {
        block_size,
        restart_interval,
        bloom_bits_per_key,
        compression,
        ..TableBuilderOptions::default()
    };
    files.push((
        "sst_table",
        "small".into(),
        table(&vfs, "a", o(4096, 16, 10, Compression::None), 10, 1)?,
    ));
    files.push((
        "sst_table",
        "blocks".into(),
        table(&vfs, "b", o(256, 4, 10, Compression::None), 120, 2)?,
    ));
    files.push((
        "sst_table",
        "lz4".into(),
        table(&vfs, "c", o(512, 16, 10, Compression::Lz4), 100, 1)?,
    ));
    files.push((
        "sst_table",
        "zstd-nofilter".into(),
        table(&vfs, "d", o(512, 2, 0, Compression::Zstd), 100, 1)?,
    ));
    files.push((
        "sst_table",
        "zstd-dictionary".into(),
        table(
            &vfs,
            "f",
            TableBuilderOptions {
                block_size: 256,
                compression: Compression::Zstd,
                zstd_dictionary_bytes: 256,
                ..TableBuilderOptions::default()
            },
            400,
            1,
        )?,
    ));
    files.push((
        "sst_table",
        "one".into(),
        table(&vfs, "e", o(4096, 1, 10, Compression::None), 1, 1)?,
    ));

    files.push(("sst_block", "r1".into(), block(1, 5)));
    files.push(("sst_block", "r2".into(), block(2, 20)));
    files.push(("sst_block", "r16".into(), block(16, 60)));
    files.push(("sst_block", "empty".into(), block(16, 0)));

    let (wal, man) = db_files(&vfs)?;
    files.push(("wal_reader", "db-wal".into(), wal.clone()));
    files.push((
        "wal_reader",
        "db-wal-torn".into(),
        wal[..wal.len() - 3].to_vec(),
    ));
    let recs: Vec<Vec<u8>> = [0usize, 1, 20, 300, 33_000]
        .iter()
        .map(|&n| (0..n).map(|i| (i * 7) as u8).collect())
        .collect();
    files.push((
        "wal_reader",
        "fragments".into(),
        log_of(&vfs, "f.log", &recs)?,
    ));
    files.push((
        "wal_reader",
        "small".into(),
        log_of(&vfs, "g.log", &recs[..4])?,
    ));

    files.push(("manifest", "db".into(), man));
    let edit = VersionEdit {
        format_version: Some(2),
        db_id: Some(*b"seed-database-id"),
        keyspace_identities: vec![(
            Ks(1),
            strata::manifest::KeyspaceIdentity {
                merge_operator: "u64add".into(),
                layout: "uniform".into(),
            },
        )],
        next_file_number: Some(Fnum(12)),
        last_seqno: Some(strata::SeqNo(99)),
        added_keyspaces: vec![(Ks(0), "default".into()), (Ks(1), "counters".into())],
        dropped_keyspaces: vec![Ks(3)],
        next_keyspace_id: Some(Ks(4)),
        log_numbers: vec![(Ks(0), Fnum(7)), (Ks(1), Fnum(9))],
        new_files: vec![NewFile {
            keyspace: Ks(1),
            level: strata::Level(2),
            file: TableFile {
                group: GroupId::WHOLE,
                number: Fnum(11),
                size: 4096,
                smallest: make_internal_key(b"a", 5, ValueKind::Put),
                largest: make_internal_key(b"z", 9, ValueKind::Delete),
                smallest_seqno: strata::SeqNo(5),
                largest_seqno: strata::SeqNo(9),
                num_entries: 40,
                num_deletions: 3,
                format: String::new(),
            },
        }],
        deleted_files: vec![(Ks(0), strata::Level(1), Fnum(4))],
    };
    files.push(("manifest", "edit".into(), edit.encode()));
    files.push((
        "manifest",
        "log".into(),
        log_of(
            &vfs,
            "MANIFEST-000001",
            &[edit.encode(), VersionEdit::default().encode()],
        )?,
    ));

    let lines = [
        "put key value",
        "get 0x6b6579",
        "delete key",
        "merge counter 0x0100000000000000",
        "scan",
        "scan a z 10",
        "scan - 0x2d 3",
        "  # a comment",
        "FLUSH",
        "compact\nreopen\nstats\ncheck\nhelp\nquit\nexit",
        "put 0x 0x00ff",
    ];
    for (n, l) in lines.iter().enumerate() {
        files.push(("shell_parser", format!("line{n}"), l.as_bytes().to_vec()));
    }

    let coded = entries_valued(60, 2, &few_values(6));
    files.push((
        "dict_file",
        "coded".into(),
        dict_file(&vfs, "da", o(512, 16, 10, Compression::None), 0.25, &coded)?,
    ));
    files.push((
        "dict_file",
        "plain".into(),
        dict_file(
            &vfs,
            "db",
            o(512, 16, 10, Compression::None),
            0.25,
            &entries(40, 2),
        )?,
    ));
    files.push((
        "dict_file",
        "lz4-nofilter".into(),
        dict_file(&vfs, "dc", o(1024, 16, 0, Compression::Lz4), 0.25, &coded)?,
    ));
    files.push((
        "dict_file",
        "zstd".into(),
        dict_file(
            &vfs,
            "dd",
            o(256, 16, 10, Compression::Zstd),
            0.5,
            &entries_valued(80, 1, &few_values(30)),
        )?,
    ));
    files.push((
        "dict_file",
        "one".into(),
        dict_file(
            &vfs,
            "de",
            o(4096, 16, 10, Compression::None),
            1.0,
            &entries_valued(1, 1, &few_values(1)),
        )?,
    ));
    let tombstones: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
        .map(|i| {
            let k = format!("gone{i:03}");
            (
                make_internal_key(k.as_bytes(), 50 + i, ValueKind::Delete),
                Vec::new(),
            )
        })
        .collect();
    files.push((
        "dict_file",
        "tombstones".into(),
        dict_file(
            &vfs,
            "df",
            o(4096, 16, 10, Compression::None),
            0.25,
            &tombstones,
        )?,
    ));
    files.push(("dict_file", "compacted".into(), compacted_dict_file(&vfs)?));

    let none = Compression::None;
    for (name, opts, columns, ratio, n, few) in [
        (
            "coded",
            o(512, 16, 10, none),
            &[0usize, 1, 2, 5][..],
            0.25,
            80,
            true,
        ),
        ("plain", o(512, 16, 10, none), &[1, 2, 3], 0.25, 60, false),
        (
            "all-lz4",
            o(1024, 16, 0, Compression::Lz4),
            &[0, 1, 2, 3, 4, 5],
            1.0,
            70,
            true,
        ),
        (
            "strings-zstd",
            o(256, 16, 10, Compression::Zstd),
            &[1, 2],
            0.5,
            90,
            true,
        ),
        ("one", o(4096, 16, 10, none), &[1], 1.0, 1, true),
    ] {
        files.push((
            "cg_file",
            name.into(),
            cg_file(&vfs, &format!("cg-{name}"), opts, columns, ratio, n, few)?,
        ));
    }

    files.push(("dictionary", "empty".into(), dictionary_encoding(&[])?));
    files.push((
        "dictionary",
        "one".into(),
        dictionary_encoding(&[b"only value"])?,
    ));
    let mut prefixed: Vec<Vec<u8>> = (0..40u32)
        .map(|i| format!("prefix/{:02}/{}", i / 3, "v".repeat(i as usize % 5)).into_bytes())
        .collect();
    prefixed.sort();
    let prefixed: Vec<&[u8]> = prefixed.iter().map(|v| v.as_slice()).collect();
    files.push((
        "dictionary",
        "restarts".into(),
        dictionary_encoding(&prefixed)?,
    ));
    files.push((
        "dictionary",
        "bytes".into(),
        dictionary_encoding(&[
            b"",
            b"\0",
            b"\0\0",
            b"a",
            b"a\xff",
            b"\xff",
            b"\xff\xff\x00",
        ])?,
    ));

    for (target, name, data) in &files {
        let d = out.join(target);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(name), data)?;
    }
    Ok(files.len())
}
