// Package doclinks holds no code: its test checks the project's Markdown,
// that every relative link in README.md, CHANGELOG.md, docs/ and examples/
// names a file that exists and, with a #fragment, a heading of that file
// (GitHub's anchor rules). The reference lives in several files; a moved
// section must not leave a dead link behind. Run it with
// `go test ./internal/doclinks`.
package doclinks
