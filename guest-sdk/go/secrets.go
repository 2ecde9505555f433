//go:build sluice_0_2

package task

// Secrets (contract 0.2, `-tags sluice_0_2`): Secret on the generated
// `sluice:task/secrets@0.2.0` bindings, with its typed error SecretError.

import secrets "sluice.invalid/task/bindings/v0.2/imports/sluice_task_secrets"

// SecretCode is why a secret could not be read: the WIT variant `secret-error`.
type SecretCode string

// The cases of `secret-error`, named as in the WIT file.
const (
	// SecretNotGranted: the job type is not granted the name
	// (`sluice types set TYPE --secret NAME`).
	SecretNotGranted SecretCode = "not-granted"
	// SecretNotFound: granted, but the tenant has not set it (`sluice secrets set NAME`).
	SecretNotFound SecretCode = "not-found"
)

// SecretError is a secret this attempt cannot read. Returned from the handler it fails
// the job permanently (like Fatal): the next attempt would get the same answer.
type SecretError struct {
	Name string
	Code SecretCode
}

func (e *SecretError) permanent() {}

func (e *SecretError) Error() string {
	hint := "granted, but not set: `sluice secrets set " + e.Name + "`"
	if e.Code == SecretNotGranted {
		hint = "grant it with `sluice types set TYPE --secret " + e.Name + "`"
	}
	return "secret " + e.Name + ": " + string(e.Code) + " (" + hint + ")"
}

// Secret returns the value of the job's tenant's secret name, which the job type must be
// granted; else a *SecretError. The value is masked as `[secret NAME]` in everything the
// host keeps of this attempt (log, stdout, the error, the output), but only as it is:
// log or return the value itself, never an encoded form (base64, hex, a hash).
func Secret(name string) (string, error) {
	got := secrets.Get(name)
	if got.IsOk() {
		return got.Ok(), nil
	}
	code := SecretNotFound
	if got.Err().Tag() == secrets.SecretError_NotGranted {
		code = SecretNotGranted
	}
	return "", &SecretError{Name: name, Code: code}
}
