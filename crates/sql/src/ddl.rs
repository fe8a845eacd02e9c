//! `CREATE TABLE`, `DROP TABLE`, `CREATE INDEX` and `DROP INDEX` on the
//! Strata catalog. DataFusion would create in-memory tables; these
//! statements are taken before it sees them.
//!
//! ```sql
//! CREATE TABLE orders (
//!     id BIGINT PRIMARY KEY,
//!     customer INT NOT NULL,
//!     note TEXT
//! ) WITH (layout = 'row-then-column:2', compression = 'lz4');
//! CREATE INDEX orders_customer ON orders (customer) INCLUDE (note)
//!     WITH (kind = 'lazy', consistency = 'validation');
//! DROP INDEX orders_customer;
//! DROP TABLE IF EXISTS orders;
//! ```
//!
//! `WITH` options of a table are the fields of
//! [`strata::table::TableOptions`], by name.

use datafusion::sql::sqlparser::ast::{
    ColumnOption, CreateIndex, CreateTable, CreateTableOptions, Expr as SqlExpr, Ident, ObjectName,
    ObjectType, SqlOption, Statement, TableConstraint,
};
use strata::index::{Consistency, IndexKind, IndexSpec};
use strata::table::{Column, ColumnType, Schema, TableOptions};
use strata::{Db, Error, Result};

/// Runs `stmt` if it is one of the statements this module takes: the
/// command tag to report, or `None` for statements DataFusion runs.
pub(crate) fn run(db: &Db, stmt: &Statement) -> Option<Result<&'static str>> {
    Some(match stmt {
        Statement::CreateTable(ct) => create_table(db, ct).map(|()| "CREATE TABLE"),
        Statement::CreateIndex(ci) => create_index(db, ci).map(|()| "CREATE INDEX"),
        Statement::Drop {
            object_type: ObjectType::Table,
            if_exists,
            names,
            ..
        } => drop_tables(db, names, *if_exists).map(|()| "DROP TABLE"),
        Statement::Drop {
            object_type: ObjectType::Index,
            if_exists,
            names,
            table,
            ..
        } => drop_indexes(db, names, table.as_ref(), *if_exists).map(|()| "DROP INDEX"),
        _ => return None,
    })
}

/// Whether `stmt` is one of the statements [`run`] takes.
pub(crate) fn is_ddl(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::Drop {
                object_type: ObjectType::Table | ObjectType::Index,
                ..
            }
    )
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// An identifier as DataFusion's planner reads it (and PostgreSQL): an
/// unquoted one lower-cased, a quoted one as written. Names made here must
/// be the names the queries that follow look up.
fn ident(i: &Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_ascii_lowercase(),
    }
}

/// The table name an object name gives: `t` or `public.t`.
fn table_name(name: &ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(ident).unwrap_or_else(|| p.to_string()))
        .collect();
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [s, t] if s == "public" => Ok(t.clone()),
        _ => Err(invalid(format!(
            "{name} names a schema other than public; a Strata database has one schema"
        ))),
    }
}

/// A SQL type's Strata column type.
pub(crate) fn column_type(sql_type: &str) -> Result<ColumnType> {
    let t = sql_type.to_ascii_uppercase();
    let word = t.split(['(', ' ']).next().unwrap_or("");
    // Types Strata would store wider than declared are refused rather than
    // widened: a SMALLINT column that took 100000, or a REAL that compared
    // as a double, would answer differently from PostgreSQL (found in
    // review, 2026-12-01). Lengths of character types are accepted and not
    // enforced, as DuckDB and SQLite do.
    let narrower = |wide: &str| {
        Err(invalid(format!(
            "type {sql_type} is not supported: Strata has no narrower type to hold it; use {wide}"
        )))
    };
    Ok(match word {
        "INT" | "INTEGER" | "INT4" | "INT32" => ColumnType::Int32,
        "SMALLINT" | "INT2" | "TINYINT" => return narrower("INT"),
        "BIGINT" | "INT8" | "INT64" => ColumnType::Int64,
        "DOUBLE" | "FLOAT8" | "FLOAT64" => ColumnType::Float64,
        // FLOAT(p) is single precision up to p = 24, as in PostgreSQL.
        "FLOAT" => match t.split(['(', ')']).nth(1).map(|p| p.trim().parse::<u32>()) {
            None => ColumnType::Float64,
            Some(Ok(p)) if p > 24 => ColumnType::Float64,
            Some(_) => return narrower("DOUBLE"),
        },
        "REAL" | "FLOAT4" => return narrower("DOUBLE"),
        "BOOL" | "BOOLEAN" => ColumnType::Bool,
        "TEXT" | "VARCHAR" | "CHAR" | "CHARACTER" | "STRING" | "NVARCHAR" => ColumnType::Utf8,
        "BYTEA" | "BLOB" | "BINARY" | "VARBINARY" => ColumnType::Binary,
        // Microseconds: TIMESTAMP(6) is the only precision stored as given.
        "TIMESTAMP" if t.contains('(') && !t.contains("(6)") => {
            return Err(invalid(format!(
                "type {sql_type} is not supported: timestamps keep microseconds; use TIMESTAMP"
            )));
        }
        "TIMESTAMP" if !t.contains("WITH TIME ZONE") => ColumnType::Timestamp,
        _ => {
            return Err(invalid(format!(
                "type {sql_type} is not supported; use INT, BIGINT, DOUBLE, BOOLEAN, TEXT, \
                 BYTEA or TIMESTAMP"
            )));
        }
    })
}

