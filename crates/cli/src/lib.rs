//! The `strata` command-line tool, as a library so its parts can be tested:
//! [`encoding`] (how keys and values are typed and printed), [`shell`] (the
//! line language of `strata shell`) and [`app`] (the commands).

// The commands' doc comments are also their `--help` text, written for a
// terminal: `KEY<TAB>VALUE` there is not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

pub mod app;
pub mod encoding;
pub mod shell;

pub use encoding::{decode_token, encode_bytes};
pub use shell::{Command, parse_line};
