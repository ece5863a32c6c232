package scheduler

import (
	"context"
	"errors"
	"os"
	"testing"
)

// isRejected says whether err is (or wraps) a RejectedError.
func isRejected(err error) bool {
	var r *RejectedError
	return errors.As(err, &r)
}

// TestSubmitRejectionVersusUnavailable: sbatch's own "sbatch: error:"
// lines are a rejection of the job; timeouts, exec failures and errors
// reaching the controller stay "unavailable".
func TestSubmitRejectionVersusUnavailable(t *testing.T) {
	f := &fakeRunner{}
	c := testClient(f)
	submit := func(res Result) error {
		f.answer = func(Command) Result { return res }
		_, _, err := c.Submit(context.Background(), []string{"sbatch", "--parsable", "/j/batch.sh"}, nil)
		return err
	}
	err := submit(Result{ExitCode: 1, Stderr: "sbatch: error: CPU count per node can not be satisfied\n" +
		"sbatch: error: Batch job submission failed: Requested node configuration is not available\n"})
	if !isRejected(err) || IsUnavailable(err) {
		t.Fatalf("rejection classified as %T %v", err, err)
	}
	want := "sbatch: error: CPU count per node can not be satisfied; sbatch: error: Batch job submission failed: Requested node configuration is not available"
	if err.Error() != want {
		t.Fatalf("rejection text\n got %q\nwant %q", err.Error(), want)
	}
	for _, res := range []Result{
		{TimedOut: true, ExitCode: -1, Stderr: "sbatch: error: whatever"},
		{StartErr: os.ErrPermission, ExitCode: -1},
		{ExitCode: 1, Stderr: "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n"},
		{ExitCode: 1, Stderr: "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"},
		{ExitCode: 1, Stderr: "sbatch: error: slurm_receive_msg: Zero Bytes were transmitted or received\nsbatch: error: Batch job submission failed: Zero Bytes were transmitted or received\n"},
		{ExitCode: 1, Stderr: "something else entirely\n"},
	} {
		err := submit(res)
		if !IsUnavailable(err) || isRejected(err) {
			t.Errorf("%+v: err = %T %v, want unavailable", res, err, err)
		}
	}
}
