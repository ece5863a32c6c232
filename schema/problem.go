package schema

import "github.com/flare-slurm/flare-slurm/internal/problem"

// Problem and Problems are problem.Problem and problem.Problems, the shape
// every loader of this package reports in; the type, its Kind and its
// rendering live in internal/problem.
type (
	Problem  = problem.Problem
	Problems = problem.Problems
)
