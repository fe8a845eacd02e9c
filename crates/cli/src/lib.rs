//! The `strata` command-line tool, as a library so its parts can be tested:
//! [`encoding`] (how keys and values are typed and printed), [`filter`]
//! (`strata filter`, predicates on values), [`shell`] (the
//! line language of `strata shell`), [`args`] (the arguments and flags),
//! [`app`] (the commands), [`demo`] (`strata
//! demo`, a tour of the table layer), [`table`] (the
//! `strata table` commands) with [`cells`] (typed cells), [`import`] (CSV
//! import) and [`tabular`] (aligned text output), [`index`] (`strata
//! index`, secondary indexes), [`join`] (`strata join`) [`sql`] (`strata
//! sql`, SQL through DataFusion) and [`serve`] (`strata serve`, the PostgreSQL
//! wire protocol).

// The commands' doc comments are also their `--help` text, written for a
// terminal: `KEY<TAB>VALUE` there is not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

pub mod app;
pub mod args;
pub mod cells;
pub mod demo;
pub mod encoding;
pub mod filter;
pub mod import;
pub mod index;
pub mod join;
pub mod serve;
pub mod shell;
pub mod sql;
pub mod table;
pub mod tabular;

pub use encoding::{decode_token, encode_bytes};
pub use shell::{Command, parse_line};
