package fsx

import (
	"errors"
	"io/fs"
)

// Pathless is err without the path a *fs.PathError in its chain repeats
// (that error's own Err), for a message that names the path already; any
// other error is returned as it is.
func Pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
