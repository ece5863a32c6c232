// Package cireport writes problems in the formats CI systems read: GitHub
// Actions workflow commands (annotations on the changed lines of a pull
// request), SARIF 2.1.0 (GitHub code scanning and other SARIF consumers)
// and JUnit XML (test reports in Jenkins, GitLab and others).
//
// It knows nothing about where the problems come from: callers turn their
// own problems into Findings and their pass/fail rows into Cases.
package cireport

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Finding is one problem at one place.
type Finding struct {
	File    string // as the user gave it (relative paths stay relative)
	Line    int    // 1-based; 0 when the problem has no position
	Column  int    // 1-based; 0 when unknown
	Path    string // the field path in the file ("job_launcher.partition"); "" for the whole file
	Message string
	Hint    string // what to do; "" when there is nothing to add
	Rule    string // the class of problem: a Rules key
	// Level is "error" (also when empty) or "warning": a warning is
	// reported but does not fail the run.
	Level string
}

// LevelWarning is the Level of a finding that does not fail the run.
const LevelWarning = "warning"

// level is f's level as GitHub and SARIF name it.
func (f Finding) level() string {
	if f.Level == LevelWarning {
		return LevelWarning
	}
	return "error"
}

// Rule describes one class of problem in SARIF's rules table.
type Rule struct {
	ID   string
	Name string // a PascalCase name, as SARIF viewers show it
	// Short is a one-line description; Help says what to do about a
	// problem of this class in general (each result adds its own hint).
	Short, Help string
	// Level is the rule's default level: "error" (also when empty) or
	// "warning".
	Level string
}

// Tool names the program that found the problems.
type Tool struct {
	Name, Version, InformationURI string
}

// GitHub writes one `::error` (or `::warning`) workflow command per finding, which GitHub
// Actions turns into an annotation on the file and line. file, line and col
// are given when known; title is the tool and the field path.
func GitHub(w io.Writer, tool string, fs []Finding) error {
	for _, f := range fs {
		var props []string
		if f.File != "" {
			props = append(props, "file="+escapeProperty.Replace(filepath.ToSlash(f.File)))
		}
		if f.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", f.Line))
			if f.Column > 0 {
				props = append(props, fmt.Sprintf("col=%d", f.Column))
			}
		}
		title := tool
		if f.Path != "" {
			title += ": " + f.Path
		}
		props = append(props, "title="+escapeProperty.Replace(title))
		msg := f.Message
		if f.Hint != "" {
			msg += " (" + f.Hint + ")"
		}
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", f.level(), strings.Join(props, ","), escapeData.Replace(msg)); err != nil {
			return err
		}
	}
	return nil
}

// escapeData escapes a workflow command's message the way the GitHub
// Actions toolkit does (%, CR, LF), so that one finding stays one command.
var escapeData = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")

// escapeProperty escapes a workflow command's property value: the data
// escapes plus the separators of the property list (: and ,).
var escapeProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")

