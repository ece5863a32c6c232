package schema

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Role files of a startup kit's startup/ directory.
const (
	serverRoleFile = "fed_server.json"
	clientRoleFile = "fed_client.json"
	adminRoleFile  = "fed_admin.json"
)

// LoadKit validates a startup kit directory (contract §2): its layout, role
// file, identity material, organisation, site name, resources.json.default
// and study files, and that every entry under it is one prepare can copy.
// A local/study_runtime.yaml is validated too, and a legacy
// local/study_data.yaml is refused (migrate it to study_runtime.yaml).
//
// Every independent problem is reported at once; a check is left out only
// when it depends on an earlier one that failed (no leaf certificate to
// read when the role is unknown, nothing to read in a missing startup/).
//
// withoutSecrets is for a kit checked out without its secret files (a CI
// repository): a missing leaf private key (startup/client.key,
// startup/server.key) is not a problem. Every other rule holds; prepare
// --check --exclude-secrets uses it.
func LoadKit(dir string, withoutSecrets bool) (*Kit, Problems) {
	kit, probs, _ := loadKit(dir, kitOptions{keyOptional: withoutSecrets})
	if probs != nil {
		return nil, probs
	}
	return kit, nil
}

// kitOptions tune loadKit: validate's host checks of the study runtime,
// and whether the leaf private key may be absent.
type kitOptions struct {
	host        hostChecks
	keyOptional bool
}

// loadKit is LoadKit returning what it learnt of the kit even when there
// are problems: nil only when dir is not a readable directory; Role is ""
// when the role file does not tell it. host selects validate's host checks
// of the kit's study runtime; the checks it skipped are returned last.
func loadKit(dir string, o kitOptions) (*Kit, Problems, Problems) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, Problems{{Kind: problem.Read, File: dir, Message: "cannot resolve path: " + err.Error()}}, nil
	}
	var probs Problems
	bad := func(k problem.Kind, file, msg, hint string) {
		probs = append(probs, Problem{Kind: k, File: file, Message: msg, Hint: hint})
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, Problems{{Kind: problem.Read, File: dir, Message: "cannot read startup kit: " + fsx.Pathless(err).Error()}}, nil
	}
	if !st.IsDir() {
		return nil, Problems{{Kind: problem.Layout, File: dir, Message: "is not a directory; a startup kit is a folder with startup/ and local/"}}, nil
	}
	kit := &Kit{Dir: abs, Name: filepath.Base(abs)}
	probs = append(probs, walkKit(dir, abs)...)

	// Problems name files the way the caller named the kit.
	startup := filepath.Join(dir, "startup")
	local := filepath.Join(dir, "local")
	isDir := func(d string) bool {
		st, err := os.Lstat(d) // a symlink is walkKit's problem, and not followed
		if err != nil || !st.IsDir() {
			bad(problem.Layout, d, "must be a directory of the startup kit", "is this the top folder of a provisioned kit?")
			return false
		}
		return true
	}
	startupOK, localOK := isDir(startup), isDir(local)

	var skipped Problems
	if startupOK {
		checkStartup(kit, startup, o.keyOptional, bad, func(p Problem) { probs = append(probs, p) })
		if key := filepath.Join(dir, filepath.FromSlash(LeafKeyFile(kit.Role))); o.keyOptional && kit.Role != "" && !exists(key) {
			skipped = append(skipped, Problem{Kind: problem.Layout, File: key,
				Message: "not checked (--exclude-secrets): the kit's private key is present",
				Hint:    "prepare needs it; validate without --exclude-secrets where the kit has it"})
		}
	}
	if localOK {
		lp, sk := checkLocal(kit, local, o.host)
		probs, skipped = append(probs, lp...), append(skipped, sk...)
	}
	probs.Sort()
	return kit, probs, skipped
}