fn create_table(db: &Db, ct: &CreateTable) -> Result<()> {
    let name = table_name(&ct.name)?;
    if ct.or_replace || ct.temporary || ct.external {
        return Err(invalid(
            "CREATE OR REPLACE, TEMPORARY and EXTERNAL tables are not supported",
        ));
    }
    if ct.query.is_some() || ct.like.is_some() || ct.clone.is_some() {
        return Err(invalid(
            "CREATE TABLE ... AS, LIKE and CLONE are not supported; create the table, then \
             INSERT INTO ... SELECT",
        ));
    }
    if ct.if_not_exists && db.table(&name).is_ok() {
        return Ok(());
    }
    let mut columns = Vec::with_capacity(ct.columns.len());
    let mut key: Vec<String> = Vec::new();
    for def in &ct.columns {
        let col = ident(&def.name);
        let ty = column_type(&def.data_type.to_string())?;
        let mut nullable = true;
        for opt in &def.options {
            match &opt.option {
                ColumnOption::Null => nullable = true,
                ColumnOption::NotNull => nullable = false,
                ColumnOption::PrimaryKey(_) => {
                    nullable = false;
                    key.push(col.clone());
                }
                other => {
                    return Err(invalid(format!(
                        "column option {other} (on {col}) is not supported"
                    )));
                }
            }
        }
        columns.push(if nullable {
            Column::nullable(col, ty)
        } else {
            Column::new(col, ty)
        });
    }
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(pk) => {
                if !key.is_empty() {
                    return Err(invalid(format!("table {name} declares two primary keys")));
                }
                for ic in &pk.columns {
                    key.push(index_column(&ic.column.expr)?);
                }
            }
            other => {
                return Err(invalid(format!(
                    "constraint {other} is not supported; only PRIMARY KEY"
                )));
            }
        }
    }
    if key.is_empty() {
        return Err(invalid(format!(
            "table {name} needs a PRIMARY KEY: Strata stores rows in key order"
        )));
    }
    // Key columns never hold nulls.
    for c in &mut columns {
        if key.contains(&c.name) {
            c.nullable = false;
        }
    }
    let key_refs: Vec<&str> = key.iter().map(String::as_str).collect();
    let schema = Schema::new(columns, &key_refs)?;
    let opts = table_options(&ct.table_options)?;
    db.create_table(&name, schema, opts)?;
    Ok(())
}

/// A plain column name in an index or key list.
fn index_column(e: &SqlExpr) -> Result<String> {
    match e {
        SqlExpr::Identifier(i) => Ok(ident(i)),
        other => Err(invalid(format!("{other} is not a column name"))),
    }
}

/// Key-value options as JSON, read by name into `T`'s fields; an unknown
/// name is an error naming the known ones.
fn options_json(
    options: &[SqlOption],
    known: &serde_json::Map<String, serde_json::Value>,
    what: &str,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    let mut out = serde_json::Map::new();
    for o in options {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(invalid(format!("{what} option {o} is not key = value")));
        };
        let k = key.value.to_ascii_lowercase();
        if !known.contains_key(&k) {
            let mut names: Vec<&str> = known.keys().map(String::as_str).collect();
            names.sort_unstable();
            return Err(invalid(format!(
                "{what} has no option {k:?}; known: {}",
                names.join(", ")
            )));
        }
        out.insert(k, option_value(&value.to_string()));
    }
    Ok(out)
}

/// A SQL option's value as JSON: quoted text as a string, numbers and
/// booleans as themselves, anything else as its text.
fn option_value(text: &str) -> serde_json::Value {
    if let Some(s) = text.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return serde_json::Value::String(s.replace("''", "'"));
    }
    serde_json::from_str(&text.to_ascii_lowercase())
        .unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
}

fn table_options(opts: &CreateTableOptions) -> Result<TableOptions> {
    let list = match opts {
        CreateTableOptions::None => return Ok(TableOptions::default()),
        CreateTableOptions::With(l) | CreateTableOptions::Options(l) => l,
        other => return Err(invalid(format!("table options {other} are not supported"))),
    };
    let defaults =
        serde_json::to_value(TableOptions::default()).map_err(|e| invalid(e.to_string()))?;
    let known = defaults.as_object().cloned().unwrap_or_default();
    let given = options_json(list, &known, "a table")?;
    let opts: TableOptions = serde_json::from_value(serde_json::Value::Object(given))
        .map_err(|e| invalid(format!("table options: {e}")))?;
    opts.validate()?;
    Ok(opts)
}

