module {{name}}

go 1.27.1

require (
	go.bytecodealliance.org/pkg v0.4.0
	sluice.invalid/task v0.0.0
)

// The Sluice guest SDK, from a checkout of the Sluice repository (it is not a published
// module), and the runtime its contract 0.2 bindings need, vendored in it.
replace sluice.invalid/task => {{sdk_path}}/go

replace go.bytecodealliance.org/pkg => {{sdk_path}}/go/third_party/go.bytecodealliance.org/pkg