// checkStartup checks startup/: exactly one role file (it sets kit.Role and
// kit.Name), rootCA.pem, and the leaf certificate, key and organisation of
// the role.
func checkStartup(kit *Kit, startup string, keyOptional bool, bad func(k problem.Kind, file, msg, hint string), report func(Problem)) {
	var roles []string
	for _, f := range []string{serverRoleFile, clientRoleFile, adminRoleFile} {
		if isKitFile(filepath.Join(startup, f)) {
			roles = append(roles, f)
		}
	}
	switch {
	case len(roles) == 0:
		bad(problem.Layout, startup, "holds no role file (fed_server.json, fed_client.json or fed_admin.json)", "is this a provisioned startup kit?")
	case len(roles) > 1:
		bad(problem.Layout, startup, "holds more than one role file ("+strings.Join(roles, ", ")+")", "keep exactly one")
	case roles[0] == adminRoleFile:
		bad(problem.Layout, filepath.Join(startup, adminRoleFile), "this is an admin kit: prepare does not take admin kits", "use the kit of a server or client site")
	case roles[0] == serverRoleFile:
		kit.Role = "server"
	default:
		kit.Role = "client"
	}

	// rootCA.pem belongs to every kit, whatever its role.
	if p := filepath.Join(startup, "rootCA.pem"); !isKitFile(p) {
		what := "a startup kit needs startup/rootCA.pem"
		if kit.Role != "" {
			leaf := leafName(kit.Role)
			what = "a " + kit.Role + " kit needs startup/rootCA.pem, " + leaf + ".crt and " + leaf + ".key"
		}
		bad(problem.Layout, p, "is missing: "+what, "")
	}
	if kit.Role == "" {
		return // the site name and the leaf material depend on the role
	}

	// Site name from the role file, else the kit folder's name.
	roleFile := filepath.Join(startup, roles[0])
	var roleDoc map[string]any
	var nameNode *yaml.Node
	var namePath string
	if data, err := readKitFile(roleFile); err != nil {
		bad(problem.Read, roleFile, "cannot read file: "+fsx.Pathless(err).Error(), "")
	} else if err := json.Unmarshal(data, &roleDoc); err != nil || roleDoc == nil {
		bad(problem.Structure, roleFile, "is not a JSON object", "")
	} else if nameNode, namePath = siteNameNode(kit.Role, parseTree(roleFile, data).root); nameNode != nil {
		kit.Name = nameNode.Value
	}
	if msg := CheckSiteName(kit.Name); msg != "" {
		p := Problem{Kind: problem.Layout, File: filepath.Dir(startup), Message: "the kit folder's name is the site name, and " + msg,
			Hint: "allowed: " + SiteNameAllowed + "; rename the kit folder or name the site in " + roles[0]}
		if nameNode != nil {
			p = Problem{Kind: problem.Schema, File: roleFile, Line: nameNode.Line, Column: nameNode.Column, Path: namePath,
				Message: msg, Hint: "allowed: " + SiteNameAllowed + "; provision the site under such a name"}
		}
		report(p)
	}

	// Leaf certificate, key and organisation.
	leaf := leafName(kit.Role)
	for _, f := range []string{leaf + ".crt", leaf + ".key"} {
		if p := filepath.Join(startup, f); !isKitFile(p) && !(keyOptional && f == leaf+".key" && !exists(p)) {
			bad(problem.Layout, p, "is missing: a "+kit.Role+" kit needs startup/rootCA.pem, "+leaf+".crt and "+leaf+".key", "")
		}
	}
	certPath := filepath.Join(startup, leaf+".crt")
	if isKitFile(certPath) {
		org, msg := certOrganization(certPath)
		if msg != "" {
			bad(problem.Rule, certPath, msg, "provision the kit with an organisation for this site")
		}
		kit.Organization = org
	}
}

// exists says whether anything (a file, a directory, a symlink) is at p.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// LeafKeyFile is the slash path, relative to the kit, of the leaf private
// key of a kit of role ("server" or "client").
func LeafKeyFile(role string) string { return "startup/" + leafName(role) + ".key" }

// leafName is the base name of the leaf certificate and key of a role.
func leafName(role string) string {
	if role == "server" {
		return "server"
	}
	return "client"
}

