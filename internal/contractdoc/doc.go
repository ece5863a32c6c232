// Package contractdoc holds no code: its test keeps docs/contract.md and
// the "contract §N" citations in the source tree in step. Every cited
// section must have a heading in docs/contract.md, no section number may
// head two sections, and every link in the document must land on a
// heading. Run it with `go test ./internal/contractdoc`.
package contractdoc
