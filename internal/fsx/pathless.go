package fsx

import (
	"errors"
	"io/fs"
)

// Pathless is err without the path a *fs.PathError in its chain repeats
// (that error's own Err), for a message that names the path already; any
// other error is returned as it is.
func Pathless(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