// checkLocal checks local/: resources.json.default is a JSON object, and
// the study files (study_runtime.yaml validated, a legacy study_data.yaml
// refused). It sets kit.HasStudyRuntime and kit.HasLegacyStudyData, and
// returns the host checks it skipped.
func checkLocal(kit *Kit, local string, host hostChecks) (Problems, Problems) {
	var probs, skipped Problems
	res := filepath.Join(local, resourcesDefaultFile)
	if !isKitFile(res) {
		// Not read unless regular: opening a named pipe would block.
		if _, err := os.Stat(res); err != nil {
			probs = append(probs, Problem{Kind: problem.Read, File: res, Message: "cannot read file: " + fsx.Pathless(err).Error(),
				Hint: "every provisioned kit has local/resources.json.default"})
		} // a special file is reported by the walk of the kit
	} else if data, err := readKitFile(res); err != nil {
		probs = append(probs, Problem{Kind: problem.Read, File: res, Message: "cannot read file: " + fsx.Pathless(err).Error(),
			Hint: "every provisioned kit has local/resources.json.default"})
	} else {
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
			probs = append(probs, Problem{Kind: problem.Structure, File: res, Message: "must be a JSON object"})
		}
	}

	runtimePath := filepath.Join(local, StudyRuntimeFile)
	legacyPath := filepath.Join(local, legacyStudyFile)
	kit.HasStudyRuntime, kit.HasLegacyStudyData = exists(runtimePath), exists(legacyPath)
	switch {
	case kit.HasStudyRuntime && !isKitFile(runtimePath):
		// A special file or a bad symlink: the walk of the kit reports it,
		// and reading a named pipe would block.
		if kit.HasLegacyStudyData {
			probs = append(probs, Problem{Kind: problem.Layout, File: legacyPath,
				Message: "legacy study_data.yaml cannot be combined with study_runtime.yaml",
				Hint:    "move its studies into study_runtime.yaml (format_version: 2) and delete study_data.yaml"})
		}
	case kit.HasStudyRuntime:
		// loadStudyRuntime also reports a legacy file beside it.
		var sp Problems
		sp, skipped = validateStudyRuntime(runtimePath, nil, host)
		probs = append(probs, sp...)
	case kit.HasLegacyStudyData:
		probs = append(probs, Problem{Kind: problem.Layout, File: legacyPath,
			Message: "legacy study_data.yaml (format 1) is not supported under Slurm",
			Hint:    "migrate it to local/study_runtime.yaml (format_version: 2) and delete study_data.yaml"})
	}
	return probs, skipped
}

// Files of a kit's local/ directory that prepare rewrites and the compiler
// reads back (contract §4): the site settings NVFlare's prepare writes,
// the file a site may create to override them, and the communication
// settings.
const (
	resourcesDefaultFile = "resources.json.default"
	resourcesActiveFile  = "resources.json"
	commConfigFile       = "comm_config.json"
)

// Top-level directories of a prepared workspace (contract §4). A job's run
// directory is WS/<job id>, so no job may be named like one of them.
const (
	StartupDir         = "startup"
	LocalDir           = "local"
	transferDir        = "transfer"
	ControlDir         = ".nvflare_slurm"
	SnapshotStorageDir = "snapshot-storage"
	JobsStorageDir     = "jobs-storage"
)

// reservedJobIDs are the names a job ID must not have: the workspace's own
// top-level directories.
var reservedJobIDs = []string{StartupDir, LocalDir, transferDir, ControlDir, SnapshotStorageDir, JobsStorageDir}

// Where prepare's default output lies in a kit (contract §4): KIT/prepared
// holds the prepared workspaces of every runtime, and is left out of the
// copy.
const (
	preparedDir   = "prepared"
	DefaultOutput = preparedDir + "/slurm"
)

