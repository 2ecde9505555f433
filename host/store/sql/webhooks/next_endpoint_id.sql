-- A new endpoint id, drawn before the insert so that the host can seal the signing secret
-- with the id bound in. No parameters.
SELECT nextval('sluice.webhook_endpoints_id_seq')
