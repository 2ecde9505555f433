module sluice.invalid/task

go 1.27.1

// Contract 0.2 (-tags sluice_0_2): the bindings in bindings/v0.2 need the runtime and
// types of go.bytecodealliance.org/pkg, vendored in third_party/ (third_party/README.md).
// A task's go.mod must repeat this replace: Go reads replace directives only from the
// main module.
require go.bytecodealliance.org/pkg v0.4.0

replace go.bytecodealliance.org/pkg => ./third_party/go.bytecodealliance.org/pkg
