// Package message stands in for golang.org/x/text/message in flare-slurm's
// copy of jsonschema (PATCHED.md): a Printer formats as fmt.Sprintf does.
// x/text's printer localises numbers (1,000 in English); flare-slurm never
// shows these messages (its schema package phrases its own), and x/text
// cost every flare-slurm process about 0.2 MB of code and tables and the
// work of its package initialisation.
package message

import "fmt"

// Printer formats the messages of validation errors.
type Printer struct{}

// NewPrinter returns a Printer.
func NewPrinter() *Printer { return &Printer{} }

// Sprintf formats as fmt.Sprintf.
func (*Printer) Sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
