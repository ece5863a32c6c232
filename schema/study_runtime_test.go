package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseStudyRuntimeValid(t *testing.T) {
	sr, probs := loadStudyRuntime("testdata/study_runtime.yaml", parseStudyRuntime)
	if probs != nil {
		t.Fatal(probs)
	}
	empty := ""
	want := []Study{
		{
			Name:  "pathology",
			Image: "/images/pathology.sif",
			Datasets: []Dataset{
				{Name: "slides", Type: "mount", Source: "/lustre/slides", Mode: "ro"},
				{Name: "scratch", Type: "mount", Source: "/scratch/p", Mode: "rw"},
			},
			Env: []EnvVar{
				{"DEBUG", "true"}, {"QUIET", "false"}, {"WORKERS", "8"}, {"HEX", "16"},
				{"RATIO", "0.5"}, {"EMPTY", ""}, {"NAME", "tumor"},
			},
			SecretEnv: []SecretEnv{
				{Name: "HF_TOKEN", Source: "PARENT_HF_TOKEN"},
				{Name: "DB_PASS", Source: "DB_PASS", Key: "password"},
			},
			SecretMounts: []SecretMount{{Name: "creds", Source: "/etc/nvflare/creds", MountPath: "/run/creds", Mode: "ro"}},
			Slurm: &StudySlurm{
				Sandbox: "apptainer", PythonPath: "/opt/conda/bin/python", Setup: &empty,
				Partition: "gpu-long", Account: "42", QOS: "normal",
			},
		},
		{Name: "bare-metal", Slurm: &StudySlurm{Sandbox: "none"}},
		{Name: "empty_one"},
	}
	if !reflect.DeepEqual(sr.Studies, want) {
		t.Errorf("studies:\n got %+v\nwant %+v", sr.Studies, want)
	}
	if sr.Study("bare-metal") != &sr.Studies[1] || sr.Study("nope") != nil {
		t.Error("Study lookup")
	}
}

func TestStudyRuntimeNullStudies(t *testing.T) {
	for _, yml := range []string{"format_version: 2\n", "format_version: 2\nstudies:\n", "format_version: 2\nstudies: {}\n"} {
		sr, probs := parseStudyRuntime("s.yaml", []byte(yml))
		if probs != nil || sr == nil || len(sr.Studies) != 0 {
			t.Errorf("%q: %+v %v", yml, sr, probs)
		}
	}
}

