package editortest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lspDeadline bounds every wait on the server.
const lspDeadline = 20 * time.Second

// rpcMessage is one JSON-RPC 2.0 message in either direction.
type rpcMessage struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// diagnostic is the part of an LSP Diagnostic the tests read.
type diagnostic struct {
	Range struct {
		Start struct{ Line, Character int } `json:"start"`
	} `json:"range"`
	Message json.RawMessage `json:"message"`
	Source  string          `json:"source"`
}

// lspClient drives one yaml-language-server over stdio.
type lspClient struct {
	t        *testing.T
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	settings map[string]any

	mu      sync.Mutex
	nextID  int
	pending map[int]chan rpcMessage
	diags   map[string]chan []diagnostic
	stderr  strings.Builder
	readErr error
	done    chan struct{}
}

// startServer starts yaml-language-server with settings as its "yaml" section.
func startServer(t *testing.T, server string, rootDir string, settings map[string]any) *lspClient {
	t.Helper()
	cmd := exec.Command("node", server, "--stdio")
	cmd.Dir = rootDir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &lspClient{t: t, cmd: cmd, stdin: stdin, settings: settings,
		pending: map[int]chan rpcMessage{}, diags: map[string]chan []diagnostic{}, done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &c.mu, b: &c.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start yaml-language-server: %v", err)
	}
	go c.readLoop(bufio.NewReader(stdout))
	t.Cleanup(c.close)

	var init struct {
		Capabilities map[string]any `json:"capabilities"`
	}
	c.call("initialize", map[string]any{
		"processId": os.Getpid(),
		"rootUri":   fileURI(rootDir),
		"capabilities": map[string]any{
			"workspace": map[string]any{"configuration": true, "didChangeConfiguration": map[string]any{"dynamicRegistration": true}},
			"textDocument": map[string]any{
				"completion":         map[string]any{"completionItem": map[string]any{"snippetSupport": true, "documentationFormat": []string{"markdown", "plaintext"}}},
				"hover":              map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
				"publishDiagnostics": map[string]any{"relatedInformation": true},
			},
		},
	}, &init)
	c.notify("initialized", map[string]any{})
	c.notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"yaml": settings}})
	return c
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (c *lspClient) close() {
	c.stdin.Close()
	timer := time.AfterFunc(5*time.Second, func() { _ = c.cmd.Process.Kill() })
	_ = c.cmd.Wait()
	timer.Stop()
}

func (c *lspClient) write(m rpcMessage) {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := fmt.Fprintf(c.stdin, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		c.t.Errorf("write to yaml-language-server: %v", err)
	}
}

func (c *lspClient) notify(method string, params any) {
	p, _ := json.Marshal(params)
	c.write(rpcMessage{Method: method, Params: p})
}

// call sends a request and decodes its result into out, failing the test
// on an error response or after lspDeadline.
func (c *lspClient) call(method string, params any, out any) {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan rpcMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	p, _ := json.Marshal(params)
	raw := json.RawMessage(strconv.Itoa(id))
	c.write(rpcMessage{ID: &raw, Method: method, Params: p})
	select {
	case m := <-ch:
		if m.Error != nil {
			c.t.Fatalf("%s: server error %d: %s\nserver stderr:\n%s", method, m.Error.Code, m.Error.Message, c.serverLog())
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				c.t.Fatalf("%s: decode result %s: %v", method, m.Result, err)
			}
		}
	case <-c.done:
		c.t.Fatalf("%s: yaml-language-server exited: %v\nserver stderr:\n%s", method, c.readErr, c.serverLog())
	case <-time.After(lspDeadline):
		c.t.Fatalf("%s: no answer within %s\nserver stderr:\n%s", method, lspDeadline, c.serverLog())
	}
}

func (c *lspClient) serverLog() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func (c *lspClient) diagChan(uri string) chan []diagnostic {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.diags[uri]
	if !ok {
		ch = make(chan []diagnostic, 16)
		c.diags[uri] = ch
	}
	return ch
}

