//! Engine errors carried through DataFusion.

use datafusion::error::DataFusionError;

/// Wraps an engine error so that DataFusion reports the engine's message
/// and callers can still downcast to [`strata::Error`].
pub(crate) fn engine_error(e: strata::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The engine error inside a DataFusion error, if there is one.
pub fn as_engine_error(e: &DataFusionError) -> Option<&strata::Error> {
    match e {
        DataFusionError::External(inner) => inner.downcast_ref::<strata::Error>(),
        DataFusionError::Context(_, inner) => as_engine_error(inner),
        DataFusionError::Shared(inner) => as_engine_error(inner),
        _ => None,
    }
}
