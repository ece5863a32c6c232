// Package editortest checks schema/*.schema.json in a real editor engine:
// its tests start yaml-language-server (pinned in testdata/package.json,
// installed by `npm ci` in testdata) over stdio and ask it for completion,
// hover and diagnostics on flare-slurm's YAML inputs.
package editortest