func (c *lspClient) readLoop(r *bufio.Reader) {
	defer close(c.done)
	tp := textproto.NewReader(r)
	for {
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			c.readErr = err
			return
		}
		n, err := strconv.Atoi(h.Get("Content-Length"))
		if err != nil {
			c.readErr = fmt.Errorf("bad Content-Length %q", h.Get("Content-Length"))
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			c.readErr = err
			return
		}
		var m rpcMessage
		if err := json.Unmarshal(body, &m); err != nil {
			c.readErr = fmt.Errorf("bad message %s: %v", body, err)
			return
		}
		switch {
		case m.Method != "" && m.ID != nil: // a request from the server
			c.answer(m)
		case m.Method == "textDocument/publishDiagnostics":
			var p struct {
				URI         string       `json:"uri"`
				Diagnostics []diagnostic `json:"diagnostics"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				c.diagChan(p.URI) <- p.Diagnostics
			}
		case m.Method == "" && m.ID != nil: // a response
			id, _ := strconv.Atoi(string(*m.ID))
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

// answer replies to the server's own requests: configuration gets the
// settings, everything else (registerCapability, progress) a null result.
func (c *lspClient) answer(m rpcMessage) {
	result := json.RawMessage("null")
	if m.Method == "workspace/configuration" {
		var p struct {
			Items []struct {
				Section string `json:"section"`
			} `json:"items"`
		}
		_ = json.Unmarshal(m.Params, &p)
		out := make([]any, len(p.Items))
		for i, it := range p.Items {
			switch it.Section {
			case "yaml":
				out[i] = c.settings
			default:
				out[i] = nil
			}
		}
		result, _ = json.Marshal(out)
	}
	c.write(rpcMessage{ID: m.ID, Result: result})
}

// open opens a YAML document and returns its URI.
func (c *lspClient) open(path, text string) string {
	uri := fileURI(path)
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "yaml", "version": 1, "text": text}})
	return uri
}

// change replaces the whole text of an open document with version.
func (c *lspClient) change(uri string, version int, text string) {
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": version},
		"contentChanges": []map[string]any{{"text": text}},
	})
}

// diagnostics waits for the first diagnostics the server publishes for uri
// (it validates a document once when it is opened).
func (c *lspClient) diagnostics(uri string) []diagnostic {
	c.t.Helper()
	ch := c.diagChan(uri)
	deadline := time.After(lspDeadline)
	for {
		select {
		case d := <-ch:
			return d
		case <-c.done:
			c.t.Fatalf("diagnostics of %s: yaml-language-server exited\n%s", uri, c.serverLog())
		case <-deadline:
			c.t.Fatalf("no diagnostics for %s within %s\nserver stderr:\n%s", uri, lspDeadline, c.serverLog())
		}
	}
}

// completionItem is the part of an LSP CompletionItem the tests read.
type completionItem struct {
	Label      string `json:"label"`
	InsertText string `json:"insertText"`
	TextEdit   *struct {
		NewText string `json:"newText"`
	} `json:"textEdit"`
}

// text is what accepting the item inserts.
func (it completionItem) text() string {
	if it.TextEdit != nil {
		return it.TextEdit.NewText
	}
	if it.InsertText != "" {
		return it.InsertText
	}
	return it.Label
}

// completion returns the items offered at line, character.
func (c *lspClient) completion(uri string, line, char int) []completionItem {
	c.t.Helper()
	var res struct {
		Items []completionItem `json:"items"`
	}
	c.call("textDocument/completion", map[string]any{
		"textDocument": map[string]any{"uri": uri},
		"position":     map[string]any{"line": line, "character": char},
	}, &res)
	return res.Items
}

// hover returns the hover text at line, character ("" when none).
func (c *lspClient) hover(uri string, line, char int) string {
	c.t.Helper()
	var res *struct {
		Contents json.RawMessage `json:"contents"`
	}
	c.call("textDocument/hover", map[string]any{
		"textDocument": map[string]any{"uri": uri},
		"position":     map[string]any{"line": line, "character": char},
	}, &res)
	if res == nil {
		return ""
	}
	var mc struct {
		Value string `json:"value"`
	}
	if json.Unmarshal(res.Contents, &mc) == nil && mc.Value != "" {
		return mc.Value
	}
	var s string
	if json.Unmarshal(res.Contents, &s) == nil {
		return s
	}
	return string(res.Contents)
}

func fileURI(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		panic(err)
	}
	return "file://" + filepath.ToSlash(abs)
}
