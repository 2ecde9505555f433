module sluice.invalid/sample-tasks

go 1.24

require sluice.invalid/task v0.0.0

replace sluice.invalid/task => ../../guest-sdk/go
