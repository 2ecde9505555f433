module sluice.invalid/sample-tasks

go 1.27.1

require (
	go.bytecodealliance.org/pkg v0.4.0
	sluice.invalid/task v0.0.0
)

replace sluice.invalid/task => ../../guest-sdk/go

replace go.bytecodealliance.org/pkg => ../../guest-sdk/go/third_party/go.bytecodealliance.org/pkg
