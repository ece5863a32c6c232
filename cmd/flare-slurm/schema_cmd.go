package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/schema"
)

func newSchemaCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "schema [NAME]",
		Short: "List the JSON Schemas of the inputs, or print one",
		Long: `Without NAME, list the embedded JSON Schemas (2020-12) with their titles.
With NAME, print that schema, e.g. for yaml-language-server:

  flare-slurm schema slurm-config > slurm-config.schema.json
  # then, first line of slurm.yaml:
  # yaml-language-server: $schema=./slurm-config.schema.json

--json prints the list as {"status":"ok","data":{"schemas":[{"name":…,"title":…}]}},
and a schema as the data of that envelope.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				type entry struct {
					Name  string `json:"name"`
					Title string `json:"title"`
				}
				list := []entry{}
				for _, name := range schema.Names() {
					list = append(list, entry{name, schema.Title(name)})
				}
				return a.emit(cmd, map[string]any{"schemas": list}, func(w io.Writer) {
					for _, e := range list {
						fmt.Fprintf(w, "%-15s %s\n", e.Name, e.Title)
					}
				})
			}
			src, ok := schema.Source(args[0])
			if !ok {
				return usageErrorf("unknown schema %q (one of %s)%s", args[0], strings.Join(schema.Names(), ", "), suggestion(args[0], schema.Names()))
			}
			if asJSON {
				return a.printOK(json.RawMessage(src))
			}
			_, err := a.stdout.Write(src)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as a JSON envelope")
	return cmd
}
