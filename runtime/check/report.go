package check

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/flare-slurm/flare-slurm/internal/cireport"
	"github.com/flare-slurm/flare-slurm/internal/visible"
)

// WriteTable prints the rows as a table (probe, result, seconds, Slurm job
// id, evidence) and the summary line.
func WriteTable(w io.Writer, rows []Row, seconds float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tRESULT\tSECONDS\tSLURM JOB\tEVIDENCE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\n", r.Name, r.Result, r.Seconds, cmp.Or(r.SlurmJobID, "-"), visible.Lines(r.Evidence))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, SummaryLine(rows, seconds))
	return err
}

// SummaryLine is the last line of the table: the counts by result and the
// verdict.
func SummaryLine(rows []Row, seconds float64) string {
	s := Summarize(rows)
	verdict := "passed"
	if s.Fail > 0 {
		verdict = "FAILED"
	}
	return fmt.Sprintf("check %s: %d pass, %d fail, %d warn, %d skip in %.1f s", verdict, s.Pass, s.Fail, s.Warn, s.Skip, seconds)
}

// JUnitCases are the rows as JUnit test cases (one per probe): a fail is a
// failure, a skip skipped, a warn passes with its evidence in the name's
// class so that it stays visible.
func JUnitCases(rows []Row) []cireport.Case {
	out := make([]cireport.Case, len(rows))
	for i, r := range rows {
		c := cireport.Case{Name: r.Name, ClassName: "flare-slurm.check", Seconds: r.Seconds}
		switch r.Result {
		case fail:
			first, _, _ := strings.Cut(r.Evidence, "\n")
			c.Failure, c.Detail = first, r.Evidence
		case skip:
			c.Skipped = r.Evidence
		case warn:
			c.ClassName = "flare-slurm.check.warn"
		}
		out[i] = c
	}
	return out
}