// walkKit reports every entry under the kit that prepare cannot copy: a
// symlink, a named pipe, socket or device, an unreadable directory, a file
// larger than MaxKitFileBytes, and files larger than MaxKitBytes in all. KIT/prepared (prepare's
// default output, left out of the copy) is not entered, but it and
// KIT/prepared/slurm must not be symlinks: the default output would lead
// out of the kit. dir is the kit as the caller named it (for messages),
// abs its absolute path.
func walkKit(dir, abs string) Problems {
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil // LoadKit has checked that the kit is a directory
	}
	var probs Problems
	bad := func(k problem.Kind, p, msg, hint string) {
		name := dir
		if rel, err := filepath.Rel(root, p); err == nil && rel != "." {
			name = filepath.Join(dir, rel)
		}
		probs = append(probs, Problem{Kind: k, File: name, Message: msg, Hint: hint})
	}
	prepared := filepath.Join(root, preparedDir)
	var total int64
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			bad(problem.Read, p, "cannot read this kit directory: "+fsx.Pathless(err).Error(), "check the permissions of the kit")
			return nil
		}
		if p == prepared {
			// Left out whatever it is; SkipDir on a file would skip the
			// rest of the kit's top level.
			for _, q := range []string{p, filepath.Join(root, filepath.FromSlash(DefaultOutput))} {
				if st, err := os.Lstat(q); err == nil && st.Mode()&fs.ModeSymlink != 0 {
					dest, _ := os.Readlink(q)
					bad(problem.Layout, q, fmt.Sprintf("symlink (to %s); prepare's default output %s must lie inside the kit", dest, DefaultOutput),
						"replace the symlink with a real directory (or remove it), and give prepare --output to put the workspace elsewhere")
				}
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if msg, hint := KitEntry(p, d.Type()); msg != "" {
			bad(problem.Layout, p, msg, hint)
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				if msg, hint := KitSize(info.Size(), false); msg != "" {
					bad(problem.Layout, p, msg, hint)
				}
				total += info.Size()
			}
		}
		return nil
	})
	if msg, hint := KitSize(total, true); msg != "" {
		probs = append(probs, Problem{Kind: problem.Layout, File: dir, Message: msg, Hint: hint})
	}
	return probs
}

// siteNameNode finds the site name in a parsed role file, and its dotted
// path: client.fqsn for clients; servers[0].identity, else
// servers[0].admin_server for servers. The node is nil when the file names
// none (a non-empty string).
func siteNameNode(role string, root *yaml.Node) (*yaml.Node, string) {
	named := func(n *yaml.Node) bool { return isString(n) && n.Value != "" }
	if role == "client" {
		if n := get(get(root, "client"), "fqsn"); named(n) {
			return n, "client.fqsn"
		}
		return nil, ""
	}
	servers := get(root, "servers")
	if servers == nil || servers.Kind != yaml.SequenceNode || len(servers.Content) == 0 {
		return nil, ""
	}
	for _, key := range []string{"identity", "admin_server"} {
		if n := get(servers.Content[0], key); named(n) {
			return n, "servers[0]." + key
		}
	}
	return nil, ""
}

// certOrganization returns the first non-empty O= of the leaf certificate's
// subject, or a message saying why there is none.
func certOrganization(path string) (string, string) {
	data, err := readKitFile(path)
	if err != nil {
		return "", "cannot read certificate: " + fsx.Pathless(err).Error()
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return "", "holds no PEM certificate"
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		subject, err := certSubject(block.Bytes)
		if err != nil {
			return "", "is not a valid X.509 certificate: " + err.Error()
		}
		for _, o := range subject.Organization {
			if strings.TrimSpace(o) != "" {
				return o, ""
			}
		}
		return "", fmt.Sprintf("certificate subject %q has no organisation (O=)", subject.String())
	}
}

