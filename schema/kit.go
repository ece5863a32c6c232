package schema

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Role files of a startup kit's startup/ directory.
const (
	ServerRoleFile = "fed_server.json"
	ClientRoleFile = "fed_client.json"
	AdminRoleFile  = "fed_admin.json"
)

// LoadKit validates a startup kit directory (contract §2): its layout, role
// file, identity material, organisation, site name, resources.json.default
// and study files. A local/study_runtime.yaml is validated too, and a legacy
// local/study_data.yaml is refused (migrate it to study_runtime.yaml).
func LoadKit(dir string) (*Kit, Problems) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, Problems{{File: dir, Message: "cannot resolve path: " + err.Error()}}
	}
	abs = filepath.Clean(abs)
	var probs Problems
	bad := func(file, path, msg, hint string) {
		probs = append(probs, Problem{File: file, Path: path, Message: msg, Hint: hint})
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, Problems{{File: dir, Message: "cannot read startup kit: " + errText(err)}}
	}
	if !st.IsDir() {
		return nil, Problems{{File: dir, Message: "is not a directory; a startup kit is a folder with startup/ and local/"}}
	}
	// Problems name files the way the caller named the kit.
	startup := filepath.Join(dir, "startup")
	local := filepath.Join(dir, "local")
	for _, d := range []string{startup, local} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			bad(d, "", "must be a directory of the startup kit", "is this the top folder of a provisioned kit?")
		}
	}
	if probs != nil {
		probs.Sort()
		return nil, probs
	}

	kit := &Kit{Dir: abs, Name: filepath.Base(abs)}
	var roles []string
	for _, f := range []string{ServerRoleFile, ClientRoleFile, AdminRoleFile} {
		if isFile(filepath.Join(startup, f)) {
			roles = append(roles, f)
		}
	}
	switch {
	case len(roles) == 0:
		bad(startup, "", "holds no role file (fed_server.json, fed_client.json or fed_admin.json)", "is this a provisioned startup kit?")
	case len(roles) > 1:
		bad(startup, "", "holds more than one role file ("+strings.Join(roles, ", ")+")", "keep exactly one")
	case roles[0] == AdminRoleFile:
		bad(filepath.Join(startup, AdminRoleFile), "", "this is an admin kit: prepare does not take admin kits", "use the kit of a server or client site")
	case roles[0] == ServerRoleFile:
		kit.Role = "server"
	default:
		kit.Role = "client"
	}
	if kit.Role == "" {
		return nil, probs
	}

	// Site name from the role file.
	roleFile := filepath.Join(startup, roles[0])
	var roleDoc map[string]any
	if data, err := os.ReadFile(roleFile); err != nil {
		bad(roleFile, "", "cannot read file: "+errText(err), "")
	} else if err := json.Unmarshal(data, &roleDoc); err != nil || roleDoc == nil {
		bad(roleFile, "", "is not a JSON object", "")
	} else if name := siteNameOf(kit.Role, roleDoc); name != "" {
		kit.Name = name
	}

	// Identity material and organisation.
	leaf := "client"
	if kit.Role == "server" {
		leaf = "server"
	}
	for _, f := range []string{"rootCA.pem", leaf + ".crt", leaf + ".key"} {
		if p := filepath.Join(startup, f); !isFile(p) {
			bad(p, "", "is missing: a "+kit.Role+" kit needs startup/rootCA.pem, "+leaf+".crt and "+leaf+".key", "")
		}
	}
	certPath := filepath.Join(startup, leaf+".crt")
	if isFile(certPath) {
		org, msg := certOrganization(certPath)
		if msg != "" {
			bad(certPath, "", msg, "provision the kit with an organisation for this site")
		}
		kit.Organization = org
	}

	// resources.json.default must be a JSON object.
	res := filepath.Join(local, "resources.json.default")
	if data, err := os.ReadFile(res); err != nil {
		bad(res, "", "cannot read file: "+errText(err), "every provisioned kit has local/resources.json.default")
	} else {
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
			bad(res, "", "must be a JSON object", "")
		}
	}

	// Study files.
	runtimePath := filepath.Join(local, StudyRuntimeFile)
	legacyPath := filepath.Join(local, LegacyStudyFile)
	_, err = os.Lstat(runtimePath)
	kit.HasStudyRuntime = err == nil
	_, err = os.Lstat(legacyPath)
	kit.HasLegacyStudyData = err == nil
	if kit.HasStudyRuntime {
		// LoadStudyRuntime also reports a legacy file beside it.
		_, sp := LoadStudyRuntime(runtimePath)
		probs = append(probs, sp...)
	} else if kit.HasLegacyStudyData {
		bad(legacyPath, "", "legacy study_data.yaml (format 1) is not supported under Slurm",
			"migrate it to local/study_runtime.yaml (format_version: 2) and delete study_data.yaml")
	}
	if probs != nil {
		probs.Sort()
		return nil, probs
	}
	return kit, nil
}

// siteNameOf reads the site name from a parsed role file: client.fqsn for
// clients; servers[0].identity, else servers[0].admin_server for servers.
func siteNameOf(role string, doc map[string]any) string {
	if role == "client" {
		client, _ := doc["client"].(map[string]any)
		name, _ := client["fqsn"].(string)
		return name
	}
	servers, _ := doc["servers"].([]any)
	if len(servers) == 0 {
		return ""
	}
	first, _ := servers[0].(map[string]any)
	for _, key := range []string{"identity", "admin_server"} {
		if name, _ := first[key].(string); name != "" {
			return name
		}
	}
	return ""
}

// certOrganization returns the first non-empty O= of the leaf certificate's
// subject, or a message saying why there is none.
func certOrganization(path string) (string, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "cannot read certificate: " + errText(err)
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
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return "", "is not a valid X.509 certificate: " + err.Error()
		}
		for _, o := range cert.Subject.Organization {
			if strings.TrimSpace(o) != "" {
				return o, ""
			}
		}
		return "", fmt.Sprintf("certificate subject %q has no organisation (O=)", cert.Subject.String())
	}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
