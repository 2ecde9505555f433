-- Whether sqlx's migrations table exists (NULL: no Sluice schema at all). No parameters.
SELECT to_regclass('_sqlx_migrations')::text
