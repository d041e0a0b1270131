package clustertest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// WaitForRequestTo waits until a request to node i's servers (its node
// server or its object transfer server) waits in the kernel: a connection
// in a server's accept queue, or bytes it has not read on a connection it
// accepted. With node i stopped (SIGSTOP) this is the event "a client is
// now waiting on node i", which a test that kills the node mid-request
// waits for instead of pausing and hoping the request was sent.
func (c *Cluster) WaitForRequestTo(i int, timeout time.Duration) {
	c.t.Helper()
	info, ok, err := c.Dial("").Node(context.Background(), c.Node(i).ID)
	if err != nil || !ok {
		c.t.Fatalf("node %d's addresses: %v (listed: %v)", i, err, ok)
	}
	var addrs []string
	for _, a := range []string{info.NodeAddr, info.ObjectAddr} {
		if a != "" {
			addrs = append(addrs, a)
		}
	}
	WaitFor(c.t, timeout, fmt.Sprintf("a request to node %d (%s) to wait in the kernel", i, strings.Join(addrs, ", ")), func() bool {
		for _, a := range addrs {
			if n, err := pendingTo(a); err != nil {
				c.t.Fatal(err)
			} else if n > 0 {
				return true
			}
		}
		return false
	})
}

// pendingTo counts what waits for the TCP server at addr (IP:PORT) in
// /proc/net/tcp{,6}: connections in its listening socket's accept queue
// (a listening socket's rx_queue) and unread bytes on the connections it
// accepted (their local address is addr).
func pendingTo(addr string) (int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	ip := net.ParseIP(host)
	p, err := strconv.Atoi(port)
	if ip == nil || err != nil {
		return 0, fmt.Errorf("clustertest: %q is not an IP:PORT address", addr)
	}
	file, local := "/proc/net/tcp6", procAddr(ip, p)
	if ip.To4() != nil {
		file = "/proc/net/tcp"
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[1] != local {
			continue
		}
		_, rx, _ := strings.Cut(fields[4], ":")
		q, err := strconv.ParseInt(rx, 16, 64)
		if err != nil {
			continue // the header line
		}
		n += int(q)
	}
	return n, sc.Err()
}

// procAddr is ip:port as /proc/net/tcp writes a local address: the IP as
// 32-bit words in host (little-endian) order, then the port, in hex.
func procAddr(ip net.IP, port int) string {
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4
	}
	var b strings.Builder
	for w := 0; w < len(ip); w += 4 {
		fmt.Fprintf(&b, "%02X%02X%02X%02X", ip[w+3], ip[w+2], ip[w+1], ip[w])
	}
	fmt.Fprintf(&b, ":%04X", port)
	return b.String()
}
