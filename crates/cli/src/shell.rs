//! The line language of `strata shell`: one command per line, tokens
//! separated by whitespace. Parsing is separate from running so it can be
//! unit-tested and fuzzed; [`parse_line`] never panics.
//!
//! ```text
//! put KEY VALUE          -> OK
//! get KEY                -> the value, or (not found)
//! delete KEY             -> OK
//! merge KEY OPERAND      -> OK (needs a merge operator; the default db has none)
//! scan [FROM TO [LIMIT]] -> KEY<TAB>VALUE lines in key order, then (N entries)
//! flush | compact        -> OK
//! reopen                 -> closes and reopens the database, then OK
//! stats                  -> the statistics report
//! check                  -> verifies every table file's checksums
//! help                   -> the list of commands
//! quit | exit            -> ends the shell (so does end of input)
//! ```
//!
//! `scan` covers the half-open range `[FROM, TO)`; `-` stands for an open
//! bound (write the one-byte key `-` as `0x2d`). `scan` alone scans
//! everything. Keys, values and bounds are tokens as described in
//! [`crate::encoding`]. Blank lines and lines starting with `#` do nothing.
//! Command names are case-insensitive.

use crate::encoding::decode_token;

/// One parsed shell line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// A blank line or a comment: no answer.
    Nop,
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Get {
        key: Vec<u8>,
    },
    Delete {
        key: Vec<u8>,
    },
    Merge {
        key: Vec<u8>,
        operand: Vec<u8>,
    },
    /// Keys in `[from, to)`, `None` for an open bound; at most `limit`
    /// entries (`None`: no limit).
    Scan {
        from: Option<Vec<u8>>,
        to: Option<Vec<u8>>,
        limit: Option<usize>,
    },
    Flush,
    Compact,
    Reopen,
    Stats,
    Check,
    Help,
    Quit,
}

/// The answer to `help`.
pub const HELP: &str = "\
commands:
  put KEY VALUE          set KEY to VALUE
  get KEY                print the value of KEY, or (not found)
  delete KEY             delete KEY
  merge KEY OPERAND      add a merge operand (needs a merge operator)
  scan [FROM TO [LIMIT]] print keys in [FROM, TO) ('-' = open bound), then (N entries)
  flush                  flush memtables to table files
  compact                compact the whole key range
  reopen                 close and reopen the database
  stats                  print statistics
  check                  verify the checksums of every table file
  help                   print this list
  quit | exit            leave the shell
tokens starting with 0x are hex; keys and values print as hex unless printable";

fn bound(token: &str) -> Result<Option<Vec<u8>>, String> {
    if token == "-" {
        Ok(None)
    } else {
        decode_token(token).map(Some)
    }
}

fn arity(cmd: &str, args: &[&str], expected: &str, ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{cmd} takes {expected}, got {} argument{}",
            args.len(),
            if args.len() == 1 { "" } else { "s" }
        ))
    }
}

