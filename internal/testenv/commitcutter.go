package testenv

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// CommitCutter is a TCP proxy in front of the local MariaDB that can put the
// next COMMIT in doubt, deterministically: LoseNextCommitAnswer lets the COMMIT
// reach the server and cuts the connection once the server has answered,
// before the client hears it (the transaction committed); LoseNextCommit cuts
// it before the COMMIT reaches the server (the server rolls it back);
// VanishAtNextCommitAnswer is LoseNextCommitAnswer after which the database
// cannot be reached at all. Every other packet passes unchanged. Open handles
// on DSN.
type CommitCutter struct {
	t        testing.TB
	listener net.Listener
	mode     atomic.Int32
	cut      chan string // one line per cut: what was done

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

const (
	passCommits int32 = iota
	loseAnswer
	loseCommit
	vanish
)

// CutCommits starts a CommitCutter for the test; it stops when the test ends.
// The caller holds the database lock (MySQL or DisruptDatabases).
func CutCommits(t testing.TB) *CommitCutter {
	t.Helper()
	reachable(t, "MariaDB", "127.0.0.1:3306")
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for the commit cutter: %v", err)
	}
	c := &CommitCutter{t: t, listener: listener, cut: make(chan string, 16)}
	c.wg.Add(1)
	go c.accept()
	t.Cleanup(c.stop)
	return c
}

// DSN is MySQLDSN through the cutter.
func (c *CommitCutter) DSN() string {
	return strings.Replace(MySQLDSN, "tcp(127.0.0.1:3306)", "tcp("+c.listener.Addr().String()+")", 1)
}

// LoseNextCommitAnswer makes the next COMMIT reach the server and its answer
// never reach the client: the connection is cut once the server answered.
func (c *CommitCutter) LoseNextCommitAnswer() { c.mode.Store(loseAnswer) }

// LoseNextCommit makes the next COMMIT never reach the server: the connection
// is cut instead, and the server rolls the transaction back.
func (c *CommitCutter) LoseNextCommit() { c.mode.Store(loseCommit) }

// VanishAtNextCommitAnswer is LoseNextCommitAnswer, and with the answer the
// database becomes unreachable: every connection is cut and new ones are
// refused, before the client hears anything.
func (c *CommitCutter) VanishAtNextCommitAnswer() { c.mode.Store(vanish) }

// Cuts reports each cut made, as a line that says what was done.
func (c *CommitCutter) Cuts() <-chan string { return c.cut }

func (c *CommitCutter) accept() {
	defer c.wg.Done()
	for {
		client, err := c.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", "127.0.0.1:3306")
		if err != nil {
			_ = client.Close()
			continue
		}
		c.mu.Lock()
		c.conns = append(c.conns, client, server)
		c.mu.Unlock()
		var answered atomic.Int32 // the server's next packet answers a COMMIT to lose (loseAnswer or vanish)
		c.wg.Add(2)
		go c.toServer(client, server, &answered)
		go c.toClient(server, client, &answered)
	}
}

// toServer forwards the client's packets, acting on the COMMIT it is told to.
func (c *CommitCutter) toServer(client, server net.Conn, answered *atomic.Int32) {
	defer c.wg.Done()
	defer closeBoth(client, server)
	for {
		packet, err := readPacket(client)
		if err != nil {
			return
		}
		if isCommit(packet) {
			switch {
			case c.mode.CompareAndSwap(loseCommit, passCommits):
				c.report("a COMMIT was lost before it reached the server")
				return
			case c.mode.CompareAndSwap(loseAnswer, passCommits):
				answered.Store(loseAnswer)
			case c.mode.CompareAndSwap(vanish, passCommits):
				answered.Store(vanish)
			}
		}
		if _, err := server.Write(packet); err != nil {
			return
		}
	}
}

// toClient forwards the server's packets, but not the answer to a COMMIT it
// is to lose: then it cuts the connection.
func (c *CommitCutter) toClient(server, client net.Conn, answered *atomic.Int32) {
	defer c.wg.Done()
	defer closeBoth(client, server)
	for {
		packet, err := readPacket(server)
		if err != nil {
			return
		}
		switch answered.Load() {
		case loseAnswer:
			c.report("the server answered a COMMIT and the answer was lost")
			return
		case vanish:
			c.closeAll()
			c.report("the server answered a COMMIT, the answer was lost and the database vanished")
			return
		}
		if _, err := client.Write(packet); err != nil {
			return
		}
	}
}

// readPacket reads one MySQL protocol packet: a 3-byte little-endian length,
// a sequence byte, the payload.
func readPacket(r io.Reader) ([]byte, error) {
	header := make([]byte, 4)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, err
	}
	length := int(binary.LittleEndian.Uint32(append(header[:3:3], 0)))
	packet := make([]byte, 4+length)
	copy(packet, header)
	if _, err := io.ReadFull(r, packet[4:]); err != nil {
		return nil, err
	}
	return packet, nil
}

// isCommit reports a COM_QUERY packet whose statement is COMMIT.
func isCommit(packet []byte) bool {
	const comQuery = 0x03
	return len(packet) > 5 && packet[4] == comQuery && strings.EqualFold(strings.TrimSpace(string(packet[5:])), "COMMIT")
}

// report tells Cuts of a cut; past its buffer, nobody is listening.
func (c *CommitCutter) report(what string) {
	select {
	case c.cut <- what:
	default:
	}
}

func closeBoth(a, b net.Conn) {
	_ = a.Close()
	_ = b.Close()
}

// closeAll closes the listener and every connection.
func (c *CommitCutter) closeAll() {
	_ = c.listener.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

// stop closes everything and waits for the goroutines.
func (c *CommitCutter) stop() {
	c.closeAll()
	c.wg.Wait()
}
