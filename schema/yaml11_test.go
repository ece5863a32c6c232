package schema

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/testenv"
)

// yaml11Cases are plain scalars with PyYAML's reading of each: the kind
// and Python's str() of the value (booleans as NVFlare writes them).
var yaml11Cases = []struct {
	text, kind, str string
}{
	{"12:00:00", "int", "43200"},
	{"12:30:00", "int", "45000"},
	{"04:00:00", "str", "04:00:00"}, // leading zero: not sexagesimal
	{"1:30.5", "float", "90.5"},
	{"yes", "bool", "true"},
	{"Yes", "bool", "true"},
	{"NO", "bool", "false"},
	{"No", "bool", "false"},
	{"on", "bool", "true"},
	{"OFF", "bool", "false"},
	{"True", "bool", "true"},
	{"y", "str", "y"},
	{"n", "str", "n"},
	{"yEs", "str", "yEs"},
	{"0o17", "str", "0o17"},
	{"017", "int", "15"},
	{"08", "str", "08"},
	{"0x1F", "int", "31"},
	{"-0b101", "int", "-5"},
	{"1_000", "int", "1000"},
	{"+1", "int", "1"},
	{"-0", "int", "0"},
	{"0", "int", "0"},
	{".5", "float", "0.5"},
	{"1.", "float", "1.0"},
	{"1e10", "str", "1e10"}, // no sign in the exponent, no dot: text
	{"1.0e+10", "float", "10000000000.0"},
	{"1.5e-7", "float", "1.5e-07"},
	{"12345678901234567.0", "float", "1.2345678901234568e+16"},
	{".inf", "float", "inf"},
	{"-.Inf", "float", "-inf"},
	{".NaN", "float", "nan"},
	{"~", "null", "None"},
	{"null", "null", "None"},
	{"Null", "null", "None"},
	{"nUll", "str", "nUll"},
	{"2001-12-14", "timestamp", "2001-12-14"},
	{"gpu:1", "str", "gpu:1"},
	{"02:00:00", "str", "02:00:00"},
	{"60:00", "int", "3600"},
	// base 60 with parts beyond 64 bits: Python's int has no limit
	{"99999999999999999999:5", "int", "5999999999999999999945"},
	{"190:20:30.15", "float", "685230.15"},
}

// TestRead11 pins PyYAML's resolution of each case (the rules of
// yaml/resolver.py and yaml/constructor.py).
func TestRead11(t *testing.T) {
	for _, c := range yaml11Cases {
		r := read11(c.text)
		if r.kind != c.kind {
			t.Errorf("%q: kind %s, want %s", c.text, r.kind, c.kind)
			continue
		}
		if c.kind != "timestamp" && r.pyStr() != c.str {
			t.Errorf("%q: str %q, want %q", c.text, r.pyStr(), c.str)
		}
	}
}

// TestRead11MatchesPyYAML runs PyYAML's SafeLoader on every case: the table
// above is what NVFlare's reader does, not what we think it does. CI has a
// python3 with PyYAML (NVFlare's own dependency); elsewhere the test says
// why it cannot run.
func TestRead11MatchesPyYAML(t *testing.T) {
	var texts []string
	for _, c := range yaml11Cases {
		texts = append(texts, c.text)
	}
	compareWithPyYAML(t, texts)
}

// TestRead11MatchesPyYAMLGenerated compares read11 with PyYAML on
// thousands of scalars built from the pieces its resolver regexps and
// constructors look at (signs, prefixes, dots, colons, underscores,
// exponents, the bool/null words): what a table cannot cover. A fixed
// seed keeps it reproducible; it found base-60 parts beyond 64 bits.
func TestRead11MatchesPyYAMLGenerated(t *testing.T) {
	pieces := []string{"0", "1", "7", "9", "12", "59", "60", "00", "08", "0x", "0b", "0o", "_", ".", ":", "+", "-",
		"e", "E", "e+", "e-", "inf", "Inf", "nan", "NaN", "x", "F", "a", "yes", "Yes", "no", "On", "off", "true",
		"TRUE", "null", "Null", "~", "T", "Z", "2001-12-14", "1:30.5", "1.5", "99999999999999999999"}
	compareWithPyYAML(t, generatedScalars(15, 8000, 5, pieces))
}

