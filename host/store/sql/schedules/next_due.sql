-- Microseconds until the earliest active schedule's next slot (negative when overdue,
-- NULL when no active schedule has one), database time. No parameters.
SELECT (extract(epoch FROM min(next_slot) - now()) * 1000000)::int8
FROM sluice.schedules
WHERE NOT paused
