-- The database's clock (the transaction's now()). No parameters.
SELECT now()
