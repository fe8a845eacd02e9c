//! Point statements (one row by its whole key) that Strata runs without
//! DataFusion, and prepared statements with parameters: every statement
//! must give what DataFusion's own path gives.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_sql::datafusion::common::ScalarValue;
use strata_sql::{SqlEngine, SqlOptions};

mod common;
use common::{rows_text as lines, runtime};

const SCHEMA: &str = "CREATE TABLE t (k BIGINT PRIMARY KEY, a INT, b TEXT, c DOUBLE);
                      CREATE TABLE u (x INT, y TEXT, v INT, PRIMARY KEY (x, y))";

fn engine(dir: &std::path::Path, point_statements: bool) -> SqlEngine {
    let db = strata::Db::open(dir, strata::Options::default()).expect("open");
    SqlEngine::with_options(
        db,
        SqlOptions {
            point_statements,
            ..Default::default()
        },
    )
    .expect("engine")
}

/// What a statement gave, comparable across the two paths: the tag and
/// rows, or that it failed.
async fn outcome(
    sql: &SqlEngine,
    q: &str,
    params: &[ScalarValue],
) -> Result<(String, Vec<String>), ()> {
    let out = if params.is_empty() {
        sql.execute(q).await.map(|mut o| o.remove(0))
    } else {
        match sql.prepare(q).await {
            Ok(p) => sql.run_prepared(&p, params).await,
            Err(e) => Err(e),
        }
    };
    out.map(|o| (o.tag, lines(&o.batches))).map_err(|_| ())
}

fn value(rng: &mut StdRng) -> String {
    match rng.random_range(0..10) {
        0 => "NULL".into(),
        1 => format!("-{}", rng.random_range(0..50)),
        2 => "4000000000".into(), // out of INT's range
        3 => "'text'".into(),     // not a number
        4 => "2.5".into(),        // not an integer
        _ => rng.random_range(0..50).to_string(),
    }
}

/// A key as a literal: usually `k`, sometimes one that must match nothing
/// (NULL, a fraction) or that DataFusion has to coerce (`k.0`, `'k'`).
fn key_lit(rng: &mut StdRng, k: i64) -> String {
    match rng.random_range(0..12) {
        0 => "NULL".into(),
        1 => format!("{k}.5"),
        2 => format!("{k}.0"),
        3 => format!("'{k}'"),
        _ => k.to_string(),
    }
}

/// A key as a parameter: usually `k`, sometimes NULL, a fraction or text.
fn key_param(rng: &mut StdRng, k: i64) -> ScalarValue {
    match rng.random_range(0..12) {
        0 => ScalarValue::Int64(None),
        1 => ScalarValue::Float64(Some(k as f64 + 0.5)),
        2 => ScalarValue::Float64(Some(k as f64)),
        3 => ScalarValue::Utf8(Some(k.to_string())),
        _ => ScalarValue::Int64(Some(k)),
    }
}

