package compile

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/schema"
)

// parentURL checks and rewrites the worker's parent URL (contract §8) in
// args and returns the directory to bind-mount for a shared-file link ("" for
// TCP).
func (r *resolver) parentURL(args map[string][]string, v *PlanView) string {
	ws := r.ws
	sec := "clear"
	bad := func(path, msg, hint string) string { r.reqProblem("job_args."+path, msg, hint); return "" }
	if r.req.Refused("job_args.parent_conn_sec") {
		return "" // already reported; the URL's scheme depends on it
	}
	if pair, ok := args["parent_conn_sec"]; ok {
		sec = pair[1]
	}
	if sec != "clear" && sec != "mtls" {
		return bad("parent_conn_sec", fmt.Sprintf("%q is not a connection security", sec), "allowed: clear, mtls")
	}
	if sec != ws.ConnectionSecurity {
		return bad("parent_conn_sec", fmt.Sprintf("is %s but the workspace's worker link (%s internal.resources.connection_security) is %s",
			sec, ws.CommFile, ws.ConnectionSecurity), "the parent and the workspace disagree: prepare the workspace again or restart the parent")
	}
	pair, ok := args["parent_url"]
	if !ok && r.req.Refused("job_args.parent_url") {
		return ""
	}
	if !ok {
		return bad("parent_url", "is required", "the parent passes its internal listener URL as [\"-p\", URL]")
	}
	raw := pair[1]
	u, err := url.Parse(raw)
	if err != nil {
		return bad("parent_url", fmt.Sprintf("%q is not a URL: %v", raw, err), "")
	}
	if ws.InternalScheme == "shared-file" {
		return r.sharedFileURL(u, raw, v)
	}
	want := "tcp"
	if sec == "mtls" {
		want = "stcp"
	}
	port, perr := strconv.Atoi(u.Port())
	switch {
	case u.Scheme != want:
		// As NVFlare's launcher: stcp exactly when the link is mTLS (a
		// tcp:// URL on an mTLS link is refused, not upgraded).
		return bad("parent_url", fmt.Sprintf("%q uses scheme %q", raw, u.Scheme),
			fmt.Sprintf("the worker link is %s: the parent URL must use %s://", ws.ConnectionSecurity, want))
	case u.Hostname() == "" || u.Opaque != "":
		return bad("parent_url", fmt.Sprintf("%q has no host", raw), "")
	case perr != nil || port != ws.Launcher.InternalPort:
		return bad("parent_url", fmt.Sprintf("%q does not use the workspace's internal_port %d", raw, ws.Launcher.InternalPort),
			"the parent must listen on internal_port; prepare and the parent's comm_config.json disagree")
	}
	host := ws.Launcher.ParentHost
	badHost := func(msg, hint string) string { r.wsProblem("parent_host", msg, hint); return "" }
	if host == "" {
		_, inAlloc := r.env("SLURM_JOB_ID")
		host, _ = r.env("SLURMD_NODENAME")
		switch msg := schema.CheckParentHost(host); {
		case !inAlloc:
			return badHost("is required: the parent does not run inside a Slurm allocation (SLURM_JOB_ID is unset)",
				"set job_launcher.parent_host to a host compute nodes can reach, and prepare again")
		case host == "":
			return badHost("is unset and SLURMD_NODENAME is empty in the parent's allocation", "set job_launcher.parent_host")
		case msg != "":
			return badHost("is unset and the parent's SLURMD_NODENAME cannot stand in for it: "+msg, "set job_launcher.parent_host")
		}
	}
	if strings.Contains(host, ":") && !(strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")) {
		host = "[" + host + "]"
	}
	// Keep everything after the authority byte for byte.
	rest := strings.TrimLeftFunc(raw[strings.Index(raw, "://")+3:], func(c rune) bool { return !strings.ContainsRune("/?#", c) })
	rewritten := want + "://" + host + ":" + strconv.Itoa(ws.Launcher.InternalPort) + rest
	args["parent_url"] = []string{pair[0], rewritten}
	v.ParentURL = rewritten
	return ""
}

// sharedFileForm is the form of a shared-file listener URL, as NVFlare's
// file driver writes it (get_urls) and parses it (parse_file_url): the
// authority is the placeholder "0", the path the absolute listener
// directory, and tuning parameters may follow as a query.
const sharedFileForm = "shared-file://0/<absolute listener dir>[?<tuning>]"

// sharedFileURL accepts a shared-file listener URL unchanged and returns the
// listener's parent directory, which containers bind-mount read-write.
func (r *resolver) sharedFileURL(u *url.URL, raw string, v *PlanView) string {
	listener := strings.TrimRight(u.Path, "/")
	root := r.ws.SharedFileRoot
	bad := func(msg, hint string) string { r.reqProblem("job_args.parent_url", msg, hint); return "" }
	switch {
	case u.Scheme != "shared-file":
		return bad(fmt.Sprintf("%q uses scheme %q", raw, u.Scheme), "the workspace's worker link is shared-file: allowed scheme shared-file")
	case u.Host != "0" || u.User != nil || u.Opaque != "":
		return bad(fmt.Sprintf("%q: the authority must be the placeholder 0, as NVFlare's file driver requires", raw), "form: "+sharedFileForm)
	case listener == "" || !path.IsAbs(listener) || path.Clean(listener) != listener:
		return bad(fmt.Sprintf("%q does not name an absolute, normalised listener directory", raw), "form: "+sharedFileForm)
	case listener != root && !strings.HasPrefix(listener, strings.TrimSuffix(root, "/")+"/"):
		return bad(fmt.Sprintf("listener %s is outside the shared-file root_dir %s", listener, root), "")
	}
	v.ParentURL = raw
	dir := path.Dir(listener)
	if _, err := checkDestination(dir); err != nil {
		// The directory is bind-mounted at itself: it follows the
		// destination rules (never /, /proc, /sys, /dev; no ':' or ',').
		return bad(fmt.Sprintf("listener directory %s cannot be bind-mounted: %v", dir, err),
			"put the shared-file listener in a directory below root_dir")
	}
	return dir
}
