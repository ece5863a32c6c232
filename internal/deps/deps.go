// Package deps pins the design's dependencies in go.mod while the packages
// that use them are being written. TEMPORARY: removed once every one is used.
package deps

import (
	_ "github.com/google/renameio/v2"
	_ "github.com/pmezard/go-difflib/difflib"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/sebdah/goldie/v2"
	_ "golang.org/x/sys/unix"
	_ "gopkg.in/yaml.v3"
)
