package check

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestListenerReadsOnlyTheNonce (issue 25 item 6): the connectivity
// listener, open on every address, read a peer's input up to a newline
// without bound (6.5 GB sent made check hold 12.7 GB). It reads exactly
// the nonce and its newline, then closes: a peer that sends a megabyte
// gets no further than that.
func TestListenerReadsOnlyTheNonce(t *testing.T) {
	l := &listener{nonce: "check-" + randomHex(16)}
	server, client := net.Pipe()
	done := make(chan struct{})
	go func() { l.answer(server); close(done) }()
	junk := bytes.Repeat([]byte("x"), 1<<20)
	_ = client.SetWriteDeadline(time.Now().Add(20 * time.Second))
	sent, _ := client.Write(junk)
	client.Close()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener did not end the connection")
	}
	if want := len(l.nonce) + 1; sent != want {
		t.Errorf("the listener read %d bytes of a peer's junk, want exactly %d (the nonce's length and a newline)", sent, want)
	}
	if l.reached() != "" {
		t.Errorf("junk reached the listener from %q", l.reached())
	}

	// The probe's own message is answered.
	server, client = net.Pipe()
	go l.answer(server)
	_ = client.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := client.Write([]byte(l.nonce + "\n")); err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(client)
	if string(answer) != "ok\n" || l.reached() == "" {
		t.Errorf("answer %q, reached %q", answer, l.reached())
	}
}

// TestListenerBoundsItsPeers: at most maxPeers connections are held at
// once; one more is closed at once, without being read.
func TestListenerBoundsItsPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln, nonce: "check-" + randomHex(16), done: make(chan struct{})}
	go l.serve()
	defer l.close()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range maxPeers {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The held connections occupy every slot once the listener took them:
	// wait (with a deadline) until one more is refused.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, rerr := c.Read(make([]byte, 1))
		c.Close()
		if rerr == io.EOF {
			return // closed at once: the peers are bounded
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %d was held open: the listener does not bound its peers", maxPeers+1)
		}
	}
}
