-- The latest migration applied successfully. No parameters.
SELECT max(version) FROM _sqlx_migrations WHERE success
