package cireport

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema"
)

var testRules = []Rule{
	{ID: "schema", Name: "SchemaViolation", Short: "a key or value the schema does not allow", Help: "run 'flare-slurm schema NAME'"},
	{ID: "syntax", Name: "SyntaxError", Short: "not valid YAML or JSON", Help: "fix the syntax at the position shown"},
	{ID: "drift", Name: "WorkspaceDrift", Short: "the workspace differs", Help: "run prepare"},
}

var testFindings = []Finding{
	{File: "site/slurm.yaml", Line: 4, Column: 3, Path: "job_launcher.partiton", Message: "unknown key partiton", Hint: "did you mean partition?", Rule: "schema"},
	{File: "dir with space/ä,b:c%.yaml", Line: 1, Column: 1, Message: "not YAML: found a tab\nsecond line", Rule: "syntax"},
	{File: "/abs/ws/startup/start.sh", Message: "changed", Rule: "drift"},
}

// TestSARIFMeetsCodeScanningRequirements: the log validates against the
// test-owned schema of what GitHub code scanning requires, every result's
// rule is in the rules table at its ruleIndex, and positions, field paths
// and hints land where code scanning reads them.
func TestSARIFMeetsCodeScanningRequirements(t *testing.T) {
	var out bytes.Buffer
	if err := SARIF(&out, Tool{Name: "flare-slurm", Version: "v1.2.3", InformationURI: "https://example.org/flare-slurm"}, testRules, testFindings); err != nil {
		t.Fatal(err)
	}
	validateAgainst(t, "testdata/github-code-scanning-sarif.schema.json", out.Bytes())

	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID string } `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
						Region           struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
					LogicalLocations []struct {
						FullyQualifiedName string `json:"fullyQualifiedName"`
					} `json:"logicalLocations"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if len(run.Results) != len(testFindings) {
		t.Fatalf("%d results, want %d", len(run.Results), len(testFindings))
	}
	for i, r := range run.Results {
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %d: ruleIndex %d names rule %q, ruleId is %q", i, r.RuleIndex, run.Tool.Driver.Rules[r.RuleIndex].ID, r.RuleID)
		}
	}
	r0 := run.Results[0]
	loc := r0.Locations[0]
	if loc.PhysicalLocation.ArtifactLocation.URI != "site/slurm.yaml" || loc.PhysicalLocation.Region.StartLine != 4 || loc.PhysicalLocation.Region.StartColumn != 3 {
		t.Errorf("first result's location = %+v, want site/slurm.yaml:4:3", loc.PhysicalLocation)
	}
	if len(loc.LogicalLocations) != 1 || loc.LogicalLocations[0].FullyQualifiedName != "job_launcher.partiton" {
		t.Errorf("logical location = %+v, want the field path", loc.LogicalLocations)
	}
	if !strings.Contains(r0.Message.Text, "did you mean partition?") {
		t.Errorf("message %q does not carry the hint", r0.Message.Text)
	}
	if got := run.Results[1].Locations[0].PhysicalLocation.ArtifactLocation.URI; got != "dir%20with%20space/%C3%A4%2Cb%3Ac%25.yaml" {
		t.Errorf("uri of an odd path = %q", got)
	}
	abs := run.Results[2].Locations[0].PhysicalLocation
	if abs.ArtifactLocation.URI != "file:///abs/ws/startup/start.sh" || abs.Region.StartLine != 1 {
		t.Errorf("a whole-file finding at an absolute path = %+v, want file:///abs/ws/startup/start.sh line 1", abs)
	}
	if ids := len(run.Tool.Driver.Rules); ids != 3 {
		t.Errorf("%d rules written, want the 3 used", ids)
	}
}

// TestSARIFNoFindings: a clean run is still a valid log with an empty
// results array (code scanning closes the alerts of earlier runs with it).
func TestSARIFNoFindings(t *testing.T) {
	var out bytes.Buffer
	if err := SARIF(&out, Tool{Name: "flare-slurm"}, testRules, nil); err != nil {
		t.Fatal(err)
	}
	validateAgainst(t, "testdata/github-code-scanning-sarif.schema.json", out.Bytes())
	if !bytes.Contains(out.Bytes(), []byte(`"results": []`)) {
		t.Errorf("no empty results array in\n%s", out.Bytes())
	}
}

