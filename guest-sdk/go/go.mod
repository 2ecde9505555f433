module sluice.invalid/task

go 1.24
