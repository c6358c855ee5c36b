//go:build !linux

package gateway

// poller parks idle connections on Linux only; elsewhere readers block.
type poller struct{}

func newPoller() *poller              { return nil }
func (p *poller) park(*wsConn) bool   { return false }
func (p *poller) unpark(*wsConn) bool { return false }
func (p *poller) close()              {}
func socketFD(any) int32              { return -1 }
