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
	if r.req.Refused("job_args.parent_conn_sec") {
		return "" // already reported; the URL's scheme depends on it
	}
	if pair, ok := args["parent_conn_sec"]; ok {
		sec = pair[1]
	}
	if sec != "clear" && sec != "mtls" {
		r.reqProblem("job_args.parent_conn_sec", fmt.Sprintf("%q is not a connection security", sec), "allowed: clear, mtls")
		return ""
	}
	if sec != ws.ConnectionSecurity {
		r.reqProblem("job_args.parent_conn_sec", fmt.Sprintf("is %s but the workspace's worker link (%s internal.resources.connection_security) is %s",
			sec, ws.CommFile, ws.ConnectionSecurity), "the parent and the workspace disagree: prepare the workspace again or restart the parent")
		return ""
	}
	pair, ok := args["parent_url"]
	if !ok && r.req.Refused("job_args.parent_url") {
		return ""
	}
	if !ok {
		r.reqProblem("job_args.parent_url", "is required", "the parent passes its internal listener URL as [\"-p\", URL]")
		return ""
	}
	raw := pair[1]
	u, err := url.Parse(raw)
	if err != nil {
		r.reqProblem("job_args.parent_url", fmt.Sprintf("%q is not a URL: %v", raw, err), "")
		return ""
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
		r.reqProblem("job_args.parent_url", fmt.Sprintf("%q uses scheme %q", raw, u.Scheme),
			fmt.Sprintf("the worker link is %s: the parent URL must use %s://", ws.ConnectionSecurity, want))
		return ""
	case u.Hostname() == "" || u.Opaque != "":
		r.reqProblem("job_args.parent_url", fmt.Sprintf("%q has no host", raw), "")
		return ""
	case perr != nil || port != ws.Launcher.InternalPort:
		r.reqProblem("job_args.parent_url", fmt.Sprintf("%q does not use the workspace's internal_port %d", raw, ws.Launcher.InternalPort),
			"the parent must listen on internal_port; prepare and the parent's comm_config.json disagree")
		return ""
	}
	host := ws.Launcher.ParentHost
	if host == "" {
		if _, inAlloc := r.env("SLURM_JOB_ID"); inAlloc {
			host, _ = r.env("SLURMD_NODENAME")
			if host == "" {
				r.wsProblem("parent_host", "is unset and SLURMD_NODENAME is empty in the parent's allocation", "set job_launcher.parent_host")
				return ""
			}
			if msg := schema.CheckParentHost(host); msg != "" {
				r.wsProblem("parent_host", "is unset and the parent's SLURMD_NODENAME cannot stand in for it: "+msg, "set job_launcher.parent_host")
				return ""
			}
		} else {
			r.wsProblem("parent_host", "is required: the parent does not run inside a Slurm allocation (SLURM_JOB_ID is unset)",
				"set job_launcher.parent_host to a host compute nodes can reach, and prepare again")
			return ""
		}
	}
	if strings.Contains(host, ":") && !(strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")) {
		host = "[" + host + "]"
	}
	// Keep everything after the authority byte for byte.
	rest := raw[strings.Index(raw, "://")+3:]
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[i:]
	} else {
		rest = ""
	}
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
	switch {
	case u.Scheme != "shared-file":
		r.reqProblem("job_args.parent_url", fmt.Sprintf("%q uses scheme %q", raw, u.Scheme), "the workspace's worker link is shared-file: allowed scheme shared-file")
		return ""
	case u.Host != "0" || u.User != nil || u.Opaque != "":
		r.reqProblem("job_args.parent_url", fmt.Sprintf("%q: the authority must be the placeholder 0, as NVFlare's file driver requires", raw), "form: "+sharedFileForm)
		return ""
	case listener == "" || !path.IsAbs(listener) || path.Clean(listener) != listener:
		r.reqProblem("job_args.parent_url", fmt.Sprintf("%q does not name an absolute, normalised listener directory", raw), "form: "+sharedFileForm)
		return ""
	case listener != root && !strings.HasPrefix(listener, strings.TrimSuffix(root, "/")+"/"):
		r.reqProblem("job_args.parent_url", fmt.Sprintf("listener %s is outside the shared-file root_dir %s", listener, root), "")
		return ""
	}
	v.ParentURL = raw
	dir := path.Dir(listener)
	if _, err := checkDestination(dir); err != nil {
		// The directory is bind-mounted at itself: it follows the
		// destination rules (never /, /proc, /sys, /dev; no ':' or ',').
		r.reqProblem("job_args.parent_url", fmt.Sprintf("listener directory %s cannot be bind-mounted: %v", dir, err),
			"put the shared-file listener in a directory below root_dir")
		return ""
	}
	return dir
}