// generatedScalars makes n distinct plain scalars of 1..maxPieces pieces,
// reproducibly from seed (the oracle tests' corpus).
func generatedScalars(seed int64, n, maxPieces int, pieces []string) []string {
	r := rand.New(rand.NewSource(seed))
	seen := map[string]bool{}
	var texts []string
	for len(texts) < n {
		var b strings.Builder
		for k := 1 + r.Intn(maxPieces); k > 0; k-- {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		if s := b.String(); !seen[s] {
			seen[s] = true
			texts = append(texts, s)
		}
	}
	return texts
}

// compareWithPyYAML runs PyYAML's SafeLoader on each plain scalar (as the
// value of a key) and fails on every one whose kind or Python str()
// differs from read11's. Scalars PyYAML cannot parse at all are skipped:
// they are no value either tool reads.
func compareWithPyYAML(t *testing.T, texts []string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import yaml").Run()
	}
	if err != nil {
		testenv.Unavailable(t, "python3 with PyYAML not available (%v); CI runs this test", err)
	}
	in, _ := json.Marshal(texts)
	script := `import json, sys, yaml, datetime
out = []
for s in json.load(sys.stdin):
    try:
        v = yaml.safe_load("k: " + s)["k"]
    except Exception:
        out.append(["error", ""]); continue
    if isinstance(v, bool): out.append(["bool", "true" if v else "false"])
    elif isinstance(v, int): out.append(["int", str(v)])
    elif isinstance(v, float): out.append(["float", str(v)])
    elif v is None: out.append(["null", "None"])
    elif isinstance(v, (datetime.date, datetime.datetime)): out.append(["timestamp", s])
    else: out.append(["str", v])
json.dump(out, sys.stdout)`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("PyYAML: %v", err)
	}
	var got [][2]string
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("PyYAML answered %d readings for %d scalars", len(got), len(texts))
	}
	compared := 0
	for i, text := range texts {
		if got[i][0] == "error" {
			continue
		}
		compared++
		r := read11(text)
		str := r.pyStr()
		if r.kind == "timestamp" {
			str = text
		}
		if got[i][0] != r.kind || got[i][1] != str {
			t.Errorf("%q: PyYAML reads %s %q, read11 %s %q", text, got[i][0], got[i][1], r.kind, str)
		}
	}
	if compared < len(texts)/2 {
		t.Fatalf("only %d of %d scalars were plain scalars PyYAML reads", compared, len(texts))
	}
}

// TestStudySlurmDirectiveReadings: a study's slurm partition/account/qos
// are compared as the text submitted, like sbatch_directives (NVFlare
// takes a string or an integer and refuses anything else); its setup is
// compared by value.
func TestStudySlurmDirectiveReadings(t *testing.T) {
	doc := strings.Join([]string{
		"format_version: 2",
		"studies:",
		"  s1:",
		"    slurm:",
		"      qos: 08",       // both submit 08
		"      account: 1:30", // 6: NVFlare submits 90
		"      partition: on", // 7: NVFlare refuses a boolean
		"      setup: 017",    // an integer to both: same value
	}, "\n") + "\n"
	got := ReadingDifferences("s.yaml", []byte(doc), isStudyEnvValue)
	var keys []string
	for _, p := range got {
		keys = append(keys, fmt.Sprintf("%d %s", p.Line, p.Path))
	}
	want := []string{"6 studies.s1.slurm.account", "7 studies.s1.slurm.partition"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("warnings at %v, want %v", keys, want)
	}
	if !strings.Contains(got[1].Message, "which NVFlare refuses") {
		t.Errorf("partition: %s", got[1].Message)
	}
}

