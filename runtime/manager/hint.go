package manager

import "errors"

// HintError is an error with what the operator can do about it.
type HintError struct {
	Err  error
	Hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// Hint returns the hint of the first HintError in err's chain, or "".
func Hint(err error) string {
	var h *HintError
	if errors.As(err, &h) {
		return h.Hint
	}
	return ""
}

func withHint(err error, hint string) error { return &HintError{Err: err, Hint: hint} }
