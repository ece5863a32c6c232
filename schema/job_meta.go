package schema

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// jobSlurmKeys are the job-owned Slurm keys of launcher_spec.<site>.slurm.
var jobSlurmKeys = []string{"image", "nodes", "gpus_per_node", "cpus_per_node", "mem_per_node", "time", "pending_timeout", AdditionalNodeCommandKey}

// AdditionalNodeCommandKey is the job-owned key that turns a multi-node
// client job into a launcher-owned node group (contract §11).
const AdditionalNodeCommandKey = "additional_node_command"

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
//
// A file whose name ends in .json is read as JSON, as NVFlare reads it
// (Python's json.loads): comments, unquoted keys, single quotes, trailing
// commas and raw control characters in strings are syntax errors, not
// YAML that happens to parse.
func ParseJobMeta(file string, data []byte, site string) (*JobMeta, Problems) {
	if strings.EqualFold(filepath.Ext(file), ".json") {
		return parseJobMeta(jsonMetaTree(file, data, site, Embedding{}), site)
	}
	return parseJobMeta(parseTree(file, data), site)
}

// ParseJobMetaIn is ParseJobMeta for a meta embedded in a launch request,
// which is JSON: every problem is made with the path and position the
// enclosing file gives it.
func ParseJobMetaIn(file string, data []byte, site string, embed Embedding) (*JobMeta, Problems) {
	return parseJobMeta(jsonMetaTree(file, data, site, embed), site)
}

