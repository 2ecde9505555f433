//! SQL fragments for the attempt a job row holds (migrations/0009_attempt_on_job_row.sql):
//! the claim writes it onto the row, a completion leaves it there, and every other end of
//! an attempt moves it into `sluice.attempt_history` in the statement that ends it.
//!
//! Owns: the shape of that move, so `finish.rs` and `reap.rs` archive attempts the same
//! way. Must not: run SQL itself, or archive from anything but a row locked by the same
//! statement (the `held` CTE of each caller, fenced on id, state and lease token).

/// The columns a `held` CTE selects from the locked job row, for [`ran_columns!`].
macro_rules! held_attempt {
    () => {
        "attempt, attempt_id, attempt_started_at, attempt_worker, lease_token"
    };
}
pub(crate) use held_attempt;

/// `SET` assignments that take the attempt off the row (it is being archived).
macro_rules! clear_attempt {
    () => {
        "attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL"
    };
}
pub(crate) use clear_attempt;

/// `RETURNING` items of the moving `UPDATE ... FROM held h`: the attempt as it was.
macro_rules! ran_columns {
    () => {
        "h.attempt AS ran_attempt, h.attempt_id AS ran_id, \
         h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker, \
         h.lease_token AS ran_token"
    };
}
pub(crate) use ran_columns;

/// A `history` CTE inserting the attempt of every row of `moved` (which returned
/// [`ran_columns!`]), finished now, with the given SQL expressions for its outcome, error
/// and fuel. Every running row has its attempt on it (the `jobs_attempt_on_row` check),
/// so every moved row archives one.
macro_rules! archive_attempt {
    ($outcome:literal, $error:literal, $fuel:literal) => {
        concat!(
            "history AS (
    INSERT INTO sluice.attempt_history
        (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
    SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(), ",
            $outcome,
            ", ",
            $error,
            ", ",
            $fuel,
            "
    FROM moved m
)"
        )
    };
}
pub(crate) use archive_attempt;