/// Parses one line (without its line terminator; a trailing `\r` is
/// whitespace and so ignored). Errors are messages meant to follow
/// `error: `.
pub fn parse_line(line: &str) -> Result<Command, String> {
    let mut tokens = line.split_whitespace();
    let Some(first) = tokens.next() else {
        return Ok(Command::Nop);
    };
    if first.starts_with('#') {
        return Ok(Command::Nop);
    }
    let args: Vec<&str> = tokens.collect();
    let name = first.to_ascii_lowercase();
    let n = args.len();
    let none = |cmd: &str, c: Command| arity(cmd, &args, "no arguments", n == 0).map(|()| c);
    match name.as_str() {
        "put" => {
            arity("put", &args, "2 arguments (KEY VALUE)", n == 2)?;
            Ok(Command::Put {
                key: decode_token(args[0])?,
                value: decode_token(args[1])?,
            })
        }
        "get" => {
            arity("get", &args, "1 argument (KEY)", n == 1)?;
            Ok(Command::Get {
                key: decode_token(args[0])?,
            })
        }
        "delete" | "del" => {
            arity("delete", &args, "1 argument (KEY)", n == 1)?;
            Ok(Command::Delete {
                key: decode_token(args[0])?,
            })
        }
        "merge" => {
            arity("merge", &args, "2 arguments (KEY OPERAND)", n == 2)?;
            Ok(Command::Merge {
                key: decode_token(args[0])?,
                operand: decode_token(args[1])?,
            })
        }
        "scan" => {
            arity(
                "scan",
                &args,
                "0, 2 or 3 arguments (FROM TO [LIMIT])",
                matches!(n, 0 | 2 | 3),
            )?;
            let (from, to) = if n == 0 {
                (None, None)
            } else {
                (bound(args[0])?, bound(args[1])?)
            };
            let limit = match args.get(2) {
                None => None,
                Some(t) => Some(t.parse::<usize>().map_err(|_| {
                    format!("scan limit must be a non-negative integer, got {t:?}")
                })?),
            };
            Ok(Command::Scan { from, to, limit })
        }
        "flush" => none("flush", Command::Flush),
        "compact" => none("compact", Command::Compact),
        "reopen" => none("reopen", Command::Reopen),
        "stats" => none("stats", Command::Stats),
        "check" | "verify" => none("check", Command::Check),
        "help" | "?" => none("help", Command::Help),
        "quit" | "exit" => none("quit", Command::Quit),
        _ => Err(format!(
            "unknown command {:?} (try help)",
            crate::encoding::encode_bytes(first.as_bytes())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Command {
        match parse_line(line) {
            Ok(c) => c,
            Err(e) => panic!("{line:?} failed: {e}"),
        }
    }

    fn err(line: &str) -> String {
        match parse_line(line) {
            Ok(c) => panic!("{line:?} parsed as {c:?}"),
            Err(e) => e,
        }
    }

    fn v(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn blank_and_comment_lines() {
        assert_eq!(ok(""), Command::Nop);
        assert_eq!(ok("   \t  "), Command::Nop);
        assert_eq!(ok("\r"), Command::Nop);
        assert_eq!(ok("# put a b"), Command::Nop);
        assert_eq!(ok("  #comment"), Command::Nop);
    }

    #[test]
    fn put_get_delete_merge() {
        assert_eq!(
            ok("put k v"),
            Command::Put {
                key: v("k"),
                value: v("v")
            }
        );
        assert_eq!(
            ok("  PUT\tk   v  \r"),
            Command::Put {
                key: v("k"),
                value: v("v")
            }
        );
        assert_eq!(ok("get k"), Command::Get { key: v("k") });
        assert_eq!(ok("delete k"), Command::Delete { key: v("k") });
        assert_eq!(ok("del k"), Command::Delete { key: v("k") });
        assert_eq!(
            ok("merge k 1"),
            Command::Merge {
                key: v("k"),
                operand: v("1")
            }
        );
    }

    #[test]
    fn argument_free_commands() {
        assert_eq!(ok("flush"), Command::Flush);
        assert_eq!(ok("compact"), Command::Compact);
        assert_eq!(ok("reopen"), Command::Reopen);
        assert_eq!(ok("stats"), Command::Stats);
        assert_eq!(ok("check"), Command::Check);
        assert_eq!(ok("verify"), Command::Check);
        assert_eq!(ok("help"), Command::Help);
        assert_eq!(ok("quit"), Command::Quit);
        assert_eq!(ok("exit"), Command::Quit);
        assert_eq!(ok("Quit"), Command::Quit);
    }

    #[test]
    fn scan_forms() {
        assert_eq!(
            ok("scan"),
            Command::Scan {
                from: None,
                to: None,
                limit: None
            }
        );
        assert_eq!(
            ok("scan a z"),
            Command::Scan {
                from: Some(v("a")),
                to: Some(v("z")),
                limit: None
            }
        );
        assert_eq!(
            ok("scan - z 10"),
            Command::Scan {
                from: None,
                to: Some(v("z")),
                limit: Some(10)
            }
        );
        assert_eq!(
            ok("scan a - 0"),
            Command::Scan {
                from: Some(v("a")),
                to: None,
                limit: Some(0)
            }
        );
        assert_eq!(
            ok("scan 0x2d 0x 5"),
            Command::Scan {
                from: Some(v("-")),
                to: Some(vec![]),
                limit: Some(5)
            }
        );
    }

    #[test]
    fn wrong_arity() {
        for line in [
            "put",
            "put k",
            "put k v extra",
            "get",
            "get a b",
            "delete",
            "delete a b",
            "merge k",
            "merge k v w",
            "scan a",
            "scan a b 1 2",
            "flush now",
            "compact x",
            "reopen x",
            "stats x",
            "check x",
            "help me",
            "quit now",
        ] {
            let e = err(line);
            assert!(e.contains("takes"), "{line:?}: {e}");
        }
        assert_eq!(
            err("get a b"),
            "get takes 1 argument (KEY), got 2 arguments"
        );
    }

    #[test]
    fn hex_tokens() {
        assert_eq!(
            ok("put 0x00ff 0x"),
            Command::Put {
                key: vec![0, 0xff],
                value: vec![]
            }
        );
        assert_eq!(ok("get 0x6b"), Command::Get { key: v("k") });
        assert_eq!(
            ok("scan 0x00 0xFF 3"),
            Command::Scan {
                from: Some(vec![0]),
                to: Some(vec![0xff]),
                limit: Some(3)
            }
        );
    }

    #[test]
    fn bad_hex() {
        for line in [
            "put 0xz v",
            "put k 0x123",
            "get 0xg0",
            "delete 0x0",
            "merge 0xk 1",
            "scan 0xq -",
            "scan - 0x1",
        ] {
            assert!(err(line).contains("invalid hex"), "{line:?}");
        }
    }

    #[test]
    fn bad_limit_and_unknown_command() {
        assert!(err("scan a b -1").contains("limit"));
        assert!(err("scan a b x").contains("limit"));
        assert!(err("scan a b 99999999999999999999999999").contains("limit"));
        assert!(err("frobnicate").contains("unknown command"));
        assert!(err("putt a b").contains("unknown command"));
        // Odd characters in the command name are reported, not a panic.
        assert!(err("\u{7}bell").contains("unknown command"));
    }

    #[test]
    fn never_panics_on_odd_input() {
        let samples = [
            "put \u{0} \u{0}",
            "put 0x 0x",
            "get \u{10ffff}",
            "scan - - 0",
            "scan \u{feff} \u{200b}",
            "ｐｕｔ a b",
            "put ä ö",
            "0x",
            "-",
            "#",
            "scan 0x 0x 18446744073709551615",
        ];
        for s in samples {
            let _ = parse_line(s);
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet: Vec<char> = "putgedlscanmrfhkoi 0x-#\t\r\u{0}é€1af9 ".chars().collect();
        for _ in 0..20_000 {
            let mut line = String::new();
            for _ in 0..(x % 24) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                line.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let _ = parse_line(&line);
        }
    }
}
