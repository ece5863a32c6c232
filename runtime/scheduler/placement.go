package scheduler

import (
	"context"
	"strings"
)

// placementFormat is the sacct --format of Placement: fields that hold no
// '|' (sacct does not escape it), so a row splits on it exactly.
const placementFormat = "JobIDRaw%32,Account%64,Partition%64,QOS%64,State%64,NodeList%256"

// Placement is where accounting says a job ran and under which
// association: what flare-slurm check compares with the job's directives.
type Placement struct {
	JobID, Account, Partition, QOS, State, Nodes string
}

// Placement asks sacct for the allocation record of job id.
func (c *Client) Placement(ctx context.Context, id string) (Placement, bool, error) {
	r, err := c.run(ctx, "sacct", c.Timeouts.Query, c.Env, c.Paths.Sacct, "-X", "-n", "-P",
		"--jobs="+id, "--format="+placementFormat)
	if err != nil {
		return Placement{}, false, err
	}
	return parsePlacement(r.Stdout, id)
}

// parsePlacement reads the row of job id from a Placement answer; found is
// false when there is none. More than one row, or a row of another shape,
// is a protocol error.
func parsePlacement(out []byte, id string) (Placement, bool, error) {
	var found []Placement
	for _, l := range lines(out) {
		f := strings.Split(l, "|")
		if len(f) != 6 {
			return Placement{}, false, protocolf("sacct", "placement row %q does not have 6 fields", l)
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if f[0] != id {
			continue
		}
		found = append(found, Placement{JobID: f[0], Account: f[1], Partition: f[2], QOS: f[3], State: normalizeState(f[4]), Nodes: f[5]})
	}
	switch len(found) {
	case 0:
		return Placement{}, false, nil
	case 1:
		return found[0], true, nil
	}
	return Placement{}, false, protocolf("sacct", "%d records for job %s", len(found), id)
}