/// A random statement on `t` or `u`, as text with literals, or with `$n`
/// parameters and their values.
fn statement(rng: &mut StdRng) -> (String, Vec<ScalarValue>) {
    let k = rng.random_range(0..40i64);
    let lit = |rng: &mut StdRng| value(rng);
    let prepared = rng.random_bool(0.5);
    match rng.random_range(0..9) {
        0 | 1 => {
            if prepared {
                let a = rng.random_range(-5..5i32);
                (
                    "INSERT INTO t VALUES ($1, $2, $3, $4)".into(),
                    vec![
                        ScalarValue::Int64(Some(k)),
                        ScalarValue::Int32(Some(a)),
                        ScalarValue::Utf8(Some(format!("s{a}"))),
                        ScalarValue::Float64(Some(f64::from(a) / 2.0)),
                    ],
                )
            } else {
                let verb = if rng.random_bool(0.5) {
                    "INSERT OR REPLACE"
                } else {
                    "INSERT"
                };
                let k2 = rng.random_range(0..40i64);
                (
                    format!(
                        "{verb} INTO t VALUES ({k}, {}, 's', 1.5), ({k2}, {}, NULL, 2)",
                        lit(rng),
                        lit(rng)
                    ),
                    vec![],
                )
            }
        }
        2 => (
            format!("INSERT INTO t (k, b) VALUES ({k}, 'only b')"),
            vec![],
        ),
        3 => {
            if prepared {
                (
                    "SELECT a, b, c FROM t WHERE k = $1".into(),
                    vec![key_param(rng, k)],
                )
            } else {
                (
                    format!("SELECT * FROM t WHERE k = {}", key_lit(rng, k)),
                    vec![],
                )
            }
        }
        4 => {
            if prepared {
                (
                    "UPDATE t SET a = $1, b = 'upd' WHERE k = $2".into(),
                    vec![
                        ScalarValue::Int32(Some(rng.random_range(0..9))),
                        key_param(rng, k),
                    ],
                )
            } else {
                (
                    format!(
                        "UPDATE t SET a = {}, c = 0.25 WHERE k = {}",
                        lit(rng),
                        key_lit(rng, k)
                    ),
                    vec![],
                )
            }
        }
        5 => {
            if prepared {
                ("DELETE FROM t WHERE k = $1".into(), vec![key_param(rng, k)])
            } else {
                (
                    format!("DELETE FROM t WHERE {} = k", key_lit(rng, k)),
                    vec![],
                )
            }
        }
        6 => {
            let (x, y) = (rng.random_range(0..5), rng.random_range(0..3));
            (
                format!(
                    "INSERT OR REPLACE INTO u VALUES ({x}, 'y{y}', {})",
                    lit(rng)
                ),
                vec![],
            )
        }
        7 => {
            let (x, y) = (rng.random_range(0..5), rng.random_range(0..3));
            if prepared {
                (
                    "SELECT v, x FROM u WHERE y = $2 AND x = $1".into(),
                    vec![
                        ScalarValue::Int32(Some(x)),
                        ScalarValue::Utf8(Some(format!("y{y}"))),
                    ],
                )
            } else {
                (
                    format!("UPDATE u SET v = 7 WHERE x = {x} AND y = 'y{y}'"),
                    vec![],
                )
            }
        }
        _ => {
            // Not point statements: DataFusion runs them on both sides.
            if prepared {
                (
                    "SELECT count(*) FROM t WHERE a > $1".into(),
                    vec![ScalarValue::Int32(Some(2))],
                )
            } else {
                (format!("UPDATE t SET a = a + 1 WHERE k < {k}"), vec![])
            }
        }
    }
}

#[test]
fn point_statements_give_what_datafusion_gives() {
    let (da, db) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let (fast, slow) = (engine(da.path(), true), engine(db.path(), false));
    runtime().block_on(async {
        fast.execute(SCHEMA).await.expect("schema");
        slow.execute(SCHEMA).await.expect("schema");
        let mut rng = StdRng::seed_from_u64(23);
        let mut failures = 0;
        for i in 0..600 {
            let (q, params) = statement(&mut rng);
            let a = outcome(&fast, &q, &params).await;
            let b = outcome(&slow, &q, &params).await;
            assert_eq!(a, b, "statement {i}: {q} {params:?}");
            failures += usize::from(a.is_err());
        }
        assert!(failures > 10, "the mix includes failing statements");
        for q in [
            "SELECT * FROM t ORDER BY k",
            "SELECT * FROM u ORDER BY x, y",
        ] {
            assert_eq!(
                outcome(&fast, q, &[]).await,
                outcome(&slow, q, &[]).await,
                "{q}"
            );
        }
        let rows = outcome(&fast, "SELECT * FROM t", &[])
            .await
            .expect("scan")
            .1;
        assert!(rows.len() > 10, "the mix leaves rows: {}", rows.len());
    });
}

/// A `DOUBLE` key: the key codec stores -0.0 as 0.0, so statements on
/// -0.0 (and NaN) keys must still give what DataFusion gives.
#[test]
fn float_keys_of_negative_zero_give_what_datafusion_gives() {
    let (da, db) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let (fast, slow) = (engine(da.path(), true), engine(db.path(), false));
    runtime().block_on(async {
        for q in [
            "CREATE TABLE f (k DOUBLE PRIMARY KEY, v INT)",
            "INSERT INTO f VALUES (0.0, 1), (2.5, 2)",
        ] {
            fast.execute(q).await.expect(q);
            slow.execute(q).await.expect(q);
        }
        for q in [
            "SELECT v FROM f WHERE k = -0.0",
            "SELECT v FROM f WHERE k = 'NaN'",
            "UPDATE f SET v = 9 WHERE k = -0.0",
            "SELECT v FROM f WHERE k = 0.0",
            "DELETE FROM f WHERE k = -0.0",
            "SELECT * FROM f ORDER BY k",
        ] {
            assert_eq!(
                outcome(&fast, q, &[]).await,
                outcome(&slow, q, &[]).await,
                "{q}"
            );
        }
    });
}

