package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Issue 9 item 7: a NUL in any string the schemas describe, and CR/LF in a
// one-line one, is refused at validate time at the value's position, once.
func TestTextRuleSlurmConfig(t *testing.T) {
	const head = "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"NUL in a directive", head + "  sbatch_directives:\n    partition: \"gpu\\0x\"\n",
			[]string{`f.yaml:6:16: job_launcher.sbatch_directives.partition: must not contain NUL (byte 4 of the value)`}},
		{"NUL in a parent directive", head + "parent:\n  sbatch_directives:\n    qos: \"\\0\"\n",
			[]string{`f.yaml:7:10: parent.sbatch_directives.qos: must not contain NUL (byte 1 of the value)`}},
		{"NUL in parent_host", head + "  parent_host: \"h\\0\"\n",
			[]string{`f.yaml:5:16: job_launcher.parent_host: must not contain NUL (byte 2 of the value)`}},
		{"newline in python_path", "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: \"/usr/bin/py\\nthon\"\n",
			[]string{`f.yaml:4:16: job_launcher.python_path: must be one line: no carriage return or line feed (byte 12 of the value)`}},
		{"CR in an executable", head + "  executables:\n    srun: \"srun\\rx\"\n",
			[]string{`f.yaml:6:11: job_launcher.executables.srun: must be one line: no carriage return or line feed (byte 5 of the value)`}},
		{"NUL in environment_setup", head + "parent:\n  environment_setup: \"module load x\\0\"\n",
			[]string{`f.yaml:6:22: parent.environment_setup: must not contain NUL (byte 14 of the value)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, probs := parseSlurm("f.yaml", []byte(tc.yaml))
			if cfg != nil {
				t.Errorf("got a config despite problems")
			}
			if got := problemLines(probs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	// Multi-line text stays allowed where the schema says so.
	ok := head + "  setup: |\n    module load a\n    module load b\n" +
		"parent:\n  environment_setup: \"a\\r\\nb\"\n"
	if _, probs := parseSlurm("f.yaml", []byte(ok)); probs != nil {
		t.Errorf("multi-line setup refused: %v", probs)
	}
}

func TestTextRuleStudyRuntime(t *testing.T) {
	const head = "format_version: 2\nstudies:\n  a:\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"NUL in an env value", head + "    env:\n      X: \"v\\0\"\n",
			[]string{`s.yaml:5:10: studies.a.env.X: must not contain NUL (byte 2 of the value)`}},
		{"newline in a secret key", head + "    secret_env:\n      T: {source: S, key: \"k\\n\"}\n",
			[]string{`s.yaml:5:27: studies.a.secret_env.T.key: must be one line: no carriage return or line feed (byte 2 of the value)`}},
		{"newline in an image", head + "    container:\n      image: \"/x\\n.sif\"\n",
			[]string{`s.yaml:5:14: studies.a.container.image: must be one line: no carriage return or line feed (byte 3 of the value)`}},
		{"NUL in a partition", head + "    slurm:\n      partition: \"p\\0\"\n",
			[]string{`s.yaml:5:18: studies.a.slurm.partition: must not contain NUL (byte 2 of the value)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, probs := parseStudyRuntime("s.yaml", []byte(tc.yaml))
			if got := problemLines(probs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	ok := head + "    env:\n      PEM: \"line1\\nline2\"\n    slurm:\n      setup: \"a\\nb\"\n"
	if _, probs := parseStudyRuntime("s.yaml", []byte(ok)); probs != nil {
		t.Errorf("multi-line env value or setup refused: %v", probs)
	}
}

func TestTextRuleJobMeta(t *testing.T) {
	for _, tc := range []struct {
		name, site, json string
		want             []string
	}{
		{"NUL in study", "s", `{"study": "a\u0000"}`,
			[]string{`meta.json:1:11: study: must not contain NUL (byte 2 of the value)`}},
		{"newline in time", "s", `{"launcher_spec": {"s": {"slurm": {"time": "1:00\n"}}}}`,
			[]string{`meta.json:1:44: launcher_spec.s.slurm.time: must be one line: no carriage return or line feed (byte 5 of the value)`}},
		{"NUL in a site name", "", `{"resource_spec": {"a\u0000": {}}}`,
			[]string{`meta.json:1:20: "resource_spec.a\x00": name must not contain NUL (byte 2 of the value)`}},
		// Keys NVFlare owns are not described by the schema: left alone.
		{"NVFlare key", "s", `{"name": "a\u0000", "deploy_map": {"x\n": ["s"]}}`, nil},
		// Another site's section is not this site's reading.
		{"other site", "s", `{"launcher_spec": {"t": {"slurm": {"time": "\u0000"}}}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, probs := ParseJobMeta("meta.json", []byte(tc.json), tc.site)
			got := problemLines(probs)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		s     string
		multi bool
		want  string
	}{
		{"plain", false, ""},
		{"a\nb", true, ""},
		{"a\r", true, ""},
		{"a\x00", true, "must not contain NUL (byte 2 of the value)"},
		{"\x00\n", false, "must not contain NUL (byte 1 of the value)"},
		{"a\nb", false, "must be one line: no carriage return or line feed (byte 2 of the value)"},
		{"ab\r", false, "must be one line: no carriage return or line feed (byte 3 of the value)"},
		// Other control characters in a one-line value (issue 9 review: an
		// ESC in a partition reached the sbatch argv).
		{"cpu\x1b[2J", false, `must not contain the control character '\x1b' (byte 4 of the value)`},
		{"a\tb", false, ""}, // a path may hold a tab; the shell-safety tests use one
		{"a\x7f", false, `must not contain the control character '\x7f' (byte 2 of the value)`},
		{"a\tb\x1b[8m", true, `must not contain the control character '\x1b' (byte 4 of the value)`},
		{"a\tb\r\n", true, ""},
		{"gpu:1 é", false, ""},
		// Issue 25 item 12: C1 controls and invisible format characters
		// (bidi overrides, zero-width) show a reviewer text that is not
		// what runs; refused in one-line and multi-line values alike.
		{"gpu\u0085x", false, "must not contain the C1 control character U+0085 (byte 4 of the value)"},
		{"echo a\u009b2J", true, "must not contain the C1 control character U+009B (byte 7 of the value)"},
		{"/data/\u202etxt.exe", false, "must not contain the invisible Unicode character U+202E (byte 7 of the value): a bidi control reorders how the text is shown, so a reviewer would not read what runs"},
		{"echo ok \u2066# x\u2069; rm -rf ~", true, "must not contain the invisible Unicode character U+2066 (byte 9 of the value): a bidi control reorders how the text is shown, so a reviewer would not read what runs"},
		{"gp\u200bu", false, "must not contain the invisible Unicode character U+200B (byte 3 of the value): a format character is not shown, so a reviewer would not read what runs"},
		{"a\ufeffb", true, "must not contain the invisible Unicode character U+FEFF (byte 2 of the value): a format character is not shown, so a reviewer would not read what runs"},
		{"a\u2028b", true, "must not contain the invisible Unicode character U+2028 (byte 2 of the value): a line separator an editor shows as a line break that the shell does not see"},
		// Review of issue 25 (M7): default-ignorables beyond Cf, and
		// characters that show as blanks.
		{"gpu\u3164", false, "must not contain the invisible Unicode character U+3164 (byte 4 of the value): a default-ignorable character is not shown, so a reviewer would not read what runs"},
		{"export PATH\u3164=/attacker/bin:$PATH", true, "must not contain the invisible Unicode character U+3164 (byte 12 of the value): a default-ignorable character is not shown, so a reviewer would not read what runs"},
		{"echo\u034f ok", true, "must not contain the invisible Unicode character U+034F (byte 5 of the value): a default-ignorable character is not shown, so a reviewer would not read what runs"},
		{"a\u115fb", false, "must not contain the invisible Unicode character U+115F (byte 2 of the value): a default-ignorable character is not shown, so a reviewer would not read what runs"},
		{"a\ufe0fb", true, "must not contain the invisible Unicode character U+FE0F (byte 2 of the value): a default-ignorable character is not shown, so a reviewer would not read what runs"},
		{"echo \u2800 ok", true, "must not contain U+2800 (byte 6 of the value): it shows as a blank but is not a space to the shell or to Slurm; type a plain space (U+0020)"},
		{"module\u00a0load x", true, "must not contain U+00A0 (byte 7 of the value): it shows as a blank but is not a space to the shell or to Slurm; type a plain space (U+0020)"},
		{"gpu\u3000", false, "must not contain U+3000 (byte 4 of the value): it shows as a blank but is not a space to the shell or to Slurm; type a plain space (U+0020)"},
		{"données/été ✓", false, ""},
		{"Grüße 東京 🙂", true, ""},
	} {
		if got := CheckText(tc.s, tc.multi); got != tc.want {
			t.Errorf("CheckText(%q, %v) = %q, want %q", tc.s, tc.multi, got, tc.want)
		}
	}
}

// Issue 9 item 15: explicit YAML tags other than the plain core-schema ones
// are refused with their position, in every input.
func TestYAMLTagsRefused(t *testing.T) {
	const head = "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n"
	for _, tc := range []struct {
		name, yaml string
		want       string
	}{
		{"binary", head + "  setup: !!binary bW9kdWxlIGxvYWQ=\n",
			"f.yaml:5:10: job_launcher.setup: YAML tag !!binary is not supported on a string (remove the tag; the allowed explicit tags are !!str, !!int, !!float, !!bool, !!null)"},
		{"str on a mapping", head + "  sbatch_directives: !!str {partition: a}\n",
			"f.yaml:5:22: job_launcher.sbatch_directives: YAML tag !!str is not supported on a mapping (remove the tag; the allowed explicit tags are !!map)"},
		{"custom", head + "  setup: !shell x\n",
			"f.yaml:5:10: job_launcher.setup: YAML tag !shell is not supported on a string (remove the tag; the allowed explicit tags are !!str, !!int, !!float, !!bool, !!null)"},
		{"set", head + "  sbatch_directives: !!set {partition}\n",
			"f.yaml:5:22: job_launcher.sbatch_directives: YAML tag !!set is not supported on a mapping (remove the tag; the allowed explicit tags are !!map)"},
		{"omap", head + "  forward_env: !!omap [A: 1]\n",
			"f.yaml:5:16: job_launcher.forward_env: YAML tag !!omap is not supported on a list (remove the tag; the allowed explicit tags are !!seq)"},
		{"timestamp", head + "  sbatch_directives:\n    time: !!timestamp 2001-12-14\n",
			"f.yaml:6:11: job_launcher.sbatch_directives.time: YAML tag !!timestamp is not supported on a string (remove the tag; the allowed explicit tags are !!str, !!int, !!float, !!bool, !!null)"},
		{"on a key", head + "  !foo setup: x\n",
			"f.yaml:5:3: job_launcher.setup: YAML tag !foo is not supported on a string (remove the tag; the allowed explicit tags are !!str, !!int, !!float, !!bool, !!null)"},
		{"int that is not", head + "  internal_port: !!int abc\n",
			`f.yaml:5:18: job_launcher.internal_port: YAML tag !!int does not fit the value "abc" (remove the tag or fix the value)`},
		{"null that is not", head + "  parent_host: !!null h\n",
			`f.yaml:5:16: job_launcher.parent_host: YAML tag !!null does not fit the value "h" (remove the tag or fix the value)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, probs := parseSlurm("f.yaml", []byte(tc.yaml))
			if cfg != nil {
				t.Fatalf("got a config despite a tag")
			}
			if got := problemLines(probs); !reflect.DeepEqual(got, []string{tc.want}) {
				t.Errorf("problems:\n got %q\nwant %q", got, []string{tc.want})
			}
			for _, p := range probs {
				if p.Kind != problem.Structure {
					t.Errorf("a tag problem is a YAML structure problem, not a %s one: %v", p.Kind, p)
				}
			}
		})
	}
	// The plain core tags are fine, and !!str makes a string of a number.
	ok := head + "  sbatch_directives: !!map\n    partition: !!str 123\n  internal_port: !!int 9000\n" +
		"  submit_timeout: !!float 5\n  parent_host: !!null\n  forward_env: !!seq [A]\n"
	cfg, probs := parseSlurm("f.yaml", []byte(ok))
	if probs != nil {
		t.Fatalf("core tags refused: %v", probs)
	}
	if cfg.JobLauncher.Directives[0].Value != "123" || cfg.JobLauncher.InternalPort != 9000 {
		t.Errorf("config read as %+v", cfg.JobLauncher)
	}
	// Study runtime and job meta go through the same parser.
	if _, probs := parseStudyRuntime("s.yaml", []byte("format_version: 2\nstudies: !!set {a}\n")); len(probs) != 1 || !strings.Contains(probs[0].Message, "YAML tag !!set") {
		t.Errorf("study runtime: %v", probs)
	}
	if _, probs := ParseJobMeta("m.yaml", []byte("study: !!binary YQ==\n"), "s"); len(probs) != 1 || !strings.Contains(probs[0].Message, "YAML tag !!binary") {
		t.Errorf("job meta: %v", probs)
	}
}

// TestTextRuleInvisibleCharacters (issue 25 item 12): a C1 control or an
// invisible format character in any value that reaches a batch script,
// node.sh or the sbatch argv is refused with its position, in every input
// that carries one: one-line values and multi-line bash alike.
func TestTextRuleInvisibleCharacters(t *testing.T) {
	const head = "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n"
	cfgCases := []struct{ yaml, want string }{
		{head + "  sbatch_directives:\n    partition: \"gpu\\x85\"\n",
			"f.yaml:6:16: job_launcher.sbatch_directives.partition: must not contain the C1 control character U+0085 (byte 4 of the value)"},
		{head + "  setup: \"module load a # \\u202e\\u2066 ; curl x | sh \\u2069\"\n",
			"f.yaml:5:10: job_launcher.setup: must not contain the invisible Unicode character U+202E (byte 17 of the value): a bidi control reorders how the text is shown, so a reviewer would not read what runs"},
		{head + "parent:\n  environment_setup: \"a\\u200bb\"\n",
			"f.yaml:6:22: parent.environment_setup: must not contain the invisible Unicode character U+200B (byte 2 of the value): a format character is not shown, so a reviewer would not read what runs"},
	}
	for _, c := range cfgCases {
		_, probs := parseSlurm("f.yaml", []byte(c.yaml))
		if got := problemLines(probs); !reflect.DeepEqual(got, []string{c.want}) {
			t.Errorf("slurm.yaml problems:\n got %q\nwant %q", got, c.want)
		}
	}
	_, probs := parseStudyRuntime("s.yaml", []byte("format_version: 2\nstudies:\n  a:\n    env:\n      X: \"ok \\u2067x\"\n"))
	if got := problemLines(probs); len(got) != 1 || !strings.Contains(got[0], "s.yaml:5:10: studies.a.env.X: must not contain the invisible Unicode character U+2067") {
		t.Errorf("study env value: %q", got)
	}
	_, probs = ParseJobMeta("meta.json", []byte(`{"launcher_spec": {"s": {"slurm": {"nodes": 2, "additional_node_command": "python train.py \u202e"}}}}`), "s")
	if got := problemLines(probs); len(got) != 1 || !strings.Contains(got[0], "launcher_spec.s.slurm.additional_node_command: must not contain the invisible Unicode character U+202E") {
		t.Errorf("job meta: %q", got)
	}
	if msg := CheckWorkspacePath("/proj/ws\u202e"); !strings.Contains(msg, "U+202E") {
		t.Errorf("workspace path with a bidi override: %q", msg)
	}
}
