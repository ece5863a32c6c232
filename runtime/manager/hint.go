package manager

import "errors"

// hintError is an error with what the operator can do about it.
type hintError struct {
	Err  error
	Hint string
}

func (e *hintError) Error() string { return e.Err.Error() }
func (e *hintError) Unwrap() error { return e.Err }

// Hint returns the hint of the first hintError in err's chain, or "".
func Hint(err error) string {
	h, _ := errors.AsType[*hintError](err)
	if h == nil {
		return ""
	}
	return h.Hint
}

func withHint(err error, hint string) error { return &hintError{Err: err, Hint: hint} }