#[test]
fn point_shapes_are_recognised_and_others_are_not() {
    let dir = tempfile::tempdir().expect("dir");
    let sql = engine(dir.path(), true);
    runtime().block_on(async {
        sql.execute(SCHEMA).await.expect("schema");
        for (q, point) in [
            ("SELECT a FROM t WHERE k = $1", true),
            ("SELECT * FROM t WHERE k = -3", true),
            ("SELECT v FROM u WHERE x = 1 AND y = 'a'", true),
            (
                "INSERT INTO t VALUES ($1, $2, $3, $4), (1, 2, 'x', 3)",
                true,
            ),
            ("INSERT INTO t (k) VALUES (1)", true),
            ("UPDATE t SET a = $1 WHERE k = $2", true),
            ("DELETE FROM u WHERE y = $1 AND x = $2", true),
            ("SELECT a FROM t WHERE k > $1", false),
            ("SELECT a FROM t WHERE k = 1 AND a = 2", false),
            ("SELECT v FROM u WHERE x = 1", false),
            ("SELECT a + 1 FROM t WHERE k = 1", false),
            ("SELECT a FROM t WHERE k = 1 LIMIT 1", false),
            ("UPDATE t SET a = a + 1 WHERE k = 1", false),
            ("UPDATE t SET k = 2 WHERE k = 1", false),
            ("DELETE FROM t WHERE k = 1 OR k = 2", false),
            ("INSERT INTO t SELECT * FROM t", false),
            ("CREATE TABLE w (k INT PRIMARY KEY, v INT)", false),
        ] {
            let p = sql.prepare(q).await.expect(q);
            assert_eq!(p.is_point(), point, "{q}");
        }
    });
}

#[test]
fn prepared_statements_bind_parameters_and_report_missing_ones() {
    let dir = tempfile::tempdir().expect("dir");
    let sql = engine(dir.path(), true);
    runtime().block_on(async {
        sql.execute(SCHEMA).await.expect("schema");
        let insert = sql
            .prepare("INSERT INTO t VALUES ($1, $2, $3, $4)")
            .await
            .expect("prepare");
        for k in 0..100i64 {
            let params = [
                ScalarValue::Int64(Some(k)),
                ScalarValue::Int32(Some((k % 10) as i32)),
                ScalarValue::Utf8(None),
                ScalarValue::Float64(Some(0.5)),
            ];
            let out = sql.run_prepared(&insert, &params).await.expect("insert");
            assert_eq!(out.tag, "INSERT 0 1");
        }
        let get = sql
            .prepare("SELECT a FROM t WHERE k = $1")
            .await
            .expect("prepare");
        let out = sql
            .run_prepared(&get, &[ScalarValue::Int64(Some(57))])
            .await
            .expect("get");
        assert_eq!(
            (out.tag.as_str(), lines(&out.batches)),
            ("SELECT 1", vec!["7".to_string()])
        );
        let out = sql
            .run_prepared(&get, &[ScalarValue::Int64(Some(500))])
            .await
            .expect("get");
        assert_eq!(out.tag, "SELECT 0");
        let count = sql
            .prepare("SELECT count(*) FROM t WHERE a >= $1")
            .await
            .expect("prepare");
        assert!(!count.is_point());
        let out = sql
            .run_prepared(&count, &[ScalarValue::Int32(Some(8))])
            .await
            .expect("count");
        assert_eq!(lines(&out.batches), vec!["20".to_string()]);
        assert!(
            sql.run_prepared(&get, &[]).await.is_err(),
            "a missing parameter is an error"
        );
        assert!(
            sql.run_prepared(&count, &[]).await.is_err(),
            "likewise through DataFusion"
        );
        let del = sql
            .prepare("DELETE FROM t WHERE k = $1")
            .await
            .expect("prepare");
        assert_eq!(
            sql.run_prepared(&del, &[ScalarValue::Int64(Some(3))])
                .await
                .expect("del")
                .tag,
            "DELETE 1"
        );
        assert_eq!(
            sql.run_prepared(&del, &[ScalarValue::Int64(Some(3))])
                .await
                .expect("del")
                .tag,
            "DELETE 0"
        );
        assert!(sql.prepare("SELECT 1; SELECT 2").await.is_err());
    });
}
