-- Whether the database answers (GET /healthz). No parameters.
SELECT 1
