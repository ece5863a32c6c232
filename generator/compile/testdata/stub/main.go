// Command stub stands in for python, apptainer and srun in the shell-safety
// tests: it writes its argv, its environment and whether the job's secret
// file still exists and its working directory as JSON to $NVFL_STUB_OUT,
// then exits with $NVFL_STUB_EXIT (0 when unset).
package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
)

func main() {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		env[name] = value
	}
	secretExists := false
	if p := os.Getenv("NVFL_STUB_SECRET"); p != "" {
		_, err := os.Lstat(p)
		secretExists = err == nil
	}
	cwd, _ := os.Getwd()
	data, err := json.Marshal(map[string]any{"argv": os.Args, "env": env, "secret_exists": secretExists, "cwd": cwd})
	if err != nil {
		os.Exit(3)
	}
	f, err := os.OpenFile(os.Getenv("NVFL_STUB_OUT"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.Exit(4)
	}
	if _, err := f.Write(data); err != nil {
		os.Exit(5)
	}
	if err := f.Close(); err != nil {
		os.Exit(6)
	}
	if code, err := strconv.Atoi(os.Getenv("NVFL_STUB_EXIT")); err == nil {
		os.Exit(code)
	}
}