func TestStudyRuntimeProblems(t *testing.T) {
	const head = "format_version: 2\nstudies:\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"format version", "format_version: 1\n", []string{`s.yaml:1:17: format_version: must be 2 (got 1)`}},
		{"format version missing", "studies: {}\n", []string{`s.yaml:1:1: format_version: is required (Format of this file; must be 2)`}},
		{"unknown top-level", "format_version: 2\nstudy: {}\n",
			[]string{"s.yaml:2:1: study: unknown key (allowed: format_version, studies)"}},
		{"studies a list", "format_version: 2\nstudies: [a]\n", []string{`s.yaml:2:10: studies: must be a mapping (got list)`}},
		{"bad study name", head + "  Path_ology: {}\n  -x: {}\n", []string{
			`s.yaml:3:3: studies.Path_ology: is not a valid name: use 1-63 lowercase letters, digits, '_' or '-', starting and ending with a letter or digit (got "Path_ology")`,
			`s.yaml:4:3: studies.-x: is not a valid name: use 1-63 lowercase letters, digits, '_' or '-', starting and ending with a letter or digit (got "-x")`,
		}},
		{"study null", head + "  a:\n", []string{`s.yaml:3:5: studies.a: must be a mapping (got null)`}},
		{"pod_template and docker_kwargs", head + "  a:\n    pod_template: x.yaml\n    docker_kwargs: {}\n", []string{
			`s.yaml:4:5: studies.a.pod_template: pod_template belongs to the Kubernetes launcher and is not supported under Slurm (remove it)`,
			`s.yaml:5:5: studies.a.docker_kwargs: docker_kwargs belongs to the Docker launcher and is not supported under Slurm (remove it)`,
		}},
		{"unknown study key", head + "  a:\n    envs: {}\n", []string{
			"s.yaml:4:5: studies.a.envs: unknown key (allowed: container, datasets, env, secret_env, secret_mounts, slurm) (did you mean `env`?)",
		}},
		{"container", head + "  a:\n    container: {image: rel.sif, tag: x}\n  b:\n    container: {}\n", []string{
			`s.yaml:4:24: studies.a.container.image: must be an absolute path (got "rel.sif")`,
			"s.yaml:4:33: studies.a.container.tag: unknown key (allowed: image)",
			`s.yaml:6:5: studies.b.container.image: is required (Absolute path of the study's container image; overrides the site image)`,
		}},
		{"datasets", head + "  a:\n    datasets:\n      d1: {type: databricks, source: /x, mode: ro}\n      d2: {type: s3, source: /x, mode: ro}\n      d3: {source: \"/x,y\", mode: rw}\n      d4: {source: /x}\n      D5: {source: /x, mode: ro}\n      d6: {source: /x, mode: ro, readonly: true}\n", []string{
			`s.yaml:5:18: studies.a.datasets.d1.type: dataset type databricks is not yet supported (allowed: mount)`,
			`s.yaml:6:18: studies.a.datasets.d2.type: must be one of mount (got "s3")`,
			`s.yaml:7:20: studies.a.datasets.d3.source: must be an absolute path without ':' or ',' (got "/x,y")`,
			`s.yaml:8:7: studies.a.datasets.d4.mode: is required (Mount mode: ro (read-only) or rw (read-write))`,
			`s.yaml:9:7: studies.a.datasets.D5: is not a valid name: use 1-63 lowercase letters, digits, '_' or '-', starting and ending with a letter or digit (got "D5")`,
			"s.yaml:10:34: studies.a.datasets.d6.readonly: unknown key (allowed: mode, source, type)",
		}},
		{"env", head + "  a:\n    env:\n      OK: 1\n      LIST: [1]\n      MAP: {a: 1}\n      NULL: null\n      1BAD: x\n      PYTHONPATH: /x\n      SINGULARITY_BIND: /x\n", []string{
			`s.yaml:6:13: studies.a.env.LIST: must be a boolean, a number or a string (got list)`,
			`s.yaml:7:12: studies.a.env.MAP: must be a boolean, a number or a string (got mapping)`,
			`s.yaml:8:13: studies.a.env.NULL: must be a boolean, a number or a string (got null)`,
			`s.yaml:9:7: studies.a.env.1BAD: is not a valid environment name: must match [A-Za-z_][A-Za-z0-9_]* (got "1BAD")`,
			`s.yaml:10:7: studies.a.env.PYTHONPATH: PYTHONPATH is launcher-owned and cannot be set by a study (` + launcherOwnedHint + `)`,
			`s.yaml:11:7: studies.a.env.SINGULARITY_BIND: SINGULARITY_BIND is launcher-owned and cannot be set by a study (` + launcherOwnedHint + `)`,
		}},
		{"secret_env", head + "  a:\n    env: {TOKEN: x}\n    secret_env:\n      TOKEN: {source: T}\n      B: {source: SLURM_JOB_ID}\n      C: {source: \"bad-name\", key: \"\"}\n      D: {}\n      NVFLARE_JOB_SSID: {source: X}\n      E: x\n", []string{
			`s.yaml:6:7: studies.a.secret_env.TOKEN: TOKEN is defined in both env and secret_env (keep it in one of them)`,
			`s.yaml:7:19: studies.a.secret_env.B.source: SLURM_JOB_ID is launcher-owned and cannot be a secret source (` + launcherOwnedHint + `)`,
			`s.yaml:8:19: studies.a.secret_env.C.source: is not a valid environment name: must match [A-Za-z_][A-Za-z0-9_]* (got "bad-name")`,
			`s.yaml:8:36: studies.a.secret_env.C.key: must not be empty`,
			`s.yaml:9:7: studies.a.secret_env.D.source: is required (Name of the parent's environment variable that holds the value)`,
			`s.yaml:10:7: studies.a.secret_env.NVFLARE_JOB_SSID: NVFLARE_JOB_SSID is launcher-owned and cannot be set by a study (` + launcherOwnedHint + `)`,
			`s.yaml:11:10: studies.a.secret_env.E: must be a mapping (got string)`,
		}},
		{"secret_mounts", head + "  a:\n    datasets: {d: {source: /d, mode: ro}}\n    secret_mounts:\n      m1: {source: /s, mount_path: /run/s, mode: rw}\n      m2: {source: /s, mount_path: /run/t, items: {a: b}}\n      m3: {source: s, mount_path: /proc/x}\n      m4: {source: /s, mount_path: /run/../etc}\n      m5: {source: /s, mount_path: /data/a}\n      m6: {source: /s, mount_path: /run/s/inner}\n      m7: {source: /s, mount_path: /}\n", []string{
			`s.yaml:6:50: studies.a.secret_mounts.m1.mode: must be ro: secret mounts are always read-only (got "rw")`,
			`s.yaml:7:44: studies.a.secret_mounts.m2.items: items is Kubernetes-only and is not supported under Slurm (point source at a directory containing only the intended files)`,
			`s.yaml:8:20: studies.a.secret_mounts.m3.source: must be an absolute path without ':' or ',' (got "s")`,
			`s.yaml:8:35: studies.a.secret_mounts.m3.mount_path: must not be /proc or below it`,
			`s.yaml:9:36: studies.a.secret_mounts.m4.mount_path: must be a normalised path (got "/run/../etc", normalised "/etc")`,
			`s.yaml:10:36: studies.a.secret_mounts.m5.mount_path: /data/a overlaps the mount of dataset d at /data/a/d (choose a destination outside it)`,
			`s.yaml:11:36: studies.a.secret_mounts.m6.mount_path: /run/s/inner overlaps the mount of secret mount m1 at /run/s (choose a destination outside it)`,
			`s.yaml:12:36: studies.a.secret_mounts.m7.mount_path: must not be /`,
		}},
		{"slurm block", head + "  a:\n    slurm:\n      sandbox: docker\n      python_path: python\n      setup: 1\n      partition: \"a b\"\n      account: \"\"\n      qos: true\n      time: 1\n", []string{
			`s.yaml:5:16: studies.a.slurm.sandbox: must be one of apptainer, pyxis, none (got "docker")`,
			`s.yaml:6:20: studies.a.slurm.python_path: must be an absolute path (got "python")`,
			`s.yaml:7:14: studies.a.slurm.setup: must be a string (got integer)`,
			`s.yaml:8:18: studies.a.slurm.partition: must not contain whitespace (got "a b")`,
			`s.yaml:9:16: studies.a.slurm.account: must not be empty`,
			`s.yaml:10:12: studies.a.slurm.qos: must be an integer or a string (got boolean)`,
			"s.yaml:11:7: studies.a.slurm.time: unknown key (allowed: account, partition, python_path, qos, sandbox, setup)",
		}},
		{"sandbox none with container", head + "  a:\n    container: {image: /i.sif}\n    datasets: {d: {source: /d, mode: ro}}\n    secret_mounts: {s: {source: /s, mount_path: /run/s}}\n    slurm: {sandbox: none}\n", []string{
			`s.yaml:4:5: studies.a.container: is not allowed when the study's slurm.sandbox is none (remove container, or use sandbox apptainer or pyxis)`,
			`s.yaml:5:5: studies.a.datasets: is not allowed when the study's slurm.sandbox is none (remove datasets, or use sandbox apptainer or pyxis)`,
			`s.yaml:6:5: studies.a.secret_mounts: is not allowed when the study's slurm.sandbox is none (remove secret_mounts, or use sandbox apptainer or pyxis)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sr, probs := parseStudyRuntime("s.yaml", []byte(tc.yaml))
			if sr != nil {
				t.Error("got a study runtime despite problems")
			}
			got := problemLines(probs)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestLoadStudyRuntimeLegacy(t *testing.T) {
	dir := t.TempDir()
	rt := filepath.Join(dir, StudyRuntimeFile)
	if err := os.WriteFile(rt, []byte("format_version: 2\nstudies: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, probs := loadStudyRuntime(rt, parseStudyRuntime); probs != nil {
		t.Fatalf("valid file: %v", probs)
	}
	legacy := filepath.Join(dir, legacyStudyFile)
	if err := os.WriteFile(legacy, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sr, probs := loadStudyRuntime(rt, parseStudyRuntime)
	want := []string{legacy + ": legacy study_data.yaml cannot be combined with study_runtime.yaml (move its studies into study_runtime.yaml (format_version: 2) and delete study_data.yaml)"}
	if sr != nil || !reflect.DeepEqual(problemLines(probs), want) {
		t.Errorf("got %v %q, want %q", sr, problemLines(probs), want)
	}
}

func TestCheckMountDestination(t *testing.T) {
	for dst, want := range map[string]string{
		"/run/creds":   "",
		"/run/creds/":  "",
		"/data/x":      "",
		"/devices":     "",
		"/":            "must not be /",
		"//run":        `must be a normalised path (got "//run", normalised "/run")`,
		"/run/./x":     `must be a normalised path (got "/run/./x", normalised "/run/x")`,
		"/run//x":      `must be a normalised path (got "/run//x", normalised "/run/x")`,
		"/sys":         "must not be /sys or below it",
		"/dev/shm":     "must not be /dev or below it",
		"run":          "must be an absolute path",
		"/a:b":         "must not contain ':' or ','",
		"/proc/1/root": "must not be /proc or below it",
	} {
		if got := checkMountDestination(dst); got != want {
			t.Errorf("checkMountDestination(%q) = %q, want %q", dst, got, want)
		}
	}
}

func TestPathsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"/a", "/a", true}, {"/a", "/a/b", true}, {"/a/b/", "/a", true}, {"/a", "/ab", false},
		{"/", "/x", true}, {"/x/y", "/x/z", false},
	} {
		if got := pathsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("pathsOverlap(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