func parseJobMeta(t *tree, site string) (*JobMeta, Problems) {
	if t.root == nil {
		return nil, t.result()
	}
	if site != "" {
		t.value = siteView(t.value, site)
	}
	t.validateSchema(kindJobMeta, t.jobMetaKeyHook, nil)
	// Each site is checked on a view of the file that holds only its own
	// and the default entries: looking a site up in the whole resource_spec
	// for each site was quadratic (20,000 sites: 8 s).
	root, view := t.root, t.siteViews()
	for _, s := range t.metaSites(site) {
		t.root = view(s)
		t.checkJobSite(s)
	}
	t.root = root
	for _, p := range pairs(get(t.root, "launcher_spec")) {
		if site != "" && p.name != "default" && p.name != site {
			continue
		}
		t.checkNoSpace(get(get(p.val, "slurm"), "time"), "launcher_spec."+p.name+".slurm.time")
	}
	if probs := t.result(); probs != nil {
		return nil, probs
	}
	// The merged keys, as one mapping, decode through the yaml tags of
	// JobSlurm (a null keeps the default, as an absent key does).
	m := &JobMeta{Study: optString(get(t.root, "study")), Slurm: JobSlurm{Nodes: 1}, SlurmPaths: map[string]string{}}
	merged := &yaml.Node{Kind: yaml.MappingNode}
	for k, sl := range mergedJobSlurm(t.root, site) {
		m.SlurmPaths[k] = sl.path
		merged.Content = append(merged.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, sl.val)
	}
	_ = merged.Decode(&m.Slurm) // validated
	if n := get(merged, AdditionalNodeCommandKey); isString(n) {
		m.Slurm.AdditionalNodeCommand, _ = shell.Split(n.Value) // checked above
	}
	if site != "" {
		rs := portableResources(t.root, site)
		m.Resources = ResourceSpec{
			NumOfGPUs: ptr(intValue(rs["num_of_gpus"].val)),
			NumOfCPUs: ptr(intValue(rs["num_of_cpus"].val)),
		}
		if mem := rs["memory"].val; isString(mem) {
			m.Resources.MemoryMiB = ptr(MemoryMiB(mem.Value))
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
	root = maps.Clone(root)
	for key, def := range map[string]string{"launcher_spec": "default", "resource_spec": portableDefaultKey} {
		m, ok := root[key].(map[string]any)
		if !ok {
			continue // absent, null or the wrong type: the schema says so
		}
		out := map[string]any{}
		for _, n := range []string{def, site} {
			if val, ok := m[n]; ok {
				out[n] = val
			}
		}
		root[key] = out
	}
	return root
}

// jobMetaKeyHook phrases unknown job-owned Slurm keys; a key Slurm users
// know by another name (mem) gets the job's name for it (mem_per_node), a
// site-owned sbatch directive (partition) says it is the site's.
func (t *tree) jobMetaKeyHook(parent, key string, allowed []string) (string, string, bool) {
	if (strings.HasPrefix(parent, "launcher_spec.") || strings.HasPrefix(parent, "resource_spec.")) && strings.HasSuffix(parent, ".slurm") {
		hint := didYouMean(key, allowed)
		if k, ok := jobKeyAliases[strings.ToLower(key)]; ok {
			hint = fmt.Sprintf("did you mean `%s.%s`?", t.pathText(parent), k)
		} else if slices.Contains(DirectiveKeys, strings.ToLower(key)) {
			hint = fmt.Sprintf("the site sets `%s`: job_launcher.sbatch_directives.%[1]s in its slurm.yaml", strings.ToLower(key))
		}
		return "unsupported job-owned Slurm key (allowed: " + strings.Join(jobSlurmKeys, ", ") + ")", hint, true
	}
	return "", "", false
}

// siteViews makes, for one site at a time, a view of a job meta's root
// in which launcher_spec and resource_spec hold only that site's entry and
// the default ones (the nodes themselves, so every position stays), found
// through the tree's index of wide mappings (keyIndex), built once.
func (t *tree) siteViews() func(site string) *yaml.Node {
	orig := t.root
	sections := []*yaml.Node{get(orig, "launcher_spec"), get(orig, "resource_spec")}
	return func(site string) *yaml.Node {
		root := *orig
		root.Content = slices.Clone(orig.Content)
		for i := 1; i < len(root.Content); i += 2 {
			sec := root.Content[i]
			if sec.Kind != yaml.MappingNode || !slices.Contains(sections, sec) {
				continue
			}
			var at []int
			for _, name := range []string{"default", portableDefaultKey, site} {
				if j := t.keyIndex(sec, name); j >= 0 && !slices.Contains(at, j) {
					at = append(at, j)
				}
			}
			slices.Sort(at)
			view := *sec
			view.Content = make([]*yaml.Node, 0, 2*len(at))
			for _, j := range at {
				view.Content = append(view.Content, sec.Content[j], sec.Content[j+1])
			}
			root.Content[i] = &view
		}
		return &root
	}
}

// metaSites lists the sites whose reading is checked: site itself, or
// every site launcher_spec and resource_spec name plus default. For every
// site, it reports the keys of the two that are neither default nor a
// valid site name (CheckSiteName); a NUL or a line break is the text
// rule's, reported already.
func (t *tree) metaSites(site string) []string {
	if site != "" {
		return []string{site}
	}
	set := map[string]bool{"default": true}
	for _, key := range []string{"launcher_spec", "resource_spec"} {
		for _, p := range pairs(get(t.root, key)) {
			if p.name != portableDefaultKey {
				set[p.name] = true
			}
			if p.name == "default" || p.name == portableDefaultKey || CheckText(p.name, false) != "" {
				continue
			}
			if msg := CheckSiteName(p.name); msg != "" {
				t.add(problem.Schema, p.key, key+"."+p.name, msg, "allowed: "+SiteNameAllowed)
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// slot is one merged job-owned key: its value node and dotted path.
type slot struct {
	val  *yaml.Node
	path string
}

// portableDefaultKey is the resource_spec entry that holds the portable
// resources of every site (NVFlare's PORTABLE_RESOURCE_DEFAULT_KEY).
const portableDefaultKey = "@default"

// portableKeys are the portable resource keys (NVFlare's
// PORTABLE_RESOURCE_KEYS), and nativeTwins those with a Slurm
// launcher_spec twin: a job must not give both (NVFlare refuses it).
var (
	portableKeys = []string{"num_of_gpus", "num_of_cpus", "memory"}
	nativeTwins  = []struct{ portable, native string }{{"num_of_cpus", "cpus_per_node"}, {"memory", "mem_per_node"}}
)

// launcherModes are the launcher names whose presence in a
// resource_spec.<site> entry makes it the legacy nested form
// ({process: {...}, slurm: {...}}) instead of the flat portable one.
var launcherModes = []string{"process", "docker", "k8s", "slurm"}

// isNested says whether a resource_spec.<site> entry is the legacy nested
// form: a mapping with a launcher name among its keys.
func isNested(entry *yaml.Node) bool {
	return slices.ContainsFunc(launcherModes, func(m string) bool { return keyIndex(entry, m) >= 0 })
}

// slotsOf lists the entries of mapping n as slots under path prefix.
func slotsOf(n *yaml.Node, prefix string, into map[string]slot) {
	for _, p := range pairs(n) {
		into[p.name] = slot{val: p.val, path: prefix + "." + p.name}
	}
}

// mergedJobSlurm is the job-owned Slurm spec of site, resolved as NVFlare's
// get_job_launcher_spec does: launcher_spec.default.slurm shallow-merged
// under launcher_spec.<site>.slurm (site wins) when the default block is a
// non-empty mapping or the site's slurm key is present and not null; else
// the legacy nested resource_spec.<site>.slurm block, when the site's
// resource_spec entry is in the nested form. Site "" or default reads the
// default block only.
func mergedJobSlurm(root *yaml.Node, site string) map[string]slot {
	out := map[string]slot{}
	ls := get(root, "launcher_spec")
	def := get(get(ls, "default"), "slurm")
	if site == "" || site == "default" {
		slotsOf(def, "launcher_spec.default.slurm", out)
		return out
	}
	own := get(get(ls, site), "slurm")
	if (def != nil && def.Kind == yaml.MappingNode && len(def.Content) > 0) || !isNull(own) {
		slotsOf(def, "launcher_spec.default.slurm", out)
		slotsOf(own, "launcher_spec."+site+".slurm", out)
		return out
	}
	if entry := get(get(root, "resource_spec"), site); isNested(entry) {
		slotsOf(get(entry, "slurm"), "resource_spec."+site+".slurm", out)
	}
	return out
}

// portableResources are the portable resources (num_of_gpus, num_of_cpus,
// memory) of site, resolved as NVFlare's get_portable_resource_spec does:
// with resource_spec["@default"] present, its keys under the site's own
// (the flat entry, or the process block of a nested one; the site wins);
// without it, the site's flat entry, and nothing for a nested entry (the
// legacy nested form is launcher-specific, not portable).
func portableResources(root *yaml.Node, site string) map[string]slot {
	rs := get(root, "resource_spec")
	entry := get(rs, site)
	all := map[string]slot{}
	ownPath := "resource_spec." + site
	own := entry
	if isNested(entry) {
		own, ownPath = get(entry, "process"), ownPath+".process"
	}
	switch {
	case keyIndex(rs, portableDefaultKey) >= 0:
		slotsOf(get(rs, portableDefaultKey), "resource_spec."+portableDefaultKey, all)
		slotsOf(own, ownPath, all)
	case isNested(entry):
	default:
		slotsOf(entry, ownPath, all)
	}
	out := map[string]slot{}
	for _, k := range portableKeys {
		if sl, ok := all[k]; ok && !isNull(sl.val) {
			out[k] = sl
		}
	}
	return out
}

// checkJobSite checks one site's reading as NVFlare's launcher and job
// validator do: the values of its portable resources, a portable key given
// together with its Slurm twin (refused, also between the two default
// blocks), a legacy process num_of_gpus against the Slurm GPU total, and
// the GPU arithmetic.
func (t *tree) checkJobSite(site string) {
	merged := mergedJobSlurm(t.root, site)
	t.checkNodeCommand(site, merged)
	var portable map[string]slot
	if site != "default" {
		portable = portableResources(t.root, site)
		t.checkPortableValues(portable)
		for _, tw := range nativeTwins {
			sl, ok := portable[tw.portable]
			twin, hasTwin := merged[tw.native]
			if ok && hasTwin {
				t.add(problem.Rule, sl.val, sl.path, fmt.Sprintf("portable resource %s conflicts with %s, its Slurm twin, for site %s (NVFlare refuses the job)", tw.portable, t.pathText(twin.path), site),
					"keep one of the two")
			}
		}
	}
	if site == "default" || site == "" {
		def := get(get(t.root, "resource_spec"), portableDefaultKey)
		ld := get(get(get(t.root, "launcher_spec"), "default"), "slurm")
		for _, tw := range nativeTwins {
			if pv, nv := get(def, tw.portable), get(ld, tw.native); pv != nil && nv != nil {
				t.add(problem.Rule, pv, "resource_spec."+portableDefaultKey+"."+tw.portable, fmt.Sprintf("portable resource %s conflicts with %s in the default blocks (NVFlare refuses the job)", tw.portable, t.pathText("launcher_spec.default.slurm."+tw.native)),
					"keep one of the two")
			}
		}
		return
	}
	t.checkLegacyProcessGPUs(site, merged)
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
	numSlot, ok := portable["num_of_gpus"]
	if !ok {
		return
	}
	num, ok := intValue(numSlot.val)
	if !ok || num < 0 {
		return
	}
	switch {
	case gpnSet && num != nodes*gpn:
		t.add(problem.Rule, numSlot.val, numSlot.path, fmt.Sprintf("must equal nodes * gpus_per_node = %d * %d = %d when both are given (got %d)", nodes, gpn, nodes*gpn, num),
			"fix num_of_gpus or "+t.pathText(merged["gpus_per_node"].path))
	case !gpnSet && nodes > 1 && num > 0:
		t.add(problem.Rule, numSlot.val, numSlot.path, fmt.Sprintf("a multi-node job (nodes %d) with num_of_gpus needs gpus_per_node", nodes),
			"set "+t.pathText("launcher_spec."+site+".slurm.gpus_per_node"))
	}
}

// checkPortableValues checks portable values the schema does not reach
// (those of a nested entry's process block); the schema already checks
// the flat entry and @default.
func (t *tree) checkPortableValues(portable map[string]slot) {
	for k, sl := range portable {
		if !strings.Contains(sl.path, ".process.") {
			continue
		}
		switch k {
		case "num_of_gpus", "num_of_cpus":
			least := map[string]int{"num_of_gpus": 0, "num_of_cpus": 1}[k]
			if v, ok := intValue(sl.val); !ok || v < least || sl.val.ShortTag() != "!!int" {
				t.add(problem.Schema, sl.val, sl.path, fmt.Sprintf("must be an integer of at least %d", least), "")
			}
		case "memory":
			if _, ok := MemoryMiB(sl.val.Value); !ok || !isString(sl.val) {
				t.add(problem.Schema, sl.val, sl.path, "must be a whole number followed by Mi, Gi or Ti, e.g. 16Gi", "")
			}
		}
	}
}

// checkLegacyProcessGPUs refuses a legacy nested entry whose
// process.num_of_gpus (what NVFlare's resource manager reserves) differs
// from the GPUs the Slurm spec launches (nodes * gpus_per_node), as
// NVFlare's job validator does.
func (t *tree) checkLegacyProcessGPUs(site string, merged map[string]slot) {
	entry := get(get(t.root, "resource_spec"), site)
	if !isNested(entry) {
		return
	}
	reserved := get(get(entry, "process"), "num_of_gpus")
	r, ok := intValue(reserved)
	if !ok || reserved.ShortTag() != "!!int" {
		return
	}
	nodes := 1
	if n := merged["nodes"].val; n != nil {
		if nodes, ok = intValue(n); !ok {
			return
		}
	}
	g, ok := intValue(merged["gpus_per_node"].val)
	if !ok {
		return
	}
	if nodes*g != r {
		t.add(problem.Rule, reserved, "resource_spec."+site+".process.num_of_gpus",
			fmt.Sprintf("legacy process num_of_gpus (%d) must match the Slurm GPU total nodes * gpus_per_node = %d (NVFlare refuses the job)", r, nodes*g),
			"make them agree, or move to "+t.pathText("resource_spec."+site+".num_of_gpus"))
	}
}

// secretRef matches NVFlare's secret references, ${secret:NAME} and
// ${secret:file:/path}, and malformed ones that start the same way.
var secretRef = regexp.MustCompile(`\$\{secret:`)

// checkNodeCommand checks the additional_node_command of one site's
// reading beyond its shape (a one-line string or null, which the schema
// checks): it must split into at least one word like a POSIX shell would,
// must not reference a secret (the other nodes run without secrets), and
// the reading must have nodes > 1. Readings share values, so each problem
// is reported once.
func (t *tree) checkNodeCommand(site string, merged map[string]slot) {
	s := merged[AdditionalNodeCommandKey]
	if !isString(s.val) || strings.ContainsAny(s.val.Value, "\n\r") {
		return // absent, null, or the schema reports it
	}
	words, err := shell.Split(s.val.Value)
	switch {
	case err != nil:
		t.addOnce("split", problem.Schema, s.val, s.path, "cannot be split into words: "+err.Error(), "quote it like a POSIX shell command line; it is split once and run without a shell")
	case len(words) == 0:
		t.addOnce("empty", problem.Schema, s.val, s.path, "must contain at least one word", "name the command the other nodes run, or remove the key")
	}
	if secretRef.MatchString(s.val.Value) {
		t.addOnce("secret", problem.Schema, s.val, s.path, "must not reference a secret (${secret:…})", "the other nodes of a node group run without secrets; only the worker on the first node gets them")
	}
	nodes, ok := intValue(merged["nodes"].val)
	if merged["nodes"].val == nil {
		nodes, ok = 1, true
	}
	if ok && nodes < 2 {
		reading := "site " + site + "'s reading"
		if site == "default" || site == "" {
			reading = "the default reading (sites without a launcher_spec section of their own)"
		}
		t.addOnce("nodes", problem.Rule, s.val, s.path, fmt.Sprintf("needs nodes > 1, but %s has nodes %d", reading, nodes),
			"set nodes to the size of the group, or remove the command: a one-node job runs the worker only")
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

// ptr is the address of v when ok, else nil: ptr(intValue(n)).
func ptr[T any](v T, ok bool) *T {
	if ok {
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
	return cmp.Or(m.Resources.NumOfCPUs, m.Slurm.CPUsPerNode)
}

// EffectiveMemMiB is memory, else mem_per_node; nil means none.
func (m *JobMeta) EffectiveMemMiB() *int {
	return cmp.Or(m.Resources.MemoryMiB, m.Slurm.MemPerNodeMiB)
}

// onceKey is one rule's problem at one position: rule names a rule of
// checkNodeCommand, so that addOnce tells one rule's problem from
// another's without reading its message.
type onceKey struct {
	rule, path   string
	line, column int
}

// addOnce is add unless rule already reported a problem at n's position
// (several sites' readings can share one value).
func (t *tree) addOnce(rule string, k problem.Kind, n *yaml.Node, path, message, hint string) {
	key := onceKey{rule, path, n.Line, n.Column}
	if t.once[key] {
		return
	}
	if t.once == nil {
		t.once = map[onceKey]bool{}
	}
	t.once[key] = true
	t.add(k, n, path, message, hint)
}
