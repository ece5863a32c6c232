package check

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// listener is check's one-shot TCP listener on the parent's internal port:
// it answers "ok" to a connection that sends its nonce, and remembers from
// where that connection came.
type listener struct {
	ln    net.Listener
	nonce string
	mu    sync.Mutex
	from  string // the remote address that sent the nonce
	done  chan struct{}
}

// listen opens the listener on every address at port. It returns nil, nil
// when the port is taken (the parent, or another program, listens there):
// the probe then only proves that a TCP connection reaches it.
func listen(port int) (*listener, error) {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot listen on the internal port %d for the connectivity probe: %w", port, err)
	}
	l := &listener{ln: ln, nonce: "check-" + randomHex(16), done: make(chan struct{})}
	go l.serve()
	return l, nil
}

// Bounds of what the listener accepts from any peer (it listens on every
// address): the probe sends its nonce and a newline, nothing more, so no
// more is read (a peer that sent 6.5 GB without a newline made check hold
// 12.7 GB); at most maxPeers connections are answered at once, the others
// closed at once; each has answerTimeout.
const (
	maxPeers      = 16
	answerTimeout = 10 * time.Second
)

func (l *listener) serve() {
	defer close(l.done)
	var peers errgroup.Group
	peers.SetLimit(maxPeers)
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !peers.TryGo(func() error { l.answer(c); return nil }) {
			c.Close()
		}
	}
}

// answer reads exactly what the probe sends (its nonce and a newline) and
// answers "ok" when that is what came.
func (l *listener) answer(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(answerTimeout))
	want := l.nonce + "\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from = c.RemoteAddr().String()
	_, _ = c.Write([]byte("ok\n"))
}

// reached is the remote address that sent the nonce ("" when none did).
func (l *listener) reached() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.from
}

func (l *listener) close() {
	l.ln.Close()
	<-l.done
}
