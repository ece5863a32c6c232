package schema

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// JobSlurmKeys are the job-owned Slurm keys of launcher_spec.<site>.slurm.
var JobSlurmKeys = []string{"image", "nodes", "gpus_per_node", "cpus_per_node", "mem_per_node", "time", "pending_timeout"}

// ParseJobMeta validates a job's meta.json (JSON, or YAML) and returns its
// Slurm reading for site: launcher_spec.default.slurm shallow-merged under
// launcher_spec.<site>.slurm, and resource_spec.<site>.
//
// With a site, only that site's reading is checked: the top-level keys,
// launcher_spec.default, launcher_spec.<site> and resource_spec.<site>; a
// malformed section of another site does not refuse this site's launch.
// The file must still be one well-formed YAML/JSON mapping (syntax,
// duplicate keys, aliases are checked everywhere).
//
// With site "", every site the file names and default are checked, and
// the returned value is the default reading (no resource_spec).
func ParseJobMeta(file string, data []byte, site string) (*JobMeta, Problems) {
	t := parseTree(file, data)
	if t.root == nil {
		return nil, t.result()
	}
	if site != "" {
		t.value = siteView(t.value, site)
	}
	t.validateSchema(KindJobMeta, jobMetaKeyHook, nil)
	for _, s := range metaSites(t.root, site) {
		t.checkJobSite(s)
	}
	for _, p := range pairs(get(t.root, "launcher_spec")) {
		if site != "" && p.name != "default" && p.name != site {
			continue
		}
		t.checkNoSpace(get(get(p.val, "slurm"), "time"), "launcher_spec."+p.name+".slurm.time")
	}
	if probs := t.result(); probs != nil {
		return nil, probs
	}
	m := &JobMeta{Study: optString(get(t.root, "study"))}
	merged := mergedJobSlurm(t.root, site)
	m.Slurm = JobSlurm{
		Image:          optString(merged["image"].val),
		Nodes:          optInt(merged["nodes"].val, 1),
		GPUsPerNode:    optIntPtr(merged["gpus_per_node"].val),
		CPUsPerNode:    optIntPtr(merged["cpus_per_node"].val),
		MemPerNodeMiB:  optIntPtr(merged["mem_per_node"].val),
		Time:           optString(merged["time"].val),
		PendingTimeout: optFloatPtr(merged["pending_timeout"].val),
	}
	if site != "" {
		rs := siteResources(t.root, site)
		m.Resources = ResourceSpec{
			NumOfGPUs: optIntPtr(get(rs, "num_of_gpus")),
			NumOfCPUs: optIntPtr(get(rs, "num_of_cpus")),
		}
		if mem := get(rs, "memory"); isString(mem) {
			if mib, ok := MemoryMiB(mem.Value); ok {
				m.Resources.MemoryMiB = &mib
			}
		}
	}
	return m, nil
}

// siteView is the plain value of a job meta as site reads it: the same
// top level, launcher_spec with only default and site, resource_spec with
// only site. Keys keep their JSON pointers, so schema errors still point at
// the right line.
func siteView(v any, site string) any {
	root, ok := v.(map[string]any)
	if !ok {
		return v
	}
	keep := func(key string, names ...string) {
		m, ok := root[key].(map[string]any)
		if !ok {
			return // absent, null or the wrong type: the schema says so
		}
		out := map[string]any{}
		for _, n := range names {
			if val, ok := m[n]; ok {
				out[n] = val
			}
		}
		root[key] = out
	}
	view := make(map[string]any, len(root))
	for k, val := range root {
		view[k] = val
	}
	root = view
	keep("launcher_spec", "default", site)
	keep("resource_spec", site)
	return root
}

// jobMetaKeyHook phrases unknown job-owned Slurm keys.
func jobMetaKeyHook(parent, key string, allowed []string) (string, string, bool) {
	if strings.HasPrefix(parent, "launcher_spec.") && strings.HasSuffix(parent, ".slurm") {
		return "unsupported job-owned Slurm key (allowed: " + strings.Join(JobSlurmKeys, ", ") + ")", didYouMean(key, allowed), true
	}
	return "", "", false
}

