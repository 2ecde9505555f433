//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds `migrations/`
//! at compile time, and Cargo does not otherwise watch that folder.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
