package schema

import (
	"fmt"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
)

// InitSlurmConfig is a commented slurm.yaml to start from (flare-slurm
// init): every key of the slurm-config schema, in its order, with its
// description, allowed values and default as comments taken from the
// schema, the one owner of those texts. Only what the file needs to be
// valid is set (runtime: slurm, sandbox: none, python_path); everything
// else is commented out with its default or an example. role is the kit's
// ("client" adds the commented parent block, which server kits refuse);
// site names the kit in the header ("" for none).
func InitSlurmConfig(role, site string) []byte {
	src, _ := Source(KindSlurmConfig)
	root, err := ojson.Parse(src)
	if err != nil {
		panic("schema slurm-config: " + err.Error()) // embedded, tested
	}
	var b strings.Builder
	b.WriteString("# yaml-language-server: $schema=./slurm-config.schema.json\n")
	b.WriteString("# Slurm launcher config written by 'flare-slurm init'")
	if site != "" {
		fmt.Fprintf(&b, " for the %s kit %s", role, site)
	}
	b.WriteString(".\n# Check it with 'flare-slurm validate --kit KIT slurm.yaml'; every key:\n# 'flare-slurm explain job_launcher' (or 'flare-slurm explain job_launcher.KEY').\nruntime: slurm\n")
	jl := resolveRef(root, root.Get("properties").Get("job_launcher"))
	fmt.Fprintf(&b, "%s\njob_launcher:\n", Wrap("#", str(jl.Get("description")), 100))
	for _, m := range members(jl.Get("properties")) {
		writeInitKey(&b, root, "  ", m.Key, resolveRef(root, m.Value))
	}
	if role != "server" {
		parent := resolveRef(root, root.Get("properties").Get("parent"))
		fmt.Fprintf(&b, "\n%s\n# parent:\n", Wrap("#", str(parent.Get("description"))+" Uncomment it when the parent runs as a Slurm job (then leave parent_host unset).", 100))
		for _, m := range members(parent.Get("properties")) {
			n := resolveRef(root, m.Value)
			ex := example(m.Key, n)
			if m.Key == "sbatch_directives" {
				ex = `{partition: service, account: proj123, time: "7-00:00:00"}`
			}
			fmt.Fprintf(&b, "%s\n#   %s: %s\n", Wrap("#   #", str(n.Get("description")), 100), m.Key, ex)
		}
	}
	return []byte(b.String())
}

// writeInitKey writes one job_launcher key: its comment, then the key set
// (sandbox, python_path) or commented out.
func writeInitKey(b *strings.Builder, root *ojson.Value, indent, key string, n *ojson.Value) {
	text := str(n.Get("description"))
	if e := items(n.Get("enum")); len(e) > 0 {
		vals := make([]string, len(e))
		for i, v := range e {
			vals[i] = plainJSON(v)
		}
		text += " Allowed: " + strings.Join(vals, ", ") + "."
	}
	if d := n.Get("default"); d != nil && !(d.Kind == ojson.String && d.Str == "") && !(d.Kind == ojson.Object && len(d.Members) == 0) {
		text += " Default: " + strings.TrimSpace(plainJSON(d)) + "."
	}
	fmt.Fprintf(b, "\n%s\n", Wrap(indent+"#", text, 100))
	switch key {
	case "sandbox":
		fmt.Fprintf(b, "%ssandbox: none\n", indent)
	case "python_path":
		fmt.Fprintf(b, "%spython_path: /usr/bin/python3\n", indent)
	default:
		fmt.Fprintf(b, "%s# %s: %s\n", indent, key, example(key, n))
	}
}

// examples are values to uncomment for the keys that have no default.
var examples = map[string]string{
	"image":             "/shared/images/nvflare.sif",
	"parent_host":       "login01.cluster.example.org",
	"sbatch_directives": `{partition: gpu, account: proj123, time: "04:00:00"}`,
	"setup":             "module load apptainer",
	"time_limit_signal": "{signal: USR1, seconds_before: 300}",
	"forward_env":       "[HTTPS_PROXY]",
	"executables":       "{sbatch: /usr/bin/sbatch}",
	"environment_setup": "source /shared/venvs/nvflare/bin/activate",
}

// example is the value shown for a commented-out key: its example, else
// its default as YAML.
func example(key string, n *ojson.Value) string {
	if e, ok := examples[key]; ok {
		return e
	}
	if d := n.Get("default"); d != nil {
		if d.Kind == ojson.String {
			return `"` + d.Str + `"`
		}
		return strings.TrimSpace(string(ojson.Marshal(d)))
	}
	return ""
}

// Wrap fills text into lines of at most width columns, each prefix then
// its words, each after a space: YAML comment lines with prefix "#", or
// text indented four columns with prefix "   " (flare-slurm explain).
func Wrap(prefix, text string, width int) string {
	var lines []string
	line := prefix
	for _, w := range strings.Fields(text) {
		if len(line) > len(prefix) && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = prefix
		}
		line += " " + w
	}
	return strings.Join(append(lines, line), "\n")
}