// metaSites lists the sites whose reading is checked: site itself, or
// every site launcher_spec and resource_spec name plus default.
func metaSites(root *yaml.Node, site string) []string {
	if site != "" {
		return []string{site}
	}
	set := map[string]bool{"default": true}
	for _, key := range []string{"launcher_spec", "resource_spec"} {
		for _, p := range pairs(get(root, key)) {
			set[p.name] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// slot is one merged job-owned key: its value node and dotted path.
type slot struct {
	val  *yaml.Node
	path string
}

// mergedJobSlurm shallow-merges launcher_spec.default.slurm under
// launcher_spec.<site>.slurm (site "" or default: default only).
func mergedJobSlurm(root *yaml.Node, site string) map[string]slot {
	out := map[string]slot{}
	ls := get(root, "launcher_spec")
	sites := []string{"default"}
	if site != "" && site != "default" {
		sites = append(sites, site)
	}
	for _, s := range sites {
		sl := get(get(ls, s), "slurm")
		for _, p := range pairs(sl) {
			out[p.name] = slot{val: p.val, path: "launcher_spec." + s + ".slurm." + p.name}
		}
	}
	return out
}

// siteResources is the resource_spec.<site> mapping, or nil.
func siteResources(root *yaml.Node, site string) *yaml.Node {
	rs := get(get(root, "resource_spec"), site)
	if rs == nil || rs.Kind != yaml.MappingNode {
		return nil
	}
	return rs
}

// checkJobSite checks the GPU arithmetic of one site's reading.
func (t *tree) checkJobSite(site string) {
	merged := mergedJobSlurm(t.root, site)
	nodes := 1
	if s := merged["nodes"]; s.val != nil {
		v, ok := intValue(s.val)
		if !ok || v < 1 {
			return // the schema reports it
		}
		nodes = v
	}
	gpn, gpnSet := 0, false
	if s := merged["gpus_per_node"]; s.val != nil {
		v, ok := intValue(s.val)
		if !ok || v < 1 {
			return
		}
		gpn, gpnSet = v, true
	}
	numNode := get(siteResources(t.root, site), "num_of_gpus")
	if numNode == nil {
		return
	}
	num, ok := intValue(numNode)
	if !ok || num < 0 {
		return
	}
	path := "resource_spec." + site + ".num_of_gpus"
	switch {
	case gpnSet && num != nodes*gpn:
		t.add(numNode, path, fmt.Sprintf("must equal nodes * gpus_per_node = %d * %d = %d when both are given (got %d)", nodes, gpn, nodes*gpn, num),
			"fix num_of_gpus or "+merged["gpus_per_node"].path)
	case !gpnSet && nodes > 1 && num > 0:
		t.add(numNode, path, fmt.Sprintf("a multi-node job (nodes %d) with num_of_gpus needs gpus_per_node", nodes),
			"set launcher_spec."+site+".slurm.gpus_per_node")
	}
}

// MemoryMiB converts a memory request "<n>Mi", "<n>Gi" or "<n>Ti" to MiB.
func MemoryMiB(s string) (int, bool) {
	units := map[string]int{"Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
	if len(s) < 3 {
		return 0, false
	}
	factor, ok := units[s[len(s)-2:]]
	digits := s[:len(s)-2]
	if !ok || len(digits) > 9 || digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || strings.ContainsAny(digits, "+-") {
		return 0, false
	}
	return n * factor, true
}

func optIntPtr(n *yaml.Node) *int {
	if v, ok := intValue(n); ok {
		return &v
	}
	return nil
}

func optFloatPtr(n *yaml.Node) *float64 {
	if v, ok := floatValue(n); ok {
		return &v
	}
	return nil
}

// EffectiveGPUsPerNode is the per-node GPU request of the job: gpus_per_node,
// else num_of_gpus on a one-node job (contract §7); nil means none.
func (m *JobMeta) EffectiveGPUsPerNode() *int {
	if m.Slurm.GPUsPerNode != nil {
		return m.Slurm.GPUsPerNode
	}
	if m.Slurm.Nodes <= 1 && m.Resources.NumOfGPUs != nil && *m.Resources.NumOfGPUs > 0 {
		return m.Resources.NumOfGPUs
	}
	return nil
}

// EffectiveCPUsPerNode is num_of_cpus, else cpus_per_node; nil means none.
func (m *JobMeta) EffectiveCPUsPerNode() *int {
	if m.Resources.NumOfCPUs != nil {
		return m.Resources.NumOfCPUs
	}
	return m.Slurm.CPUsPerNode
}

// EffectiveMemMiB is memory, else mem_per_node; nil means none.
func (m *JobMeta) EffectiveMemMiB() *int {
	if m.Resources.MemoryMiB != nil {
		return m.Resources.MemoryMiB
	}
	return m.Slurm.MemPerNodeMiB
}
