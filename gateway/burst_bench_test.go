package gateway

import (
	"fmt"
	"io"
	"net"
	"testing"
)

// BenchmarkBurstWrite is why the writer copies a burst into one buffer and
// makes one write(2), rather than a writev(2) of each frame's head and its
// publication's shared rendering: over loopback TCP, for bursts of grouped
// frames the size a moving-user publication renders to and larger.
func BenchmarkBurstWrite(b *testing.B) {
	for _, c := range []struct{ pub, frames int }{{300, 32}, {4096, 8}} {
		for _, vec := range []bool{false, true} {
			name := fmt.Sprintf("pub=%d/frames=%d/copy", c.pub, c.frames)
			if vec {
				name = fmt.Sprintf("pub=%d/frames=%d/writev", c.pub, c.frames)
			}
			b.Run(name, func(b *testing.B) { benchBurst(b, c.pub, c.frames, vec) })
		}
	}
}

func benchBurst(b *testing.B, pub, frames int, vec bool) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c, err := l.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	head, body := make([]byte, 60), make([]byte, pub) // a grouped frame's head and "to" list; the publication
	buf, bufs := make([]byte, 0, 64<<10), make(net.Buffers, 0, 2*frames)
	b.SetBytes(int64(frames * (len(head) + pub)))
	for i := 0; i < b.N; i++ {
		if vec {
			bufs = bufs[:0]
			for range frames {
				bufs = append(bufs, head, body)
			}
			v := bufs
			_, err = v.WriteTo(conn)
		} else {
			buf = buf[:0]
			for range frames {
				buf = append(append(buf, head...), body...)
			}
			_, err = conn.Write(buf)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	conn.Close()
	<-done
}
