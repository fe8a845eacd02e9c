//! `strata filter`: the keys of a range whose value matches a predicate.
//! In a keyspace whose values are dictionary-encoded (`--value-dictionary`)
//! the predicate runs on codes.

use std::io::Write;
use std::ops::Bound;

use clap::Args;
use strata::{Db, ValuePredicate};

use crate::app::{Bytes, Failure};
use crate::encoding::{decode_token, encode_bytes};

/// What to filter, and by which predicate (exactly one of --eq, --range,
/// --prefix, --in).
#[derive(Debug, Clone, Args)]
pub struct FilterArgs {
    /// The keyspace (default: the default keyspace).
    #[arg(long, value_name = "NAME")]
    pub keyspace: Option<String>,
    /// Values equal to VALUE.
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true, value_parser = parse_bytes,
          group = "predicate")]
    pub eq: Option<Bytes>,
    /// Values in [LOW, HIGH) (bytewise).
    #[arg(long, num_args = 2, value_names = ["LOW", "HIGH"], allow_hyphen_values = true,
          value_parser = parse_bytes, group = "predicate")]
    pub range: Option<Vec<Bytes>>,
    /// Values that start with PREFIX.
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true, value_parser = parse_bytes,
          group = "predicate")]
    pub prefix: Option<Bytes>,
    /// Values equal to one of these (repeat the flag: --in a --in b).
    #[arg(long = "in", value_name = "VALUE", action = clap::ArgAction::Append,
          allow_hyphen_values = true, value_parser = parse_bytes, group = "predicate")]
    pub one_of: Option<Vec<Bytes>>,
    /// Inclusive lower bound of the keys (default: the first key).
    #[arg(long, value_name = "KEY", allow_hyphen_values = true, value_parser = parse_bytes)]
    pub from: Option<Bytes>,
    /// Exclusive upper bound of the keys (default: past the last key).
    #[arg(long, value_name = "KEY", allow_hyphen_values = true, value_parser = parse_bytes)]
    pub to: Option<Bytes>,
    /// Print only the number of matches.
    #[arg(long)]
    pub count: bool,
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    decode_token(s).map(Bytes)
}

impl FilterArgs {
    /// The predicate the flags describe.
    pub fn predicate(&self) -> Result<ValuePredicate, String> {
        if let Some(v) = &self.eq {
            return Ok(ValuePredicate::Eq(v.0.clone()));
        }
        if let Some(r) = &self.range {
            let [lo, hi] = r.as_slice() else {
                return Err("--range takes two values, LOW and HIGH".into());
            };
            return Ok(ValuePredicate::Range {
                start: Bound::Included(lo.0.clone()),
                end: Bound::Excluded(hi.0.clone()),
            });
        }
        if let Some(p) = &self.prefix {
            return Ok(ValuePredicate::Prefix(p.0.clone()));
        }
        if let Some(list) = &self.one_of {
            return Ok(ValuePredicate::In(
                list.iter().map(|b| b.0.clone()).collect(),
            ));
        }
        Err("filter needs a predicate: --eq, --range, --prefix or --in".into())
    }
}

/// Runs `strata filter`: KEY<TAB>VALUE lines of the matches, or their
/// count.
pub(crate) fn run(db: &Db, args: &FilterArgs, out: &mut impl Write) -> Result<(), Failure> {
    let pred = args.predicate().map_err(Failure::Usage)?;
    let ks = match &args.keyspace {
        None => db.default_keyspace(),
        Some(name) => {
            let names = db.keyspace_names();
            if !names.iter().any(|n| n == name) {
                return Err(Failure::Other(format!(
                    "no keyspace {name:?} (keyspaces: {})",
                    names.join(", ")
                )));
            }
            db.keyspace(name, Default::default())?
        }
    };
    let rows = ks.filter(
        args.from.as_ref().map(|b| b.0.as_slice()),
        args.to.as_ref().map(|b| b.0.as_slice()),
        &pred,
    )?;
    if args.count {
        writeln!(out, "{}", rows.len())?;
    } else {
        for (k, v) in &rows {
            writeln!(out, "{}\t{}", encode_bytes(k), encode_bytes(v))?;
        }
    }
    Ok(())
}
