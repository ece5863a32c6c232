package integration

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// isolationProbe is the behaviour of TestContainerIsolation's worker,
// sourced by the worker script inside the container, in the run dir. It
// records what the container shows as key=value lines in isolation.txt and
// its whole environment in env.txt. The paths it looks at are the
// variables the test prepends (shell-quoted).
const isolationProbe = `
r=isolation.txt
: > "$r"
say() { printf '%s=%s\n' "$1" "$2" >> "$r"; }
seen() { if [ -e "$2" ]; then say "$1" visible; else say "$1" hidden; fi; }
writable() { if ( : > "$2/.flare-write-probe" ) 2>/dev/null; then rm -f "$2/.flare-write-probe"; say "$1" yes; else say "$1" no; fi; }
say uid "$(id -u)"
say capeff "$(awk '/^CapEff:/ { print $2 }' /proc/self/status)"
say nnp "$(awk '/^NoNewPrivs:/ { print $2 }' /proc/self/status)"
say pid1 "$(tr '\0' ' ' < /proc/1/cmdline | cut -c1-60)"
say os "$(. /etc/os-release && echo "$ID-$VERSION_ID")"
seen home_marker "$home_marker"
seen tmp_marker "$tmp_marker"
seen other_run "$other_run"
seen control_dir "$control_dir"
seen secret_file "$secret_file"
seen slurm_conf /etc/slurm/slurm.conf
seen munge_socket /run/munge/munge.socket.2
seen startup "$startup"
seen local "$local"
writable w_startup "$startup"
writable w_local "$local"
writable w_run "$PWD"
writable w_rootfs /usr/local
writable w_ds_ro "$ds_ro"
writable w_ds_rw "$ds_rw"
writable w_secret_mount "$secret_mount"
say ds_ro_data "$(cat "$ds_ro/data.txt" 2>&1)"
say secret_mount_sha256 "$(sha256sum < "$secret_mount/token" | cut -c1-64)"
if ( : > "$ds_rw/written-inside" ) 2>/dev/null; then say ds_rw_write ok; fi
env | sort > env.txt
exit 0
`

// TestContainerIsolation, per container sandbox, with the real apptainer
// and pyxis+enroot: a study job (image, datasets, env, secret env, secret
// mount) runs as the job's user without capabilities; its datasets are
// bound at /data/<study>/<name> with their modes, read-only proven
// unwritable from inside and read-write written through to the host; the
// secret mount is readable and read-only; startup/ and local/ are visible
// read-only, the run dir writable, the image's root read-only; the host's
// home, /tmp, the workspace's control directory and other run dirs, the
// secret file, the cluster's slurm.conf and munge socket are not visible;
// the secrets reach the worker only as their own variables and appear in
// no other variable nor in the job's output; a variable of the submitting
// side does not arrive.
func TestContainerIsolation(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	for _, sandbox := range []string{slurmtest.SandboxApptainer, slurmtest.SandboxPyxis} {
		t.Run(sandbox, func(t *testing.T) {
			t.Parallel()
			testContainerIsolation(t, sandbox)
		})
	}
}

