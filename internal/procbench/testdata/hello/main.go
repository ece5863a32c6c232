// Command hello is the Go floor the process benchmarks compare short
// flare-slurm commands with: the smallest program that starts and prints.
package main

import "fmt"

func main() { fmt.Println("hello, world") }
