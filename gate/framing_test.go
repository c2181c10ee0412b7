package gate

import "testing"

// TestFramedConnHeads feeds request streams to the head watcher in every split and checks
// the notes it takes, in order.
func TestFramedConnHeads(t *testing.T) {
	for _, c := range []struct {
		name, stream string
		want         []bool
	}{
		{"no body", "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", []bool{false, false}},
		{"length body that looks like a head", "POST / HTTP/1.1\r\nContent-Length: 40\r\n\r\nGET / HTTP/1.1\r\nTransfer-Encoding: x\r\n\r\nGET / HTTP/1.1\r\n\r\n", []bool{false, false}},
		{"both", "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n", []bool{true}},
		{"names in any case", "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncONTENT-lENGTH: 0\r\n\r\n", []bool{true}},
		{"chunked alone stops the watch", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", []bool{false}},
		{"bare LF lines", "POST / HTTP/1.1\nContent-Length: 2\nTransfer-Encoding: chunked\n\n", []bool{true}},
		{"unreadable length still counts", "POST / HTTP/1.1\r\nContent-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n", []bool{true}},
	} {
		for split := 1; split <= len(c.stream); split++ {
			fc := &framedConn{}
			for i := 0; i < len(c.stream); i += split {
				fc.scan([]byte(c.stream[i:min(i+split, len(c.stream))]))
			}
			var got []bool
			for range len(fc.heads) {
				got = append(got, fc.take())
			}
			if len(got) != len(c.want) {
				t.Fatalf("%s (reads of %d): notes %v, want %v", c.name, split, got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("%s (reads of %d): notes %v, want %v", c.name, split, got, c.want)
				}
			}
		}
	}
}