// SARIF writes one SARIF 2.1.0 log with one run of tool. Each finding is a
// result of its level (error unless it is a warning) whose rule is its class (rules lists the classes;
// only those used are written); the file and line:column are its physical
// location, the field path its logical location, the hint part of its
// message (GitHub shows it on the alert). A finding without a line points
// at line 1 of its file (code scanning needs a line); one without a file
// has no location. File paths are written
// as relative URIs (slashes, percent-encoded) when relative, file:// URIs
// when absolute.
func SARIF(w io.Writer, tool Tool, rules []Rule, fs []Finding) error {
	used := map[string]bool{}
	for _, f := range fs {
		used[f.Rule] = true
	}
	sr := []sarifRule{}
	index := map[string]int{}
	for _, r := range rules {
		if used[r.ID] {
			index[r.ID] = len(sr)
			sr = append(sr, sarifRule{ID: r.ID, Name: r.Name, ShortDescription: sarifText{r.Short}, Help: sarifText{r.Help},
				DefaultConfiguration: sarifConfig{Level: Finding{Level: r.Level}.level()}})
		}
	}
	results := make([]sarifResult, 0, len(fs))
	for _, f := range fs {
		i, ok := index[f.Rule]
		if !ok {
			return fmt.Errorf("cireport: finding %q has rule %q, which is not in the rules table", f.Message, f.Rule)
		}
		msg := f.Message
		if f.Hint != "" {
			msg += " (hint: " + f.Hint + ")"
		}
		r := sarifResult{RuleID: f.Rule, RuleIndex: i, Level: f.level(), Message: sarifText{msg}}
		if f.File != "" {
			// GitHub code scanning needs a region with a start line on
			// every result: a problem about a whole file points at its
			// first line.
			region := &sarifRegion{StartLine: max(f.Line, 1)}
			if f.Line > 0 && f.Column > 0 {
				region.StartColumn = f.Column
			}
			loc := sarifLocation{PhysicalLocation: &sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(f.File)}, Region: region}}
			if f.Path != "" {
				loc.LogicalLocations = []sarifLogical{{FullyQualifiedName: f.Path, Kind: "member"}}
			}
			r.Locations = []sarifLocation{loc}
		}
		results = append(results, r)
	}
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs: []sarifRun{{
			Tool:    sarifTool{Driver: sarifDriver{Name: tool.Name, Version: tool.Version, InformationURI: tool.InformationURI, Rules: sr}},
			Results: results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// fileURI turns a path into a SARIF artifact URI: a relative reference for
// a relative path (resolved against the repository root by GitHub), a
// file:// URI for an absolute one.
func fileURI(p string) string {
	p = filepath.ToSlash(filepath.Clean(p))
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || c == '-' || c == '.' || c == '_' || c == '~' ||
			('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if strings.HasPrefix(p, "/") {
		return "file://" + b.String()
	}
	return b.String()
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string      `json:"id"`
	Name                 string      `json:"name,omitempty"`
	ShortDescription     sarifText   `json:"shortDescription"`
	Help                 sarifText   `json:"help"`
	DefaultConfiguration sarifConfig `json:"defaultConfiguration"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind,omitempty"`
}

// Case is one row of a pass/fail report: a testcase in JUnit.
type Case struct {
	Name      string
	ClassName string
	Seconds   float64
	// Failure is empty for a pass; otherwise the one-line reason, with
	// Detail (every problem, one a line) as the failure's text.
	Failure, Detail string
	// Skipped, when not empty, says why the row was not run.
	Skipped string
	// SystemOut, when not empty, is what the row reports beside its
	// result (warnings that did not fail it), as the case's system-out.
	SystemOut string
}

// JUnit writes one JUnit XML document with one test suite named suite.
func JUnit(w io.Writer, suite string, cases []Case) error {
	s := junitSuite{junitCounts: junitCounts{Name: suite, Tests: len(cases)}}
	seconds := 0.0
	for _, c := range cases {
		tc := junitCase{Name: c.Name, ClassName: c.ClassName, Time: fmt.Sprintf("%.3f", c.Seconds), SystemOut: c.SystemOut}
		switch {
		case c.Failure != "":
			s.Failures++
			tc.Failure = &junitFailure{Message: c.Failure, Type: "failure", Text: c.Detail}
		case c.Skipped != "":
			s.Skipped++
			tc.Skipped = &junitSkipped{Message: c.Skipped}
		}
		seconds += c.Seconds
		s.Cases = append(s.Cases, tc)
	}
	s.Time = fmt.Sprintf("%.3f", seconds)
	doc := junitSuites{junitCounts: s.junitCounts, Suites: []junitSuite{s}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, xml.Header+string(out)+"\n")
	return err
}

// junitCounts are the attributes of the document and of its one suite.
type junitCounts struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	junitCounts
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	junitCounts
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// Formats are the values of a --format flag, in the order help lists them.
var Formats = []string{"text", "json", "github", "sarif"}