// TestReadingDifferences: every plain scalar whose readings differ is
// reported with its position, path and the quoted spelling; quoted,
// tagged and agreeing scalars are not; study env values compare the text
// each tool sets the variable to.
func TestReadingDifferences(t *testing.T) {
	doc := strings.Join([]string{
		"job_launcher:",
		"  sbatch_directives:",
		"    time: 12:00:00",       // 3: int 43200 vs text
		"    partition: yes",       // 4: bool vs text
		"    account: \"on\"",      // quoted: same
		"    qos: !!str off",       // tagged: same
		"    constraint: 02:00:00", // leading zero: same text
		"  cpus_per_task: 017",     // octal in both: same
		"  mem_per_node: 08",       // 9: text vs the number 8
		"  pending_timeout: 1e10",  // 10: text vs number
		"studies:",
		"  s1:",
		"    env:",
		"      A: .5",    // 14: "0.5" vs ".5"
		"      B: 0o17",  // 15: "0o17" vs "15"
		"      C: 1e10",  // same text
		"      D: No",    // 17: "false" vs "No"
		"      E: 1.0",   // same text
		"      F: 1_000", // both 1000
		"      G: true",  // both "true"
		"  2024: {}",     // 21: key int vs name
		"  on: {}",       // 22: key bool vs name
		"  '2025': {}",   // quoted key: same
		"parent:",
		"  sbatch_directives:",
		"    account: 08",       // text to PyYAML, a float to yaml.v3: both pass 08
		"    qos: 1.5",          // 27: a float, which NVFlare refuses as a directive
		"    reservation: 0x1F", // an integer to both: both pass 31
		"    time: 1:30",        // 29: NVFlare passes 90
	}, "\n") + "\n"
	got := ReadingDifferences("x.yaml", []byte(doc), isStudyEnvValue)
	want := map[string]string{
		"3:11 job_launcher.sbatch_directives.time":      `read 12:00:00 as the integer 43200; flare-slurm (YAML 1.2) reads the text "12:00:00"`,
		"4:16 job_launcher.sbatch_directives.partition": `read yes as the boolean true, which NVFlare refuses (a directive must be a string or an integer); flare-slurm (YAML 1.2) passes "yes"`,
		"27:10 parent.sbatch_directives.qos":            `read 1.5 as the number 1.5, which NVFlare refuses`,
		"29:11 parent.sbatch_directives.time":           `read 1:30 as the integer 90; flare-slurm (YAML 1.2) reads the text "1:30"`,
		"9:17 job_launcher.mem_per_node":                `read 08 as the text "08"; flare-slurm (YAML 1.2) reads the number 8`,
		"10:20 job_launcher.pending_timeout":            `read 1e10 as the text "1e10"; flare-slurm (YAML 1.2) reads the number 1e+10`,
		"14:10 studies.s1.env.A":                        `sets the variable to "0.5"; flare-slurm (YAML 1.2) sets it to ".5"`,
		"15:10 studies.s1.env.B":                        `sets the variable to "0o17"; flare-slurm (YAML 1.2) sets it to "15"`,
		"17:10 studies.s1.env.D":                        `sets the variable to "false"; flare-slurm (YAML 1.2) sets it to "No"`,
		"21:3 studies.2024":                             `read the key 2024 as the integer 2024`,
		"22:3 studies.on":                               `read the key on as the boolean true`,
	}
	seen := map[string]bool{}
	for _, p := range got {
		key := strings.Join([]string{strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column), p.Path}, " ")
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected: %s", p)
			continue
		}
		seen[key] = true
		if !strings.Contains(p.Message, w) || !strings.HasPrefix(p.Message, msgYAML11Prefix) {
			t.Errorf("%s: message %q, want it to hold %q", key, p.Message, w)
		}
		if !strings.HasPrefix(p.Hint, "write it quoted, \"") {
			t.Errorf("%s: hint %q does not give the quoted spelling", key, p.Hint)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("missing: %s", key)
		}
	}
}

// TestExamplesReadAlike: the shipped examples mean the same to NVFlare and
// to flare-slurm.
func TestExamplesReadAlike(t *testing.T) {
	for _, c := range []struct{ kind, path string }{
		{KindSlurmConfig, "../examples/slurm.yaml"},
		{KindSlurmConfig, "../examples/server-slurm.yaml"},
		{KindStudyRuntime, "../examples/study_runtime.yaml"},
		{KindKit, "../examples/site-1"},
	} {
		if _, err := os.Stat(filepath.Clean(c.path)); err != nil {
			t.Fatal(err)
		}
		if ws := ReadingWarnings(c.kind, c.path); len(ws) > 0 {
			t.Errorf("%s: %v", c.path, ws)
		}
	}
}

// TestEnvTimestampWithTimeWarns: NVFlare sets an env value PyYAML reads as
// a datetime to str(datetime), never the text as written; a plain date
// reads back as itself (review of issue 15 item 8).
func TestEnvTimestampWithTimeWarns(t *testing.T) {
	doc := "format_version: 2\nstudies:\n  s:\n    env:\n      TS: 2001-12-14T10:00:00Z\n      TS2: 2001-12-14 10:00:00.5\n      D: 2001-12-14\n"
	got := ReadingDifferences("s.yaml", []byte(doc), isStudyEnvValue)
	paths := map[string]bool{}
	for _, p := range got {
		paths[p.Path] = true
		if !strings.Contains(p.Message, "as a date and time") {
			t.Errorf("%s: %s", p.Path, p.Message)
		}
	}
	if !paths["studies.s.env.TS"] || !paths["studies.s.env.TS2"] || paths["studies.s.env.D"] || len(got) != 2 {
		t.Errorf("differences %v, want TS and TS2 only", got)
	}
}
