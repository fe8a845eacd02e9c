//! How index entries are stored (`docs/format/index.md`).
//!
//! Every index key starts with the indexed value in the primary-key
//! encoding ([`crate::table::keycodec`]), which is ordered and
//! self-delimiting, so range lookups are key ranges and a composite key
//! splits into value and primary key without a length.
//!
//! ```text
//!   eager, lazy   key   = enc(value)
//!                 value = posting list: entries sorted by primary key,
//!                         each  varint len, pk, varint len, payload
//!   lazy operand          one or more changes, each
//!                           tag u8 (1 add, 2 remove), varint len, pk,
//!                           and for an add: varint len, payload
//!   composite     key   = enc(value) ‖ pk
//!                 value = payload
//!   payload               per covered column: 0 (null) or 1 then enc(v)
//! ```
//!
//! A posting list is a set keyed by primary key: adding a key that is
//! already there replaces its payload, so adds are idempotent (an index
//! build may add an entry a concurrent write added too).

use std::collections::BTreeMap;

use crate::coding::{get_length_prefixed, put_length_prefixed};
use crate::merge::MergeOperator;
use crate::table::keycodec::{self, KeyDecoder};
use crate::table::{ColumnType, Value};

const OP_ADD: u8 = 1;
const OP_REMOVE: u8 = 2;

/// The decoded posting list of one indexed value: primary key → payload.
pub(crate) type Postings = BTreeMap<Vec<u8>, Vec<u8>>;

/// Appends a posting list's encoding.
pub(crate) fn encode_postings(out: &mut Vec<u8>, postings: &Postings) {
    for (pk, payload) in postings {
        put_length_prefixed(out, pk);
        put_length_prefixed(out, payload);
    }
}

/// Decodes a posting list; `None` when it is malformed.
pub(crate) fn decode_postings(mut src: &[u8]) -> Option<Postings> {
    let mut out = Postings::new();
    while !src.is_empty() {
        let pk = get_length_prefixed(&mut src)?;
        let payload = get_length_prefixed(&mut src)?;
        out.insert(pk.to_vec(), payload.to_vec());
    }
    Some(out)
}

/// Calls `f` with at most `max` entries of an encoded posting list, without
/// building a map, starting at byte `from` (0, or an offset this returned):
/// `Some(Some(at))` when entries remain from `at`, `Some(None)` at the
/// list's end, `None` when it is malformed. A reader of a huge list can so
/// hold a part of it at a time.
pub(crate) fn for_each_posting_from(
    list: &[u8],
    from: usize,
    max: usize,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Option<Option<usize>> {
    let mut src = list.get(from..)?;
    let mut taken = 0;
    while !src.is_empty() {
        if taken == max {
            return Some(Some(list.len() - src.len()));
        }
        let pk = get_length_prefixed(&mut src)?;
        let payload = get_length_prefixed(&mut src)?;
        f(pk, payload);
        taken += 1;
    }
    Some(None)
}

/// A lazy index's operand adding `pk` with `payload`.
pub(crate) fn add_operand(pk: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pk.len() + payload.len() + 6);
    out.push(OP_ADD);
    put_length_prefixed(&mut out, pk);
    put_length_prefixed(&mut out, payload);
    out
}

/// A lazy index's operand removing `pk`.
pub(crate) fn remove_operand(pk: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pk.len() + 3);
    out.push(OP_REMOVE);
    put_length_prefixed(&mut out, pk);
    out
}

/// Calls `f` with each change of a lazy operand (`None` payload: a
/// removal); `None` when it is malformed.
fn for_each_change<'a>(op: &'a [u8], mut f: impl FnMut(&'a [u8], Option<&'a [u8]>)) -> Option<()> {
    let mut rest = op;
    if rest.is_empty() {
        return None;
    }
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        let pk = get_length_prefixed(&mut rest)?;
        match tag {
            OP_ADD => f(pk, Some(get_length_prefixed(&mut rest)?)),
            OP_REMOVE => f(pk, None),
            _ => return None,
        }
    }
    Some(())
}

/// Applies one lazy operand to `postings`; `None` when it is malformed.
fn apply_operand(postings: &mut Postings, op: &[u8]) -> Option<()> {
    for_each_change(op, |pk, payload| match payload {
        Some(p) => {
            postings.insert(pk.to_vec(), p.to_vec());
        }
        None => {
            postings.remove(pk);
        }
    })
}

/// The lazy index's merge operator: operands add or remove primary keys of
/// the posting list. Merging in compaction collapses repeated adds of one
/// key (keeping the newest payload) and drops removed keys, the stale
/// entries a lazy index can prove stale without reading the table.
#[derive(Debug, Default)]
pub(crate) struct PostingMerge;