// TestSARIFUnknownRule: a finding whose class is not in the rules table is
// an error, not a result pointing at a rule that does not exist.
func TestSARIFUnknownRule(t *testing.T) {
	err := SARIF(&bytes.Buffer{}, Tool{Name: "x"}, testRules, []Finding{{File: "f", Message: "m", Rule: "nope"}})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("err = %v, want one naming the unknown rule", err)
	}
}

// TestGitHubAnnotations: one ::error command per finding, with file, line,
// col and a title; the message's newlines and % are escaped so a finding
// stays one command, and property values escape : and , as well.
func TestGitHubAnnotations(t *testing.T) {
	var out bytes.Buffer
	if err := GitHub(&out, "flare-slurm", testFindings); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"::error file=site/slurm.yaml,line=4,col=3,title=flare-slurm%3A job_launcher.partiton::unknown key partiton (did you mean partition?)",
		"::error file=dir with space/ä%2Cb%3Ac%25.yaml,line=1,col=1,title=flare-slurm::not YAML: found a tab%0Asecond line",
		"::error file=/abs/ws/startup/start.sh,title=flare-slurm::changed",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
}

// TestJUnit: the document parses as XML with the counts a CI server reads,
// and a failure carries its reason and detail.
func TestJUnit(t *testing.T) {
	var out bytes.Buffer
	cases := []Case{
		{Name: "site/slurm.yaml", ClassName: "validate", Seconds: 0.5},
		{Name: "kit", ClassName: "validate", Failure: "2 problems", Detail: "a\nb <&>"},
		{Name: "gpu", ClassName: "check", Skipped: "no GPU partition"},
	}
	if err := JUnit(&out, "flare-slurm validate", cases); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out.String())
	}
	if doc.Tests != 3 || doc.Failures != 1 || doc.Skipped != 1 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 3 {
		t.Fatalf("counts wrong: %+v", doc)
	}
	c := doc.Suites[0].Cases
	if c[0].Failure != nil || c[1].Failure == nil || c[1].Failure.Message != "2 problems" || c[1].Failure.Text != "a\nb <&>" || c[2].Skipped == nil {
		t.Errorf("cases wrong:\n%s", out.String())
	}
}

func validateAgainst(t *testing.T, schemaFile string, doc []byte) {
	t.Helper()
	raw, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("https://flare-slurm.test/github-code-scanning-sarif.schema.json", sdoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("https://flare-slurm.test/github-code-scanning-sarif.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("SARIF log does not meet code scanning's requirements: %v\n%s", err, doc)
	}
}

// TestWarningLevel: a warning finding is a `::warning` command and a SARIF
// result (and rule default) of level warning; errors stay errors.
func TestWarningLevel(t *testing.T) {
	rules := []Rule{{ID: "e", Name: "E", Short: "e", Help: "e"}, {ID: "w", Name: "W", Short: "w", Help: "w", Level: LevelWarning}}
	fs := []Finding{{File: "a.yaml", Line: 2, Column: 3, Message: "bad", Rule: "e"},
		{File: "a.yaml", Line: 4, Column: 5, Message: "odd", Rule: "w", Level: LevelWarning}}
	var gh bytes.Buffer
	if err := GitHub(&gh, "t", fs); err != nil {
		t.Fatal(err)
	}
	want := "::error file=a.yaml,line=2,col=3,title=t::bad\n::warning file=a.yaml,line=4,col=5,title=t::odd\n"
	if gh.String() != want {
		t.Errorf("github:\n%s\nwant:\n%s", gh.String(), want)
	}
	var out bytes.Buffer
	if err := SARIF(&out, Tool{Name: "t"}, rules, fs); err != nil {
		t.Fatal(err)
	}
	validateAgainst(t, "testdata/github-code-scanning-sarif.schema.json", out.Bytes())
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID                   string
						DefaultConfiguration struct{ Level string } `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct{ Level string } `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if got := []string{run.Results[0].Level, run.Results[1].Level}; got[0] != "error" || got[1] != "warning" {
		t.Errorf("result levels %v, want [error warning]", got)
	}
	for _, r := range run.Tool.Driver.Rules {
		want := map[string]string{"e": "error", "w": "warning"}[r.ID]
		if r.DefaultConfiguration.Level != want {
			t.Errorf("rule %s default level %q, want %q", r.ID, r.DefaultConfiguration.Level, want)
		}
	}
}