func testContainerIsolation(t *testing.T, sandbox string) {
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{sandbox: sandbox})
	image := c.RequireContainers(t, sandbox)
	nonce := randomHex(t, 6)
	studySecret := "study-secret-" + randomHex(t, 8)
	mountToken := "mount-token-" + randomHex(t, 8)
	submitSide := "submit-side-" + randomHex(t, 8)

	// The study's data and secret mount, owned by the test account.
	data := path.Join(s.base, "data")
	dsRO, dsRW, cred := path.Join(data, "ro"), path.Join(data, "rw"), path.Join(data, "cred")
	for _, d := range []string{data, dsRO, dsRW, cred} {
		c.Mkdir(t, d, 0o700)
	}
	c.WriteFile(t, path.Join(dsRO, "data.txt"), []byte("dataset "+nonce+"\n"), 0o600)
	c.WriteFile(t, path.Join(cred, "token"), []byte(mountToken), 0o600)
	c.WriteFile(t, path.Join(s.ws, "local", "study_runtime.yaml"), []byte(fmt.Sprintf(`format_version: 2
studies:
  iso:
    container:
      image: %s
    datasets:
      ro: {source: %s, mode: ro}
      rw: {source: %s, mode: rw}
    env:
      ISO_MODE: isolation
    secret_env:
      ISO_SECRET: {source: ISO_SECRET_SOURCE}
    secret_mounts:
      cred: {source: %s, mount_path: /run/secrets/iso-cred}
`, image, dsRO, dsRW, cred)), 0o600)
	s.env = []string{"ISO_SECRET_SOURCE=" + studySecret, "FLARE_SUBMIT_SIDE=" + submitSide}

	// What the host has and the container must not show.
	homeMarker := path.Join(c.Home, ".flare-marker-"+nonce)
	tmpMarker := "/tmp/flare-marker-" + nonce
	c.WriteFile(t, homeMarker, nil, 0o600)
	c.WriteFile(t, tmpMarker, nil, 0o600)
	otherRun := path.Join(s.ws, "other-job")
	c.Mkdir(t, otherRun, 0o700)

	vars := map[string]string{
		"home_marker": homeMarker, "tmp_marker": tmpMarker, "other_run": otherRun,
		"control_dir": path.Join(s.ws, ".nvflare_slurm"), "secret_file": path.Join(s.jobDir("job-iso"), "secret.env"),
		"startup": path.Join(s.ws, "startup"), "local": path.Join(s.ws, "local"),
		"ds_ro": "/data/iso/ro", "ds_rw": "/data/iso/rw", "secret_mount": "/run/secrets/iso-cred",
	}
	var behaviour strings.Builder
	for _, k := range []string{"home_marker", "tmp_marker", "other_run", "control_dir", "secret_file", "startup", "local", "ds_ro", "ds_rw", "secret_mount"} {
		fmt.Fprintf(&behaviour, "%s=%s\n", k, shell.Quote(vars[k]))
	}
	behaviour.WriteString(isolationProbe)
	req, token := s.job("job-iso", behaviour.String(), map[string]any{"study": "iso"})
	l := s.launch(req)
	st := s.wait("job-iso", 3*time.Minute)
	out := s.slurmOut("job-iso", l.SlurmJobID)
	if st.ReturnCode != 0 || st.State != "COMPLETED" {
		t.Fatalf("result %+v\njob output:\n%s", st, out)
	}
	seen := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(s.read(path.Join(s.ws, "job-iso", "isolation.txt"))), "\n") {
		k, v, _ := strings.Cut(line, "=")
		seen[k] = v
	}
	t.Logf("%s: %v", sandbox, seen)
	mountSum := sha256.Sum256([]byte(mountToken))
	want := map[string]string{
		"uid": fmt.Sprint(c.TestUID), "capeff": "0000000000000000",
		"home_marker": "hidden", "tmp_marker": "hidden", "other_run": "hidden", "control_dir": "hidden",
		"secret_file": "hidden", "slurm_conf": "hidden", "munge_socket": "hidden",
		"startup": "visible", "local": "visible",
		"w_startup": "no", "w_local": "no", "w_run": "yes", "w_rootfs": "no",
		"w_ds_ro": "no", "w_ds_rw": "yes", "w_secret_mount": "no",
		"ds_ro_data": "dataset " + nonce, "secret_mount_sha256": hex.EncodeToString(mountSum[:]),
		"ds_rw_write": "ok", "os": "debian-13",
	}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("%s: %s=%q, want %q", sandbox, k, seen[k], v)
		}
	}
	if s.read(path.Join(dsRW, "written-inside")) != "" {
		t.Errorf("%s: the file written into the rw dataset is not empty on the host", sandbox)
	}
	// apptainer --containall runs the job in a PID namespace of its own,
	// under its init, and --no-privs sets no_new_privs; enroot shares the
	// node's PID namespace (pid 1 is the node's init) and leaves
	// no_new_privs to the job (docs/testing.md records both).
	if sandbox == slurmtest.SandboxApptainer && (!strings.HasPrefix(seen["pid1"], "appinit") || seen["nnp"] != "1") {
		t.Errorf("apptainer: pid 1 is %q, no_new_privs %q: want apptainer's appinit in a PID namespace of the job's own, no_new_privs 1", seen["pid1"], seen["nnp"])
	}

	env := s.read(path.Join(s.ws, "job-iso", "env.txt"))
	for name, secret := range map[string]string{"NVFLARE_JOB_AUTH_TOKEN": token, "ISO_SECRET": studySecret} {
		if !strings.Contains(env, "\n"+name+"="+secret+"\n") {
			t.Errorf("%s: %s is not the worker's %s:\n%s", sandbox, "the secret", name, env)
		}
		if n := strings.Count(env, secret); n != 1 {
			t.Errorf("%s: the value of %s is in %d variables of the container's environment, want 1", sandbox, name, n)
		}
		if strings.Contains(out, secret) {
			t.Errorf("%s: the value of %s is in the job's output", sandbox, name)
		}
	}
	if strings.Contains(env, mountToken) || strings.Contains(out, mountToken) {
		t.Errorf("%s: the secret mount's content is in the environment or the output", sandbox)
	}
	if !strings.Contains(env, "\nISO_MODE=isolation\n") {
		t.Errorf("%s: the study's env did not arrive:\n%s", sandbox, env)
	}
	if strings.Contains(env, submitSide) {
		t.Errorf("%s: a variable of the submitting side arrived in the container:\n%s", sandbox, env)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
