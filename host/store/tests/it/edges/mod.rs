//! The edges of the input domain (issue #16), by theme: text with U+0000 ([`nul`]),
//! instants Postgres takes but chrono cannot read ([`instants`]), and durations and caps
//! at their bounds, "no timeout" among them ([`limits`]). Each refusal names its field
//! and writes nothing; a lookup by a name no row can have finds nothing; readers survive
//! a row written before the range was enforced.

use sluice_store::StoreError;
use sqlx::PgPool;
use sqlx::postgres::PgDatabaseError;

mod instants;
mod limits;
mod nul;

fn invalid_field(result: Result<impl std::fmt::Debug, StoreError>) -> &'static str {
    match result {
        Err(StoreError::InvalidInput { field, message }) => {
            assert!(
                message.contains("NUL")
                    || message.contains("range")
                    || message.contains("delay")
                    || message.contains("1 ms")
                    || message.contains("cap"),
                "{field}: {message}"
            );
            field
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

/// The refusal of a statement: (SQLSTATE, COLUMN, message).
async fn refusal(pool: &PgPool, sql: &str) -> (String, String, String) {
    let err = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(pool)
        .await
        .unwrap_err();
    let pg = err
        .as_database_error()
        .unwrap_or_else(|| panic!("not a database error: {err}"))
        .downcast_ref::<PgDatabaseError>();
    (
        pg.code().to_owned(),
        pg.column().unwrap_or_default().to_owned(),
        pg.message().to_owned(),
    )
}