/// The name the lazy index keyspaces record for their operator.
pub(crate) const POSTING_MERGE: &str = "strata.index.postings";

impl MergeOperator for PostingMerge {
    fn name(&self) -> &str {
        POSTING_MERGE
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let mut postings = match existing {
            Some(v) => decode_postings(v).ok_or("malformed posting list")?,
            None => Postings::new(),
        };
        for op in operands {
            apply_operand(&mut postings, op).ok_or("malformed posting-list operand")?;
        }
        let mut out = Vec::new();
        encode_postings(&mut out, &postings);
        Ok(out)
    }

    /// Combines operands into one that keeps the newest change of each
    /// primary key, removals included: entries below may still hold a
    /// removed key.
    fn merge_operands(
        &self,
        _key: &[u8],
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let mut changes: BTreeMap<&[u8], Option<&[u8]>> = BTreeMap::new();
        for op in operands {
            for_each_change(op, |pk, payload| {
                changes.insert(pk, payload);
            })
            .ok_or("malformed posting-list operand")?;
        }
        let mut out = Vec::new();
        for (pk, payload) in changes {
            match payload {
                Some(p) => {
                    out.push(OP_ADD);
                    put_length_prefixed(&mut out, pk);
                    put_length_prefixed(&mut out, p);
                }
                None => {
                    out.push(OP_REMOVE);
                    put_length_prefixed(&mut out, pk);
                }
            }
        }
        Ok(out)
    }
}

/// Appends the covered columns' values (`None` for null), doubles with
/// every bit ([`keycodec::encode_value_exact`]): a payload gives back what
/// the row holds.
pub(crate) fn encode_payload(
    out: &mut Vec<u8>,
    values: &[(ColumnType, Option<&Value>)],
) -> crate::error::Result<()> {
    for (ty, v) in values {
        match v {
            None | Some(Value::Null) => out.push(0),
            Some(v) => {
                out.push(1);
                keycodec::encode_value_exact(out, *ty, v)?;
            }
        }
    }
    Ok(())
}

/// Appends one column of a payload from a cell: the bytes
/// [`encode_payload`] gives the cell's value, so a payload can be built
/// from Arrow columns without materialising values.
pub(crate) fn push_payload_cell(out: &mut Vec<u8>, c: crate::table::piece::Cell<'_>) {
    let at = out.len();
    out.push(1);
    if !keycodec::encode_cell_exact(out, c) {
        out[at] = 0;
    }
}

/// Decodes a payload of the covered columns of types `types`; `None` when
/// it is malformed.
pub(crate) fn decode_payload(payload: &[u8], types: &[ColumnType]) -> Option<Vec<Value>> {
    let mut d = KeyDecoder::new(payload);
    let mut out = Vec::with_capacity(types.len());
    for &ty in types {
        match d.byte()? {
            0 => out.push(Value::Null),
            1 => out.push(d.value(ty).ok()?),
            _ => return None,
        }
    }
    d.is_done().then_some(out)
}

