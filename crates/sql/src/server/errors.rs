//! Engine errors as PostgreSQL errors, with the SQLSTATE a driver can act
//! on (a duplicate key is `23505` and a null in a `NOT NULL` column
//! `23502`, as PostgreSQL reports them).

use datafusion::error::DataFusionError;
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError};

/// The SQLSTATE of an engine error.
pub(crate) fn sqlstate(e: &strata::Error) -> &'static str {
    use strata::Error as E;
    match e {
        E::DuplicateKey { .. } => "23505",
        E::NotNull { .. } => "23502",
        E::TableNotFound(_) => "42P01",
        E::TableExists(_) => "42P07",
        E::InvalidArgument(_) => "22023",
        E::MemoryBudget { .. } => "53200",
        E::OpenedReadOnly { .. } | E::ReadOnly { .. } => "25006",
        E::Corruption { .. } => "XX001",
        E::Io { .. } => "58030",
        _ => "XX000",
    }
}

/// An engine error for the client.
pub(crate) fn engine_to_pg(e: &strata::Error) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        sqlstate(e).into(),
        e.to_string(),
    )))
}

/// The SQLSTATE of a query error: the engine's, when an engine error is
/// inside, else a resource or generic one.
pub fn query_sqlstate(e: &DataFusionError) -> &'static str {
    if let Some(inner) = crate::error::as_engine_error(e) {
        return sqlstate(inner);
    }
    match e.find_root() {
        DataFusionError::ResourcesExhausted(_) => "53200",
        // Arrow's own check of a batch against a schema's NOT NULL
        // columns (an INSERT of a NULL literal is refused there, before
        // the engine sees it); its message is all that marks it.
        DataFusionError::ArrowError(a, _) if is_arrow_null_violation(a) => "23502",
        // DataFusion's own check of an `INSERT ... SELECT`'s rows against
        // the table's NOT NULL columns, likewise marked by its message.
        DataFusionError::Execution(m)
            if m.contains("has null but schema specifies non-nullable") =>
        {
            "23502"
        }
        DataFusionError::SQL(..) => "42601",
        DataFusionError::Plan(m) if m.starts_with("table '") && m.ends_with("' not found") => {
            "42P01"
        }
        DataFusionError::Plan(_) | DataFusionError::SchemaError(..) => "42P10",
        DataFusionError::NotImplemented(_) => "0A000",
        _ => "XX000",
    }
}

/// Whether `e` is Arrow's refusal of nulls in a non-nullable column.
fn is_arrow_null_violation(e: &datafusion::arrow::error::ArrowError) -> bool {
    matches!(e, datafusion::arrow::error::ArrowError::InvalidArgumentError(m)
        if m.contains("is declared as non-nullable but contains null values"))
}

#[cfg(test)]
mod tests {
    use super::sqlstate;

    #[test]
    fn engine_errors_carry_the_sqlstate_a_driver_acts_on() {
        let budget = strata::Error::MemoryBudget {
            limit: 1 << 20,
            what: "a tuple".into(),
        };
        // A refused budget is PostgreSQL's out_of_memory, not a bad argument.
        assert_eq!(sqlstate(&budget), "53200");
        assert_eq!(
            sqlstate(&strata::Error::InvalidArgument("x".into())),
            "22023"
        );
    }
}
