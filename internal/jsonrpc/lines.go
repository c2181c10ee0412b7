package jsonrpc

import (
	"bufio"
	"io"
)

// Lines reads newline-delimited messages, as the MCP stdio transport sends them, without
// ever holding one over a bound: of a line over it, only its first and last bytes are kept,
// enough to find its id and answer it (see IDOfEnds).
type Lines struct {
	r   *bufio.Reader
	max int
}

// NewLines returns a reader of the lines of r, each at most max bytes.
func NewLines(r io.Reader, max int) *Lines {
	return &Lines{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// endsKept is how much of each end of a line over the bound is kept.
const endsKept = 4096

// Next returns the next line, without its newline. For a line over the bound, line is nil
// and head and tail are its ends. A last line without a newline is returned with a nil
// error; io.EOF comes after it.
func (l *Lines) Next() (line, head, tail []byte, err error) {
	var over bool
	for {
		chunk, err := l.r.ReadSlice('\n')
		if over {
			tail = append(tail, chunk...)
			tail = tail[max(0, len(tail)-endsKept):]
		} else {
			line = append(line, chunk...)
			if len(line) > l.max {
				head = append([]byte(nil), line[:min(len(line), endsKept)]...)
				tail = append([]byte(nil), line[len(line)-min(len(line), endsKept):]...)
				line, over = nil, true
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && (len(line) > 0 || over) {
			err = nil // the last line, unterminated; EOF comes next
		}
		if over {
			return nil, head, trimNewline(tail), err
		}
		return trimNewline(line), nil, nil, err
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
