//go:build linux

package gateway

import (
	"sync"
	"syscall"
)

var (
	pollerOnce sync.Once
	thePoller  *poller
)

// idlePoller is the process's one poller (nil if epoll is refused): its
// goroutine waits in epoll_wait for good.
func idlePoller() *poller {
	pollerOnce.Do(func() { thePoller = newPoller() })
	return thePoller
}

// poller watches idle WebSocket connections with an epoll instance of its
// own, so that an idle connection needs no goroutine: its reader parks it
// and ends, and the poller starts a reader again once bytes arrive (or the
// peer hangs up). The socket stays in the Go runtime's poller too, which
// the restarted reader uses as usual; each registration here is
// one-shot, so a socket wakes at most one reader per park.
type poller struct {
	epfd   int
	mu     sync.Mutex
	parked map[int32]*wsConn // by file descriptor
}

func newPoller() *poller {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil // readers block instead
	}
	p := &poller{epfd: fd, parked: map[int32]*wsConn{}}
	go p.run()
	return p
}

// park hands c to the poller; after true its reader must end at once and
// touch c no more. False (a socket that is not a plain descriptor, as
// under TLS, or a failed registration) leaves the reader to block.
func (p *poller) park(c *wsConn) bool {
	if p == nil || c.fd < 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: c.fd}
	err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(c.fd), &ev)
	if err == syscall.ENOENT {
		err = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(c.fd), &ev)
	}
	if err != nil {
		return false
	}
	p.parked[c.fd] = c
	return true
}

// unpark takes c back from the poller if it is parked there, reporting
// whether it was: then no reader runs, and none will.
func (p *poller) unpark(c *wsConn) bool {
	if p == nil || c.fd < 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parked[c.fd] != c {
		return false
	}
	delete(p.parked, c.fd)
	syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(c.fd), nil)
	return true
}

func (p *poller) run() {
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return // cannot happen with a valid epoll descriptor
		}
		p.mu.Lock()
		for _, ev := range events[:n] {
			if c := p.parked[ev.Fd]; c != nil {
				delete(p.parked, ev.Fd)
				go c.read(true)
			}
		}
		p.mu.Unlock()
	}
}

// socketFD is c's file descriptor when it is a plain socket, or -1.
func socketFD(c any) int32 {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := int32(-1)
	rc.Control(func(f uintptr) { fd = int32(f) })
	return fd
}
