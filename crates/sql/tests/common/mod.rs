//! Helpers the SQL test files share.

use strata_sql::datafusion::arrow::array::RecordBatch;
use strata_sql::datafusion::arrow::util::display::array_value_to_string;

/// A runtime like the server's: two worker threads.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The rows of `batches` as text lines (`a|b|c`), in their order.
pub fn rows_text(batches: &[RecordBatch]) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            let cells: Vec<String> = b
                .columns()
                .iter()
                .map(|c| array_value_to_string(c, r).expect("display"))
                .collect();
            out.push(cells.join("|"));
        }
    }
    out
}
