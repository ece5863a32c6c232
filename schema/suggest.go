package schema

import "fmt"

// didYouMean suggests the closest allowed key within edit distance 2, or "".
func didYouMean(key string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if d := levenshtein(key, a, bestDist); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean `%s`?", best)
}

// didYouMeanValue suggests the closest allowed value for a misspelt one;
// unlike keys, short values must be mostly right ("rw" is not a typo of
// "ro").
func didYouMeanValue(got string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if d := levenshtein(got, a, bestDist); d < bestDist && 2*d < len(got) {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean `%s`?", best)
}

// levenshtein is the edit distance between a and b (by byte), giving up
// with limit once it cannot be below limit.
func levenshtein(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
