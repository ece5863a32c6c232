package check

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// listener is check's one-shot TCP listener on the parent's internal port:
// it answers "ok" to a connection that sends its nonce, and remembers from
// where that connection came.
type listener struct {
	ln    net.Listener
	nonce string
	mu    sync.Mutex
	from  string // the remote address that sent the nonce
	wrong int    // connections that sent something else
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

func (l *listener) serve() {
	defer close(l.done)
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.answer(c)
	}
}

func (l *listener) answer(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || line != l.nonce+"\n" {
		l.wrong++
		return
	}
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
