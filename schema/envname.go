package schema

import (
	"slices"
	"strings"
)

// The job credentials of contract §12: the parent passes them to a
// launch, the worker gets them through secret.env, and nothing else
// (argv, the scheduler's environment, logs) ever holds them.
const (
	EnvJobAuthToken      = "NVFLARE_JOB_AUTH_TOKEN"
	envJobTokenSignature = "NVFLARE_JOB_TOKEN_SIGNATURE"
	envJobSSID           = "NVFLARE_JOB_SSID"
)

// CredentialEnvNames lists the job credentials.
var CredentialEnvNames = []string{EnvJobAuthToken, envJobTokenSignature, envJobSSID}

// launcherOwnedNames are the environment names the launcher sets or relies
// on in a worker's environment (contract §6), with CredentialEnvNames.
var launcherOwnedNames = []string{"PYTHONPATH", "NVFL_WORKSPACE_OWNER_FQCN", "NVFL_WORKSPACE_TRANSFER_TOKEN",
	"BASHOPTS", "EUID", "SHELLOPTS", "UID", "NVFL_APPTAINER", "NVFL_SRUN"}

// launcherOwnedPrefixes are the name prefixes the launcher owns (contract §6).
var launcherOwnedPrefixes = []string{
	"SLURM_", "APPTAINER_", "APPTAINERENV_", "SINGULARITY_", "SINGULARITYENV_", "NVFLARE_SLURM_", "_nvfl_",
}

// IsValidEnvName says whether name is a POSIX environment name:
// [A-Za-z_][A-Za-z0-9_]*.
func IsValidEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// IsLauncherOwnedEnvName says whether name belongs to the launcher, so that
// neither a site (forward_env) nor a study (env, secret_env) may set it
// (contract §6).
func IsLauncherOwnedEnvName(name string) bool {
	return slices.Contains(launcherOwnedNames, name) || slices.Contains(CredentialEnvNames, name) || slices.ContainsFunc(launcherOwnedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// launcherOwnedHint explains a launcher-owned name.
const launcherOwnedHint = "choose another name: the launcher owns PYTHONPATH, the job credentials and names starting with SLURM_, APPTAINER_, SINGULARITY_, NVFLARE_SLURM_ or _nvfl_"