/// Splits a composite index key into the indexed value (of type `ty`) and
/// the primary key; `None` when it is malformed.
pub(crate) fn split_composite(key: &[u8], ty: ColumnType) -> Option<(Value, &[u8])> {
    let mut d = KeyDecoder::new(key);
    let v = d.value(ty).ok()?;
    Some((v, d.rest()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_from_cells_match_payloads_from_values() {
        let cols = [
            (ColumnType::Int64, Value::Int64(-3)),
            (ColumnType::Utf8, Value::Null),
            (ColumnType::Binary, Value::Binary(vec![0, 7])),
            (ColumnType::Float64, Value::Float64(1.5)),
        ];
        let mut from_values = Vec::new();
        let pairs: Vec<_> = cols.iter().map(|(t, v)| (*t, Some(v))).collect();
        encode_payload(&mut from_values, &pairs).expect("encode");
        let mut from_cells = Vec::new();
        for (_, v) in &cols {
            push_payload_cell(&mut from_cells, crate::table::arrowio::value_to_cell(v));
        }
        assert_eq!(from_cells, from_values);
        let types: Vec<_> = cols.iter().map(|(t, _)| *t).collect();
        let back = decode_payload(&from_cells, &types).expect("decode");
        assert_eq!(
            back,
            cols.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_posting_list_read_in_parts_gives_its_entries_once_each() {
        let postings: Postings = (0..10u8)
            .map(|i| (vec![i; usize::from(i) + 1], vec![b'p'; usize::from(i % 3)]))
            .collect();
        let mut list = Vec::new();
        encode_postings(&mut list, &postings);
        for part in [1, 3, 10, 11] {
            let (mut got, mut at) = (Vec::new(), Some(0));
            while let Some(from) = at {
                let before = got.len();
                at = for_each_posting_from(&list, from, part, |pk, p| {
                    got.push((pk.to_vec(), p.to_vec()));
                })
                .expect("well formed");
                assert!(got.len() - before <= part, "part {part}");
            }
            let want: Vec<_> = postings.clone().into_iter().collect();
            assert_eq!(got, want, "part {part}");
        }
        // An offset past the list, and a list cut inside an entry.
        assert_eq!(
            for_each_posting_from(&list, list.len() + 1, 1, |_, _| ()),
            None
        );
        let cut = &list[..list.len() - 1];
        assert_eq!(for_each_posting_from(cut, 0, usize::MAX, |_, _| ()), None);
    }

    fn merged(existing: Option<&[u8]>, ops: &[Vec<u8>]) -> Postings {
        let ops: Vec<&[u8]> = ops.iter().map(Vec::as_slice).collect();
        let bytes = PostingMerge.merge(b"k", existing, &ops).expect("merge");
        decode_postings(&bytes).expect("decode")
    }

    #[test]
    fn operands_add_replace_and_remove_keys() {
        let p = merged(
            None,
            &[
                add_operand(b"b", b"1"),
                add_operand(b"a", b""),
                add_operand(b"b", b"2"),
                remove_operand(b"a"),
                remove_operand(b"zz"),
            ],
        );
        assert_eq!(p.len(), 1);
        assert_eq!(p[b"b".as_slice()], b"2");
        let mut base = Vec::new();
        encode_postings(&mut base, &p);
        let p2 = merged(Some(&base), &[add_operand(b"a", b"x")]);
        assert_eq!(
            p2.keys().cloned().collect::<Vec<_>>(),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
    }

    #[test]
    fn combined_operands_keep_removals_for_older_entries() {
        let mut base = Postings::new();
        base.insert(b"a".to_vec(), b"old".to_vec());
        base.insert(b"c".to_vec(), Vec::new());
        let mut base_bytes = Vec::new();
        encode_postings(&mut base_bytes, &base);
        let ops = [
            add_operand(b"b", b"1"),
            remove_operand(b"a"),
            add_operand(b"b", b"2"),
            remove_operand(b"b"),
            add_operand(b"d", b""),
        ];
        let refs: Vec<&[u8]> = ops.iter().map(Vec::as_slice).collect();
        let combined = PostingMerge.merge_operands(b"k", &refs).expect("combine");
        // Applying the combined operand equals applying them one by one.
        assert_eq!(
            merged(Some(&base_bytes), &[combined]),
            merged(Some(&base_bytes), &ops)
        );
        let p = merged(Some(&base_bytes), &ops);
        assert_eq!(
            p.keys().cloned().collect::<Vec<_>>(),
            vec![b"c".to_vec(), b"d".to_vec()]
        );
    }

    #[test]
    fn malformed_lists_and_operands_are_errors() {
        assert!(PostingMerge.merge(b"k", Some(&[5, 1]), &[]).is_err());
        assert!(PostingMerge.merge(b"k", None, &[&[9, 0]]).is_err());
        let mut op = add_operand(b"a", b"p");
        op.push(0);
        assert!(PostingMerge.merge(b"k", None, &[&op]).is_err());
        assert!(decode_postings(&[3, b'a']).is_none());
    }

    #[test]
    fn payloads_and_composite_keys_round_trip() {
        let types = [ColumnType::Utf8, ColumnType::Int64, ColumnType::Float64];
        let s = Value::Utf8("a\0b".into());
        let x = Value::Int64(-5);
        let mut out = Vec::new();
        encode_payload(
            &mut out,
            &[(types[0], Some(&s)), (types[1], Some(&x)), (types[2], None)],
        )
        .expect("encode");
        assert_eq!(
            decode_payload(&out, &types),
            Some(vec![s.clone(), x, Value::Null])
        );
        assert!(decode_payload(&out[..out.len() - 1], &types).is_none());
        let mut key = Vec::new();
        keycodec::encode_value(&mut key, ColumnType::Utf8, &s).expect("enc");
        key.extend_from_slice(b"\x01pk");
        let (v, pk) = split_composite(&key, ColumnType::Utf8).expect("split");
        assert_eq!((v, pk), (s, b"\x01pk".as_slice()));
        assert!(split_composite(b"ab", ColumnType::Utf8).is_none());
    }
}
