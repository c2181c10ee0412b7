package cjk

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
)

// show renders words as the tests write them: a function word in parentheses, any other
// word with its first English word ("发票:invoice"), or alone if it has none.
func show(words []Word) string {
	var parts []string
	for _, w := range words {
		switch {
		case w.Function:
			parts = append(parts, "("+w.Text+")")
		case len(w.English) > 0:
			parts = append(parts, w.Text+":"+w.English[0])
		default:
			parts = append(parts, w.Text)
		}
	}
	return strings.Join(parts, " ")
}

func TestSegment(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"create an issue", ""},
		{"帮我开个 PR 吧", "(帮我) 开:open (个) (吧)"},
		{"幫我開個 PR 吧", "(幫我) 開:open (個) (吧)"}, // Traditional
		{"在GitHub上开PR", "(在) (上) 开:open"},    // no spaces between scripts
		{"的了吗呢吧", "(的) (了) (吗) (呢) (吧)"},     // only function words
		{"🚀部署🔥", "部署:deploy"},
		{"カレンダー", ""},   // kana are not Han
		{"캘린더 만들기", ""}, // nor is Hangul
		{"カレンダーを作成", "作:engage (成)"},
		{"把镜像推到仓库", "(把) 镜像:image 推:push (到) 仓库:repository"}, // the glossary, not CC-CEDICT's mirror
		{"把鏡像推到倉庫", "(把) 鏡像:image 推:push (到) 倉庫:repository"},
		{"镜像仓库", "镜像仓库:container"}, // the longer glossary word
		{"拉取请求", "拉取请求:pull"},      // in the glossary only
		{"發票", "發票:invoice"},       // Traditional, found through 发票
		{"乾淨", "乾淨:clean"},         // 乾 has no one Simplified form: its own line
		{"頭髮", "頭髮:hair"},
		{"𠀀", "𠀀"}, // a character no one has
		// Least cost, not longest match.
		{"发条消息", "发:send (条) 消息:message"},  // not 发条, clockwork
		{"里加个待办", "(里) 加:add (个) 待办:todo"}, // not 里加, Riga
		{"订单一共有多少条文档", "订单:order 一共:total (有) 多少:count (条) 文档:document"},
		{"周四下午", "周四:thursday 下午:afternoon"},                             // a numeral binds
		{"开发", "开发:develop"},                                             // two content words stay one
		{"柏林", "柏林:berlin"},                                              // a name
		{"记住小王喜欢上午开会", "记住:remember (小王) 喜欢:like 上午:morning 开会:meeting"}, // a colleague
		{"和老張約個會", "(和) (老張) 約:schedule (個) (會)"},
		{"一小时", "(一) 小时:hour"}, // a word, not 小 before a surname
	}
	for _, tt := range tests {
		if got := show(Segment(tt.in)); got != tt.want {
			t.Errorf("Segment(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSegmentLong(t *testing.T) {
	start := time.Now()
	words := Segment(strings.Repeat("把发票再发我一次", 5000))
	if d := time.Since(start); d > time.Second {
		t.Errorf("Segment of 40,000 characters took %v", d)
	}
	n := 0
	for _, w := range words {
		n += len([]rune(w.Text))
	}
	if n != maxRun {
		t.Errorf("Segment of 40,000 characters covered %d, want the first %d", n, maxRun)
	}
}

// TestLazyLoad checks that text without Han characters never loads the table.
func TestLazyLoad(t *testing.T) {
	var d Dict
	for _, s := range []string{"", "create issue", "カレンダー", "캘린더", "🚀", "\xff\xfe"} {
		if ws := d.Segment(s); ws != nil {
			t.Errorf("Segment(%q) = %v, want nil", s, ws)
		}
	}
	if d.heads != nil || d.gloss != nil {
		t.Fatal("the table was loaded for text without Han characters")
	}
	d.Segment("发票")
	if len(d.heads) == 0 || len(d.gloss) == 0 {
		t.Fatal("the table was not loaded for a Han character")
	}
}

func TestConcurrentLoad(t *testing.T) {
	var d Dict
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = show(d.Segment("把发票再发我一次"))
		}()
	}
	wg.Wait()
	for _, g := range got[1:] {
		if g != got[0] {
			t.Fatalf("concurrent first calls disagree: %q and %q", got[0], g)
		}
	}
}

func TestTable(t *testing.T) {
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	n := 0 // headwords: the table's filled slots
	for _, h := range std.heads {
		if h != 0 {
			n++
		}
	}
	if n < 100000 {
		t.Errorf("the table has %d headwords, want over 100,000", n)
	}
	for w, want := range map[string]string{
		"镜像": "mirror image", // the table keeps CC-CEDICT's sense; the glossary overrides it
		"日志": "log journal",  // a computing sense first
		"錶":  "watch meter gauge",
		"柏林": "*berlin capital",
	} {
		if got, _ := std.table(w); got != want {
			t.Errorf("table(%q) = %q, want %q", w, got, want)
		}
	}
	if _, ok := std.table("發票"); ok {
		t.Error("the table has 發票, which it finds as 发票")
	}
}

// TestGlossary checks glossary.txt: each word once, English in lower case, and each word
// found under its other forms.
func TestGlossary(t *testing.T) {
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(glossaryText))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if prev, dup := seen[f[0]]; dup {
			t.Errorf("glossary.txt:%d: %s again (first at line %d)", n, f[0], prev)
		}
		seen[f[0]] = n
		for _, e := range f[1:] {
			if e != "-" && e != "~" && strings.IndexFunc(e, func(r rune) bool { return !unicode.IsLower(r) && !unicode.IsDigit(r) && r != '-' }) >= 0 {
				t.Errorf("glossary.txt:%d: %q is not a lower-case English word", n, e)
			}
		}
		want := std.gloss[f[0]]
		for _, form := range std.traditional(std.simplified(f[0]), 16) {
			if got, ok := std.lookup(form); !ok || strings.Join(got.english, " ") != strings.Join(want.english, " ") {
				t.Errorf("glossary.txt:%d: %s as %s = %v, want %v", n, f[0], form, got.english, want.english)
			}
		}
	}
	for _, bad := range []string{"镜像\n", "image 镜像\n", "镜像  # a comment\n"} {
		var d Dict
		d.gloss, d.toSimp, d.toTrad = map[string]glossEntry{}, map[rune]rune{}, map[rune][]rune{}
		if err := d.loadGlossary(bad); err == nil {
			t.Errorf("loadGlossary(%q) = nil error", bad)
		}
	}
}

func TestHasHan(t *testing.T) {
	for s, want := range map[string]bool{"": false, "issue": false, "カレンダー": false, "한국어": false, "发票": true, "PR 發票": true, "🚀": false, "\xff": false} {
		if got := HasHan(s); got != want {
			t.Errorf("HasHan(%q) = %v, want %v", s, got, want)
		}
	}
}

// BenchmarkLoad measures what the first query with a Han character pays: reading the table
// and the glossary.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var d Dict
		if err := d.Load(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSegment(b *testing.B) {
	if err := Load(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Segment("帮我在 GitHub 上开个 PR 吧,从 feature 分支合到 main")
	}
}
