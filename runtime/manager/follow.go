package manager

import (
	"context"
	"maps"
	"slices"
)

// Follow watches, in this one process, every job whose id arrives on ids
// until each has ended, and calls report once per id: with the job's
// terminal status, or with the error that keeps it from being watched (no
// such job, an unreadable handle). progress (nil: none) gets each status a
// poll sees before a job's end, as WaitReporting's report does. It polls all of them at once, as one
// wait would poll one (nextWait: one shared observation, refreshed at most
// once per poll interval less lead for the whole workspace, a result
// within one interval). An id it already watches is not watched twice; an id given
// again after its report is watched (and reported) again. It returns when
// ids is closed and every job it was given has been reported, or when ctx
// ends (with ctx's error).
//
// The launcher bridge runs one Follow per parent (`wait --follow`) instead
// of one wait process per job: one process and its memory for all of the
// parent's jobs.
func (m *Manager) Follow(ctx context.Context, ids <-chan string, progress func(Status), report func(jobID string, st Status, err error)) error {
	watching := map[string]*Handle{}
	add := func(id string) {
		if _, ok := watching[id]; ok {
			return
		}
		h, err := m.Open(id)
		if err != nil {
			report(id, Status{}, err)
			return
		}
		watching[id] = h
	}
	for {
		if len(watching) == 0 {
			// Nothing to poll: block until the next id (or the end).
			select {
			case id, ok := <-ids:
				if !ok {
					return nil
				}
				add(id)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		// Every id that arrived meanwhile.
	drain:
		for ids != nil {
			select {
			case id, ok := <-ids:
				if !ok {
					ids = nil
					break drain
				}
				add(id)
			default:
				break drain
			}
		}
		for _, id := range slices.Sorted(maps.Keys(watching)) {
			if st := watching[id].pollReporting(ctx, progress); st.Terminal {
				delete(watching, id)
				report(id, st, nil)
			}
		}
		if ids == nil && len(watching) == 0 {
			return nil
		}
		if len(watching) == 0 {
			continue
		}
		if err := m.cfg.Sleep(ctx, m.nextWait()); err != nil {
			return err
		}
	}
}
