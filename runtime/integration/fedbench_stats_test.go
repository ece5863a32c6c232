package integration

import (
	"math"
	"slices"
)

// Dist summarises a sample: its size, median, 95th percentile and
// maximum, in the sample's unit (seconds here).
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
	Max    float64 `json:"max"`
}

// summarise returns xs' Dist. The median of an even count is the mean of
// the middle two; the 95th percentile is the nearest rank (the smallest
// value at or above 95 % of the sample), so with fewer than 20 values it is
// the maximum.
func summarise(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Sorted(slices.Values(xs))
	d := Dist{N: len(s), Max: s[len(s)-1]}
	if len(s)%2 == 1 {
		d.Median = s[len(s)/2]
	} else {
		d.Median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	rank := int(math.Ceil(0.95 * float64(len(s))))
	d.P95 = s[max(rank, 1)-1]
	return d
}
