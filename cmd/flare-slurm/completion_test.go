package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestEveryValueFlagCompletes: every flag that takes a value has a
// completion rule, so a new flag cannot silently complete file names.
func TestEveryValueFlagCompletes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "bool" {
				return
			}
			if _, ok := c.GetFlagCompletionFunc(f.Name); !ok {
				t.Errorf("%s --%s has no completion: add it to flagCompletions", c.CommandPath(), f.Name)
			}
		})
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
			t.Errorf("%s has no completion of its arguments", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(testRoot())
}