// certSubject reads the subject of a DER certificate (RFC 5280 §4.1) as
// crypto/x509 does, checking the structure as far as the subject and each
// name's string type. It is a small DER reader rather than crypto/x509 or
// encoding/asn1: x509 links all of Go's public-key cryptography (about
// 0.8 MB of code and tables) and asn1 reads by reflection; either costs
// every prepare more than half a MiB of peak RSS (docs/performance.md) to
// read one name. Like prepare before, it does not verify the signature:
// prepare reads the organisation NVFlare provisioned, it never trusts the
// certificate.
func certSubject(der []byte) (pkix.Name, error) {
	cert, rest, err := derRead(der, derSequence, "certificate")
	if err != nil {
		return pkix.Name{}, err
	}
	if len(rest) != 0 {
		return pkix.Name{}, fmt.Errorf("%d bytes after the certificate", len(rest))
	}
	tbs, cert, err := derRead(cert, derSequence, "tbsCertificate")
	if err != nil {
		return pkix.Name{}, err
	}
	if _, cert, err = derRead(cert, derSequence, "signature algorithm"); err != nil {
		return pkix.Name{}, err
	}
	if _, _, err = derRead(cert, derBitString, "signature"); err != nil {
		return pkix.Name{}, err
	}
	if len(tbs) > 0 && tbs[0] == derVersion {
		var v []byte
		if v, tbs, err = derRead(tbs, derVersion, "version"); err != nil {
			return pkix.Name{}, err
		}
		n, rest, err := derRead(v, derInteger, "version")
		if err != nil || len(rest) != 0 || len(n) != 1 || n[0] > 2 {
			return pkix.Name{}, fmt.Errorf("malformed or unknown version")
		}
	}
	var subject []byte
	for _, f := range []struct {
		tag  byte
		what string
	}{
		{derInteger, "serial number"}, {derSequence, "signature algorithm"}, {derSequence, "issuer"},
		{derSequence, "validity"}, {derSequence, "subject"}, {derSequence, "subject public key"},
	} {
		var v []byte
		if v, tbs, err = derRead(tbs, f.tag, f.what); err != nil {
			return pkix.Name{}, err
		}
		if f.what == "subject" {
			subject = v
		}
	}
	rdns, err := derName(subject)
	if err != nil {
		return pkix.Name{}, err
	}
	var name pkix.Name
	name.FillFromRDNSequence(&rdns)
	return name, nil
}

// DER tags certSubject reads.
const (
	derInteger   = 0x02
	derBitString = 0x03
	derOID       = 0x06
	derSequence  = 0x30
	derSet       = 0x31
	derVersion   = 0xa0 // [0] EXPLICIT
)

// derRead reads one DER element with tag from b: its content and what
// follows it. Lengths must be in DER's shortest form.
func derRead(b []byte, tag byte, what string) (content, rest []byte, err error) {
	t, content, rest, err := derAny(b)
	if err != nil {
		return nil, nil, fmt.Errorf("malformed %s: %v", what, err)
	}
	if t != tag {
		return nil, nil, fmt.Errorf("malformed %s: tag 0x%02x, want 0x%02x", what, t, tag)
	}
	return content, rest, nil
}

// derAny reads one DER element of any low-number tag.
func derAny(b []byte) (tag byte, content, rest []byte, err error) {
	if len(b) < 2 {
		return 0, nil, nil, fmt.Errorf("truncated")
	}
	tag, n := b[0], int(b[1])
	if tag&0x1f == 0x1f {
		return 0, nil, nil, fmt.Errorf("high tag number")
	}
	b = b[2:]
	if n >= 0x80 {
		size := n & 0x7f
		if size == 0 || size > 4 || len(b) < size || b[0] == 0 {
			return 0, nil, nil, fmt.Errorf("bad length")
		}
		n = 0
		for _, c := range b[:size] {
			n = n<<8 | int(c)
		}
		if n < 0x80 {
			return 0, nil, nil, fmt.Errorf("length not in its shortest form")
		}
		b = b[size:]
	}
	if n > len(b) {
		return 0, nil, nil, fmt.Errorf("truncated")
	}
	return tag, b[:n], b[n:], nil
}

