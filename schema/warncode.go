package schema

import "slices"

// Warning codes. A warning carries one: it is shown after the warning's
// text as " [code]" and in --json as "code"; validate and prepare silence
// the warnings of a code with --ignore-warning CODE. docs/conventions.md
// lists them; they are separate from the error codes of a failed command.
const (
	// WarnYAML11Reading: a value NVFlare's YAML 1.1 reader (PyYAML) reads
	// differently from flare-slurm (validate, prepare; --strict makes
	// these errors).
	WarnYAML11Reading = "yaml11-reading"
	// warnKitConfigName: a kit's slurm.yaml/slurm.yml that validate checks
	// but prepare does not read by default.
	warnKitConfigName = "kit-config-name"
	// WarnUnpairedConfig: validate was given Slurm configs and several
	// kits, so it checked each config alone, not as prepare reads it with
	// a kit.
	WarnUnpairedConfig = "unpaired-config"
	// WarnPrepareComponent: prepare replaces or removes a component of
	// the kit's resources.json.default.
	WarnPrepareComponent = "prepare-component"
	// WarnPrepareSnapshot: prepare could not relocate snapshot storage.
	WarnPrepareSnapshot = "prepare-snapshot"
	// WarnPrepareForce: --force replaces or discards something.
	WarnPrepareForce = "prepare-force"
	// WarnPrepareRootOwned: a workspace prepared as root.
	WarnPrepareRootOwned = "prepare-root-owned"
	// WarnPrepareImage: an image absent on this host, rendered as written.
	WarnPrepareImage = "prepare-image"
	// WarnPrepareLocalKept: prepare kept a file a person wrote in the
	// workspace's local/ (issue 25 item 2).
	WarnPrepareLocalKept = "prepare-local-kept"
	// WarnPrepareSecretCopy: prepare --check --exclude-secrets found
	// secret files in the workspace copy it compared with (a copy
	// published for CI should hold none).
	WarnPrepareSecretCopy = "prepare-secret-copy"
	// WarnPrepareStaging: the staging of the workspace left something to
	// clean up by hand.
	WarnPrepareStaging = "prepare-staging"
)

// WarningCodes lists every warning code, for --ignore-warning.
var WarningCodes = []string{
	WarnYAML11Reading, warnKitConfigName, WarnUnpairedConfig, WarnPrepareComponent, WarnPrepareSnapshot,
	WarnPrepareForce, WarnPrepareRootOwned, WarnPrepareImage, WarnPrepareSecretCopy, WarnPrepareStaging,
	WarnPrepareLocalKept,
}

// IsWarningCode says whether code is one of WarningCodes.
func IsWarningCode(code string) bool { return slices.Contains(WarningCodes, code) }

// WarningText is a warning as one line: its problem line, then " [code]".
func WarningText(w Problem) string {
	if w.Code == "" {
		return w.String()
	}
	return w.String() + " [" + w.Code + "]"
}