fn create_index(db: &Db, ci: &CreateIndex) -> Result<()> {
    let Some(name) = &ci.name else {
        return Err(invalid("CREATE INDEX needs a name"));
    };
    let name = table_name(name)?;
    let table = db.table(&table_name(&ci.table_name)?)?;
    if ci.unique {
        return Err(invalid(
            "unique secondary indexes are not supported; the primary key is unique",
        ));
    }
    if ci.predicate.is_some() {
        return Err(invalid(
            "partial indexes (CREATE INDEX ... WHERE) are not supported",
        ));
    }
    let [col] = ci.columns.as_slice() else {
        return Err(invalid(format!(
            "an index covers one column; {} given (INCLUDE carries more)",
            ci.columns.len()
        )));
    };
    if ci.if_not_exists && table.indexes().iter().any(|s| s.name == name) {
        return Ok(());
    }
    let mut spec = IndexSpec::new(name, index_column(&col.column.expr)?);
    spec.covering = ci.include.iter().map(ident).collect();
    for w in &ci.with {
        let text = w.to_string();
        let Some((k, v)) = text.split_once('=') else {
            return Err(invalid(format!("index option {text} is not key = value")));
        };
        let v = v.trim().trim_matches('\'');
        match k.trim().to_ascii_lowercase().as_str() {
            "kind" => spec.kind = IndexKind::parse(v)?,
            "consistency" => spec.consistency = Consistency::parse(v)?,
            other => {
                return Err(invalid(format!(
                    "an index has no option {other:?}; known: consistency, kind"
                )));
            }
        }
    }
    table.create_index(spec)?;
    Ok(())
}

fn drop_tables(db: &Db, names: &[ObjectName], if_exists: bool) -> Result<()> {
    let names = names.iter().map(table_name).collect::<Result<Vec<_>>>()?;
    // Check every name first, so that a missing one drops nothing.
    for n in &names {
        if let Err(e) = db.table(n)
            && !(if_exists && matches!(e, Error::TableNotFound(_)))
        {
            return Err(e);
        }
    }
    for n in &names {
        match db.drop_table(n) {
            Err(Error::TableNotFound(_)) if if_exists => {}
            other => other?,
        }
    }
    Ok(())
}

fn drop_indexes(
    db: &Db,
    names: &[ObjectName],
    table: Option<&ObjectName>,
    if_exists: bool,
) -> Result<()> {
    for n in names {
        let index = table_name(n)?;
        let holders: Vec<strata::table::Table> = match table {
            Some(t) => vec![db.table(&table_name(t)?)?],
            None => db
                .table_names()
                .iter()
                .filter_map(|t| db.table(t).ok())
                .filter(|t| t.indexes().iter().any(|s| s.name == index))
                .collect(),
        };
        match holders.as_slice() {
            [] if if_exists => {}
            [] => return Err(invalid(format!("no index {index:?}"))),
            [t] => t.drop_index(&index)?,
            many => {
                let tables: Vec<&str> = many.iter().map(|t| t.name()).collect();
                return Err(invalid(format!(
                    "index {index:?} exists on tables {}; say DROP INDEX {index} ON <table>",
                    tables.join(", ")
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_types_map_to_column_types() {
        assert_eq!(column_type("INTEGER").ok(), Some(ColumnType::Int32));
        assert_eq!(column_type("bigint").ok(), Some(ColumnType::Int64));
        assert_eq!(column_type("VARCHAR(20)").ok(), Some(ColumnType::Utf8));
        assert_eq!(
            column_type("DOUBLE PRECISION").ok(),
            Some(ColumnType::Float64)
        );
        assert_eq!(column_type("TIMESTAMP").ok(), Some(ColumnType::Timestamp));
        assert!(column_type("TIMESTAMP WITH TIME ZONE").is_err());
        assert!(column_type("DECIMAL(10,2)").is_err());
        assert_eq!(column_type("FLOAT").ok(), Some(ColumnType::Float64));
        assert_eq!(column_type("FLOAT(53)").ok(), Some(ColumnType::Float64));
        assert_eq!(
            column_type("TIMESTAMP(6)").ok(),
            Some(ColumnType::Timestamp)
        );
        // Narrower than Strata stores: refused, naming the wider type.
        for (t, wide) in [
            ("SMALLINT", "INT"),
            ("int2", "INT"),
            ("TINYINT", "INT"),
            ("REAL", "DOUBLE"),
            ("FLOAT4", "DOUBLE"),
            ("FLOAT(24)", "DOUBLE"),
        ] {
            let e = column_type(t).expect_err(t).to_string();
            assert!(e.contains(&format!("use {wide}")), "{t}: {e}");
        }
        assert!(column_type("TIMESTAMP(0)").is_err());
    }

    #[test]
    fn option_values() {
        assert_eq!(option_value("'row'"), serde_json::json!("row"));
        assert_eq!(option_value("'it''s'"), serde_json::json!("it's"));
        assert_eq!(option_value("4"), serde_json::json!(4));
        assert_eq!(option_value("0.25"), serde_json::json!(0.25));
        assert_eq!(option_value("TRUE"), serde_json::json!(true));
    }
}