// derName reads a Name's RDNSequence as crypto/x509 does: SETs of
// (OID, string) pairs whose strings are of a type x509 accepts.
func derName(b []byte) (pkix.RDNSequence, error) {
	var rdns pkix.RDNSequence
	for len(b) > 0 {
		set, rest, err := derRead(b, derSet, "name")
		if err != nil {
			return nil, err
		}
		b = rest
		var rdn pkix.RelativeDistinguishedNameSET
		for len(set) > 0 {
			atv, rest, err := derRead(set, derSequence, "name attribute")
			if err != nil {
				return nil, err
			}
			set = rest
			oid, atv, err := derRead(atv, derOID, "name attribute type")
			if err != nil {
				return nil, err
			}
			typ, err := derOIDValue(oid)
			if err != nil {
				return nil, err
			}
			tag, value, _, err := derAny(atv)
			if err != nil {
				return nil, fmt.Errorf("malformed name attribute value: %v", err)
			}
			s, err := derString(tag, value)
			if err != nil {
				return nil, fmt.Errorf("name attribute %s: %v", typ, err)
			}
			rdn = append(rdn, pkix.AttributeTypeAndValue{Type: typ, Value: s})
		}
		rdns = append(rdns, rdn)
	}
	return rdns, nil
}

// derOIDValue decodes an OBJECT IDENTIFIER's content.
func derOIDValue(b []byte) (asn1.ObjectIdentifier, error) {
	if len(b) == 0 || b[len(b)-1]&0x80 != 0 {
		return nil, fmt.Errorf("malformed object identifier")
	}
	var ids []int
	v := 0
	for _, c := range b {
		if v == 0 && c == 0x80 {
			return nil, fmt.Errorf("malformed object identifier")
		}
		if v > 1<<24 {
			return nil, fmt.Errorf("object identifier component too large")
		}
		v = v<<7 | int(c&0x7f)
		if c&0x80 != 0 {
			continue
		}
		if len(ids) == 0 {
			first := min(v/40, 2)
			ids = append(ids, first, v-40*first)
		} else {
			ids = append(ids, v)
		}
		v = 0
	}
	return ids, nil
}

// derString decodes a name attribute's string as crypto/x509 does
// (PrintableString, UTF8String, IA5String, T61String, BMPString,
// NumericString); other types are refused, as x509 refuses them.
func derString(tag byte, b []byte) (string, error) {
	var name string // of an ASCII string type, whose bytes valid checks
	var valid func(c byte) bool
	switch tag {
	case 0x13:
		name, valid = "PrintableString", func(c byte) bool {
			return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(" '()+,-./:=?*&", c) >= 0
		}
	case 0x16:
		name, valid = "IA5String", func(c byte) bool { return c < utf8.RuneSelf }
	case 0x12:
		name, valid = "NumericString", func(c byte) bool { return '0' <= c && c <= '9' || c == ' ' }
	case 0x0c: // UTF8String
		if !utf8.Valid(b) {
			return "", fmt.Errorf("invalid UTF-8 string")
		}
	case 0x14: // T61String
	case 0x1e: // BMPString: UTF-16, big-endian
		if len(b)%2 != 0 {
			return "", fmt.Errorf("invalid BMPString")
		}
		if n := len(b); n >= 2 && b[n-1] == 0 && b[n-2] == 0 {
			b = b[:n-2]
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
			// x509 refuses noncharacters and surrogates (UCS-2 has none).
			if p := u[i]; p == 0xfffe || p == 0xffff || 0xfdd0 <= p && p <= 0xfdef || 0xd800 <= p && p <= 0xdfff {
				return "", fmt.Errorf("invalid BMPString")
			}
		}
		return string(utf16.Decode(u)), nil
	default:
		return "", fmt.Errorf("unsupported string type 0x%02x", tag)
	}
	for _, c := range b {
		if valid != nil && !valid(c) {
			return "", fmt.Errorf("invalid %s", name)
		}
	}
	return string(b), nil
}

// isKitFile says whether p is a regular file itself, not a symlink to one:
// the kit files LoadKit reads (a symlink is reported by walkKit, and its
// target is never read).
func isKitFile(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

// readKitFile reads a regular file of the kit without following a symlink
// or waiting on a named pipe, at most MaxInputBytes.
func readKitFile(p string) ([]byte, error) {
	data, st, err := readRegular(p, true)
	switch err {
	case errNotRegular:
		return nil, fmt.Errorf("is a %s, not a regular file", FileKind(st.Mode()))
	case errTooLarge:
		return data, fmt.Errorf("is larger than %d bytes", MaxInputBytes)
	}
	return data, err
}
